package engine_test

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"gorm.io/gorm"

	"github.com/goxpdl/goxpdl/engine"
	"github.com/goxpdl/goxpdl/store"
	"github.com/goxpdl/goxpdl/store/dbtest"
	"github.com/goxpdl/goxpdl/wftype"
)

// chunk sets the batch chunk size.
func chunk(n int) func(*engine.Config) { return func(c *engine.Config) { c.BatchChunk = n } }

// noBatchRunner makes an engine that runs no batches.
func noBatchRunner(c *engine.Config) { c.BatchPollInterval = -1 }

// awaitBatch waits until batch id is over (Completed, Cancelled or
// Failed) and no runner holds it, woken by the engine's batch records,
// and returns it. This engine runs it, or another one has stopped it.
func (h *harness) awaitBatch(id int64) engine.Batch {
	h.t.Helper()
	wake := make(chan struct{}, 1)
	defer h.e.Subscribe(func(r engine.Record) {
		if r.Batch == id {
			select {
			case wake <- struct{}{}:
			default:
			}
		}
	})()
	for {
		b, err := h.e.Batch(h.ctx, id)
		require.NoError(h.t, err)
		if b.State.IsFinal() && b.Owner == "" { // a cancelled batch's runner may still finish its chunk
			return b
		}
		select {
		case <-wake:
		case <-h.ctx.Done():
			h.t.Fatalf("batch %d never ended: %+v", id, b)
		}
	}
}

// startN starts n instances of process proc of package pkg, each at its
// first manual activity, and returns their ids.
func (h *harness) startN(n int, pkg, proc string) []int64 {
	h.t.Helper()
	ids := make([]int64, n)
	for i := range ids {
		ids[i] = h.startProcess(pkg, proc, nil)
	}
	h.idle()
	return ids
}

func (h *harness) requireStates(ids []int64, want wftype.ProcessState) {
	h.t.Helper()
	h.idle()
	for _, id := range ids {
		pi, err := h.e.Instance(h.ctx, id)
		require.NoError(h.t, err)
		require.Equal(h.t, want, pi.State, "instance %d", id)
	}
}

func TestBatchTerminateEndsTheSelectedInstancesOnly(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, db *gorm.DB) {
		// Node a records the batch and runs none; node b runs it, three
		// commands at a time.
		a := newHarness(t, db, noBatchRunner, func(c *engine.Config) { c.NodeID = "a" }).start()
		a.deploy(chainPackage("bulk"))
		a.deploy(chainPackage("keep"))
		selected := a.startN(7, "bulk", "p")
		others := append(a.startN(2, "bulk", "other"), a.startN(2, "keep", "p")...)
		suspended := a.startProcess("bulk", "p", nil)
		a.idle()
		require.NoError(t, a.e.Suspend(a.ctx, suspended, engine.Op{}))
		selected = append(selected, suspended)

		op := engine.Op{Actor: "alice", Reason: "product withdrawn", Data: map[string]any{"ticket": "OPS-7"}}
		batch, err := a.e.StartBatch(a.ctx, engine.BatchRequest{
			Action: engine.BatchTerminate, Filter: engine.InstanceFilter{Package: "bulk", Process: "p"}, Op: op,
		})
		require.NoError(t, err)
		require.Equal(t, engine.BatchRunning, batch.State)
		require.Equal(t, int64(8), batch.Total)
		require.Equal(t, suspended, batch.MaxInstance)
		require.Equal(t, engine.InstanceFilter{Package: "bulk", Process: "p"}, batch.Filter)
		require.Equal(t, "alice", batch.Actor)

		// Started after the batch: not in its selection.
		late := a.startProcess("bulk", "p", nil)
		a.idle()

		b := newHarness(t, db, chunk(3), func(c *engine.Config) { c.NodeID, c.BatchParallel = "b", 3 }).start()
		done := b.awaitBatch(batch.ID)
		require.Equal(t, engine.BatchCompleted, done.State)
		require.Equal(t, [3]int64{8, 0, 0}, [3]int64{done.Done, done.Skipped, done.Failed})
		require.Equal(t, suspended, done.Cursor)
		require.NotNil(t, done.EndedAt)
		require.Empty(t, done.Owner)

		a.requireStates(selected, wftype.ProcessTerminated)
		a.requireStates(others, wftype.ProcessRunning)
		a.requireStates([]int64{late}, wftype.ProcessRunning)

		var terminated *engine.HistoryEntry
		for _, e := range a.history(selected[0]) {
			if e.Subject == engine.SubjectProcess && e.To == string(wftype.ProcessTerminated) {
				terminated = &e
			}
		}
		require.NotNil(t, terminated)
		require.Equal(t, "alice", terminated.Actor)
		require.Equal(t, "product withdrawn", terminated.Reason)
		require.Equal(t, map[string]any{"ticket": "OPS-7", "batch": float64(batch.ID)}, terminated.Data,
			"each instance's history names the batch")

		page, err := a.e.Batches(a.ctx, engine.BatchFilter{States: []engine.BatchState{engine.BatchCompleted}})
		require.NoError(t, err)
		require.Len(t, page.Batches, 1)
		require.Equal(t, done, page.Batches[0])
	})
}

