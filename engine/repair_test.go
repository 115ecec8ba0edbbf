package engine_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"gorm.io/gorm"

	"github.com/goxpdl/goxpdl/engine"
	"github.com/goxpdl/goxpdl/store/dbtest"
	"github.com/goxpdl/goxpdl/timer"
	"github.com/goxpdl/goxpdl/wftype"
	"github.com/goxpdl/goxpdl/xpdl/xpdltest"
)

// awaitIncident waits until instance id has an open incident of the
// cause, woken by every record the engine publishes.
func (h *harness) awaitIncident(id int64, cause engine.IncidentCause) engine.Incident {
	h.t.Helper()
	wake := make(chan struct{}, 1)
	defer h.e.Subscribe(func(engine.Record) {
		select {
		case wake <- struct{}{}:
		default:
		}
	})()
	clock := timer.Real() // failing incidents are written outside a step: no record wakes us, so look again now and then
	for {
		page, err := h.e.Incidents(h.ctx, engine.IncidentFilter{Instance: id, Causes: []engine.IncidentCause{cause}})
		require.NoError(h.t, err)
		if len(page.Incidents) > 0 {
			return page.Incidents[0]
		}
		again := clock.NewTimer(10 * time.Millisecond)
		select {
		case <-wake:
		case <-again.C():
		case <-h.ctx.Done():
			h.t.Fatalf("instance %d never had a %s incident", id, cause)
		}
		again.Stop()
	}
}

// activityNamed returns the latest instance of activity def of instance id.
func (h *harness) activityNamed(id int64, def string) engine.ActivityInstance {
	h.t.Helper()
	acts, err := activitiesOf(h.ctx, h.e, id)
	require.NoError(h.t, err)
	for i := len(acts) - 1; i >= 0; i-- {
		if acts[i].Activity == def {
			return acts[i]
		}
	}
	h.t.Fatalf("instance %d has no activity %s", id, def)
	return engine.ActivityInstance{}
}

// flaky is an application that fails with fail until healed.
type flaky struct {
	mu     sync.Mutex
	keys   []string
	healed atomic.Bool
	fail   func() error
}

func (f *flaky) call(_ context.Context, c *engine.Call) (map[string]any, error) {
	f.mu.Lock()
	f.keys = append(f.keys, c.IdempotencyKey)
	f.mu.Unlock()
	if f.healed.Load() {
		return map[string]any{"out": int64(99)}, nil
	}
	return nil, f.fail()
}

func (f *flaky) calls() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]string(nil), f.keys...)
}

// fastRetry retries quickly, three calls at most, an incident from the
// second failure.
var fastRetry = engine.RetryPolicy{MaxAttempts: 3, InitialBackoff: time.Millisecond, MaxBackoff: 5 * time.Millisecond, IncidentAfter: 2}

