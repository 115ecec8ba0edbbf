package engine_test

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"gorm.io/gorm"

	"github.com/goxpdl/goxpdl/engine"
	"github.com/goxpdl/goxpdl/internal/faultdb"
	"github.com/goxpdl/goxpdl/timer"
	"github.com/goxpdl/goxpdl/wftype"
	"github.com/goxpdl/goxpdl/xpdl/xpdltest"
)

// TestAmbiguousCommitReleasesClaims: when the COMMIT of an event's
// transaction goes through but the connection breaks before the engine
// hears so, the events that transaction published (claimed by this node,
// to be handed to its scheduler after the commit) are in the outbox. The
// engine does not know it and hands nothing over; before the fix they
// waited out their claim (EventLease, 30 s) and the instance stood still
// that long. Now the engine releases those claims (Bus.Abandon) and the
// instance moves on at once: here on a fake clock that never moves.
func TestAmbiguousCommitReleasesClaims(t *testing.T) {
	t.Parallel()
	for _, d := range faultDialects {
		t.Run(d.name, func(t *testing.T) {
			t.Parallel()
			in := faultdb.New()
			db := d.open(t, in.OpenOpts())
			e, err := engine.New(engine.Config{
				DB: db, Clock: timer.NewFake(specEpoch), Logger: slog.New(slog.NewTextHandler(io.Discard, nil)),
				// The poller runs only when nudged: its own commits do
				// not come before the event's.
				PollInterval: time.Hour, RescueInterval: -1,
			})
			require.NoError(t, err)
			require.NoError(t, e.Start(t.Context()))
			t.Cleanup(func() { require.NoError(t, e.Stop(context.Background())) })
			quiet := faultdb.Exempt(t.Context())
			_, err = e.Deploy(quiet, []byte(xpdltest.Package(ambiguousProcess)))
			require.NoError(t, err)
			id, err := e.StartProcess(quiet, engine.StartOptions{Package: "pkg"})
			require.NoError(t, err)
			require.NoError(t, e.WaitQuiet(quiet))
			items, err := workItemsOf(quiet, e, openItemsOf(id))
			require.NoError(t, err)
			require.Len(t, items, 1)

			offered := make(chan struct{})
			unsub := e.Subscribe(func(r engine.Record) {
				if r.Type == engine.RecordWorkItemCreated && r.Activity == "C" {
					close(offered)
				}
			})
			defer unsub()
			// The completion's COMMIT goes through, then the
			// connection breaks: the host gets an error it cannot
			// read, and the event that starts B is in the outbox,
			// claimed by this node.
			in.Arm(faultdb.Fault{Kind: faultdb.AfterCommit, At: 1, Err: faultdb.ConnectionLost(d.dialect), Query: "goxpdl_work_items"})
			_, err = e.CompleteWorkItem(t.Context(), items[0].ID, engine.Completion{User: "clerk1"})
			require.Error(t, err)
			require.Equal(t, int64(1), in.Stats().Injected[faultdb.AfterCommit])
			// A guard, not a measurement: without the fix the instance
			// waits for a lease the fake clock never reaches.
			ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
			defer cancel()
			select {
			case <-offered:
			case <-ctx.Done():
				t.Fatal("the instance stood still after the ambiguous commit")
			}
			require.NoError(t, e.WaitQuiet(quiet))
			pi, err := e.Instance(quiet, id)
			require.NoError(t, err)
			require.Equal(t, wftype.ProcessRunning, pi.State)
			require.Equal(t, map[string]int{"A": 1, "B": 1, "C": 1}, startedOnce(t, e, id))
		})
	}
}

// ambiguousProcess is a work item, a route, and another work item.
const ambiguousProcess = `<WorkflowProcess Id="p">
  <Activities>
    <Activity Id="A"><Implementation><No/></Implementation><Performer>clerk</Performer></Activity>
    <Activity Id="B"><Route/></Activity>
    <Activity Id="C"><Implementation><No/></Implementation><Performer>clerk</Performer></Activity>
  </Activities>
  <Transitions><Transition Id="t1" From="A" To="B"/><Transition Id="t2" From="B" To="C"/></Transitions>
</WorkflowProcess>`

// startedOnce counts the activity instances of each activity.
func startedOnce(t *testing.T, e *engine.Engine, id int64) map[string]int {
	t.Helper()
	acts, err := activitiesOf(faultdb.Exempt(t.Context()), e, id)
	require.NoError(t, err)
	out := map[string]int{}
	for _, a := range acts {
		out[a.Activity]++
	}
	return out
}