func TestBatchRefusesBadRequests(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, db *gorm.DB) {
		h := newHarness(t, db).start()
		v1 := h.deploy(chainPackage("bad"))
		id := h.startProcess("bad", "p", nil)
		h.idle()
		for name, req := range map[string]engine.BatchRequest{
			"unknown action":           {Action: "explode"},
			"limited filter":           {Action: engine.BatchSuspend, Filter: engine.InstanceFilter{Limit: 10}},
			"migrate without a target": {Action: engine.BatchMigrate},
			"a target for terminate":   {Action: engine.BatchTerminate, Migration: &engine.Migration{To: v1.ID}},
			"typed migration values": {Action: engine.BatchMigrate, Migration: &engine.Migration{To: v1.ID,
				Variables: engine.Values{Variables: map[string]any{"x": int64(1)}}}},
		} {
			_, err := h.e.StartBatch(h.ctx, req)
			require.ErrorIs(t, err, engine.ErrBadBatch, name)
		}
		_, err := h.e.StartBatch(h.ctx, engine.BatchRequest{Action: engine.BatchSuspend,
			Filter: engine.InstanceFilter{States: []wftype.ProcessState{"Sleeping"}}})
		require.ErrorIs(t, err, engine.ErrBadFilter)
		_, err = h.e.StartBatch(h.ctx, engine.BatchRequest{Action: engine.BatchMigrate, Migration: &engine.Migration{To: 9999}})
		require.ErrorIs(t, err, engine.ErrNotFound)
		_, err = h.e.StartBatch(h.ctx, engine.BatchRequest{Action: engine.BatchSuspend, Op: engine.Op{Data: map[string]any{"f": func() {}}}})
		require.ErrorIs(t, err, engine.ErrBadArgument)
		page, err := h.e.Batches(h.ctx, engine.BatchFilter{})
		require.NoError(t, err)
		require.Empty(t, page.Batches, "nothing was started")
		h.requireStates([]int64{id}, wftype.ProcessRunning)

		// A filter that selects nothing completes at once.
		empty, err := h.e.StartBatch(h.ctx, engine.BatchRequest{Action: engine.BatchResume,
			Filter: engine.InstanceFilter{States: []wftype.ProcessState{wftype.ProcessSuspended}}})
		require.NoError(t, err)
		require.Equal(t, engine.BatchCompleted, empty.State)
		require.Zero(t, empty.Total)

		_, err = h.e.CancelBatch(h.ctx, empty.ID, engine.Op{})
		require.ErrorIs(t, err, engine.ErrIllegalState, "a finished batch cannot be cancelled")
		_, err = h.e.CancelBatch(h.ctx, 9999, engine.Op{})
		require.ErrorIs(t, err, engine.ErrNotFound)
		_, err = h.e.ResumeBatch(h.ctx, empty.ID, engine.Op{})
		require.ErrorIs(t, err, engine.ErrIllegalState)
		_, err = h.e.Batch(h.ctx, 9999)
		require.ErrorIs(t, err, engine.ErrNotFound)
		_, err = h.e.Batches(h.ctx, engine.BatchFilter{Limit: -1})
		require.ErrorIs(t, err, engine.ErrBadFilter)
	})
}

