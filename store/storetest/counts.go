package storetest

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/goxpdl/goxpdl/store"
)

// requireCounts checks CountProcessInstanceGroups (and the counts by
// state and by definition built on it) against a scan of the instances.
func requireCounts(t *testing.T, b bundle) {
	t.Helper()
	all, err := b.s.ListProcessInstances(b.ctx, store.ListProcessInstancesParams{})
	require.NoError(t, err)
	want := map[string]int64{}
	byState := map[string]int64{}
	for _, pi := range all {
		want[fmt.Sprintf("%d/%s/%s", pi.DefinitionID, pi.ProcessDefID, pi.State)]++
		byState[pi.State]++
	}
	groups, err := b.s.CountProcessInstanceGroups(b.ctx)
	require.NoError(t, err)
	got := map[string]int64{}
	for _, g := range groups {
		got[fmt.Sprintf("%d/%s/%s", g.DefinitionID, g.ProcessDefID, g.State)] = g.N
	}
	require.Equal(t, want, got)
	require.True(t, slices.IsSortedFunc(groups, func(a, b store.InstanceCount) int {
		return cmp.Or(cmp.Compare(a.DefinitionID, b.DefinitionID), strings.Compare(a.ProcessDefID, b.ProcessDefID), strings.Compare(a.State, b.State))
	}), "groups in definition, process, state order")
	states, err := b.s.CountProcessInstancesByState(b.ctx)
	require.NoError(t, err)
	require.Equal(t, byState, states)
}