// TestApplicationWriteMeetsDeadlock: an application's business write in
// the step's transaction (Call.Tx) fails because the database gave up on
// the transaction (MySQL's deadlock, which rolls the whole transaction
// back; SQLite's BUSY) or lost its connection. The step is rolled back
// and tried again, the call with it; the activity does not go Abnormal.
// Before the fix the application's error counted as the application's
// own failure: the activity went Abnormal with an incident, and on MySQL
// those writes were made after the server had rolled the transaction
// back, outside any transaction. Found by the fault suite.
func TestApplicationWriteMeetsDeadlock(t *testing.T) {
	t.Parallel()
	for _, d := range faultDialects {
		for _, fault := range []struct {
			name string
			err  error
		}{{"conflict", faultdb.Deadlock(d.dialect)}, {"connection-lost", faultdb.ConnectionLost(d.dialect)}} {
			t.Run(d.name+"/"+fault.name, func(t *testing.T) {
				t.Parallel()
				var calls atomic.Int32
				h, in, db, dep := newChargeRig(t, d, func(ctx context.Context, call *engine.Call) (map[string]any, error) {
					calls.Add(1)
					return nil, chargeWrite(ctx, call)
				})
				quiet := faultdb.Exempt(t.Context())
				ended := make(chan string, 2)
				defer h.e.Subscribe(func(r engine.Record) {
					if r.Type == engine.RecordProcessCompleted || r.Type == engine.RecordActivityAbnormal {
						ended <- r.Type
					}
				})()
				in.Arm(faultdb.Fault{Kind: faultdb.Statement, At: 1, Err: fault.err, Query: "INSERT INTO charges"})
				id, err := h.e.StartProcess(quiet, engine.StartOptions{DefinitionID: dep.ID})
				require.NoError(t, err)
				ctx, cancel := context.WithTimeout(t.Context(), awaitBound) // a guard, not a measurement: a claim the lost connection left may wait out its lease
				defer cancel()
				select {
				case got := <-ended:
					require.Equal(t, engine.RecordProcessCompleted, got)
				case <-ctx.Done():
					t.Fatal("the instance did not end")
				}
				require.Equal(t, int64(1), in.Stats().Injected[faultdb.Statement])
				require.Equal(t, wftype.ProcessCompleted, h.instance(id).State)
				require.Equal(t, int32(2), calls.Load(), "called again after the rollback")
				var n int64
				require.NoError(t, db.WithContext(quiet).Raw("SELECT COUNT(*) FROM charges").Scan(&n).Error)
				require.Equal(t, int64(1), n, "the business write committed once")
				inc, err := h.e.Incidents(quiet, engine.IncidentFilter{})
				require.NoError(t, err)
				require.Empty(t, inc.Incidents)
			})
		}
	}
}

// TestSubflowStartMeetsLostConnection: the connection breaks while a
// SYNCHR subflow activity creates its child instance. The step is rolled
// back and tried again; before the fix the store's error counted as the
// subflow's failure and the activity went Abnormal (an incident of cause
// "other"), the child never created. Found by the fault suite
// (subflows.txt, wcp22-recursion.txt).
func TestSubflowStartMeetsLostConnection(t *testing.T) {
	t.Parallel()
	for _, d := range faultDialects {
		t.Run(d.name, func(t *testing.T) {
			t.Parallel()
			in := faultdb.New()
			db := d.open(t, in.OpenOpts())
			quiet := faultdb.Exempt(t.Context())
			h := newHarness(t, db, func(c *engine.Config) { c.Clock = timer.Real() }).start()
			dep := h.deploy(xpdltest.Package(`<WorkflowProcess Id="main">
  <Activities><Activity Id="Call"><Implementation><SubFlow Id="leaf" Execution="SYNCHR"/></Implementation></Activity></Activities>
</WorkflowProcess>
<WorkflowProcess Id="leaf">
  <Activities><Activity Id="L"><Route/></Activity></Activities>
</WorkflowProcess>`))
			ended := make(chan string, 2)
			defer h.e.Subscribe(func(r engine.Record) {
				if r.Type == engine.RecordActivityAbnormal || r.Type == engine.RecordProcessCompleted && r.Parent == 0 {
					ended <- r.Type
				}
			})()
			// The start's own insert is exempt: the next one is the child's.
			in.Arm(faultdb.Fault{Kind: faultdb.Statement, At: 1, Err: faultdb.ConnectionLost(d.dialect), Query: "INSERT INTO `goxpdl_process_instances`"})
			id, err := h.e.StartProcess(quiet, engine.StartOptions{DefinitionID: dep.ID, Process: "main"})
			require.NoError(t, err)
			ctx, cancel := context.WithTimeout(t.Context(), awaitBound) // a guard, not a measurement: a claim the lost connection left may wait out its lease
			defer cancel()
			select {
			case got := <-ended:
				require.Equal(t, engine.RecordProcessCompleted, got)
			case <-ctx.Done():
				t.Fatal("the instance did not end")
			}
			require.Equal(t, int64(1), in.Stats().Injected[faultdb.Statement])
			require.Equal(t, wftype.ProcessCompleted, h.instance(id).State)
			inc, err := h.e.Incidents(quiet, engine.IncidentFilter{})
			require.NoError(t, err)
			require.Empty(t, inc.Incidents)
		})
	}
}