func TestRetriesExhaustedOpensIncidentAndRetryRunsAgain(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, db *gorm.DB) {
		h := newHarness(t, db)
		app := &flaky{fail: func() error { return engine.Retryable(errors.New("gateway timeout")) }}
		h.e.RegisterApplication("double", app.call, engine.WithRetry(fastRetry))
		h.start()
		h.deploy(toolPackage("retry", tool("Charge", "double", "x", "x")+xpdltest.Activity("Done", "<Route/>", "", ""),
			xpdltest.Transition("t1", "Charge>Done")))
		id := h.startProcess("retry", "", map[string]any{"x": 5})

		inc := h.awaitIncident(id, engine.CauseRetriesExhausted)
		require.Len(t, app.calls(), 3, "MaxAttempts calls, then no more")
		require.Equal(t, "Charge", inc.Activity)
		require.Equal(t, "double", inc.Application)
		require.Equal(t, map[string]any{"in": float64(5), "out": float64(5)}, inc.Params)
		require.Equal(t, 3, inc.Attempts)
		require.Contains(t, inc.Error, "gateway timeout")
		require.Equal(t, engine.IncidentOpen, inc.State)
		charge := h.activityNamed(id, "Charge")
		require.Equal(t, wftype.ActivityAbnormal, charge.State)
		require.Equal(t, inc.ActivityInstance, charge.ID)
		counts, err := h.e.IncidentCounts(h.ctx)
		require.NoError(t, err)
		require.Equal(t, int64(1), counts[engine.CauseRetriesExhausted])
		require.Zero(t, counts[engine.CauseFailing], "the failing incident became the exhausted one")

		app.healed.Store(true)
		require.NoError(t, h.e.RetryActivity(h.ctx, id, charge.ID, engine.Op{Actor: "alice", Reason: "gateway is back"}))
		h.requireState(id, wftype.ProcessCompleted)
		keys := app.calls()
		require.Len(t, keys, 4)
		require.NotEqual(t, keys[2], keys[3], "a retry is a new attempt with a new idempotency key")
		require.Equal(t, int64(99), h.vars(id)["x"])

		page, err := h.e.Incidents(h.ctx, engine.IncidentFilter{Instance: id, States: []engine.IncidentState{engine.IncidentResolved}})
		require.NoError(t, err)
		require.Len(t, page.Incidents, 1)
		require.Equal(t, "retried", page.Incidents[0].Resolution)
		require.Equal(t, "alice", page.Incidents[0].ResolvedBy)

		var retried bool
		for _, e := range h.history(id) {
			if e.Actor == "alice" && e.From == string(wftype.ActivityAbnormal) && e.To == string(wftype.ActivityInitiated) {
				retried = true
				require.Equal(t, "gateway is back", e.Reason)
				require.Equal(t, "Charge", e.Activity, "entries name the activity definition")
			}
		}
		require.True(t, retried, "the retry is in the history with its actor and reason")
	})
}

func TestFailingIncidentResolvesWhenACallSucceeds(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, db *gorm.DB) {
		h := newHarness(t, db)
		var n atomic.Int64
		h.e.RegisterApplication("double", func(context.Context, *engine.Call) (map[string]any, error) {
			if n.Add(1) <= 3 {
				return nil, engine.Retryable(errors.New("busy"))
			}
			return nil, nil
		}, engine.WithRetry(engine.RetryPolicy{MaxAttempts: 10, InitialBackoff: time.Millisecond, MaxBackoff: 5 * time.Millisecond, IncidentAfter: 2}))
		h.start()
		h.deploy(toolPackage("failing", tool("Charge", "double", "x", "x"), ""))
		id := h.startProcess("failing", "", nil)
		h.requireState(id, wftype.ProcessCompleted)
		require.EqualValues(t, 4, n.Load())
		page, err := h.e.Incidents(h.ctx, engine.IncidentFilter{Instance: id, States: []engine.IncidentState{engine.IncidentOpen, engine.IncidentResolved}})
		require.NoError(t, err)
		require.Len(t, page.Incidents, 1, "one incident for the failures in a row")
		inc := page.Incidents[0]
		require.Equal(t, engine.CauseFailing, inc.Cause)
		require.Equal(t, 3, inc.Attempts, "it was updated by the second and third failures")
		require.Equal(t, engine.IncidentResolved, inc.State)
		require.Equal(t, "succeeded", inc.Resolution)
	})
}

