package storetest

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/goxpdl/goxpdl/store"
)

// requireWorklist checks that one ListWorklist call returns want.
func requireWorklist(t *testing.T, b bundle, params store.ListWorklistParams, want ...store.WorkItem) {
	t.Helper()
	got, err := b.s.ListWorklist(b.ctx, params)
	require.NoError(t, err)
	if len(want) == 0 {
		require.Empty(t, got)
		return
	}
	require.Equal(t, want, got)
}

// walkWorklist lists the pages of params' worklist from params.After (nil:
// the start) to the end and returns the items in the order seen, checking
// that no page is longer than the limit.
func walkWorklist(t *testing.T, b bundle, params store.ListWorklistParams) []store.WorkItem {
	t.Helper()
	var all []store.WorkItem
	for pages := 0; ; pages++ {
		require.Less(t, pages, 1000, "the walk ends")
		page, err := b.s.ListWorklist(b.ctx, params)
		require.NoError(t, err)
		require.LessOrEqual(t, len(page), params.Limit)
		if len(page) == 0 {
			return all
		}
		all = append(all, page...)
		last := page[len(page)-1]
		params.After = &store.WorklistCursor{Priority: last.Priority, ID: last.ID}
	}
}

// sortWorklist sorts items in worklist order.
func sortWorklist(items []store.WorkItem) {
	slices.SortFunc(items, func(a, b store.WorkItem) int {
		return cmp.Or(cmp.Compare(b.Priority, a.Priority), cmp.Compare(a.ID, b.ID))
	})
}