// TestRetryPolicyCountsCallsNotDeliveries: a retry policy's MaxAttempts
// is the most calls that fail. A delivery of the step that fails on the
// database instead (here the application's own write meets a deadlock,
// rolled back and tried again) is not one of them. Before the fix the
// policy counted the event's deliveries: such a delivery used one of
// its attempts and the activity gave up after fewer failed calls than
// MaxAttempts (seen as a flaky TestRetriesExhaustedOpensIncidentAndRetryRunsAgain
// on a loaded MariaDB, where a delivery lost to a database conflict).
func TestRetryPolicyCountsCallsNotDeliveries(t *testing.T) {
	t.Parallel()
	for _, d := range faultDialects {
		t.Run(d.name, func(t *testing.T) {
			t.Parallel()
			var calls atomic.Int32
			h, in, _, dep := newChargeRig(t, d, func(ctx context.Context, call *engine.Call) (map[string]any, error) {
				calls.Add(1)
				if err := chargeWrite(ctx, call); err != nil {
					return nil, err // the armed deadlock, on the first call only
				}
				return nil, engine.Retryable(errors.New("gateway timeout"))
			}, engine.WithRetry(fastRetry))
			quiet := faultdb.Exempt(t.Context())
			in.Arm(faultdb.Fault{Kind: faultdb.Statement, At: 1, Err: faultdb.Deadlock(d.dialect), Query: "INSERT INTO charges"})
			id, err := h.e.StartProcess(quiet, engine.StartOptions{DefinitionID: dep.ID})
			require.NoError(t, err)
			inc := h.awaitIncident(id, engine.CauseRetriesExhausted)
			require.Equal(t, int64(1), in.Stats().Injected[faultdb.Statement])
			require.Equal(t, 3, inc.Attempts, "MaxAttempts failed calls")
			require.Equal(t, int32(4), calls.Load(), "the call the deadlock rolled back, then MaxAttempts that failed")
			require.Contains(t, inc.Error, "gateway timeout")
		})
	}
}

// newChargeRig starts an engine on a fresh database of d with a fault
// injector, a business table charges, an application "charge" that is
// app, and a deployed process p that calls it once.
func newChargeRig(t *testing.T, d faultDialect, app engine.ApplicationFunc, opts ...engine.AppOption) (*harness, *faultdb.Injector, *gorm.DB, engine.Deployment) {
	t.Helper()
	in := faultdb.New()
	db := d.open(t, in.OpenOpts())
	require.NoError(t, db.WithContext(faultdb.Exempt(t.Context())).Exec("CREATE TABLE charges (instance BIGINT NOT NULL)").Error)
	h := newHarness(t, db, func(c *engine.Config) { c.Clock = timer.Real() })
	h.e.RegisterApplication("charge", app, opts...)
	h.start()
	dep := h.deploy(xpdltest.PackageWith(`<Applications><Application Id="charge"/></Applications>`, `<WorkflowProcess Id="p">
  <Activities>
    <Activity Id="Charge"><Implementation><Tool Id="charge" Type="APPLICATION"/></Implementation></Activity>
  </Activities>
</WorkflowProcess>`))
	return h, in, db, dep
}

// chargeWrite is the charge application's business write, in the step's
// transaction.
func chargeWrite(ctx context.Context, call *engine.Call) error {
	return call.Tx.WithContext(ctx).Exec("INSERT INTO charges (instance) VALUES (?)", call.ProcessInstanceID).Error
}