func TestSkipCompletesWithOperatorValues(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, db *gorm.DB) {
		h := newHarness(t, db)
		h.e.RegisterApplication("double", func(context.Context, *engine.Call) (map[string]any, error) {
			return nil, errors.New("card declined")
		})
		h.start()
		h.deploy(toolPackage("skip", tool("Charge", "double", "x", "x")+xpdltest.Activity("Big", "<Route/>", "", "")+
			xpdltest.Activity("Small", "<Route/>", "", ""),
			xpdltest.Transition("t1", "Charge>Big?x > 10")+xpdltest.Transition("t2", "Charge>Small?x <= 10")))
		id := h.startProcess("skip", "", nil)
		inc := h.awaitIncident(id, engine.CauseApplication)
		require.Contains(t, inc.Error, "card declined")
		charge := h.activityNamed(id, "Charge")

		// Bad input changes nothing.
		err := h.e.SkipActivity(h.ctx, id, charge.ID, engine.Values{Variables: map[string]any{"x": "many"}}, engine.Op{})
		require.ErrorIs(t, err, engine.ErrWrongType)
		err = h.e.SkipActivity(h.ctx, id, charge.ID, engine.Values{Variables: map[string]any{"nope": 1}}, engine.Op{})
		require.ErrorIs(t, err, engine.ErrUnknownVariable)
		err = h.e.SkipActivity(h.ctx, id, 987654, engine.Values{}, engine.Op{})
		require.ErrorIs(t, err, engine.ErrNotFound)
		other := h.startProcess("skip", "", nil)
		h.awaitIncident(other, engine.CauseApplication)
		err = h.e.RetryActivity(h.ctx, other, charge.ID, engine.Op{})
		require.ErrorIs(t, err, engine.ErrWrongInstance)
		require.NoError(t, h.e.Suspend(h.ctx, id, engine.Op{}))
		err = h.e.SkipActivity(h.ctx, id, charge.ID, engine.Values{}, engine.Op{})
		require.ErrorIs(t, err, engine.ErrIllegalState, "a suspended process is resumed first")
		require.NoError(t, h.e.Resume(h.ctx, id, engine.Op{}))
		require.Equal(t, wftype.ActivityAbnormal, h.activityNamed(id, "Charge").State)
		require.Equal(t, int64(0), h.vars(id)["x"])

		require.NoError(t, h.e.SkipActivity(h.ctx, id, charge.ID, engine.Values{TextVariables: map[string]string{"x": "42"}},
			engine.Op{Actor: "bob", Reason: "charged by phone"}))
		h.requireState(id, wftype.ProcessCompleted)
		require.Equal(t, map[string]int{"Charge": 1, "Big": 1}, h.started(id), "it routed on the operator's value")
		require.Equal(t, int64(42), h.vars(id)["x"])
		page, err := h.e.Incidents(h.ctx, engine.IncidentFilter{Instance: id, States: []engine.IncidentState{engine.IncidentResolved}})
		require.NoError(t, err)
		require.Len(t, page.Incidents, 1)
		require.Equal(t, "skipped", page.Incidents[0].Resolution)

		// Done once, a second skip or retry is refused.
		require.ErrorIs(t, h.e.SkipActivity(h.ctx, id, charge.ID, engine.Values{}, engine.Op{}), engine.ErrIllegalState)
		require.ErrorIs(t, h.e.RetryActivity(h.ctx, id, charge.ID, engine.Op{}), engine.ErrIllegalState)
	})
}

func TestSkipThatCannotRouteIsRefused(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, db *gorm.DB) {
		h := newHarness(t, db)
		h.e.RegisterApplication("double", func(context.Context, *engine.Call) (map[string]any, error) {
			return nil, errors.New("boom")
		})
		h.start()
		h.deploy(toolPackage("noroute", tool("Charge", "double", "x", "x")+xpdltest.Activity("B", "<Route/>", "", ""),
			xpdltest.Transition("t1", "Charge>B?nosuchvar > 1")))
		id := h.startProcess("noroute", "", nil)
		h.awaitIncident(id, engine.CauseApplication)
		charge := h.activityNamed(id, "Charge")
		err := h.e.SkipActivity(h.ctx, id, charge.ID, engine.Values{}, engine.Op{})
		require.ErrorIs(t, err, engine.ErrCannotSkip)
		require.Contains(t, err.Error(), "nosuchvar")
		require.Equal(t, wftype.ActivityAbnormal, h.activityNamed(id, "Charge").State, "nothing changed")
		page, err := h.e.Incidents(h.ctx, engine.IncidentFilter{Instance: id})
		require.NoError(t, err)
		require.Len(t, page.Incidents, 1, "the incident is still open")
	})
}

