package storetest

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/goxpdl/goxpdl/store"
)

// testFlush checks the contract of writes a store may hold back inside a
// transaction (Tx.Flush): later statements of the transaction see them,
// their errors come out no later than Flush or the commit, and a nested
// transaction that fails takes its held-back writes with it.
func (h *harness) testFlush(t *testing.T) {
	// writeThenFlush runs write in a transaction and returns its error,
	// or the error of the Flush after it. The transaction stays usable:
	// a read and a held-back write after the error succeed. Then it rolls
	// back, as a caller must after an error (the InTx error is the same).
	writeThenFlush := func(t *testing.T, b bundle, piID int64, write func(ctx context.Context, tx store.Tx) error) error {
		t.Helper()
		var werr error
		txErr := b.s.InTx(b.ctx, func(ctx context.Context, tx store.Tx) error {
			if werr = write(ctx, tx); werr == nil {
				werr = tx.Flush(ctx)
			}
			_, err := tx.GetProcessInstance(ctx, piID)
			require.NoError(t, err, "the transaction goes on after a refused write")
			require.NoError(t, tx.InsertHistory(ctx, []store.HistoryEntry{{ID: nextID(), ProcessInstanceID: piID, Subject: store.SubjectProcess, ToState: "after", At: t0}}))
			require.NoError(t, tx.Flush(ctx), "nothing of the refused write is left to send")
			return werr
		})
		require.Equal(t, werr, txErr)
		return werr
	}

	t.Run("ReadsSeeWrites", func(t *testing.T) {
		b := h.setup(t)
		pi := newProcessInstance(t, b, 1)
		ai := newActivityInstance(t, b, pi.ID, "A")
		ev, err := b.s.InsertEvents(b.ctx, []store.Event{event("e1", pi.ID)})
		require.NoError(t, err)
		claimed, err := b.s.ClaimEvents(b.ctx, store.ClaimEventsParams{Owner: "A", Now: t0, LeaseUntil: at(time.Minute), Limit: 1})
		require.NoError(t, err)
		require.Len(t, claimed, 1)
		require.NoError(t, b.s.InTx(b.ctx, func(ctx context.Context, tx store.Tx) error {
			require.NoError(t, tx.MarkEventsProcessed(ctx, store.MarkEventsProcessedParams{IDs: []int64{ev[0].ID}, ProcessedAt: t0, Owner: "A"}))
			v, err := tx.UpdateProcessInstance(ctx, store.UpdateProcessInstanceParams{ID: pi.ID, ExpectedVersion: 1, State: "Suspended", UpdatedAt: at(time.Second)})
			require.NoError(t, err)
			require.Equal(t, int64(2), v)
			require.NoError(t, tx.UpdateActivityInstances(ctx, []store.UpdateActivityInstanceParams{
				{ID: ai.ID, ExpectedVersion: 1, State: "Active", Attempt: 1, UpdatedAt: at(time.Second)},
			}))
			require.NoError(t, tx.InsertHistory(ctx, []store.HistoryEntry{{ID: nextID(), ProcessInstanceID: pi.ID, Subject: store.SubjectProcess, FromState: "Running", ToState: "Suspended", At: at(time.Second)}}))

			got, err := tx.GetProcessInstance(ctx, pi.ID)
			require.NoError(t, err)
			require.Equal(t, "Suspended", got.State)
			require.Equal(t, int64(2), got.Version)
			acts, err := tx.ListActivityInstances(ctx, store.ListActivityInstancesParams{ProcessInstanceID: pi.ID})
			require.NoError(t, err)
			require.Len(t, acts, 1)
			require.Equal(t, "Active", acts[0].State)
			hist, err := tx.ListHistory(ctx, store.ListHistoryParams{ProcessInstanceID: pi.ID})
			require.NoError(t, err)
			require.Len(t, hist, 1)
			available, _, err := tx.CountUnprocessedEvents(ctx, at(time.Hour))
			require.NoError(t, err)
			require.Zero(t, available, "the event is processed")
			return nil
		}))
		got, err := b.s.GetProcessInstance(b.ctx, pi.ID)
		require.NoError(t, err)
		require.Equal(t, "Suspended", got.State)
	})

	t.Run("ErrorsByFlush", func(t *testing.T) {
		b := h.setup(t)
		pi := newProcessInstance(t, b, 1)
		ai := newActivityInstance(t, b, pi.ID, "A")

		err := writeThenFlush(t, b, pi.ID, func(ctx context.Context, tx store.Tx) error {
			_, err := tx.UpdateProcessInstance(ctx, store.UpdateProcessInstanceParams{ID: pi.ID, ExpectedVersion: 7, State: "Completed", UpdatedAt: at(time.Second)})
			return err
		})
		require.ErrorIs(t, err, store.ErrConflict)

		err = writeThenFlush(t, b, pi.ID, func(ctx context.Context, tx store.Tx) error {
			_, err := tx.UpdateActivityInstance(ctx, store.UpdateActivityInstanceParams{ID: ai.ID + 1000, ExpectedVersion: 1, State: "Completed", UpdatedAt: at(time.Second)})
			return err
		})
		require.ErrorIs(t, err, store.ErrNotFound)

		err = writeThenFlush(t, b, pi.ID, func(ctx context.Context, tx store.Tx) error {
			return tx.UpdateActivityInstances(ctx, []store.UpdateActivityInstanceParams{
				{ID: ai.ID, ExpectedVersion: 1, State: "Active", UpdatedAt: at(time.Second)},
				{ID: ai.ID + 1000, ExpectedVersion: 1, State: "Active", UpdatedAt: at(time.Second)},
			})
		})
		require.ErrorIs(t, err, store.ErrNotFound)

		ev, err := b.s.InsertEvents(b.ctx, []store.Event{event("e1", pi.ID)})
		require.NoError(t, err)
		err = writeThenFlush(t, b, pi.ID, func(ctx context.Context, tx store.Tx) error {
			return tx.MarkEventsProcessed(ctx, store.MarkEventsProcessedParams{IDs: []int64{ev[0].ID}, ProcessedAt: t0, Owner: "nobody"})
		})
		require.ErrorIs(t, err, store.ErrLeaseLost, "the event is not claimed by nobody")

		// A refused write between two others.
		err = writeThenFlush(t, b, pi.ID, func(ctx context.Context, tx store.Tx) error {
			require.NoError(t, tx.InsertHistory(ctx, []store.HistoryEntry{{ID: nextID(), ProcessInstanceID: pi.ID, Subject: store.SubjectProcess, ToState: "one", At: t0}}))
			if _, err := tx.UpdateProcessInstance(ctx, store.UpdateProcessInstanceParams{ID: pi.ID, ExpectedVersion: 7, State: "Completed", UpdatedAt: at(time.Second)}); err != nil {
				return err
			}
			return tx.InsertHistory(ctx, []store.HistoryEntry{{ID: nextID(), ProcessInstanceID: pi.ID, Subject: store.SubjectProcess, ToState: "two", At: t0}})
		})
		require.ErrorIs(t, err, store.ErrConflict)

		// Every transaction rolled back.
		got, err := b.s.GetProcessInstance(b.ctx, pi.ID)
		require.NoError(t, err)
		require.Equal(t, "Running", got.State)
		require.Equal(t, int64(1), got.Version)
		act, err := b.s.GetActivityInstance(b.ctx, ai.ID)
		require.NoError(t, err)
		require.Equal(t, int64(1), act.Version)
		hist, err := b.s.ListHistory(b.ctx, store.ListHistoryParams{ProcessInstanceID: pi.ID})
		require.NoError(t, err)
		require.Empty(t, hist)
		available, _, err := b.s.CountUnprocessedEvents(b.ctx, at(time.Hour))
		require.NoError(t, err)
		require.Equal(t, int64(1), available)
	})

	t.Run("ErrorsByCommit", func(t *testing.T) {
		b := h.setup(t)
		pi := newProcessInstance(t, b, 1)
		err := b.s.InTx(b.ctx, func(ctx context.Context, tx store.Tx) error {
			require.NoError(t, tx.InsertHistory(ctx, []store.HistoryEntry{{ID: nextID(), ProcessInstanceID: pi.ID, Subject: store.SubjectProcess, ToState: "x", At: t0}}))
			_, err := tx.UpdateProcessInstance(ctx, store.UpdateProcessInstanceParams{ID: pi.ID, ExpectedVersion: 7, State: "Completed", UpdatedAt: at(time.Second)})
			if errors.Is(err, store.ErrConflict) {
				return nil // a store that does not hold writes back: the test's point is the commit
			}
			return err
		})
		if err != nil {
			require.ErrorIs(t, err, store.ErrConflict, "the commit reports the held-back write")
			hist, err := b.s.ListHistory(b.ctx, store.ListHistoryParams{ProcessInstanceID: pi.ID})
			require.NoError(t, err)
			require.Empty(t, hist, "the failed commit wrote nothing")
		}
		got, err := b.s.GetProcessInstance(b.ctx, pi.ID)
		require.NoError(t, err)
		require.Equal(t, int64(1), got.Version)
	})

	t.Run("NestedRollbackDropsWrites", func(t *testing.T) {
		b := h.setup(t)
		pi := newProcessInstance(t, b, 1)
		boom := errors.New("boom")
		require.NoError(t, b.s.InTx(b.ctx, func(ctx context.Context, tx store.Tx) error {
			// A nested transaction whose writes are held back, one of them
			// refused, fails: its writes go, and the refusal with them.
			err := tx.(store.Store).InTx(ctx, func(ctx context.Context, tx store.Tx) error {
				if _, err := tx.UpdateProcessInstance(ctx, store.UpdateProcessInstanceParams{ID: pi.ID, ExpectedVersion: 7, State: "Completed", UpdatedAt: at(time.Second)}); err != nil {
					return err
				}
				if err := tx.InsertHistory(ctx, []store.HistoryEntry{{ID: nextID(), ProcessInstanceID: pi.ID, Subject: store.SubjectProcess, ToState: "dropped", At: t0}}); err != nil {
					return err
				}
				return boom
			})
			if !errors.Is(err, store.ErrConflict) {
				require.ErrorIs(t, err, boom)
			}
			// A nested transaction that succeeds keeps its writes.
			require.NoError(t, tx.(store.Store).InTx(ctx, func(ctx context.Context, tx store.Tx) error {
				return tx.InsertHistory(ctx, []store.HistoryEntry{{ID: nextID(), ProcessInstanceID: pi.ID, Subject: store.SubjectProcess, ToState: "kept", At: t0}})
			}))
			_, err = tx.UpdateProcessInstance(ctx, store.UpdateProcessInstanceParams{ID: pi.ID, ExpectedVersion: 1, State: "Suspended", UpdatedAt: at(time.Second)})
			return err
		}))
		hist, err := b.s.ListHistory(b.ctx, store.ListHistoryParams{ProcessInstanceID: pi.ID})
		require.NoError(t, err)
		require.Len(t, hist, 1)
		require.Equal(t, "kept", hist[0].ToState)
		got, err := b.s.GetProcessInstance(b.ctx, pi.ID)
		require.NoError(t, err)
		require.Equal(t, "Suspended", got.State)
		require.Equal(t, int64(2), got.Version)
	})
}
