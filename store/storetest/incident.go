package storetest

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/goxpdl/goxpdl/store"
)

func (h *harness) testIncidents(t *testing.T) {
	t.Run("OpenUpdateResolve", func(t *testing.T) {
		b := h.setup(t)
		pi := newProcessInstance(t, b, newDefinition(t, b).ID)
		ai := newActivityInstance(t, b, pi.ID, "Charge")

		first, opened, err := b.s.RecordIncident(b.ctx, store.Incident{
			ID:                nextID(),
			ProcessInstanceID: pi.ID, ActivityInstanceID: &ai.ID, ActivityDefID: "Charge", Cause: "failing",
			Error: "timeout", Application: "charge", Params: []byte(`{"amount":5}`), Attempts: 3, LastFailureAt: at(time.Second),
		})
		require.NoError(t, err)
		require.True(t, opened, "a new incident")
		require.Equal(t, store.IncidentOpen, first.State)
		require.Equal(t, 3, first.Attempts)
		require.Equal(t, norm(at(time.Second)), first.FirstFailureAt)

		// The same subject again: the open incident is updated, not doubled.
		second, opened, err := b.s.RecordIncident(b.ctx, store.Incident{
			ID:                nextID(),
			ProcessInstanceID: pi.ID, ActivityInstanceID: &ai.ID, Cause: "retries-exhausted",
			Error: "timeout again", Application: "charge", LastFailureAt: at(2 * time.Second),
		})
		require.NoError(t, err)
		require.False(t, opened, "the open incident updated")
		require.Equal(t, first.ID, second.ID)
		require.Equal(t, 4, second.Attempts)
		require.Equal(t, "retries-exhausted", second.Cause)
		require.Equal(t, "Charge", second.ActivityDefID)
		require.Equal(t, norm(at(time.Second)), second.FirstFailureAt)
		require.Equal(t, norm(at(2*time.Second)), second.LastFailureAt)

		// A process-level incident is a subject of its own.
		locked, opened, err := b.s.RecordIncident(b.ctx, store.Incident{ID: nextID(), ProcessInstanceID: pi.ID, Cause: "locking", Error: "lost", LastFailureAt: at(3 * time.Second)})
		require.NoError(t, err)
		require.True(t, opened)
		require.NotEqual(t, first.ID, locked.ID)

		counts, err := b.s.CountIncidents(b.ctx, []string{store.IncidentOpen})
		require.NoError(t, err)
		require.Equal(t, map[string]int64{"retries-exhausted": 1, "locking": 1}, counts)

		n, err := b.s.ResolveIncidents(b.ctx, store.ResolveIncidentsParams{
			ProcessInstanceID: pi.ID, ActivityInstanceIDs: []int64{ai.ID}, At: at(4 * time.Second), By: "alice", Resolution: "retried",
		})
		require.NoError(t, err)
		require.EqualValues(t, 1, n)
		got, err := b.s.GetIncident(b.ctx, first.ID)
		require.NoError(t, err)
		require.Equal(t, store.IncidentResolved, got.State)
		require.Equal(t, "alice", got.ResolvedBy)
		require.Equal(t, "retried", got.Resolution)
		require.Equal(t, normPtr(ptr(at(4*time.Second))), got.ResolvedAt)

		// Resolved, the subject can open a new incident.
		again, opened, err := b.s.RecordIncident(b.ctx, store.Incident{ID: nextID(), ProcessInstanceID: pi.ID, ActivityInstanceID: &ai.ID, Cause: "application", Error: "boom", LastFailureAt: at(5 * time.Second)})
		require.NoError(t, err)
		require.True(t, opened, "the resolved one is not updated")
		require.NotEqual(t, first.ID, again.ID)
		require.Equal(t, 1, again.Attempts)

		open, err := b.s.ListIncidents(b.ctx, store.ListIncidentsParams{ProcessInstanceID: pi.ID, States: []string{store.IncidentOpen}})
		require.NoError(t, err)
		require.Equal(t, []int64{locked.ID, again.ID}, ids(open, func(i store.Incident) int64 { return i.ID }))
		page, err := b.s.ListIncidents(b.ctx, store.ListIncidentsParams{Causes: []string{"locking", "retries-exhausted"}, Limit: 1})
		require.NoError(t, err)
		require.Equal(t, []int64{first.ID}, ids(page, func(i store.Incident) int64 { return i.ID }))
		page, err = b.s.ListIncidents(b.ctx, store.ListIncidentsParams{Causes: []string{"locking", "retries-exhausted"}, AfterID: first.ID})
		require.NoError(t, err)
		require.Equal(t, []int64{locked.ID}, ids(page, func(i store.Incident) int64 { return i.ID }))

		// Resolving everything of the instance.
		n, err = b.s.ResolveIncidents(b.ctx, store.ResolveIncidentsParams{ProcessInstanceID: pi.ID, At: at(6 * time.Second), By: "bob", Resolution: "terminated"})
		require.NoError(t, err)
		require.EqualValues(t, 2, n)
	})

	t.Run("RolledBackWithItsTransaction", func(t *testing.T) {
		b := h.setup(t)
		pi := newProcessInstance(t, b, newDefinition(t, b).ID)
		boom := errors.New("boom")
		err := b.s.InTx(b.ctx, func(ctx context.Context, tx store.Tx) error {
			if _, _, err := tx.RecordIncident(ctx, store.Incident{ID: nextID(), ProcessInstanceID: pi.ID, Cause: "locking", LastFailureAt: t0}); err != nil {
				return err
			}
			return boom
		})
		require.ErrorIs(t, err, boom)
		got, err := b.s.ListIncidents(b.ctx, store.ListIncidentsParams{})
		require.NoError(t, err)
		require.Empty(t, got)
	})

	t.Run("InvalidParams", func(t *testing.T) {
		b := h.setup(t)
		_, _, err := b.s.RecordIncident(b.ctx, store.Incident{ID: nextID(), Cause: "locking", LastFailureAt: t0})
		require.Error(t, err)
		_, _, err = b.s.RecordIncident(b.ctx, store.Incident{ID: nextID(), ProcessInstanceID: 1, LastFailureAt: t0})
		require.Error(t, err)
		_, err = b.s.ResolveIncidents(b.ctx, store.ResolveIncidentsParams{})
		require.Error(t, err)
		_, err = b.s.GetIncident(b.ctx, 424242)
		require.ErrorIs(t, err, store.ErrNotFound)
	})
}