func (h *harness) testCounts(t *testing.T) {
	t.Run("KeptByEveryWrite", func(t *testing.T) {
		b := h.setup(t)
		d1, d2 := newDefinition(t, b), newDefinition(t, b)
		requireCounts(t, b)
		one := newProcessInstance(t, b, d1.ID)
		bulk, err := b.s.InsertProcessInstances(b.ctx, []store.ProcessInstance{
			{ID: nextID(), DefinitionID: d1.ID, ProcessDefID: "main", State: "Running", CreatedAt: t0, UpdatedAt: t0},
			{ID: nextID(), DefinitionID: d1.ID, ProcessDefID: "other", State: "Suspended", CreatedAt: t0, UpdatedAt: t0},
			{ID: nextID(), DefinitionID: d2.ID, ProcessDefID: "main", State: "Running", CreatedAt: t0, UpdatedAt: t0, BusinessKey: "k"},
		})
		require.NoError(t, err)
		require.Len(t, bulk, 3)
		require.Equal(t, []int64{1, 1, 1}, []int64{bulk[0].Version, bulk[1].Version, bulk[2].Version})
		require.Equal(t, "k", bulk[2].BusinessKey)
		require.True(t, slices.IsSorted([]int64{one.ID, bulk[0].ID, bulk[1].ID, bulk[2].ID}))
		requireCounts(t, b)

		// A change of state, with FromState and without; one that keeps
		// the state; a stale one that fails.
		ended := at(time.Minute)
		v, err := b.s.UpdateProcessInstance(b.ctx, store.UpdateProcessInstanceParams{
			ID: one.ID, ExpectedVersion: 1, FromState: "Running", State: "Completed", UpdatedAt: ended, EndedAt: &ended,
		})
		require.NoError(t, err)
		require.Equal(t, int64(2), v)
		_, err = b.s.UpdateProcessInstance(b.ctx, store.UpdateProcessInstanceParams{
			ID: bulk[1].ID, ExpectedVersion: 1, State: "Running", UpdatedAt: ended,
		})
		require.NoError(t, err)
		_, err = b.s.UpdateProcessInstance(b.ctx, store.UpdateProcessInstanceParams{
			ID: bulk[2].ID, ExpectedVersion: 1, FromState: "Running", State: "Running", Diagnosis: "same state", UpdatedAt: ended,
		})
		require.NoError(t, err)
		_, err = b.s.UpdateProcessInstance(b.ctx, store.UpdateProcessInstanceParams{
			ID: bulk[0].ID, ExpectedVersion: 7, FromState: "Running", State: "Terminated", UpdatedAt: ended,
		})
		require.ErrorIs(t, err, store.ErrConflict)
		_, err = b.s.UpdateProcessInstance(b.ctx, store.UpdateProcessInstanceParams{
			ID: 999_999, ExpectedVersion: 1, State: "Terminated", UpdatedAt: ended,
		})
		require.ErrorIs(t, err, store.ErrNotFound)
		requireCounts(t, b)

		// Inside a transaction, and a transaction rolled back.
		require.NoError(t, b.s.InTx(b.ctx, func(ctx context.Context, tx store.Tx) error {
			_, err := tx.UpdateProcessInstance(ctx, store.UpdateProcessInstanceParams{
				ID: bulk[0].ID, ExpectedVersion: 1, FromState: "Running", State: "Suspended", UpdatedAt: ended,
			})
			return err
		}))
		errRollback := errors.New("roll back")
		require.ErrorIs(t, b.s.InTx(b.ctx, func(ctx context.Context, tx store.Tx) error {
			if _, err := tx.InsertProcessInstance(ctx, store.ProcessInstance{
				ID:           nextID(),
				DefinitionID: d2.ID, ProcessDefID: "main", State: "Running", CreatedAt: t0, UpdatedAt: t0,
			}); err != nil {
				return err
			}
			if _, err := tx.UpdateProcessInstance(ctx, store.UpdateProcessInstanceParams{
				ID: bulk[0].ID, ExpectedVersion: 2, FromState: "Suspended", State: "Running", UpdatedAt: ended,
			}); err != nil {
				return err
			}
			return errRollback
		}), errRollback)
		requireCounts(t, b)

		// A migration moves the instance to the other definition's count.
		_, err = b.s.MigrateProcessInstance(b.ctx, store.MigrateProcessInstanceParams{
			ID: bulk[1].ID, ExpectedVersion: 2, DefinitionID: d2.ID, ProcessDefID: "main", UpdatedAt: ended,
		})
		require.NoError(t, err)
		_, err = b.s.MigrateProcessInstance(b.ctx, store.MigrateProcessInstanceParams{
			ID: bulk[1].ID, ExpectedVersion: 2, DefinitionID: d1.ID, ProcessDefID: "main", UpdatedAt: ended,
		})
		require.ErrorIs(t, err, store.ErrConflict)
		requireCounts(t, b)

		// Folding changes no count, a part or all of it, again and again.
		n, err := b.s.FoldInstanceCounts(b.ctx, 2)
		require.NoError(t, err)
		require.Equal(t, 2, n)
		requireCounts(t, b)
		for {
			n, err := b.s.FoldInstanceCounts(b.ctx, 3)
			require.NoError(t, err)
			requireCounts(t, b)
			if n < 3 {
				break
			}
		}
		n, err = b.s.FoldInstanceCounts(b.ctx, 100)
		require.NoError(t, err)
		require.Zero(t, n, "nothing left to fold")
		_, err = b.s.FoldInstanceCounts(b.ctx, 0)
		require.Error(t, err)

		// A purge takes the instances out of their counts.
		res, err := b.s.PurgeProcessInstances(b.ctx, store.PurgeProcessInstancesParams{
			States: []string{"Completed"}, EndedBefore: at(time.Hour), Limit: 10,
		})
		require.NoError(t, err)
		require.Equal(t, int64(1), res.Instances)
		requireCounts(t, b)
		_, err = b.s.FoldInstanceCounts(b.ctx, 100)
		require.NoError(t, err)
		requireCounts(t, b)
	})

	t.Run("ConcurrentFolds", func(t *testing.T) {
		b := h.setup(t)
		def := newDefinition(t, b)
		for i := range 40 {
			pi := newProcessInstance(t, b, def.ID)
			if i%2 == 0 {
				_, err := b.s.UpdateProcessInstance(b.ctx, store.UpdateProcessInstanceParams{
					ID: pi.ID, ExpectedVersion: 1, FromState: "Running", State: "Suspended", UpdatedAt: t0,
				})
				require.NoError(t, err)
			}
		}
		errs := make(chan error, 4)
		for range 4 {
			go func() {
				for {
					n, err := b.s.FoldInstanceCounts(b.ctx, 5)
					if err != nil || n == 0 {
						errs <- err
						return
					}
				}
			}()
		}
		for range 4 {
			require.NoError(t, <-errs)
		}
		requireCounts(t, b)
		groups, err := b.s.CountProcessInstanceGroups(b.ctx)
		require.NoError(t, err)
		require.Equal(t, []store.InstanceCount{
			{DefinitionID: def.ID, ProcessDefID: "main", State: "Running", N: 20},
			{DefinitionID: def.ID, ProcessDefID: "main", State: "Suspended", N: 20},
		}, groups)
	})

	t.Run("CountMatching", func(t *testing.T) {
		b := h.setup(t)
		def := newDefinition(t, b)
		rows := make([]store.ProcessInstance, 30)
		for i := range rows {
			rows[i] = store.ProcessInstance{
				ID:           nextID(),
				DefinitionID: def.ID, ProcessDefID: "main", State: []string{"Running", "Completed", "Suspended"}[i%3],
				CreatedAt: at(time.Duration(i) * time.Second), UpdatedAt: t0,
			}
		}
		_, err := b.s.InsertProcessInstances(b.ctx, rows)
		require.NoError(t, err)
		for _, tc := range []struct {
			params store.ListProcessInstancesParams
			want   int64
		}{
			{store.ListProcessInstancesParams{}, 30},
			{store.ListProcessInstancesParams{States: []string{"Running"}}, 10},
			{store.ListProcessInstancesParams{States: []string{"Running"}, Limit: 4}, 4},
			{store.ListProcessInstancesParams{Limit: 100}, 30},
			{store.ListProcessInstancesParams{CreatedFrom: ptr(at(10 * time.Second)), CreatedBefore: ptr(at(20 * time.Second))}, 10},
			{store.ListProcessInstancesParams{PackageID: "nope"}, 0},
		} {
			n, err := b.s.CountProcessInstances(b.ctx, tc.params)
			require.NoError(t, err)
			require.Equal(t, tc.want, n, "%+v", tc.params)
		}
	})

	t.Run("Orders", func(t *testing.T) {
		b := h.setup(t)
		defs := []store.Definition{newDefinition(t, b), newDefinition(t, b)} // versions 1 and 2 of "pkg"
		// Start times out of id order, with ties, in two definitions and
		// three states.
		offsets := []int{5, 3, 3, 9, 0, 3, 7, 1, 9, 2, 4, 3, 8, 0}
		rows := make([]store.ProcessInstance, len(offsets))
		for i, o := range offsets {
			rows[i] = store.ProcessInstance{
				ID:           nextID(),
				DefinitionID: defs[i%2].ID, ProcessDefID: "main", State: []string{"Running", "Suspended", "Completed"}[i%3],
				CreatedAt: at(time.Duration(o) * time.Second), UpdatedAt: t0,
			}
		}
		_, err := b.s.InsertProcessInstances(b.ctx, rows)
		require.NoError(t, err)
		for _, tc := range []struct {
			name   string
			order  store.InstanceOrder
			filter store.ListProcessInstancesParams
		}{
			{"all by id", store.OrderID, store.ListProcessInstancesParams{}},
			{"all by id desc", store.OrderIDDesc, store.ListProcessInstancesParams{}},
			{"all by start", store.OrderCreated, store.ListProcessInstancesParams{}},
			{"all by start desc", store.OrderCreatedDesc, store.ListProcessInstancesParams{}},
			// Several definitions and states: a union of index walks.
			{"package and states by id desc", store.OrderIDDesc, store.ListProcessInstancesParams{PackageID: "pkg", States: []string{"Running", "Suspended"}}},
			{"package by start", store.OrderCreated, store.ListProcessInstancesParams{PackageID: "pkg"}},
			{"version and states by start desc", store.OrderCreatedDesc, store.ListProcessInstancesParams{PackageVersion: 2, States: []string{"Completed", "Running"}}},
			{"package and definition by id", store.OrderID, store.ListProcessInstancesParams{PackageID: "pkg", DefinitionID: defs[0].ID}},
			{"unknown package", store.OrderID, store.ListProcessInstancesParams{PackageID: "none"}},
			// Started between, by id: the page's ids from the start index.
			{"started between by id desc", store.OrderIDDesc, store.ListProcessInstancesParams{CreatedFrom: ptr(at(2 * time.Second)), CreatedBefore: ptr(at(8 * time.Second))}},
			{"started after, package and states by id", store.OrderID, store.ListProcessInstancesParams{CreatedFrom: ptr(at(3 * time.Second)), States: []string{"Running", "Completed"}, PackageID: "pkg"}},
		} {
			order := tc.order
			t.Run(tc.name, func(t *testing.T) {
				params := tc.filter
				params.Order = order
				all, err := b.s.ListProcessInstances(b.ctx, params)
				require.NoError(t, err)
				var got []int64
				for _, pi := range all {
					got = append(got, pi.ID)
				}
				var want []int64
				plain := store.ListProcessInstancesParams{Order: order}
				for {
					page, err := b.s.ListProcessInstances(b.ctx, plain)
					require.NoError(t, err)
					for _, pi := range page {
						inDef := tc.filter.DefinitionID == 0 || pi.DefinitionID == tc.filter.DefinitionID
						inPkg := tc.filter.PackageID == "" || tc.filter.PackageID == "pkg"
						inVersion := tc.filter.PackageVersion == 0 || pi.DefinitionID == defs[tc.filter.PackageVersion-1].ID
						inCreated := (tc.filter.CreatedFrom == nil || !pi.CreatedAt.Before(norm(*tc.filter.CreatedFrom))) &&
							(tc.filter.CreatedBefore == nil || pi.CreatedAt.Before(norm(*tc.filter.CreatedBefore)))
						if inDef && inPkg && inVersion && inCreated && (len(tc.filter.States) == 0 || slices.Contains(tc.filter.States, pi.State)) {
							want = append(want, pi.ID)
						}
					}
					if len(page) == 0 {
						break
					}
					last := page[len(page)-1]
					plain.AfterID = last.ID
					if order.Created() {
						plain.AfterCreatedAt = &last.CreatedAt
					}
				}
				require.Equal(t, want, got, "the filter keeps the rows it should, in order")
				if tc.filter.PackageID == "none" {
					require.Empty(t, got)
				}
				require.True(t, slices.IsSortedFunc(all, func(x, y store.ProcessInstance) int {
					c := cmp.Compare(x.ID, y.ID)
					if order.Created() {
						c = cmp.Or(x.CreatedAt.Compare(y.CreatedAt), c)
					}
					if order.Desc() {
						c = -c
					}
					return c
				}), "rows in order %q", order)
				// Pages of three by keyset give the same rows.
				var paged []store.ProcessInstance
				params.Limit = 3
				for {
					page, err := b.s.ListProcessInstances(b.ctx, params)
					require.NoError(t, err)
					paged = append(paged, page...)
					if len(page) < 3 {
						break
					}
					last := page[len(page)-1]
					params.AfterID = last.ID
					if order.Created() {
						params.AfterCreatedAt = &last.CreatedAt
					}
				}
				require.Equal(t, ids(all, func(p store.ProcessInstance) int64 { return p.ID }),
					ids(paged, func(p store.ProcessInstance) int64 { return p.ID }))
			})
		}
		for _, bad := range []store.ListProcessInstancesParams{
			{Order: "sideways"},
			{Order: store.OrderID, AfterCreatedAt: ptr(t0)},
			{Order: store.OrderCreated, AfterID: 3},
		} {
			_, err := b.s.ListProcessInstances(b.ctx, bad)
			require.Error(t, err, "%+v", bad)
			_, err = b.s.CountProcessInstances(b.ctx, bad)
			require.Error(t, err, "%+v", bad)
		}
	})

	t.Run("PerMinute", func(t *testing.T) {
		b := h.setup(t)
		def := newDefinition(t, b)
		minute := t0.Truncate(time.Minute)
		end := func(d time.Duration) *time.Time { return ptr(minute.Add(d)) }
		_, err := b.s.InsertProcessInstances(b.ctx, []store.ProcessInstance{
			{ID: nextID(), DefinitionID: def.ID, ProcessDefID: "main", State: "Running", CreatedAt: minute.Add(-time.Second), UpdatedAt: t0},
			{ID: nextID(), DefinitionID: def.ID, ProcessDefID: "main", State: "Running", CreatedAt: minute, UpdatedAt: t0},
			{ID: nextID(), DefinitionID: def.ID, ProcessDefID: "main", State: "Completed", CreatedAt: minute.Add(59 * time.Second), UpdatedAt: t0, EndedAt: end(61 * time.Second)},
			{ID: nextID(), DefinitionID: def.ID, ProcessDefID: "main", State: "Terminated", CreatedAt: minute.Add(90 * time.Second), UpdatedAt: t0, EndedAt: end(150 * time.Second)},
			{ID: nextID(), DefinitionID: def.ID, ProcessDefID: "main", State: "Completed", CreatedAt: minute.Add(-time.Hour), UpdatedAt: t0, EndedAt: end(170 * time.Second)},
			{ID: nextID(), DefinitionID: def.ID, ProcessDefID: "main", State: "Completed", CreatedAt: minute.Add(time.Hour), UpdatedAt: t0, EndedAt: end(time.Hour)},
		})
		require.NoError(t, err)
		got, err := b.s.CountProcessInstancesPerMinute(b.ctx, store.CountPerMinuteParams{From: minute.Add(30 * time.Second), To: minute.Add(3 * time.Minute)})
		require.NoError(t, err)
		require.Equal(t, []store.MinuteCount{
			{Minute: minute, Started: 2, Ended: map[string]int64{}},
			{Minute: minute.Add(time.Minute), Started: 1, Ended: map[string]int64{"Completed": 1}},
			{Minute: minute.Add(2 * time.Minute), Ended: map[string]int64{"Terminated": 1, "Completed": 1}},
		}, got)
	})

	t.Run("EventBacklog", func(t *testing.T) {
		b := h.setup(t)
		got, err := b.s.EventBacklog(b.ctx, 0)
		require.NoError(t, err)
		require.Equal(t, store.EventBacklog{}, got)
		var evs []store.Event
		for i := range 5 {
			ev := event(fmt.Sprintf("e%d", i), 1)
			ev.CreatedAt = at(time.Duration(i) * time.Second)
			evs = append(evs, ev)
		}
		stored, err := b.s.InsertEvents(b.ctx, evs)
		require.NoError(t, err)
		require.NoError(t, b.s.MarkEventsProcessed(b.ctx, store.MarkEventsProcessedParams{IDs: []int64{stored[0].ID}, ProcessedAt: at(time.Minute)}))
		got, err = b.s.EventBacklog(b.ctx, 0)
		require.NoError(t, err)
		require.Equal(t, store.EventBacklog{Events: 4, Oldest: ptr(norm(at(time.Second)))}, got)
		got, err = b.s.EventBacklog(b.ctx, 2)
		require.NoError(t, err)
		require.Equal(t, int64(2), got.Events)
	})

	t.Run("PendingTimers", func(t *testing.T) {
		b := h.setup(t)
		var timers []store.Timer
		for i := range 6 {
			timers = append(timers, store.Timer{
				ID: nextID(), ProcessInstanceID: 1, ActivityInstanceID: int64(i), Kind: "deadline", State: store.TimerPending,
				DueAt: at(time.Duration(i) * time.Minute), CreatedAt: t0,
			})
		}
		timers[5].State = store.TimerPaused
		_, err := b.s.InsertTimers(b.ctx, timers)
		require.NoError(t, err)
		got, err := b.s.CountPendingTimers(b.ctx, store.CountTimersParams{DueBy: at(2 * time.Minute)})
		require.NoError(t, err)
		require.Equal(t, store.PendingTimerCounts{Due: 3, Pending: 5}, got)
		got, err = b.s.CountPendingTimers(b.ctx, store.CountTimersParams{DueBy: at(2 * time.Minute), Limit: 4})
		require.NoError(t, err)
		require.Equal(t, store.PendingTimerCounts{Due: 3, Pending: 4}, got)
		_, err = b.s.CountPendingTimers(b.ctx, store.CountTimersParams{})
		require.Error(t, err)
	})

	t.Run("ServerVersion", func(t *testing.T) {
		b := h.setup(t)
		v, err := b.s.ServerVersion(b.ctx)
		require.NoError(t, err)
		require.Regexp(t, `^\d+\.\d+`, v)
	})
}
