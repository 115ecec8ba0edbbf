package engine_test

import (
	"slices"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/require"
	"gorm.io/gorm"

	"github.com/goxpdl/goxpdl/engine"
	"github.com/goxpdl/goxpdl/store/dbtest"
	"github.com/goxpdl/goxpdl/wftype"
	"github.com/goxpdl/goxpdl/workitem"
	"github.com/goxpdl/goxpdl/xpdl/xpdltest"
)

// perTx sets Config.BatchPerTx.
func perTx(n int) func(*engine.Config) { return func(c *engine.Config) { c.BatchPerTx = n } }

// terminations counts an instance's history entries to Terminated.
func terminations(h *harness, id int64) (n int, last engine.HistoryEntry) {
	for _, e := range h.history(id) {
		if e.Subject == engine.SubjectProcess && e.To == string(wftype.ProcessTerminated) {
			n, last = n+1, e
		}
	}
	return n, last
}

// TestBatchTerminateGroupsInstancesPerTransaction: a terminate batch
// gives several instances their command in one transaction, and keeps
// the guarantees of one transaction per instance: each instance's
// version fences it (a stale copy conflicts and is terminated again on
// its own, once), one that fails is that instance's failure and rolls
// back none of the others, and each one's history carries the op.
func TestBatchTerminateGroupsInstancesPerTransaction(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, db *gorm.DB) {
		h := newHarness(t, db, chunk(10), perTx(4))
		var stale atomic.Int64
		var staled atomic.Int32
		engine.SetBulkLoadedFunc(h.e, func(id int64, version *int64) {
			if id == stale.Load() && staled.Add(1) == 1 {
				*version-- // as if another node had changed it after this copy was read
			}
		})
		h.start()
		h.deploy(chainPackage("grp"))
		ids := h.startN(11, "grp", "p")
		broken, finished := ids[5], ids[9]
		stale.Store(ids[2])
		require.NoError(t, h.e.Terminate(h.ctx, finished, engine.Op{}))
		// An instance whose stored state cannot be read: its command fails
		// wherever it runs.
		require.NoError(t, db.Exec("UPDATE goxpdl_process_instances SET tokens = ? WHERE id = ?", []byte("{not json"), broken).Error)

		before := h.e.Stats().Commits.Runs
		op := engine.Op{Actor: "ops", Reason: "recall", Data: map[string]any{"ticket": "R-1"}}
		batch, err := h.e.StartBatch(h.ctx, engine.BatchRequest{
			Action: engine.BatchTerminate, Filter: engine.InstanceFilter{Package: "grp", Process: "p"}, Op: op,
		})
		require.NoError(t, err)
		done := h.awaitBatch(batch.ID)
		require.Equal(t, engine.BatchCompleted, done.State)
		require.Equal(t, [3]int64{9, 1, 1}, [3]int64{done.Done, done.Skipped, done.Failed})
		require.Equal(t, ids[10], done.Cursor)
		require.Less(t, h.e.Stats().Commits.Runs-before, uint64(len(ids)), "several instances shared a transaction")
		require.Equal(t, int32(1), staled.Load(), "the stale copy was loaded in its group; its retry ran in a transaction of its own (Terminate)")

		page, err := h.e.BatchFailures(h.ctx, engine.BatchFailureFilter{Batch: batch.ID})
		require.NoError(t, err)
		require.Len(t, page.Failures, 2)
		why := map[int64]engine.BatchFailure{}
		for _, f := range page.Failures {
			why[f.Instance] = f
		}
		require.True(t, why[finished].Skipped)
		require.False(t, why[broken].Skipped)
		require.Contains(t, why[broken].Error, "process instance")

		for _, id := range ids {
			pi := h.instance(id)
			switch id {
			case broken:
				require.Equal(t, wftype.ProcessRunning, pi.State, "its failure changed nothing")
				require.Equal(t, workitem.Offered, h.openItem(id).State)
			default:
				require.Equal(t, wftype.ProcessTerminated, pi.State, "instance %d", id)
			}
			if id == broken || id == finished {
				continue
			}
			n, last := terminations(h, id)
			require.Equal(t, 1, n, "instance %d was terminated once", id)
			require.Equal(t, "ops", last.Actor)
			require.Equal(t, "recall", last.Reason)
			require.Equal(t, map[string]any{"ticket": "R-1", "batch": float64(batch.ID)}, last.Data)
			items, err := workItemsOf(h.ctx, h.e, engine.WorkItemFilter{Instance: id})
			require.NoError(t, err)
			require.Equal(t, workitem.Withdrawn, items[0].State)
		}
	})
}

// TestBatchSuspendGroupsAndTerminateReachesSubflows: the grouped
// transaction publishes what its instances' commands produce once it
// commits: a suspended instance's records, and the terminate events of
// a terminated parent's subflow instances.
func TestBatchSuspendGroupsAndTerminateReachesSubflows(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, db *gorm.DB) {
		h := newHarness(t, db, chunk(5), perTx(3)).start()
		child := xpdltest.Process("child", "", xpdltest.Activity("Wait",
			`<Implementation><No/></Implementation><Performer>clerk</Performer>`, "", ""), "")
		h.deploy(xpdltest.Package(xpdltest.Process("main", "",
			xpdltest.Activity("Call", `<Implementation><SubFlow Id="child" Execution="SYNCHR"/></Implementation>`, "", ""), "") + child))
		parents := h.startN(4, "pkg", "main")
		var kids []int64
		for _, id := range parents {
			k := children(h, id)
			require.Len(t, k, 1)
			kids = append(kids, k[0].ID)
		}

		var mu sync.Mutex
		var suspended []int64
		defer h.e.Subscribe(func(r engine.Record) {
			if r.Type == engine.RecordProcessSuspended {
				mu.Lock()
				suspended = append(suspended, r.Instance)
				mu.Unlock()
			}
		})()
		batch, err := h.e.StartBatch(h.ctx, engine.BatchRequest{Action: engine.BatchSuspend,
			Filter: engine.InstanceFilter{Process: "child"}, Op: engine.Op{Actor: "ops"}})
		require.NoError(t, err)
		done := h.awaitBatch(batch.ID)
		require.Equal(t, [3]int64{4, 0, 0}, [3]int64{done.Done, done.Skipped, done.Failed})
		h.requireStates(kids, wftype.ProcessSuspended)
		mu.Lock()
		slices.Sort(suspended)
		require.Equal(t, slices.Sorted(slices.Values(kids)), suspended, "each suspended instance's record was published")
		mu.Unlock()

		batch, err = h.e.StartBatch(h.ctx, engine.BatchRequest{Action: engine.BatchTerminate,
			Filter: engine.InstanceFilter{Process: "main"}, Op: engine.Op{Actor: "ops"}})
		require.NoError(t, err)
		done = h.awaitBatch(batch.ID)
		require.Equal(t, [3]int64{4, 0, 0}, [3]int64{done.Done, done.Skipped, done.Failed})
		h.requireStates(parents, wftype.ProcessTerminated)
		h.requireStates(kids, wftype.ProcessTerminated) // by the events the parents' terminations sent
	})
}
