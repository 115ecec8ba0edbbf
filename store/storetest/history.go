package storetest

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/goxpdl/goxpdl/store"
)

func (h *harness) testHistory(t *testing.T) {
	t.Run("OrderAndRoundTrip", func(t *testing.T) {
		b := h.setup(t)
		entries := []store.HistoryEntry{
			{ID: nextID(), ProcessInstanceID: 1, Subject: store.SubjectProcess, ToState: "Initiated", Actor: "engine", At: t0},
			{ID: nextID(), ProcessInstanceID: 2, Subject: store.SubjectProcess, ToState: "Initiated", Actor: "engine", At: t0},
			{ID: nextID(), ProcessInstanceID: 1, ActivityInstanceID: ptr(int64(10)), Subject: store.SubjectActivity, FromState: "Initiated", ToState: "Active",
				Actor: "engine", Data: []byte(`{"attempt":1}`), At: at(time.Millisecond)},
			{ID: nextID(), ProcessInstanceID: 1, ActivityInstanceID: ptr(int64(10)), WorkItemID: ptr(int64(20)), Subject: store.SubjectWorkItem,
				FromState: "Offered", ToState: "Completed", Actor: "alice", At: at(time.Second)},
		}
		require.NoError(t, b.s.InsertHistory(b.ctx, entries[:2]))
		require.NoError(t, b.s.InsertHistory(b.ctx, entries[2:]))
		// Entries written later but stamped earlier still list after:
		// the order is the ids'.
		late := store.HistoryEntry{ID: nextID(), ProcessInstanceID: 1, Subject: store.SubjectProcess, FromState: "Initiated", ToState: "Running", Actor: "engine", At: at(-time.Hour)}
		require.NoError(t, b.s.InsertHistory(b.ctx, []store.HistoryEntry{late}))

		got, err := b.s.ListHistory(b.ctx, store.ListHistoryParams{ProcessInstanceID: 1})
		require.NoError(t, err)
		require.Len(t, got, 4)
		want := []store.HistoryEntry{entries[0], entries[2], entries[3], late}
		for i := range want {
			want[i].At = norm(want[i].At)
		}
		require.Equal(t, want, got, "the caller's ids, in id order")

		page, err := b.s.ListHistory(b.ctx, store.ListHistoryParams{ProcessInstanceID: 1, AfterID: got[0].ID, Limit: 2})
		require.NoError(t, err)
		require.Equal(t, got[1:3], page)

		other, err := b.s.ListHistory(b.ctx, store.ListHistoryParams{ProcessInstanceID: 2})
		require.NoError(t, err)
		require.Len(t, other, 1)
		none, err := b.s.ListHistory(b.ctx, store.ListHistoryParams{ProcessInstanceID: 3})
		require.NoError(t, err)
		require.Empty(t, none)
	})

	t.Run("RunsOfTransitions", func(t *testing.T) {
		// Transitions of one subject at one instant, one after the
		// other, come back as written, whichever way a store keeps them
		// (gormstore: one row a run), and pages cut into runs.
		b := h.setup(t)
		act := ptr(int64(10))
		step := func(from, to string, at time.Time) store.HistoryEntry {
			return store.HistoryEntry{ID: nextID(), ProcessInstanceID: 1, ActivityInstanceID: act, Subject: store.SubjectActivity, FromState: from, ToState: to, Actor: "engine", At: at}
		}
		entries := []store.HistoryEntry{
			step("", "Initiated", t0),
			step("Initiated", "Active", at(time.Millisecond)),
			step("Active", "Completed", at(time.Millisecond)),
			{ID: nextID(), ProcessInstanceID: 1, Subject: store.SubjectProcess, FromState: "Running", ToState: "Completed", Actor: "engine", At: at(time.Millisecond)},
		}
		// Ten transitions of one subject in a row: more than a run holds.
		states := []string{"Initiated"}
		for i := range 10 {
			states = append(states, fmt.Sprintf("S%d", i))
			entries = append(entries, step(states[i], states[i+1], at(time.Second)))
		}
		// Data, another actor, another instant and a gap in the ids
		// each end a run.
		withData := step("S9", "T1", at(time.Second))
		withData.Data = []byte(`{"x":1}`)
		other := step("T1", "T2", at(time.Second))
		other.Actor = "alice"
		later := step("T2", "T3", at(2*time.Second))
		nextID()
		gap := step("T3", "T4", at(2*time.Second))
		entries = append(entries, withData, other, later, gap)
		require.NoError(t, b.s.InsertHistory(b.ctx, entries))

		want := slices.Clone(entries)
		for i := range want {
			want[i].At = norm(want[i].At)
		}
		got, err := b.s.ListHistory(b.ctx, store.ListHistoryParams{ProcessInstanceID: 1})
		require.NoError(t, err)
		require.Equal(t, want, got)
		for after := range want {
			for _, limit := range []int{1, 2, 3, 100} {
				page, err := b.s.ListHistory(b.ctx, store.ListHistoryParams{ProcessInstanceID: 1, AfterID: want[after].ID, Limit: limit})
				require.NoError(t, err)
				require.Equal(t, want[after+1:min(after+1+limit, len(want))], page, "after entry %d, %d at most", after, limit)
			}
		}
	})

	t.Run("ManyEntriesAtOnce", func(t *testing.T) {
		// More entries than one INSERT statement takes: several chunks,
		// all written, in order.
		b := h.setup(t)
		const n = 1201
		entries := make([]store.HistoryEntry, n)
		for i := range entries {
			entries[i] = store.HistoryEntry{ID: nextID(), ProcessInstanceID: 7, Subject: store.SubjectActivity, ToState: "Active", Actor: "engine", At: at(time.Duration(i) * time.Millisecond)}
		}
		require.NoError(t, b.s.InsertHistory(b.ctx, entries))
		got, err := b.s.ListHistory(b.ctx, store.ListHistoryParams{ProcessInstanceID: 7})
		require.NoError(t, err)
		require.Len(t, got, n)
		require.Equal(t, norm(at(1200*time.Millisecond)), got[n-1].At)
	})

	t.Run("EmptyAndInvalid", func(t *testing.T) {
		b := h.setup(t)
		require.NoError(t, b.s.InsertHistory(b.ctx, nil))
		err := b.s.InsertHistory(b.ctx, []store.HistoryEntry{
			{ID: nextID(), ProcessInstanceID: 1, Subject: store.SubjectProcess, ToState: "Running", At: t0},
			{ID: nextID(), ProcessInstanceID: 1, Subject: store.SubjectProcess, ToState: "Completed"}, // zero At
		})
		require.Error(t, err)
		err = b.s.InsertHistory(b.ctx, []store.HistoryEntry{
			{ID: nextID(), ProcessInstanceID: 1, Subject: store.SubjectProcess, ToState: "Running", At: t0},
			{ProcessInstanceID: 1, Subject: store.SubjectProcess, ToState: "Completed", At: t0}, // no id
		})
		require.Error(t, err)
		got, err := b.s.ListHistory(b.ctx, store.ListHistoryParams{ProcessInstanceID: 1})
		require.NoError(t, err)
		require.Empty(t, got)
	})
}