func TestTwoOperatorsRetryTheSameIncident(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, db *gorm.DB) {
		h := newHarness(t, db)
		app := &flaky{fail: func() error { return errors.New("down") }}
		h.e.RegisterApplication("double", app.call)
		h.start()
		h.deploy(toolPackage("race", tool("Charge", "double", "x", "x"), ""))
		id := h.startProcess("race", "", nil)
		h.awaitIncident(id, engine.CauseApplication)
		charge := h.activityNamed(id, "Charge")
		app.healed.Store(true)

		errs := make([]error, 2)
		var wg sync.WaitGroup
		for i := range errs {
			wg.Go(func() { errs[i] = h.e.RetryActivity(h.ctx, id, charge.ID, engine.Op{Actor: "op"}) })
		}
		wg.Wait()
		var ok, refused int
		for _, err := range errs {
			switch {
			case err == nil:
				ok++
			case errors.Is(err, engine.ErrIllegalState), errors.Is(err, engine.ErrConflict):
				refused++
			default:
				t.Fatalf("unexpected error: %v", err)
			}
		}
		require.Equal(t, 1, ok, "exactly one retry is applied")
		require.Equal(t, 1, refused)
		h.requireState(id, wftype.ProcessCompleted)
		require.Len(t, app.calls(), 2, "the failed call and one retry")
	})
}

// blockXPDL runs set S (Write then Check, both applications) in block Blk.
const blockXPDL = `<?xml version="1.0" encoding="UTF-8"?>
<Package xmlns="http://www.wfmc.org/2002/XPDL1.0" Id="blockretry" Name="block retry">
  <PackageHeader><XPDLVersion>1.0</XPDLVersion><Vendor>goxpdl</Vendor><Created>2026-11-24</Created></PackageHeader>
  <Applications><Application Id="write"/><Application Id="check"/></Applications>
  <WorkflowProcesses><WorkflowProcess Id="p">
    <ActivitySets><ActivitySet Id="S"><Activities>
      <Activity Id="Write"><Implementation><Tool Id="write"/></Implementation></Activity>
      <Activity Id="Check"><Implementation><Tool Id="check"/></Implementation></Activity>
    </Activities><Transitions><Transition Id="s1" From="Write" To="Check"/></Transitions></ActivitySet></ActivitySets>
    <Activities>
      <Activity Id="Blk"><BlockActivity ActivitySetId="S"/></Activity>
      <Activity Id="End"><Route/></Activity>
    </Activities>
    <Transitions><Transition Id="t1" From="Blk" To="End"/></Transitions>
  </WorkflowProcess></WorkflowProcesses>
</Package>`

func TestRetryBlockActivityRunsTheWholeSetAgain(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, db *gorm.DB) {
		require.NoError(t, db.Exec("CREATE TABLE ledger (k VARCHAR(64) NOT NULL)").Error)
		h := newHarness(t, db)
		var writes atomic.Int64
		h.e.RegisterApplication("write", func(_ context.Context, c *engine.Call) (map[string]any, error) {
			writes.Add(1)
			return nil, c.Tx.Exec("INSERT INTO ledger (k) VALUES (?)", c.IdempotencyKey).Error
		})
		check := &flaky{fail: func() error { return errors.New("ledger out of balance") }}
		h.e.RegisterApplication("check", check.call)
		h.start()
		h.deploy(blockXPDL)
		id := h.startProcess("blockretry", "", nil)
		inc := h.awaitIncident(id, engine.CauseApplication)
		require.Equal(t, "Blk", inc.Activity, "the block carries the set's failure")
		require.Contains(t, inc.Error, "ledger out of balance")
		var rows int64
		require.NoError(t, db.Raw("SELECT COUNT(*) FROM ledger").Scan(&rows).Error)
		require.Zero(t, rows, "the set rolled back with its host writes")

		check.healed.Store(true)
		require.NoError(t, h.e.RetryActivity(h.ctx, id, inc.ActivityInstance, engine.Op{Actor: "alice"}))
		h.requireState(id, wftype.ProcessCompleted)
		require.NoError(t, db.Raw("SELECT COUNT(*) FROM ledger").Scan(&rows).Error)
		require.EqualValues(t, 1, rows, "the whole set ran again, once")
		require.EqualValues(t, 2, writes.Load(), "Write was called in the rolled-back run and again in the retry")
		require.Equal(t, 1, h.started(id)["Write"], "the rolled-back run left no activity instance behind")
	})
}

