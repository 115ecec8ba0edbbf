package storetest

import (
	"math"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/goxpdl/goxpdl/store"
)

var (
	alice   = store.Principal{Kind: store.PrincipalUser, ID: "alice"}
	bob     = store.Principal{Kind: store.PrincipalUser, ID: "bob"}
	clerks  = store.Principal{Kind: store.PrincipalRole, ID: "clerks"}
	bosses  = store.Principal{Kind: store.PrincipalRole, ID: "bosses"}
	finance = store.Principal{Kind: store.PrincipalUnit, ID: "finance"}
)

// offered returns an unstored Offered work item of process instance 1,
// with a new id.
func offered(process, activity string, priority int) store.WorkItem {
	return store.WorkItem{
		ID: nextID(), ProcessInstanceID: 1, ActivityInstanceID: 2, ProcessDefID: process, ActivityDefID: activity,
		Name: activity, State: "Offered", Priority: priority, CreatedAt: t0, UpdatedAt: t0,
	}
}

// insertItem stores item, visible to visibleTo, with a new id unless it
// has one.
func insertItem(t *testing.T, b bundle, item store.WorkItem, visibleTo ...store.Principal) store.WorkItem {
	t.Helper()
	if item.ID == 0 {
		item.ID = nextID()
	}
	wi, err := b.s.InsertWorkItem(b.ctx, store.InsertWorkItemParams{Item: item, VisibleTo: visibleTo})
	require.NoError(t, err)
	return wi
}

// updateOf returns the params of an update that leaves wi as it is, with
// no version or state check.
func updateOf(wi store.WorkItem, visibleTo ...store.Principal) store.UpdateWorkItemParams {
	return store.UpdateWorkItemParams{
		ID: wi.ID, State: wi.State, Performer: wi.Performer, Owner: wi.Owner, Assignees: wi.Assignees,
		Priority: wi.Priority, DueAt: wi.DueAt, CompletedBy: wi.CompletedBy, CompletionKey: wi.CompletionKey,
		Result: wi.Result, UpdatedAt: wi.UpdatedAt, EndedAt: wi.EndedAt, VisibleTo: visibleTo,
	}
}