func (h *harness) testInTx(t *testing.T) {
	// writeAll writes one row of every kind through tx.
	writeAll := func(t *testing.T, ctx context.Context, tx store.Tx) store.ProcessInstance {
		t.Helper()
		def, err := tx.InsertDefinition(ctx, store.InsertDefinitionParams{ID: nextID(), PackageID: "pkg", CreatedAt: t0})
		require.NoError(t, err)
		pi, err := tx.InsertProcessInstance(ctx, store.ProcessInstance{ID: nextID(), DefinitionID: def.ID, ProcessDefID: "main", State: "Initiated", CreatedAt: t0, UpdatedAt: t0})
		require.NoError(t, err)
		ais, err := tx.InsertActivityInstances(ctx, []store.ActivityInstance{{ID: nextID(), ProcessInstanceID: pi.ID, ActivityDefID: "A", State: "Initiated", CreatedAt: t0, UpdatedAt: t0}})
		require.NoError(t, err)
		require.NoError(t, tx.PutVariables(ctx, []store.Variable{{ProcessInstanceID: pi.ID, Name: "x", Type: "STRING", Value: []byte(`"v"`)}}))
		_, err = tx.InsertWorkItem(ctx, store.InsertWorkItemParams{Item: store.WorkItem{ID: nextID(), ProcessInstanceID: pi.ID, ActivityInstanceID: ais[0].ID, State: "Offered", CreatedAt: t0, UpdatedAt: t0}})
		require.NoError(t, err)
		_, err = tx.InsertEvents(ctx, []store.Event{event("started", pi.ID)})
		require.NoError(t, err)
		require.NoError(t, tx.InsertHistory(ctx, []store.HistoryEntry{{ID: nextID(), ProcessInstanceID: pi.ID, Subject: store.SubjectProcess, ToState: "Initiated", At: t0}}))
		_, err = tx.UpdateProcessInstance(ctx, store.UpdateProcessInstanceParams{ID: pi.ID, ExpectedVersion: 1, State: "Running", UpdatedAt: t0})
		require.NoError(t, err)
		return pi
	}
	// requireNothingWritten checks that no row of any kind exists.
	requireNothingWritten := func(t *testing.T, b bundle, piID int64) {
		t.Helper()
		defs, err := b.s.ListDefinitions(b.ctx, store.ListDefinitionsParams{})
		require.NoError(t, err)
		require.Empty(t, defs)
		_, err = b.s.GetProcessInstance(b.ctx, piID)
		require.ErrorIs(t, err, store.ErrNotFound)
		counts, err := b.s.CountProcessInstancesByState(b.ctx)
		require.NoError(t, err)
		require.Empty(t, counts)
		ais, err := b.s.ListActivityInstances(b.ctx, store.ListActivityInstancesParams{ProcessInstanceID: piID})
		require.NoError(t, err)
		require.Empty(t, ais)
		vars, err := b.s.GetVariables(b.ctx, piID)
		require.NoError(t, err)
		require.Empty(t, vars)
		wis, err := b.s.ListWorkItems(b.ctx, store.ListWorkItemsParams{})
		require.NoError(t, err)
		require.Empty(t, wis)
		evs, err := b.s.ClaimEvents(b.ctx, store.ClaimEventsParams{Owner: "check", Now: at(time.Hour), LeaseUntil: at(2 * time.Hour), Limit: 10})
		require.NoError(t, err)
		require.Empty(t, evs)
		hist, err := b.s.ListHistory(b.ctx, store.ListHistoryParams{ProcessInstanceID: piID})
		require.NoError(t, err)
		require.Empty(t, hist)
	}

	t.Run("Commit", func(t *testing.T) {
		b := h.setup(t)
		var pi store.ProcessInstance
		require.NoError(t, b.s.InTx(b.ctx, func(ctx context.Context, tx store.Tx) error {
			pi = writeAll(t, ctx, tx)
			// The transaction reads its own writes.
			got, err := tx.GetProcessInstance(ctx, pi.ID)
			require.NoError(t, err)
			require.Equal(t, "Running", got.State)
			return nil
		}))
		got, err := b.s.GetProcessInstance(b.ctx, pi.ID)
		require.NoError(t, err)
		require.Equal(t, int64(2), got.Version)
		evs, err := b.s.ClaimEvents(b.ctx, store.ClaimEventsParams{Owner: "o", Now: t0, LeaseUntil: at(time.Minute), Limit: 10})
		require.NoError(t, err)
		require.Equal(t, []string{"started"}, eventIDs(evs))
	})

	t.Run("RollbackOnError", func(t *testing.T) {
		b := h.setup(t)
		errBoom := errors.New("boom")
		var pi store.ProcessInstance
		err := b.s.InTx(b.ctx, func(ctx context.Context, tx store.Tx) error {
			pi = writeAll(t, ctx, tx)
			return errBoom
		})
		require.ErrorIs(t, err, errBoom)
		requireNothingWritten(t, b, pi.ID)
	})

	t.Run("RollbackOnPanic", func(t *testing.T) {
		b := h.setup(t)
		var pi store.ProcessInstance
		require.PanicsWithValue(t, "boom", func() {
			_ = b.s.InTx(b.ctx, func(ctx context.Context, tx store.Tx) error {
				pi = writeAll(t, ctx, tx)
				panic("boom")
			})
		})
		requireNothingWritten(t, b, pi.ID)
		// The connection went back to the pool in good order.
		require.NoError(t, b.s.InTx(b.ctx, func(ctx context.Context, tx store.Tx) error {
			writeAll(t, ctx, tx)
			return nil
		}))
	})

	t.Run("CancelledContext", func(t *testing.T) {
		b := h.setup(t)
		ctx, cancel := context.WithCancel(b.ctx)
		cancel()
		called := false
		err := b.s.InTx(ctx, func(context.Context, store.Tx) error {
			called = true
			return nil
		})
		require.ErrorIs(t, err, context.Canceled)
		require.False(t, called)
		_, err = b.s.GetProcessInstance(ctx, 1)
		require.ErrorIs(t, err, context.Canceled)
		require.NotErrorIs(t, err, store.ErrNotFound)
	})

	t.Run("StoreErrorsPassThrough", func(t *testing.T) {
		b := h.setup(t)
		pi := newProcessInstance(t, b, 1)
		err := b.s.InTx(b.ctx, func(ctx context.Context, tx store.Tx) error {
			_, err := tx.UpdateProcessInstance(ctx, store.UpdateProcessInstanceParams{ID: pi.ID, ExpectedVersion: 1, State: "Suspended", UpdatedAt: t0})
			require.NoError(t, err)
			_, err = tx.UpdateProcessInstance(ctx, store.UpdateProcessInstanceParams{ID: pi.ID, ExpectedVersion: 1, State: "Terminated", UpdatedAt: t0})
			return err
		})
		require.ErrorIs(t, err, store.ErrConflict)
		got, err := b.s.GetProcessInstance(b.ctx, pi.ID)
		require.NoError(t, err)
		require.Equal(t, pi, got, "the first update was rolled back with the second")
	})
}