func TestBatchCancelStopsAfterTheChunkUnderWay(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, db *gorm.DB) {
		h := newHarness(t, db, chunk(2)).start()
		h.deploy(chainPackage("cancel"))
		ids := h.startN(6, "cancel", "p")

		// The first instance terminated: the operator cancels. The chunk
		// under way (two instances) finishes; nothing after it runs.
		var once sync.Once
		defer h.e.Subscribe(func(r engine.Record) {
			if r.Type != engine.RecordProcessTerminated {
				return
			}
			once.Do(func() {
				page, err := h.e.Batches(context.Background(), engine.BatchFilter{States: []engine.BatchState{engine.BatchRunning}})
				if err == nil && len(page.Batches) == 1 {
					_, err = h.e.CancelBatch(context.Background(), page.Batches[0].ID, engine.Op{Actor: "bob", Reason: "wrong filter"})
				}
				if err != nil {
					t.Errorf("cancel: %v", err)
				}
			})
		})()
		batch, err := h.e.StartBatch(h.ctx, engine.BatchRequest{Action: engine.BatchTerminate, Filter: engine.InstanceFilter{Package: "cancel"}})
		require.NoError(t, err)
		got := h.awaitBatch(batch.ID)
		require.Equal(t, engine.BatchCancelled, got.State)
		require.Equal(t, "bob: wrong filter", got.Note)
		require.Equal(t, int64(2), got.Done, "the chunk under way finished")
		require.Equal(t, ids[1], got.Cursor)
		h.requireStates(ids[:2], wftype.ProcessTerminated)
		h.requireStates(ids[2:], wftype.ProcessRunning)

		// Cancelled stays cancelled: the runner does not take it again.
		_, err = h.e.ResumeBatch(h.ctx, batch.ID, engine.Op{})
		require.ErrorIs(t, err, engine.ErrIllegalState)
	})
}

func TestBatchPauseAndResume(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, db *gorm.DB) {
		h := newHarness(t, db, chunk(2)).start()
		h.deploy(chainPackage("pause"))
		ids := h.startN(5, "pause", "p")
		stopped := make(chan engine.Record, 4)
		defer h.e.Subscribe(func(r engine.Record) {
			switch r.Type {
			case engine.RecordBatchProgress:
				if r.Detail == "suspend: 2 of 5 (done 2, skipped 0, failed 0)" {
					_, err := h.e.PauseBatch(context.Background(), r.Batch, engine.Op{Actor: "carol"})
					if err != nil {
						t.Errorf("pause: %v", err)
					}
				}
			case engine.RecordBatchStopped:
				stopped <- r
			}
		})()
		batch, err := h.e.StartBatch(h.ctx, engine.BatchRequest{Action: engine.BatchSuspend, Filter: engine.InstanceFilter{Package: "pause"}})
		require.NoError(t, err)
		r := <-stopped
		require.Equal(t, string(engine.BatchPaused), r.State)
		paused, err := h.e.Batch(h.ctx, batch.ID)
		require.NoError(t, err)
		require.Equal(t, engine.BatchPaused, paused.State)
		require.Equal(t, int64(2), paused.Done, "paused between chunks")
		require.Empty(t, paused.Owner, "a paused batch is let go")
		h.requireStates(ids[:2], wftype.ProcessSuspended)
		h.requireStates(ids[2:], wftype.ProcessRunning)

		_, err = h.e.ResumeBatch(h.ctx, batch.ID, engine.Op{Actor: "carol"})
		require.NoError(t, err)
		done := h.awaitBatch(batch.ID)
		require.Equal(t, engine.BatchCompleted, done.State)
		require.Equal(t, int64(5), done.Done)
		h.requireStates(ids, wftype.ProcessSuspended)
	})
}