func (h *harness) testWorkItems(t *testing.T) {
	t.Run("RoundTrip", func(t *testing.T) {
		b := h.setup(t)
		in := store.WorkItem{
			ID: 55, ProcessInstanceID: 3, ActivityInstanceID: 4, ProcessDefID: "order", ActivityDefID: "Approve",
			Name: "Approve order 7", State: "Completed", Performer: "alice",
			Assignees: []store.Principal{clerks, alice}, Owner: "alice", Priority: -3, DueAt: ptr(at(time.Hour)),
			Version: 9, CompletedBy: "alice", CompletionKey: "req-1", Result: []byte(`{"ok":true}`),
			CreatedAt: t0, UpdatedAt: at(time.Second), EndedAt: ptr(at(time.Minute)),
		}
		wi, err := b.s.InsertWorkItem(b.ctx, store.InsertWorkItemParams{Item: in})
		require.NoError(t, err)
		require.Equal(t, in.ID, wi.ID, "the caller's id")
		want := in
		want.Version = 1
		want.CreatedAt, want.UpdatedAt, want.EndedAt, want.DueAt = norm(in.CreatedAt), norm(in.UpdatedAt), normPtr(in.EndedAt), normPtr(in.DueAt)
		require.Equal(t, want, wi)
		got, err := b.s.GetWorkItem(b.ctx, wi.ID)
		require.NoError(t, err)
		require.Equal(t, want, got)
		_, err = b.s.InsertWorkItem(b.ctx, store.InsertWorkItemParams{Item: in})
		require.ErrorIs(t, err, store.ErrDuplicate, "an id already stored")

		open, err := b.s.InsertWorkItem(b.ctx, store.InsertWorkItemParams{Item: store.WorkItem{
			ID: nextID(), ProcessInstanceID: 3, ActivityInstanceID: 5, State: "Offered", Assignees: []store.Principal{}, Result: []byte{},
			CreatedAt: t0, UpdatedAt: t0,
		}})
		require.NoError(t, err)
		got, err = b.s.GetWorkItem(b.ctx, open.ID)
		require.NoError(t, err)
		require.Equal(t, store.WorkItem{
			ID: open.ID, ProcessInstanceID: 3, ActivityInstanceID: 5, State: "Offered", Version: 1,
			CreatedAt: norm(t0), UpdatedAt: norm(t0),
		}, got, "empty slices read back as nil, zero values as zero")
	})

	t.Run("Update", func(t *testing.T) {
		b := h.setup(t)
		wi := insertItem(t, b, offered("order", "Approve", 1))

		v, err := b.s.UpdateWorkItem(b.ctx, store.UpdateWorkItemParams{
			ID: wi.ID, ExpectedState: "Offered", State: "Assigned", Performer: "bob", Owner: "bob",
			Assignees: []store.Principal{bob}, Priority: 5, DueAt: ptr(at(time.Hour)), UpdatedAt: at(time.Second),
		})
		require.NoError(t, err)
		require.Equal(t, int64(2), v)
		// Setting the same values again is no error (MySQL reports no
		// changed row for it), and it is a new version all the same.
		v, err = b.s.UpdateWorkItem(b.ctx, store.UpdateWorkItemParams{
			ID: wi.ID, ExpectedState: "Assigned", State: "Assigned", Performer: "bob", Owner: "bob",
			Assignees: []store.Principal{bob}, Priority: 5, DueAt: ptr(at(time.Hour)), UpdatedAt: at(time.Second),
		})
		require.NoError(t, err)
		require.Equal(t, int64(3), v)
		v, err = b.s.UpdateWorkItem(b.ctx, store.UpdateWorkItemParams{
			ID: wi.ID, ExpectedVersion: 3, ExpectedState: "Assigned", State: "Completed", Performer: "bob", Owner: "bob",
			Assignees: []store.Principal{bob}, Priority: 5, DueAt: ptr(at(time.Hour)),
			CompletedBy: "bob", CompletionKey: "k1", SuspendedFrom: "Started", Result: []byte(`{"x":1}`),
			UpdatedAt: at(2 * time.Second), EndedAt: ptr(at(2 * time.Second)),
		})
		require.NoError(t, err)
		require.Equal(t, int64(4), v)

		got, err := b.s.GetWorkItem(b.ctx, wi.ID)
		require.NoError(t, err)
		want := wi
		want.State, want.Performer, want.Owner, want.Assignees, want.Priority = "Completed", "bob", "bob", []store.Principal{bob}, 5
		want.DueAt, want.Version, want.CompletedBy, want.CompletionKey, want.Result = normPtr(ptr(at(time.Hour))), 4, "bob", "k1", []byte(`{"x":1}`)
		want.UpdatedAt, want.EndedAt, want.SuspendedFrom = norm(at(2*time.Second)), normPtr(ptr(at(2*time.Second))), "Started"
		require.Equal(t, want, got)

		// Without checks the update is unconditional, and it replaces:
		// zero values clear the fields.
		v, err = b.s.UpdateWorkItem(b.ctx, store.UpdateWorkItemParams{ID: wi.ID, State: "Offered", UpdatedAt: at(4 * time.Second)})
		require.NoError(t, err)
		require.Equal(t, int64(5), v)
		got, err = b.s.GetWorkItem(b.ctx, wi.ID)
		require.NoError(t, err)
		want = wi
		want.Version, want.Priority, want.UpdatedAt = 5, 0, norm(at(4*time.Second))
		require.Equal(t, want, got, "everything but the ids, names and CreatedAt replaced")
	})

	t.Run("Conflicts", func(t *testing.T) {
		b := h.setup(t)
		wi := insertItem(t, b, offered("order", "Approve", 1), alice)
		_, err := b.s.UpdateWorkItem(b.ctx, store.UpdateWorkItemParams{ID: wi.ID, State: "Started", Owner: "alice", UpdatedAt: at(time.Second), VisibleTo: []store.Principal{alice}})
		require.NoError(t, err)
		current, err := b.s.GetWorkItem(b.ctx, wi.ID)
		require.NoError(t, err)
		require.Equal(t, int64(2), current.Version)

		stale := updateOf(wi, bob)
		stale.State, stale.UpdatedAt = "Completed", at(2*time.Second)
		for name, check := range map[string]func(p *store.UpdateWorkItemParams){
			"StaleVersion":          func(p *store.UpdateWorkItemParams) { p.ExpectedVersion = 1 },
			"StaleState":            func(p *store.UpdateWorkItemParams) { p.ExpectedState = "Offered" },
			"StaleVersionGoodState": func(p *store.UpdateWorkItemParams) { p.ExpectedVersion, p.ExpectedState = 1, "Started" },
			"GoodVersionStaleState": func(p *store.UpdateWorkItemParams) { p.ExpectedVersion, p.ExpectedState = 2, "Offered" },
		} {
			p := stale
			check(&p)
			_, err := b.s.UpdateWorkItem(b.ctx, p)
			require.ErrorIs(t, err, store.ErrConflict, name)
			require.NotErrorIs(t, err, store.ErrNotFound, name)
		}
		got, err := b.s.GetWorkItem(b.ctx, wi.ID)
		require.NoError(t, err)
		require.Equal(t, current, got, "a failed check changes nothing")
		requireWorklist(t, b, store.ListWorklistParams{Principals: []store.Principal{alice}, Limit: 10}, current)
		requireWorklist(t, b, store.ListWorklistParams{Principals: []store.Principal{bob}, Limit: 10})

		p := stale
		p.ExpectedVersion, p.ExpectedState = 2, "Started"
		v, err := b.s.UpdateWorkItem(b.ctx, p)
		require.NoError(t, err)
		require.Equal(t, int64(3), v)
	})

	t.Run("ConcurrentUpdateOneWins", func(t *testing.T) {
		b := h.setup(t)
		wi := insertItem(t, b, offered("order", "Approve", 1), clerks)
		const n = 4
		errs := make([]error, n)
		var wg sync.WaitGroup
		for i := range n {
			wg.Go(func() {
				p := updateOf(wi, alice)
				p.ExpectedVersion, p.State, p.Owner = 1, "Allocated", "alice"
				_, errs[i] = b.s.UpdateWorkItem(b.ctx, p)
			})
		}
		wg.Wait()
		wins := 0
		for _, err := range errs {
			if err == nil {
				wins++
				continue
			}
			require.ErrorIs(t, err, store.ErrConflict)
		}
		require.Equal(t, 1, wins)
		got, err := b.s.GetWorkItem(b.ctx, wi.ID)
		require.NoError(t, err)
		require.Equal(t, int64(2), got.Version)
	})

	t.Run("NotFound", func(t *testing.T) {
		b := h.setup(t)
		_, err := b.s.GetWorkItem(b.ctx, 12345)
		require.ErrorIs(t, err, store.ErrNotFound)
		for _, p := range []store.UpdateWorkItemParams{
			{ID: 12345, State: "Completed", UpdatedAt: t0},
			{ID: 12345, ExpectedState: "Offered", State: "Completed", UpdatedAt: t0},
			{ID: 12345, ExpectedVersion: 1, State: "Completed", UpdatedAt: t0, VisibleTo: []store.Principal{alice}},
		} {
			_, err = b.s.UpdateWorkItem(b.ctx, p)
			require.ErrorIs(t, err, store.ErrNotFound)
			require.NotErrorIs(t, err, store.ErrConflict)
		}
		requireWorklist(t, b, store.ListWorklistParams{Principals: []store.Principal{alice}, Limit: 10})
	})

	t.Run("InvalidParams", func(t *testing.T) {
		b := h.setup(t)
		for name, p := range map[string]store.InsertWorkItemParams{
			"ZeroCreatedAt":  {Item: store.WorkItem{ID: nextID(), State: "Offered", UpdatedAt: t0}},
			"ZeroUpdatedAt":  {Item: store.WorkItem{ID: nextID(), State: "Offered", CreatedAt: t0}},
			"ZeroItemID":     {Item: store.WorkItem{State: "Offered", CreatedAt: t0, UpdatedAt: t0}},
			"NoKind":         {Item: offered("p", "a", 0), VisibleTo: []store.Principal{alice, {ID: "x"}}},
			"NoID":           {Item: offered("p", "a", 0), VisibleTo: []store.Principal{{Kind: store.PrincipalRole}}},
			"LowestPriority": {Item: offered("p", "a", math.MinInt64)},
		} {
			_, err := b.s.InsertWorkItem(b.ctx, p)
			require.Error(t, err, name)
		}
		list, err := b.s.ListWorkItems(b.ctx, store.ListWorkItemsParams{})
		require.NoError(t, err)
		require.Empty(t, list, "nothing inserted")
		requireWorklist(t, b, store.ListWorklistParams{Principals: []store.Principal{alice}, Limit: 10})

		wi := insertItem(t, b, offered("p", "a", 0), alice)
		for name, p := range map[string]store.UpdateWorkItemParams{
			"ZeroUpdatedAt":  {ID: wi.ID, State: "Offered", VisibleTo: []store.Principal{bob}},
			"NoKind":         {ID: wi.ID, State: "Offered", UpdatedAt: t0, VisibleTo: []store.Principal{bob, {ID: "x"}}},
			"LowestPriority": {ID: wi.ID, State: "Offered", UpdatedAt: t0, Priority: math.MinInt64},
		} {
			_, err := b.s.UpdateWorkItem(b.ctx, p)
			require.Error(t, err, name)
		}
		got, err := b.s.GetWorkItem(b.ctx, wi.ID)
		require.NoError(t, err)
		require.Equal(t, wi, got)
		requireWorklist(t, b, store.ListWorklistParams{Principals: []store.Principal{alice}, Limit: 10}, wi)
	})

	t.Run("ListFiltersAndPages", func(t *testing.T) {
		b := h.setup(t)
		insert := func(pi, ai int64, state string) store.WorkItem {
			return insertItem(t, b, store.WorkItem{ProcessInstanceID: pi, ActivityInstanceID: ai, State: state, CreatedAt: t0, UpdatedAt: t0})
		}
		w1, w2, w3, w4 := insert(1, 10, "Offered"), insert(2, 20, "Offered"), insert(1, 11, "Completed"), insert(1, 10, "Offered")
		list := func(params store.ListWorkItemsParams) []store.WorkItem {
			t.Helper()
			l, err := b.s.ListWorkItems(b.ctx, params)
			require.NoError(t, err)
			return l
		}
		require.Equal(t, []store.WorkItem{w1, w2, w3, w4}, list(store.ListWorkItemsParams{}))
		require.Equal(t, []store.WorkItem{w1, w3, w4}, list(store.ListWorkItemsParams{ProcessInstanceID: 1}))
		require.Equal(t, []store.WorkItem{w1, w4}, list(store.ListWorkItemsParams{ProcessInstanceID: 1, States: []string{"Offered"}}))
		require.Equal(t, []store.WorkItem{w1, w2, w4}, list(store.ListWorkItemsParams{States: []string{"Offered"}}))
		require.Equal(t, []store.WorkItem{w1, w4}, list(store.ListWorkItemsParams{ActivityInstanceID: 10}))
		require.Equal(t, []store.WorkItem{w4}, list(store.ListWorkItemsParams{ActivityInstanceID: 10, AfterID: w1.ID}))
		require.Empty(t, list(store.ListWorkItemsParams{ActivityInstanceID: 11, States: []string{"Offered"}}))
		require.Empty(t, list(store.ListWorkItemsParams{ActivityInstanceID: 20, ProcessInstanceID: 1}))
		require.Equal(t, []store.WorkItem{w2, w3}, list(store.ListWorkItemsParams{AfterID: w1.ID, Limit: 2}))
		require.Equal(t, []store.WorkItem{w4}, list(store.ListWorkItemsParams{AfterID: w3.ID, Limit: 2}))
		require.Empty(t, list(store.ListWorkItemsParams{AfterID: w4.ID}))
	})

	t.Run("ListByOwnerAndPerformer", func(t *testing.T) {
		b := h.setup(t)
		insert := func(performer, owner string) store.WorkItem {
			return insertItem(t, b, store.WorkItem{ProcessInstanceID: 1, ActivityInstanceID: 10, State: "Allocated", Performer: performer, Owner: owner, CreatedAt: t0, UpdatedAt: t0})
		}
		w1, w2, w3 := insert("clerk", "alice"), insert("clerk", ""), insert("Clerk", "Alice")
		list := func(params store.ListWorkItemsParams) []store.WorkItem {
			t.Helper()
			l, err := b.s.ListWorkItems(b.ctx, params)
			require.NoError(t, err)
			return l
		}
		require.Equal(t, []store.WorkItem{w1}, list(store.ListWorkItemsParams{Owner: "alice"}), "case-sensitive")
		require.Equal(t, []store.WorkItem{w3}, list(store.ListWorkItemsParams{Owner: "Alice"}))
		require.Equal(t, []store.WorkItem{w1, w2}, list(store.ListWorkItemsParams{Performer: "clerk"}))
		require.Equal(t, []store.WorkItem{w2}, list(store.ListWorkItemsParams{Performer: "clerk", AfterID: w1.ID}))
		require.Empty(t, list(store.ListWorkItemsParams{Performer: "Clerk", Owner: "alice"}))
	})

	t.Run("ListByActivityDueAndVisibility", func(t *testing.T) {
		b := h.setup(t)
		due := func(d time.Duration) *time.Time { at := t0.Add(d); return &at }
		item := func(activity string, dueAt *time.Time, owner string) store.WorkItem {
			wi := offered("p", activity, 0)
			wi.DueAt, wi.Owner = dueAt, owner
			if owner != "" {
				wi.State = "Allocated"
			}
			return wi
		}
		w1 := insertItem(t, b, item("Review", due(time.Hour), ""), clerks, bob)
		w2 := insertItem(t, b, item("Review", due(-time.Hour), "alice"), alice)
		w3 := insertItem(t, b, item("Approve", nil, ""), bosses)
		w4 := insertItem(t, b, item("Approve", due(-2*time.Hour), ""), clerks)
		list := func(params store.ListWorkItemsParams) []int64 {
			t.Helper()
			l, err := b.s.ListWorkItems(b.ctx, params)
			require.NoError(t, err)
			return ids(l, func(wi store.WorkItem) int64 { return wi.ID })
		}
		require.Equal(t, []int64{w1.ID, w2.ID}, list(store.ListWorkItemsParams{ActivityDefID: "Review"}))
		require.Equal(t, []int64{w2.ID, w4.ID}, list(store.ListWorkItemsParams{DueBefore: &t0}), "no deadline is never due")
		require.Equal(t, []int64{w4.ID}, list(store.ListWorkItemsParams{DueBefore: &t0, ActivityDefID: "Approve"}))
		require.Equal(t, []int64{w1.ID, w4.ID}, list(store.ListWorkItemsParams{VisibleTo: &clerks}))
		require.Equal(t, []int64{w2.ID}, list(store.ListWorkItemsParams{VisibleTo: &alice}))
		require.Equal(t, []int64{w1.ID}, list(store.ListWorkItemsParams{VisibleTo: &bob}))
		require.Equal(t, []int64{w4.ID}, list(store.ListWorkItemsParams{VisibleTo: &clerks, AfterID: w1.ID}))
		require.Equal(t, []int64{w3.ID}, list(store.ListWorkItemsParams{VisibleTo: &bosses}))
		require.Empty(t, list(store.ListWorkItemsParams{VisibleTo: &finance}))
		require.Empty(t, list(store.ListWorkItemsParams{VisibleTo: &store.Principal{Kind: store.PrincipalUnit, ID: "clerks"}}), "the kind counts")

		// Claimed, the item leaves the role's worklist for its owner's;
		// completed, it leaves every worklist.
		w1.State, w1.Owner = "Allocated", "bob"
		_, err := b.s.UpdateWorkItem(b.ctx, updateOf(w1, bob))
		require.NoError(t, err)
		require.Equal(t, []int64{w4.ID}, list(store.ListWorkItemsParams{VisibleTo: &clerks}))
		require.Equal(t, []int64{w1.ID}, list(store.ListWorkItemsParams{VisibleTo: &bob}))
		w1.State = "Completed"
		_, err = b.s.UpdateWorkItem(b.ctx, updateOf(w1))
		require.NoError(t, err)
		require.Empty(t, list(store.ListWorkItemsParams{VisibleTo: &bob}))
	})
}