func (h *harness) testTime(t *testing.T) {
	t.Run("PrecisionAndLocation", func(t *testing.T) {
		// Any location in, UTC out; nanoseconds truncated to microseconds.
		b := h.setup(t)
		zone := time.FixedZone("UTC+5:30", 5*3600+1800)
		created := time.Date(2026, 12, 31, 23, 59, 59, 999999999, zone)
		pi, err := b.s.InsertProcessInstance(b.ctx, store.ProcessInstance{
			ID:           nextID(),
			ProcessDefID: "main", State: "Running", CreatedAt: created, UpdatedAt: created, EndedAt: &created,
		})
		require.NoError(t, err)
		got, err := b.s.GetProcessInstance(b.ctx, pi.ID)
		require.NoError(t, err)
		for _, ts := range []time.Time{got.CreatedAt, got.UpdatedAt, *got.EndedAt} {
			require.True(t, ts.Equal(created.Truncate(time.Microsecond)), "%v", ts)
			require.Equal(t, time.UTC, ts.Location())
			require.Equal(t, 999999000, ts.Nanosecond())
		}
	})
}

func (h *harness) testCaseSensitiveKeys(t *testing.T) {
	// Keys compare byte for byte on every dialect (SQLite does; MySQL
	// needs a binary collation): XPDL ids, EventIDs and data field names
	// are case-sensitive.
	b := h.setup(t)
	for _, pkg := range []string{"orders", "Orders", "ORDERS", "orders"} {
		_, err := b.s.InsertDefinition(b.ctx, store.InsertDefinitionParams{ID: nextID(), PackageID: pkg, CreatedAt: t0})
		require.NoError(t, err)
	}
	for pkg, want := range map[string]int{"orders": 2, "Orders": 1, "ORDERS": 1} {
		d, err := b.s.LatestDefinition(b.ctx, pkg)
		require.NoError(t, err)
		require.Equal(t, want, d.Version, pkg)
		require.Equal(t, pkg, d.PackageID)
	}

	_, err := b.s.InsertEvents(b.ctx, []store.Event{event("evt-a", 1), event("EVT-A", 1), event("Evt-A", 1)})
	require.NoError(t, err)

	require.NoError(t, b.s.PutVariables(b.ctx, []store.Variable{
		{ProcessInstanceID: 1, Name: "amount", Type: "INTEGER", Value: []byte("1")},
		{ProcessInstanceID: 1, Name: "Amount", Type: "INTEGER", Value: []byte("2")},
	}))
	vars, err := b.s.GetVariables(b.ctx, 1)
	require.NoError(t, err)
	require.Len(t, vars, 2)
	require.Equal(t, []byte("1"), vars["amount"].Value)
	require.Equal(t, []byte("2"), vars["Amount"].Value)

	pi := newProcessInstance(t, b, 1)
	_, err = b.s.UpdateProcessInstance(b.ctx, store.UpdateProcessInstanceParams{ID: pi.ID, ExpectedVersion: 1, State: "running", UpdatedAt: t0})
	require.NoError(t, err)
	list, err := b.s.ListProcessInstances(b.ctx, store.ListProcessInstancesParams{States: []string{"Running"}})
	require.NoError(t, err)
	require.Empty(t, list, "state filters are case-sensitive too")
}
