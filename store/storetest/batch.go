package storetest

import (
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/goxpdl/goxpdl/store"
)

func (h *harness) testBatches(t *testing.T) {
	newBatch := func(t *testing.T, b bundle, action string) store.Batch {
		t.Helper()
		got, err := b.s.InsertBatch(b.ctx, store.Batch{
			ID:     nextID(),
			Action: action, Filter: []byte(`{"states":["Running"]}`), Actor: "alice", Reason: "cleanup",
			Data: []byte(`{"ticket":7}`), State: store.BatchRunning, Total: 3, MaxInstanceID: 30, CreatedAt: t0,
		})
		require.NoError(t, err)
		return got
	}

	t.Run("InsertGetList", func(t *testing.T) {
		b := h.setup(t)
		first := newBatch(t, b, "terminate")
		require.NotZero(t, first.ID)
		require.Equal(t, store.Batch{
			ID: first.ID, Action: "terminate", Filter: []byte(`{"states":["Running"]}`), Actor: "alice", Reason: "cleanup",
			Data: []byte(`{"ticket":7}`), State: store.BatchRunning, Total: 3, MaxInstanceID: 30,
			CreatedAt: norm(t0), UpdatedAt: norm(t0),
		}, first)
		got, err := b.s.GetBatch(b.ctx, first.ID)
		require.NoError(t, err)
		require.Equal(t, first, got)
		_, err = b.s.GetBatch(b.ctx, first.ID+100)
		require.ErrorIs(t, err, store.ErrNotFound)

		second := newBatch(t, b, "suspend")
		_, err = b.s.SetBatchState(b.ctx, store.SetBatchStateParams{ID: second.ID, From: []string{store.BatchRunning}, To: store.BatchPaused, Now: at(time.Second)})
		require.NoError(t, err)
		all, err := b.s.ListBatches(b.ctx, store.ListBatchesParams{})
		require.NoError(t, err)
		require.Equal(t, []int64{first.ID, second.ID}, ids(all, func(b store.Batch) int64 { return b.ID }))
		paused, err := b.s.ListBatches(b.ctx, store.ListBatchesParams{States: []string{store.BatchPaused}})
		require.NoError(t, err)
		require.Equal(t, []int64{second.ID}, ids(paused, func(b store.Batch) int64 { return b.ID }))
		terminates, err := b.s.ListBatches(b.ctx, store.ListBatchesParams{Actions: []string{"terminate"}})
		require.NoError(t, err)
		require.Equal(t, []int64{first.ID}, ids(terminates, func(b store.Batch) int64 { return b.ID }))
		page, err := b.s.ListBatches(b.ctx, store.ListBatchesParams{AfterID: first.ID, Limit: 1})
		require.NoError(t, err)
		require.Equal(t, []int64{second.ID}, ids(page, func(b store.Batch) int64 { return b.ID }))
	})

	t.Run("ClaimProgressFinish", func(t *testing.T) {
		b := h.setup(t)
		_, err := b.s.ClaimBatch(b.ctx, store.ClaimBatchParams{Owner: "n1#a", Now: t0})
		require.ErrorIs(t, err, store.ErrNotFound, "nothing to claim")
		batch := newBatch(t, b, "terminate")

		claimed, err := b.s.ClaimBatch(b.ctx, store.ClaimBatchParams{Owner: "n1#a", Now: at(time.Second)})
		require.NoError(t, err)
		require.Equal(t, batch.ID, claimed.ID)
		require.Equal(t, "n1#a", claimed.Owner)
		_, err = b.s.ClaimBatch(b.ctx, store.ClaimBatchParams{Owner: "n2#a", Now: at(time.Second)})
		require.ErrorIs(t, err, store.ErrNotFound, "another node holds it")
		again, err := b.s.ClaimBatch(b.ctx, store.ClaimBatchParams{Owner: "n1#a", Now: at(time.Second)})
		require.NoError(t, err, "its holder finds it again")
		require.Equal(t, batch.ID, again.ID)

		_, err = b.s.UpdateBatchProgress(b.ctx, store.BatchProgressParams{ID: batch.ID, Owner: "n2#a", Cursor: 10, Done: 1, Now: at(2 * time.Second)})
		require.ErrorIs(t, err, store.ErrLeaseLost, "only the holder records progress")

		_, err = b.s.UpdateBatchProgress(b.ctx, store.BatchProgressParams{
			ID: batch.ID, Owner: "n1#a", Cursor: 10, Done: 1, Now: at(2 * time.Second),
			Failures: []store.BatchFailure{{ProcessInstanceID: 5, Error: "no id"}},
		})
		require.Error(t, err, "a failure without its id")
		f1, f2 := nextID(), nextID()
		got, err := b.s.UpdateBatchProgress(b.ctx, store.BatchProgressParams{
			ID: batch.ID, Owner: "n1#a", Cursor: 10, Done: 1, Skipped: 1, Failed: 1, Now: at(2 * time.Second),
			Failures: []store.BatchFailure{
				{ID: f1, ProcessInstanceID: 5, Skipped: true, Error: "already Terminated", At: at(2 * time.Second)},
				{ID: f2, ProcessInstanceID: 10, Error: "conflict"},
			},
		})
		require.NoError(t, err)
		require.Equal(t, int64(10), got.Cursor)
		require.Equal(t, [3]int64{1, 1, 1}, [3]int64{got.Done, got.Skipped, got.Failed})
		require.Equal(t, store.BatchRunning, got.State)
		require.Equal(t, norm(at(2*time.Second)), got.UpdatedAt)
		fs, err := b.s.ListBatchFailures(b.ctx, store.ListBatchFailuresParams{BatchID: batch.ID})
		require.NoError(t, err)
		require.Len(t, fs, 2)
		require.Equal(t, store.BatchFailure{ID: f1, BatchID: batch.ID, ProcessInstanceID: 5, Skipped: true,
			Error: "already Terminated", At: norm(at(2 * time.Second))}, fs[0], "the caller's ids")
		require.Equal(t, store.BatchFailure{ID: f2, BatchID: batch.ID, ProcessInstanceID: 10,
			Error: "conflict", At: norm(at(2 * time.Second))}, fs[1], "At defaults to Now")
		fs, err = b.s.ListBatchFailures(b.ctx, store.ListBatchFailuresParams{BatchID: batch.ID, AfterID: fs[0].ID, Limit: 5})
		require.NoError(t, err)
		require.Equal(t, []int64{10}, ids(fs, func(f store.BatchFailure) int64 { return f.ProcessInstanceID }))

		// Released, another node takes it and finishes it.
		require.NoError(t, b.s.ReleaseBatch(b.ctx, batch.ID, "n2#a"), "not the holder: nothing happens")
		_, err = b.s.ClaimBatch(b.ctx, store.ClaimBatchParams{Owner: "n2#a", Now: at(3 * time.Second)})
		require.ErrorIs(t, err, store.ErrNotFound)
		require.NoError(t, b.s.ReleaseBatch(b.ctx, batch.ID, "n1#a"))
		claimed, err = b.s.ClaimBatch(b.ctx, store.ClaimBatchParams{Owner: "n2#a", Now: at(3 * time.Second)})
		require.NoError(t, err)
		require.Equal(t, int64(10), claimed.Cursor)
		got, err = b.s.UpdateBatchProgress(b.ctx, store.BatchProgressParams{
			ID: batch.ID, Owner: "n2#a", Cursor: 30, Done: 2, Finish: store.BatchCompleted, Now: at(4 * time.Second),
		})
		require.NoError(t, err)
		require.Equal(t, store.BatchCompleted, got.State)
		require.Equal(t, int64(3), got.Done)
		require.Empty(t, got.Owner, "a finished batch is held by no one")
		require.Equal(t, normPtr(ptr(at(4*time.Second))), got.EndedAt)
		_, err = b.s.ClaimBatch(b.ctx, store.ClaimBatchParams{Owner: "n2#a", Now: at(5 * time.Second)})
		require.ErrorIs(t, err, store.ErrNotFound, "a completed batch is not claimed")
	})

	t.Run("StateChanges", func(t *testing.T) {
		b := h.setup(t)
		batch := newBatch(t, b, "suspend")
		_, err := b.s.ClaimBatch(b.ctx, store.ClaimBatchParams{Owner: "n1#a", Now: t0})
		require.NoError(t, err)

		paused, err := b.s.SetBatchState(b.ctx, store.SetBatchStateParams{ID: batch.ID, From: []string{store.BatchRunning}, To: store.BatchPaused, Now: at(time.Second)})
		require.NoError(t, err)
		require.Equal(t, store.BatchPaused, paused.State)
		require.Nil(t, paused.EndedAt)

		// The holder's chunk in flight still counts; a paused batch is not finished by it.
		got, err := b.s.UpdateBatchProgress(b.ctx, store.BatchProgressParams{ID: batch.ID, Owner: "n1#a", Cursor: 7, Done: 2, Finish: store.BatchCompleted, Now: at(2 * time.Second)})
		require.NoError(t, err)
		require.Equal(t, store.BatchPaused, got.State)
		require.Equal(t, int64(2), got.Done)
		require.NoError(t, b.s.ReleaseBatch(b.ctx, batch.ID, "n1#a"))
		_, err = b.s.ClaimBatch(b.ctx, store.ClaimBatchParams{Owner: "n2#a", Now: at(2 * time.Second)})
		require.ErrorIs(t, err, store.ErrNotFound, "a paused batch is not claimed")

		_, err = b.s.SetBatchState(b.ctx, store.SetBatchStateParams{ID: batch.ID, From: []string{store.BatchPaused}, To: store.BatchRunning, Now: at(3 * time.Second)})
		require.NoError(t, err)
		cancelled, err := b.s.SetBatchState(b.ctx, store.SetBatchStateParams{ID: batch.ID, From: []string{store.BatchRunning, store.BatchPaused}, To: store.BatchCancelled, Note: "bob: wrong filter", Now: at(4 * time.Second)})
		require.NoError(t, err)
		require.Equal(t, store.BatchCancelled, cancelled.State)
		require.Equal(t, "bob: wrong filter", cancelled.Note)
		require.Equal(t, normPtr(ptr(at(4*time.Second))), cancelled.EndedAt)

		refused, err := b.s.SetBatchState(b.ctx, store.SetBatchStateParams{ID: batch.ID, From: []string{store.BatchRunning, store.BatchPaused}, To: store.BatchCancelled, Now: at(5 * time.Second)})
		require.ErrorIs(t, err, store.ErrConflict)
		require.Equal(t, store.BatchCancelled, refused.State, "the batch as it is")
		require.Equal(t, normPtr(ptr(at(4*time.Second))), refused.EndedAt)
		_, err = b.s.SetBatchState(b.ctx, store.SetBatchStateParams{ID: batch.ID + 100, From: []string{store.BatchRunning}, To: store.BatchPaused, Now: at(5 * time.Second)})
		require.ErrorIs(t, err, store.ErrNotFound)
	})

	t.Run("ReleaseClaimsReleasesBatches", func(t *testing.T) {
		b := h.setup(t)
		batch := newBatch(t, b, "terminate")
		_, err := b.s.ClaimBatch(b.ctx, store.ClaimBatchParams{Owner: "dead#a", Now: t0})
		require.NoError(t, err)
		_, err = b.s.ReleaseClaims(b.ctx, "dead#a")
		require.NoError(t, err)
		_, err = b.s.UpdateBatchProgress(b.ctx, store.BatchProgressParams{ID: batch.ID, Owner: "dead#a", Cursor: 1, Done: 1, Now: at(time.Second)})
		require.ErrorIs(t, err, store.ErrLeaseLost, "the dead node's chunk does not count")
		claimed, err := b.s.ClaimBatch(b.ctx, store.ClaimBatchParams{Owner: "live#a", Now: at(time.Second)})
		require.NoError(t, err)
		require.Equal(t, batch.ID, claimed.ID)
	})

	t.Run("ConcurrentClaimsOneWinner", func(t *testing.T) {
		b := h.setup(t)
		batch := newBatch(t, b, "terminate")
		var wg sync.WaitGroup
		won := make([]bool, 4)
		errs := make([]error, 4)
		for i := range won {
			wg.Go(func() {
				got, err := b.s.ClaimBatch(b.ctx, store.ClaimBatchParams{Owner: string(rune('a' + i)), Now: t0})
				won[i], errs[i] = err == nil && got.ID == batch.ID, err
			})
		}
		wg.Wait()
		winners := 0
		for i, w := range won {
			if w {
				winners++
			} else {
				require.ErrorIs(t, errs[i], store.ErrNotFound)
			}
		}
		require.Equal(t, 1, winners)
	})
}