func (h *harness) testWorklist(t *testing.T) {
	t.Run("OrderAndDedupe", func(t *testing.T) {
		b := h.setup(t)
		low := insertItem(t, b, offered("order", "Check", -5), alice)
		mid1 := insertItem(t, b, offered("order", "Check", 3), clerks, alice, clerks) // twice in VisibleTo: stored once
		high := insertItem(t, b, offered("order", "Approve", 10), bosses)
		mid2 := insertItem(t, b, offered("order", "Check", 3), clerks, finance)
		insertItem(t, b, offered("order", "Check", 100), bob)
		insertItem(t, b, offered("order", "Check", 100), store.Principal{Kind: store.PrincipalUser, ID: "Alice"})
		insertItem(t, b, offered("order", "Check", 100), store.Principal{Kind: store.PrincipalRole, ID: "alice"})

		me := []store.Principal{alice, clerks, bosses, finance, alice}
		requireWorklist(t, b, store.ListWorklistParams{Principals: me, Limit: 10}, high, mid1, mid2, low)
		requireWorklist(t, b, store.ListWorklistParams{Principals: me, Limit: 2}, high, mid1)
		requireWorklist(t, b, store.ListWorklistParams{Principals: []store.Principal{alice}, Limit: 10}, mid1, low)
		requireWorklist(t, b, store.ListWorklistParams{Principals: []store.Principal{clerks}, Limit: 10}, mid1, mid2)
		requireWorklist(t, b, store.ListWorklistParams{Principals: []store.Principal{{Kind: store.PrincipalRole, ID: "nobody"}}, Limit: 10})
	})

	t.Run("VisibilityReplacedOnUpdate", func(t *testing.T) {
		b := h.setup(t)
		wi := insertItem(t, b, offered("order", "Approve", 1), clerks, bosses)
		other := insertItem(t, b, offered("order", "Approve", 2), clerks)

		// Alice takes the item: now only she sees it, at its new
		// priority and state.
		p := updateOf(wi, alice)
		p.State, p.Owner, p.Priority, p.UpdatedAt = "Started", "alice", 7, at(time.Second)
		_, err := b.s.UpdateWorkItem(b.ctx, p)
		require.NoError(t, err)
		started, err := b.s.GetWorkItem(b.ctx, wi.ID)
		require.NoError(t, err)
		requireWorklist(t, b, store.ListWorklistParams{Principals: []store.Principal{clerks}, Limit: 10}, other)
		requireWorklist(t, b, store.ListWorklistParams{Principals: []store.Principal{bosses}, Limit: 10})
		requireWorklist(t, b, store.ListWorklistParams{Principals: []store.Principal{alice, clerks}, Limit: 10}, started, other)
		requireWorklist(t, b, store.ListWorklistParams{Principals: []store.Principal{alice, clerks}, States: []string{"Started"}, Limit: 10}, started)
		requireWorklist(t, b, store.ListWorklistParams{Principals: []store.Principal{alice, clerks}, MinPriority: ptr(5), Limit: 10}, started)

		// Completed: in nobody's worklist.
		p = updateOf(started)
		p.State, p.CompletedBy, p.UpdatedAt, p.EndedAt = "Completed", "alice", at(2*time.Second), ptr(at(2*time.Second))
		_, err = b.s.UpdateWorkItem(b.ctx, p)
		require.NoError(t, err)
		requireWorklist(t, b, store.ListWorklistParams{Principals: []store.Principal{alice, clerks, bosses}, Limit: 10}, other)
	})

	t.Run("Filters", func(t *testing.T) {
		b := h.setup(t)
		due := func(wi store.WorkItem, d time.Duration) store.WorkItem { wi.DueAt = ptr(at(d)); return wi }
		state := func(wi store.WorkItem, s string) store.WorkItem { wi.State = s; return wi }
		w1 := insertItem(t, b, due(offered("order", "Check", 9), time.Hour), alice)
		w2 := insertItem(t, b, state(offered("order", "Approve", 8), "Started"), clerks)
		w3 := insertItem(t, b, due(offered("claim", "Check", 7), 2*time.Hour), clerks)
		w4 := insertItem(t, b, state(due(offered("claim", "Pay", 6), 30*time.Minute), "Suspended"), alice, clerks)
		w5 := insertItem(t, b, offered("leave", "Approve", -1), finance)
		me := []store.Principal{alice, clerks, finance}
		list := func(p store.ListWorklistParams) store.ListWorklistParams { p.Principals, p.Limit = me, 10; return p }

		requireWorklist(t, b, list(store.ListWorklistParams{}), w1, w2, w3, w4, w5)
		requireWorklist(t, b, list(store.ListWorklistParams{States: []string{"Offered"}}), w1, w3, w5)
		requireWorklist(t, b, list(store.ListWorklistParams{States: []string{"Started", "Suspended"}}), w2, w4)
		requireWorklist(t, b, list(store.ListWorklistParams{ProcessDefIDs: []string{"claim"}}), w3, w4)
		requireWorklist(t, b, list(store.ListWorklistParams{ProcessDefIDs: []string{"leave", "order", "leave"}}), w1, w2, w5)
		requireWorklist(t, b, list(store.ListWorklistParams{ProcessDefIDs: []string{"none"}}))
		requireWorklist(t, b, list(store.ListWorklistParams{ActivityDefIDs: []string{"Check"}}), w1, w3)
		requireWorklist(t, b, list(store.ListWorklistParams{ActivityDefIDs: []string{"Approve", "Pay"}}), w2, w4, w5)
		requireWorklist(t, b, list(store.ListWorklistParams{MinPriority: ptr(7)}), w1, w2, w3)
		requireWorklist(t, b, list(store.ListWorklistParams{MinPriority: ptr(-1)}), w1, w2, w3, w4, w5)
		requireWorklist(t, b, list(store.ListWorklistParams{MinPriority: ptr(100)}))
		requireWorklist(t, b, list(store.ListWorklistParams{DueBefore: ptr(at(time.Hour))}), w4)
		requireWorklist(t, b, list(store.ListWorklistParams{DueBefore: ptr(at(time.Hour + time.Microsecond))}), w1, w4)
		requireWorklist(t, b, list(store.ListWorklistParams{
			States: []string{"Offered", "Suspended"}, ProcessDefIDs: []string{"claim", "order"}, ActivityDefIDs: []string{"Check", "Pay"},
			MinPriority: ptr(6), DueBefore: ptr(at(3 * time.Hour)),
		}), w1, w3, w4)
		requireWorklist(t, b, list(store.ListWorklistParams{ProcessDefIDs: []string{"claim"}, After: &store.WorklistCursor{Priority: 7, ID: w3.ID}}), w4)
	})

	t.Run("CursorPagesAreStable", func(t *testing.T) {
		b := h.setup(t)
		me := []store.Principal{alice, clerks, bosses}
		var all []store.WorkItem
		for i := range 30 {
			vis := [][]store.Principal{{alice}, {clerks}, {bosses, clerks}, {alice, bosses}, {bob}}[i%5]
			process := []string{"order", "claim"}[i%2]
			wi := insertItem(t, b, offered(process, "Check", []int{2, 0, -1, 2, 5, 0}[i%6]), vis...)
			if !slices.Equal(vis, []store.Principal{bob}) {
				all = append(all, wi)
			}
		}
		sortWorklist(all)
		for _, limit := range []int{1, 2, 5, 7, 24, 1000} {
			require.Equal(t, all, walkWorklist(t, b, store.ListWorklistParams{Principals: me, Limit: limit}), "limit %d", limit)
		}
		var claims []store.WorkItem
		for _, wi := range all {
			if wi.ProcessDefID == "claim" {
				claims = append(claims, wi)
			}
		}
		require.Equal(t, claims, walkWorklist(t, b, store.ListWorklistParams{Principals: me, ProcessDefIDs: []string{"claim"}, Limit: 3}))

		// A page walk goes on where it stopped, whatever is inserted
		// before the cursor meanwhile.
		first, err := b.s.ListWorklist(b.ctx, store.ListWorklistParams{Principals: me, Limit: 10})
		require.NoError(t, err)
		require.Equal(t, all[:10], first)
		insertItem(t, b, offered("order", "Check", 50), alice)
		later := insertItem(t, b, offered("order", "Check", first[9].Priority), alice) // same priority, higher id: after the cursor
		want := append(slices.Clone(all[10:]), later)
		sortWorklist(want)
		require.Equal(t, want, walkWorklist(t, b, store.ListWorklistParams{
			Principals: me, Limit: 10, After: &store.WorklistCursor{Priority: first[9].Priority, ID: first[9].ID},
		}))
	})

	t.Run("ManyPrincipals", func(t *testing.T) {
		// More principals, and principal-process pairs, than one
		// statement takes.
		b := h.setup(t)
		var me []store.Principal
		var all, first40 []store.WorkItem
		for i := range 150 {
			role := store.Principal{Kind: store.PrincipalRole, ID: fmt.Sprintf("r%03d", i)}
			me = append(me, role)
			wi := insertItem(t, b, offered(fmt.Sprintf("p%d", i%3), "A", i%7), role, bob)
			all = append(all, wi)
			if i < 40 && wi.ProcessDefID != "p2" {
				first40 = append(first40, wi)
			}
		}
		sortWorklist(all)
		sortWorklist(first40)
		me = append(me, bob)
		require.Equal(t, all, walkWorklist(t, b, store.ListWorklistParams{Principals: me, Limit: 40}))
		requireWorklist(t, b, store.ListWorklistParams{Principals: me, Limit: 25}, all[:25]...)
		var p01 []store.WorkItem
		for _, wi := range all {
			if wi.ProcessDefID != "p2" {
				p01 = append(p01, wi)
			}
		}
		require.Equal(t, p01, walkWorklist(t, b, store.ListWorklistParams{Principals: me, ProcessDefIDs: []string{"p0", "p1"}, Limit: 33}))
		require.Equal(t, first40, walkWorklist(t, b, store.ListWorklistParams{Principals: me[:40], ProcessDefIDs: []string{"p0", "p1", "p9"}, Limit: 7}))
	})

	t.Run("MatchesReference", func(t *testing.T) {
		// Random worklists against a plain filter-and-sort of the items.
		b := h.setup(t)
		rng := rand.New(rand.NewPCG(1, 2))
		pool := []store.Principal{alice, bob, clerks, bosses, finance}
		type stored struct {
			item    store.WorkItem
			visible []store.Principal
		}
		var items []stored
		for range 80 {
			wi := offered([]string{"order", "claim", "leave"}[rng.IntN(3)], []string{"A", "B"}[rng.IntN(2)], rng.IntN(7)-3)
			wi.State = []string{"Offered", "Started"}[rng.IntN(2)]
			if rng.IntN(2) == 0 {
				wi.DueAt = ptr(at(time.Duration(rng.IntN(10)) * time.Hour))
			}
			var vis []store.Principal
			for _, p := range pool {
				if rng.IntN(3) == 0 {
					vis = append(vis, p)
				}
			}
			it := stored{item: insertItem(t, b, wi, vis...), visible: vis}
			if rng.IntN(4) == 0 { // some move on, to other principals
				it.visible = []store.Principal{pool[rng.IntN(len(pool))]}
				p := updateOf(it.item, it.visible...)
				p.Priority, p.UpdatedAt = rng.IntN(7)-3, at(time.Second)
				_, err := b.s.UpdateWorkItem(b.ctx, p)
				require.NoError(t, err)
				it.item, err = b.s.GetWorkItem(b.ctx, it.item.ID)
				require.NoError(t, err)
			}
			items = append(items, it)
		}
		pick := func(from []string) []string {
			var out []string
			for _, s := range from {
				if rng.IntN(2) == 0 {
					out = append(out, s)
				}
			}
			return out
		}
		for i := range 60 {
			params := store.ListWorklistParams{Limit: 1 + rng.IntN(12)}
			for len(params.Principals) == 0 {
				for _, p := range pool {
					if rng.IntN(2) == 0 {
						params.Principals = append(params.Principals, p)
					}
				}
			}
			if rng.IntN(3) == 0 {
				params.States = pick([]string{"Offered", "Started"})
			}
			if rng.IntN(3) == 0 {
				params.ProcessDefIDs = pick([]string{"order", "claim", "leave"})
			}
			if rng.IntN(4) == 0 {
				params.ActivityDefIDs = pick([]string{"A", "B"})
			}
			if rng.IntN(4) == 0 {
				params.MinPriority = ptr(rng.IntN(7) - 3)
			}
			if rng.IntN(4) == 0 {
				params.DueBefore = ptr(norm(at(time.Duration(rng.IntN(10)) * time.Hour)))
			}
			var want []store.WorkItem
			for _, s := range items {
				wi := s.item
				switch {
				case !slices.ContainsFunc(s.visible, func(p store.Principal) bool { return slices.Contains(params.Principals, p) }),
					len(params.States) > 0 && !slices.Contains(params.States, wi.State),
					len(params.ProcessDefIDs) > 0 && !slices.Contains(params.ProcessDefIDs, wi.ProcessDefID),
					len(params.ActivityDefIDs) > 0 && !slices.Contains(params.ActivityDefIDs, wi.ActivityDefID),
					params.MinPriority != nil && wi.Priority < *params.MinPriority,
					params.DueBefore != nil && (wi.DueAt == nil || !wi.DueAt.Before(*params.DueBefore)):
					continue
				}
				want = append(want, wi)
			}
			sortWorklist(want)
			got := walkWorklist(t, b, params)
			if len(want) == 0 {
				require.Empty(t, got, "query %d: %+v", i, params)
				continue
			}
			require.Equal(t, want, got, "query %d: %+v", i, params)
		}
	})

	t.Run("InvalidParams", func(t *testing.T) {
		b := h.setup(t)
		wi := insertItem(t, b, offered("order", "A", 0), alice)
		for name, p := range map[string]store.ListWorklistParams{
			"NoPrincipals":      {Limit: 10},
			"PrincipalNoKind":   {Principals: []store.Principal{{ID: "alice"}}, Limit: 10},
			"PrincipalNoID":     {Principals: []store.Principal{{Kind: store.PrincipalUser}}, Limit: 10},
			"NoLimit":           {Principals: []store.Principal{alice}},
			"NegativeLimit":     {Principals: []store.Principal{alice}, Limit: -1},
			"LimitTooLarge":     {Principals: []store.Principal{alice}, Limit: store.MaxWorklistLimit + 1},
			"CursorPriority":    {Principals: []store.Principal{alice}, Limit: 10, After: &store.WorklistCursor{Priority: math.MinInt64, ID: 1}},
			"MinPriorityLowest": {Principals: []store.Principal{alice}, Limit: 10, MinPriority: ptr(math.MinInt64)},
		} {
			_, err := b.s.ListWorklist(b.ctx, p)
			require.Error(t, err, name)
		}
		requireWorklist(t, b, store.ListWorklistParams{Principals: []store.Principal{alice}, Limit: 1}, wi)
		requireWorklist(t, b, store.ListWorklistParams{Principals: []store.Principal{alice}, Limit: store.MaxWorklistLimit}, wi)
	})

	t.Run("ExtremePriorities", func(t *testing.T) {
		b := h.setup(t)
		top := insertItem(t, b, offered("order", "A", math.MaxInt64), alice)
		bottom := insertItem(t, b, offered("order", "A", math.MinInt64+1), alice)
		zero := insertItem(t, b, offered("order", "A", 0), alice)
		require.Equal(t, []store.WorkItem{top, zero, bottom}, walkWorklist(t, b, store.ListWorklistParams{Principals: []store.Principal{alice}, Limit: 1}))
		requireWorklist(t, b, store.ListWorklistParams{Principals: []store.Principal{alice}, MinPriority: ptr(math.MaxInt64), Limit: 10}, top)
		requireWorklist(t, b, store.ListWorklistParams{Principals: []store.Principal{alice}, MinPriority: ptr(math.MinInt64 + 1), Limit: 10}, top, zero, bottom)
	})

	t.Run("RolledBackWithTheTransaction", func(t *testing.T) {
		b := h.setup(t)
		wi := insertItem(t, b, offered("order", "A", 0), clerks)
		errStop := errors.New("stop")
		err := b.s.InTx(b.ctx, func(ctx context.Context, tx store.Tx) error {
			_, err := tx.InsertWorkItem(ctx, store.InsertWorkItemParams{Item: offered("order", "B", 1), VisibleTo: []store.Principal{alice}})
			require.NoError(t, err)
			p := updateOf(wi, alice)
			_, err = tx.UpdateWorkItem(ctx, p)
			require.NoError(t, err)
			got, err := tx.ListWorklist(ctx, store.ListWorklistParams{Principals: []store.Principal{alice}, Limit: 10})
			require.NoError(t, err)
			require.Len(t, got, 2, "the transaction sees its own writes")
			return errStop
		})
		require.ErrorIs(t, err, errStop)
		requireWorklist(t, b, store.ListWorklistParams{Principals: []store.Principal{alice}, Limit: 10})
		requireWorklist(t, b, store.ListWorklistParams{Principals: []store.Principal{clerks}, Limit: 10}, wi)
	})
}
