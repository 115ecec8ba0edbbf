package engine_test

import (
	"context"
	"io"
	"log/slog"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/goxpdl/goxpdl/engine"
	"github.com/goxpdl/goxpdl/internal/faultdb"
	"github.com/goxpdl/goxpdl/wftype"
	"github.com/goxpdl/goxpdl/workitem"
)

// TestWorkItemDeadlock makes the UPDATE of a work item fail with MySQL's
// deadlock (1213; the store translates it alike on either database) as a
// claim and a completion write it: the command is tried again and
// succeeds, rather than being refused as if another user had changed the
// item first (ErrNotAllowed, "the item changed meanwhile"), which nobody
// had. Found by the adversary over faultdb (TestOverFaultDB, MySQL seeds
// 1, 7 and 9).
func TestWorkItemDeadlock(t *testing.T) {
	t.Parallel()
	for _, d := range faultDialects {
		t.Run(d.name, func(t *testing.T) {
			t.Parallel()
			e, in, quiet := startFaultEngine(t, d, nil)
			id, err := e.StartProcess(quiet, engine.StartOptions{Package: "pkg"})
			require.NoError(t, err)
			require.NoError(t, e.WaitQuiet(quiet))
			items, err := workItemsOf(quiet, e, openItemsOf(id))
			require.NoError(t, err)
			require.Len(t, items, 1)
			item := items[0].ID

			deadlock := faultdb.Fault{Kind: faultdb.Statement, Query: "UPDATE `goxpdl_work_items`", Err: faultdb.MySQLDeadlock()}
			in.Arm(deadlock)
			require.NoError(t, e.ClaimWorkItem(t.Context(), item, "clerk1", engine.Op{}), "a claim whose UPDATE met a deadlock")
			require.False(t, in.Armed(), "the deadlock struck")
			wi, err := e.WorkItem(quiet, item)
			require.NoError(t, err)
			require.Equal(t, workitem.Allocated, wi.State)
			require.Equal(t, "clerk1", wi.Owner)

			in.Arm(deadlock)
			_, err = e.CompleteWorkItem(t.Context(), item, engine.Completion{User: "clerk1"})
			require.NoError(t, err, "a completion whose UPDATE met a deadlock")
			require.False(t, in.Armed(), "the deadlock struck")
			require.NoError(t, e.WaitQuiet(quiet))
			pi, err := e.Instance(quiet, id)
			require.NoError(t, err)
			require.Equal(t, wftype.ProcessCompleted, pi.State)
		})
	}
}

// TestBatchStateDeadlock: pausing a batch whose UPDATE meets a deadlock
// is tried again and pauses it, rather than being refused as if the batch
// were in another state (store.ErrConflict, which a deadlock matches too).
func TestBatchStateDeadlock(t *testing.T) {
	t.Parallel()
	for _, d := range faultDialects {
		t.Run(d.name, func(t *testing.T) {
			t.Parallel()
			// No batch runner: the batch stays Running until paused.
			e, in, quiet := startFaultEngine(t, d, func(c *engine.Config) { c.BatchPollInterval = -1 })
			_, err := e.StartProcess(quiet, engine.StartOptions{Package: "pkg"})
			require.NoError(t, err)
			batch, err := e.StartBatch(quiet, engine.BatchRequest{Action: engine.BatchSuspend, Filter: engine.InstanceFilter{Package: "pkg"}})
			require.NoError(t, err)

			in.Arm(faultdb.Fault{Kind: faultdb.Statement, Query: "UPDATE `goxpdl_batches`", Err: faultdb.MySQLDeadlock()})
			paused, err := e.PauseBatch(t.Context(), batch.ID, engine.Op{Actor: "carol"})
			require.NoError(t, err, "a pause whose UPDATE met a deadlock")
			require.False(t, in.Armed(), "the deadlock struck")
			require.Equal(t, engine.BatchPaused, paused.State)
		})
	}
}

// startFaultEngine starts an engine on a database of dialect d opened
// through a fault injector (returned, nothing armed), with configure's
// changes to its Config, and deploys hostTxProcess. The context it
// returns is exempt from faults, for the test's own set-up and reads.
func startFaultEngine(t *testing.T, d faultDialect, configure func(*engine.Config)) (*engine.Engine, *faultdb.Injector, context.Context) {
	t.Helper()
	in := faultdb.New()
	cfg := engine.Config{DB: d.open(t, in.OpenOpts()), Logger: slog.New(slog.NewTextHandler(io.Discard, nil)), PollInterval: 20 * time.Millisecond}
	if configure != nil {
		configure(&cfg)
	}
	e, err := engine.New(cfg)
	require.NoError(t, err)
	quiet := faultdb.Exempt(t.Context())
	require.NoError(t, e.Start(quiet))
	t.Cleanup(func() { require.NoError(t, e.Stop(context.Background())) })
	_, err = e.Deploy(quiet, []byte(hostTxProcess))
	require.NoError(t, err)
	return e, in, quiet
}