func TestLockingOpensAnIncident(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, db *gorm.DB) {
		h := newHarness(t, db).start()
		h.deploy(toolPackage("lost", xpdltest.Activity("A", "<Route/>", "", "")+xpdltest.Activity("B", "<Route/>", "", ""),
			xpdltest.Transition("t1", "A>B?x > 1")))
		id := h.startProcess("lost", "", nil)
		h.requireState(id, wftype.ProcessLocking)
		inc := h.awaitIncident(id, engine.CauseLocking)
		require.Zero(t, inc.ActivityInstance)
		require.Contains(t, inc.Error, "branch lost at A")
	})
}

func TestSetVariablesIsAuditedAndTypeChecked(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, db *gorm.DB) {
		h := newHarness(t, db).start()
		h.deploy(toolPackage("vars", xpdltest.Activity("A", "<Route/>", "", "")+xpdltest.Activity("B", "<Route/>", "", ""),
			xpdltest.Transition("t1", "A>B?x > 1")))
		id := h.startProcess("vars", "", map[string]any{"s": "before"})
		h.requireState(id, wftype.ProcessLocking)

		op := engine.Op{Actor: "carol", Reason: "fix the amount", Data: map[string]any{"ticket": "OPS-7"}}
		require.ErrorIs(t, h.e.SetVariables(h.ctx, id, engine.Values{Variables: map[string]any{"x": "two"}}, op), engine.ErrWrongType)
		require.ErrorIs(t, h.e.SetVariables(h.ctx, id, engine.Values{Variables: map[string]any{"x": 2, "nope": 1}}, op), engine.ErrUnknownVariable)
		require.ErrorIs(t, h.e.SetVariables(h.ctx, 424242, engine.Values{Variables: map[string]any{"x": 2}}, op), engine.ErrNotFound)
		require.Equal(t, int64(0), h.vars(id)["x"], "a refused change changes nothing")

		require.NoError(t, h.e.SetVariables(h.ctx, id, engine.Values{Variables: map[string]any{"x": 2}, TextVariables: map[string]string{"s": "after"}}, op))
		require.Equal(t, map[string]any{"x": int64(2), "s": "after"}, h.vars(id))
		var changes []string
		for _, e := range h.history(id) {
			if e.Subject != engine.SubjectVariable {
				continue
			}
			require.Equal(t, "carol", e.Actor)
			require.Equal(t, "fix the amount", e.Reason)
			require.Equal(t, map[string]any{"ticket": "OPS-7"}, e.Data)
			changes = append(changes, fmt.Sprintf("%s: %v -> %v", e.Variable, e.Old, e.New))
		}
		require.Equal(t, []string{"s: before -> after", "x: 0 -> 2"}, changes)

		done := h.startProcess("vars", "", map[string]any{"x": 5})
		h.requireState(done, wftype.ProcessCompleted)
		require.ErrorIs(t, h.e.SetVariables(h.ctx, done, engine.Values{Variables: map[string]any{"x": 1}}, op), engine.ErrInstanceFinished)
		require.ErrorIs(t, h.e.SetVariables(h.ctx, id, engine.Values{}, engine.Op{Data: map[string]any{"f": func() {}}}), engine.ErrBadArgument,
			"host data must encode as JSON")
	})
}