func TestBatchContinuesAfterARestart(t *testing.T) {
	t.Parallel()
	// A chunk of 2 with a transaction per instance; a chunk of 4 in
	// transactions of 2 instances (commandMany).
	for _, tc := range []struct {
		name               string
		chunk, perTx, many int
	}{{"OneInstancePerTransaction", 2, 1, 5}, {"GroupedInstances", 4, 2, 9}} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			dbtest.Each(t, func(t *testing.T, db *gorm.DB) {
				quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
				cfg := engine.Config{DB: db, Logger: quiet, PollInterval: 20 * time.Millisecond, BatchChunk: tc.chunk, BatchPerTx: tc.perTx, NodeID: "n1"}
				first, err := engine.New(cfg)
				require.NoError(t, err)
				// The first run is cut off hard (its Start context cancelled) right
				// after its first chunk is committed.
				runCtx, cut := context.WithCancel(t.Context())
				defer cut()
				defer first.Subscribe(func(r engine.Record) {
					if r.Type == engine.RecordBatchProgress {
						cut()
					}
				})()
				h := &harness{t: t, ctx: t.Context(), db: db, e: first}
				h.deploy(chainPackage("restart"))
				require.NoError(t, first.Start(runCtx))
				ids := make([]int64, tc.many)
				for i := range ids {
					ids[i], err = first.StartProcess(h.ctx, engine.StartOptions{Package: "restart", Process: "p"})
					require.NoError(t, err)
				}
				require.NoError(t, first.WaitIdle(h.ctx))
				batch, err := first.StartBatch(h.ctx, engine.BatchRequest{Action: engine.BatchTerminate, Filter: engine.InstanceFilter{Package: "restart"}})
				require.NoError(t, err)
				<-runCtx.Done()
				require.NoError(t, first.Stop(context.Background()))

				cutOff, err := first.Batch(h.ctx, batch.ID)
				require.NoError(t, err)
				require.Equal(t, engine.BatchRunning, cutOff.State)
				require.Equal(t, int64(tc.chunk), cutOff.Done, "one chunk was committed")
				require.Equal(t, ids[tc.chunk-1], cutOff.Cursor)
				require.Empty(t, cutOff.Owner, "the stopped run let it go")

				second := newHarness(t, db, chunk(tc.chunk), perTx(tc.perTx), func(c *engine.Config) { c.NodeID = "n1" }).start()
				done := second.awaitBatch(batch.ID)
				require.Equal(t, engine.BatchCompleted, done.State)
				require.Equal(t, [3]int64{int64(tc.many), 0, 0}, [3]int64{done.Done, done.Skipped, done.Failed}, "nothing was done twice")
				second.requireStates(ids, wftype.ProcessTerminated)
				for _, id := range ids {
					n, _ := terminations(second, id)
					require.Equal(t, 1, n, "instance %d was terminated once", id)
				}
			})
		})
	}
}

func TestBatchCountsFailuresWithReasons(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, db *gorm.DB) {
		h := newHarness(t, db, chunk(2)).start()
		v1 := h.deploy(versionedPackage("mb", "B", ""))
		atA := h.startN(2, "mb", "p")
		atB := h.startN(2, "mb", "p")
		for _, id := range atB {
			require.NoError(t, h.complete(h.openItem(id).ID, nil))
		}
		finished := h.startProcess("mb", "p", nil)
		h.idle()
		require.NoError(t, h.e.Terminate(h.ctx, finished, engine.Op{}))
		v2 := h.deploy(versionedPackage("mb", "Review", ""))
		already := h.startProcess("mb", "p", nil) // runs from v2 already
		h.idle()

		batch, err := h.e.StartBatch(h.ctx, engine.BatchRequest{
			Action: engine.BatchMigrate, Filter: engine.InstanceFilter{Package: "mb"},
			Migration: &engine.Migration{To: v2.ID}, Op: engine.Op{Actor: "ops"},
		})
		require.NoError(t, err)
		done := h.awaitBatch(batch.ID)
		require.Equal(t, engine.BatchCompleted, done.State, "failures never stop a batch")
		require.Equal(t, int64(6), done.Total)
		require.Equal(t, [3]int64{2, 2, 2}, [3]int64{done.Done, done.Skipped, done.Failed})
		for _, id := range atA {
			require.Equal(t, v2.ID, h.instance(id).DefinitionID)
		}
		for _, id := range atB {
			require.Equal(t, v1.ID, h.instance(id).DefinitionID)
		}

		page, err := h.e.BatchFailures(h.ctx, engine.BatchFailureFilter{Batch: batch.ID, Limit: 3})
		require.NoError(t, err)
		require.Len(t, page.Failures, 3)
		next, err := h.e.BatchFailures(h.ctx, engine.BatchFailureFilter{Batch: batch.ID, After: page.Next})
		require.NoError(t, err)
		require.Zero(t, next.Next)
		why := map[int64]engine.BatchFailure{}
		for _, f := range append(page.Failures, next.Failures...) {
			why[f.Instance] = f
		}
		require.Len(t, why, 4)
		for _, id := range atB {
			require.False(t, why[id].Skipped)
			require.Contains(t, why[id].Error, "cannot be migrated")
			require.Contains(t, why[id].Error, "B")
		}
		require.True(t, why[finished].Skipped)
		require.Contains(t, why[finished].Error, "Terminated")
		require.True(t, why[already].Skipped)
		require.Contains(t, why[already].Error, "already runs from definition")
	})
}

func TestBatchRetryRetriesAbnormalActivities(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, db *gorm.DB) {
		h := newHarness(t, db)
		app := &flaky{fail: func() error { return errors.New("card declined") }}
		h.e.RegisterApplication("double", app.call)
		h.start()
		h.deploy(toolPackage("bretry", tool("Charge", "double", "x", "x"), ""))
		var failed []int64
		for range 3 {
			id := h.startProcess("bretry", "", map[string]any{"x": 5})
			h.awaitIncident(id, engine.CauseApplication)
			failed = append(failed, id)
		}
		app.healed.Store(true)
		ok := h.startProcess("bretry", "", map[string]any{"x": 5})
		h.requireState(ok, wftype.ProcessCompleted)

		batch, err := h.e.StartBatch(h.ctx, engine.BatchRequest{Action: engine.BatchRetry,
			Filter: engine.InstanceFilter{IncidentCause: engine.CauseApplication}, Op: engine.Op{Actor: "ops", Reason: "gateway back"}})
		require.NoError(t, err)
		require.Equal(t, int64(3), batch.Total, "the filter selects the instances with an incident")
		done := h.awaitBatch(batch.ID)
		require.Equal(t, [3]int64{3, 0, 0}, [3]int64{done.Done, done.Skipped, done.Failed})
		for _, id := range failed {
			h.requireState(id, wftype.ProcessCompleted)
		}
		counts, err := h.e.IncidentCounts(h.ctx)
		require.NoError(t, err)
		require.Zero(t, counts[engine.CauseApplication])
	})
}

func TestBatchRunsOnceOnTwoEngines(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, db *gorm.DB) {
		a := newHarness(t, db, chunk(3), func(c *engine.Config) { c.NodeID = "a" }).start()
		b := newHarness(t, db, chunk(3), func(c *engine.Config) { c.NodeID, c.BatchParallel = "b", 3 }).start()
		a.deploy(chainPackage("twice"))
		ids := a.startN(10, "twice", "p")

		var mu sync.Mutex
		progress := map[string]int{} // progress records per engine
		stopped := make(chan string, 2)
		for name, h := range map[string]*harness{"a": a, "b": b} {
			defer h.e.Subscribe(func(r engine.Record) {
				switch r.Type {
				case engine.RecordBatchProgress:
					mu.Lock()
					progress[name]++
					mu.Unlock()
				case engine.RecordBatchStopped:
					stopped <- name
				}
			})()
		}
		batch, err := a.e.StartBatch(a.ctx, engine.BatchRequest{Action: engine.BatchTerminate, Filter: engine.InstanceFilter{Package: "twice"}})
		require.NoError(t, err)
		runner := <-stopped
		done := a.awaitBatch(batch.ID)
		require.Equal(t, [3]int64{10, 0, 0}, [3]int64{done.Done, done.Skipped, done.Failed},
			"every instance once: none skipped as already terminated by the other engine")
		a.requireStates(ids, wftype.ProcessTerminated)
		mu.Lock()
		defer mu.Unlock()
		require.Equal(t, map[string]int{runner: 3}, progress, "one engine ran the four chunks (the last ends it)")
		require.Empty(t, stopped, "and stopped once")
	})
}

func TestBatchThatCannotRunFails(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, db *gorm.DB) {
		h := newHarness(t, db, func(c *engine.Config) { c.BatchPollInterval = 10 * time.Millisecond }).start()
		// A batch written by a newer node, with an action this one does not know.
		row, err := h.e.Store().InsertBatch(h.ctx, store.Batch{ID: 1, Action: "archive", Filter: []byte(`{}`), Actor: "future",
			State: store.BatchRunning, Total: 1, MaxInstanceID: 1, CreatedAt: time.Date(2026, 11, 26, 0, 0, 0, 0, time.UTC)})
		require.NoError(t, err)
		b := h.awaitBatch(row.ID)
		require.Equal(t, engine.BatchFailed, b.State)
		require.Contains(t, b.Error, `unknown action "archive"`)
	})
}
