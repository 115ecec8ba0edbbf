package engine_test

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"gorm.io/gorm"

	"github.com/goxpdl/goxpdl/engine"
	"github.com/goxpdl/goxpdl/store/dbtest"
	"github.com/goxpdl/goxpdl/timer"
	"github.com/goxpdl/goxpdl/wftype"
	"github.com/goxpdl/goxpdl/xpdl"
	"github.com/goxpdl/goxpdl/xpdl/xpdltest"
)

// observations is an engine.Observer that keeps everything it is told
// and lets a test wait for what it expects.
type observations struct {
	mu         sync.Mutex
	instances  []engine.InstanceFinished
	activities []engine.ActivityFinished
	events     []engine.EventProcessed
	calls      []engine.ApplicationCalled
	timers     []engine.FiredTimer
	commits    []engine.GroupCommitted
	opened     []engine.IncidentOpened
	resolved   []engine.IncidentsResolved
	changed    chan struct{}
}

func newObservations() *observations { return &observations{changed: make(chan struct{}, 1)} }

func (o *observations) add(fn func()) {
	o.mu.Lock()
	fn()
	o.mu.Unlock()
	select {
	case o.changed <- struct{}{}:
	default:
	}
}

func (o *observations) InstanceFinished(v engine.InstanceFinished) {
	o.add(func() { o.instances = append(o.instances, v) })
}

func (o *observations) ActivityFinished(v engine.ActivityFinished) {
	o.add(func() { o.activities = append(o.activities, v) })
}

func (o *observations) EventProcessed(v engine.EventProcessed) {
	o.add(func() { o.events = append(o.events, v) })
}

func (o *observations) ApplicationCalled(v engine.ApplicationCalled) {
	o.add(func() { o.calls = append(o.calls, v) })
}

func (o *observations) TimerFired(v engine.FiredTimer) {
	o.add(func() { o.timers = append(o.timers, v) })
}

func (o *observations) GroupCommitted(v engine.GroupCommitted) {
	o.add(func() { o.commits = append(o.commits, v) })
}

func (o *observations) IncidentOpened(v engine.IncidentOpened) {
	o.add(func() { o.opened = append(o.opened, v) })
}

func (o *observations) IncidentsResolved(v engine.IncidentsResolved) {
	o.add(func() { o.resolved = append(o.resolved, v) })
}

// await waits until cond, called under the lock, holds.
func (o *observations) await(t *testing.T, what string, cond func() bool) {
	t.Helper()
	for {
		o.mu.Lock()
		ok := cond()
		o.mu.Unlock()
		if ok {
			return
		}
		select {
		case <-o.changed:
		case <-t.Context().Done():
			t.Fatalf("never observed: %s", what)
		}
	}
}

// finished waits for instance id's InstanceFinished with outcome.
func (o *observations) finished(t *testing.T, id int64, outcome engine.InstanceOutcome) engine.InstanceFinished {
	t.Helper()
	var got engine.InstanceFinished
	o.await(t, "instance finished "+string(outcome), func() bool {
		for _, f := range o.instances {
			if f.Instance == id && f.Outcome == outcome {
				got = f
				return true
			}
		}
		return false
	})
	return got
}

// activity returns the observed ends of activity def of instance id.
func (o *observations) activity(id int64, def string) []engine.ActivityFinished {
	o.mu.Lock()
	defer o.mu.Unlock()
	var out []engine.ActivityFinished
	for _, a := range o.activities {
		if a.Instance == id && a.Activity == def {
			out = append(out, a)
		}
	}
	return out
}

// outcomes maps the activities of instance id to their observed
// outcomes, in order.
func (o *observations) outcomes(id int64) map[string][]engine.ActivityOutcome {
	o.mu.Lock()
	defer o.mu.Unlock()
	out := map[string][]engine.ActivityOutcome{}
	for _, a := range o.activities {
		if a.Instance == id {
			out[a.Activity] = append(out[a.Activity], a.Outcome)
		}
	}
	return out
}

func (o *observations) callsOf(id int64) []engine.ApplicationCalled {
	o.mu.Lock()
	defer o.mu.Unlock()
	var out []engine.ApplicationCalled
	for _, c := range o.calls {
		if c.Instance == id {
			out = append(out, c)
		}
	}
	return out
}

func (o *observations) openedOf(id int64) []engine.IncidentOpened {
	o.mu.Lock()
	defer o.mu.Unlock()
	var out []engine.IncidentOpened
	for _, inc := range o.opened {
		if inc.Instance == id {
			out = append(out, inc)
		}
	}
	return out
}

// observedPackage is an XPDL 1.0 package "obs": Charge calls the
// application "double", Review is manual, Done routes.
func observedPackage() string {
	return toolPackage("obs", tool("Charge", "double", "x", "x")+
		xpdltest.Activity("Review", "<Implementation><No/></Implementation><Performer>clerk</Performer>", "", "")+
		xpdltest.Activity("Done", "<Route/>", "", ""),
		xpdltest.Transition("t1", "Charge>Review")+xpdltest.Transition("t2", "Review>Done"))
}

func TestObserverSeesAProcessRun(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, db *gorm.DB) {
		obs := newObservations()
		clock := timer.NewFake(epoch)
		h := newHarness(t, db, func(c *engine.Config) { c.Clock, c.Observer = clock, obs })
		h.e.RegisterApplication("double", func(_ context.Context, c *engine.Call) (map[string]any, error) {
			clock.Advance(2 * time.Second) // the call takes two seconds, by the engine's clock
			return map[string]any{"out": c.Params["in"].(int64) * 2}, nil
		})
		h.start()
		h.deploy(observedPackage())
		id := h.startProcess("obs", "", map[string]any{"x": 4})
		item := h.item(id, "Review")
		clock.Advance(10 * time.Second)
		require.NoError(t, h.complete(item.ID, nil))
		h.requireState(id, wftype.ProcessCompleted)

		inst := obs.finished(t, id, engine.InstanceCompleted)
		require.Equal(t, "obs", inst.Package)
		require.Equal(t, "p", inst.Process)
		require.Equal(t, 1, inst.Version)
		require.Equal(t, 12*time.Second, inst.Duration, "created at the start, completed after the call and the wait")

		charge := obs.activity(id, "Charge")
		require.Len(t, charge, 1)
		require.Equal(t, engine.ActivityApplication, charge[0].Type)
		require.Equal(t, engine.ActivityCompleted, charge[0].Outcome)
		require.Equal(t, "obs", charge[0].Package)
		require.Equal(t, h.activityNamed(id, "Charge").ID, charge[0].ActivityInstance)
		require.Equal(t, 2*time.Second, charge[0].Duration)
		review := obs.activity(id, "Review")
		require.Len(t, review, 1)
		require.Equal(t, engine.ActivityManual, review[0].Type)
		require.Equal(t, engine.ActivityCompleted, review[0].Outcome)
		require.Equal(t, 12*time.Second, review[0].Duration, "created with the Charge step, at its start")
		done := obs.activity(id, "Done")
		require.Len(t, done, 1)
		require.Equal(t, engine.ActivityRoute, done[0].Type)

		calls := obs.callsOf(id)
		require.Len(t, calls, 1)
		require.Equal(t, engine.ApplicationCalled{
			Application: "double", Process: "p", Activity: "Charge", Instance: id, ActivityInstance: charge[0].ActivityInstance,
			Duration: 2 * time.Second, Result: engine.CallOK,
		}, calls[0])

		obs.mu.Lock()
		defer obs.mu.Unlock()
		kinds := map[string]int{}
		var chargeStep bool
		for _, ev := range obs.events {
			require.Equal(t, engine.EventDone, ev.Result, "%+v", ev)
			require.GreaterOrEqual(t, ev.Lag, time.Duration(0))
			if ev.Instance != id {
				continue
			}
			kinds[ev.Kind]++
			require.Equal(t, 1, ev.Attempt)
			if ev.Kind == engine.EventKindActivityStart && ev.Duration == 2*time.Second {
				chargeStep = true
			}
		}
		require.Equal(t, 1, kinds[engine.EventKindSchedule])
		// Review offers work, which the Charge step does in its own
		// transaction; Done is made ready by the completion, a command,
		// which leaves it an event.
		require.Equal(t, 2, kinds[engine.EventKindActivityStart], "Charge, Done")
		require.True(t, chargeStep, "the step that called the application took its two seconds")

		require.NotEmpty(t, obs.commits)
		for _, c := range obs.commits {
			require.GreaterOrEqual(t, c.Members, 1)
			require.False(t, c.Failed)
		}
		require.Empty(t, obs.opened)
		require.Empty(t, obs.resolved)
	})
}

// TestObserverSeesEventLag: the lag of an event runs from when it was
// written: the start of a second application activity, written by the
// step of the first, which took two seconds, waited two seconds.
func TestObserverSeesEventLag(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, db *gorm.DB) {
		obs := newObservations()
		clock := timer.NewFake(epoch)
		h := newHarness(t, db, func(c *engine.Config) { c.Clock, c.Observer = clock, obs })
		h.e.RegisterApplication("double", func(_ context.Context, c *engine.Call) (map[string]any, error) {
			clock.Advance(2 * time.Second) // the call takes two seconds, by the engine's clock
			return map[string]any{"out": c.Params["in"].(int64) * 2}, nil
		})
		h.start()
		h.deploy(toolPackage("lag", tool("First", "double", "x", "x")+tool("Second", "double", "x", "x"),
			xpdltest.Transition("t1", "First>Second")))
		id := h.startProcess("lag", "", map[string]any{"x": 4})
		h.requireState(id, wftype.ProcessCompleted)
		require.NoError(t, h.e.WaitIdle(context.Background()))

		obs.mu.Lock()
		defer obs.mu.Unlock()
		var lags []time.Duration
		for _, ev := range obs.events {
			if ev.Instance == id && ev.Kind == engine.EventKindActivityStart {
				lags = append(lags, ev.Lag)
			}
		}
		require.ElementsMatch(t, []time.Duration{0, 2 * time.Second}, lags, "First's start at once; Second's, written at the start of First's step, after its call")
	})
}

func TestObserverSeesOutcomesAndIncidents(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, db *gorm.DB) {
		obs := newObservations()
		h := newHarness(t, db, func(c *engine.Config) { c.Observer = obs })
		h.e.RegisterApplication("double", func(context.Context, *engine.Call) (map[string]any, error) {
			return nil, errors.New("card declined")
		})
		h.e.RegisterApplication("risky", func(context.Context, *engine.Call) (map[string]any, error) {
			return nil, &engine.ApplicationException{Name: "Overdrawn"}
		})
		h.start()

		// A failed call: Abnormal with an incident; skipped by an operator.
		h.deploy(toolPackage("fail", tool("Charge", "double", "x", "x")+xpdltest.Activity("Done", "<Route/>", "", ""),
			xpdltest.Transition("t1", "Charge>Done")))
		failed := h.startProcess("fail", "", nil)
		h.awaitIncident(failed, engine.CauseApplication)
		charge := h.activityNamed(failed, "Charge")
		require.NoError(t, h.e.SkipActivity(h.ctx, failed, charge.ID, engine.Values{}, engine.Op{Actor: "alice"}))
		obs.finished(t, failed, engine.InstanceCompleted)
		require.Equal(t, []engine.ActivityOutcome{engine.ActivityAbnormal, engine.ActivitySkipped}, obs.outcomes(failed)["Charge"])
		calls := obs.callsOf(failed)
		require.Len(t, calls, 1)
		require.Equal(t, engine.CallError, calls[0].Result)
		require.Equal(t, []engine.IncidentOpened{{
			Cause: engine.CauseApplication, Process: "p", Instance: failed, Activity: "Charge", ActivityInstance: charge.ID, Application: "double",
		}}, obs.openedOf(failed))
		obs.mu.Lock()
		require.Contains(t, obs.resolved, engine.IncidentsResolved{Instance: failed, Count: 1, Resolution: "skipped"})
		obs.mu.Unlock()

		// An application exception an exception transition takes.
		h.deploy(toolPackage("exc", tool("Pay", "risky")+xpdltest.Activity("Done", "<Route/>", "", "")+
			xpdltest.Activity("Handled", "<Route/>", "", ""),
			xpdltest.Transition("t1", "Pay>Done")+xpdltest.Transition("t2", "Pay>Handled!exception=Overdrawn")))
		raised := h.startProcess("exc", "", nil)
		obs.finished(t, raised, engine.InstanceCompleted)
		require.Equal(t, map[string][]engine.ActivityOutcome{
			"Pay": {engine.ActivityException}, "Handled": {engine.ActivityCompleted},
		}, obs.outcomes(raised))
		calls = obs.callsOf(raised)
		require.Len(t, calls, 1)
		require.Equal(t, engine.CallException, calls[0].Result)

		// A lost branch: the instance goes Locking with an incident.
		h.deploy(toolPackage("lost", xpdltest.Activity("A", "<Route/>", "", "xor")+xpdltest.Activity("B", "<Route/>", "", ""),
			xpdltest.Transition("t1", "A>B?x > 10")))
		locked := h.startProcess("lost", "", nil)
		obs.finished(t, locked, engine.InstanceLocked)
		opened := obs.openedOf(locked)
		require.Len(t, opened, 1)
		require.Equal(t, engine.CauseLocking, opened[0].Cause)
		require.Zero(t, opened[0].ActivityInstance)

		// An operator's jump cancels the open activity; a terminate ends
		// the instance.
		h.deploy(toolPackage("manual", xpdltest.Activity("Review", "<Implementation><No/></Implementation><Performer>clerk</Performer>", "", "")+
			xpdltest.Activity("Again", "<Implementation><No/></Implementation><Performer>clerk</Performer>", "", ""),
			xpdltest.Transition("t1", "Review>Again")))
		moved := h.startProcess("manual", "", nil)
		h.item(moved, "Review")
		require.NoError(t, h.e.Jump(h.ctx, moved, "Again", engine.Op{Actor: "dave"}))
		h.item(moved, "Again")
		require.NoError(t, h.e.Terminate(h.ctx, moved, engine.Op{Actor: "dave"}))
		fin := obs.finished(t, moved, engine.InstanceTerminated)
		require.Equal(t, "manual", fin.Package)
		require.Equal(t, map[string][]engine.ActivityOutcome{"Review": {engine.ActivityCancelled}}, obs.outcomes(moved),
			"a terminated instance's open activities do not finish")

		obs.mu.Lock()
		defer obs.mu.Unlock()
		outcomes := map[engine.InstanceOutcome]int{}
		for _, f := range obs.instances {
			outcomes[f.Outcome]++
		}
		require.Equal(t, map[engine.InstanceOutcome]int{engine.InstanceCompleted: 2, engine.InstanceLocked: 1, engine.InstanceTerminated: 1}, outcomes)
		for _, ev := range obs.events {
			require.NotEqual(t, engine.EventDropped, ev.Result, "%+v", ev)
		}
	})
}

func TestObserverSeesTimerLateness(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, db *gorm.DB) {
		obs := newObservations()
		h, clock, _ := timedHarness(t, db, func(c *engine.Config) { c.Observer = obs })
		h.deploy(deadlineXPDL(deadline("SYNCHR", "PT1M"), ""))
		id := h.startProcess("deadlines", "approval", nil)
		h.item(id, "Approve")
		clock.Advance(90 * time.Second) // the engine looks at its timers late
		obs.finished(t, id, engine.InstanceCompleted)

		obs.mu.Lock()
		require.Equal(t, []engine.FiredTimer{{Kind: engine.TimerDeadline, Instance: id, Due: epoch.Add(time.Minute), Lateness: 30 * time.Second}}, obs.timers)
		var timerStep bool
		for _, ev := range obs.events {
			if ev.Kind == engine.EventKindTimer && ev.Instance == id {
				timerStep = true
				require.True(t, ev.Critical, "deadlines are process control")
			}
		}
		obs.mu.Unlock()
		require.True(t, timerStep)
		require.Equal(t, []engine.ActivityOutcome{engine.ActivityException}, obs.outcomes(id)["Approve"])
		approve := obs.activity(id, "Approve")
		require.Equal(t, 90*time.Second, approve[0].Duration)
	})
}

// attaching is an Observer that is also an Attacher.
type attaching struct {
	engine.NopObserver
	attached *engine.Engine
	err      error
}

func (a *attaching) Attach(e *engine.Engine) error {
	a.attached = e
	return a.err
}

// panicking is an Observer whose every observation panics.
type panicking struct{ engine.NopObserver }

func (panicking) InstanceFinished(engine.InstanceFinished) { panic("observer bug") }

func TestObserverIsAttachedAndCombined(t *testing.T) {
	t.Parallel()
	db := dbtest.OpenSQLiteMemory(t)
	a := &attaching{}
	obs := newObservations()
	var logs bytes.Buffer
	e, err := engine.New(engine.Config{DB: db, Observer: engine.Observers(a, nil, panicking{}, obs),
		Logger: slog.New(slog.NewTextHandler(&logs, nil))})
	require.NoError(t, err)
	require.Same(t, e, a.attached, "New attaches the members of Observers")

	h := &harness{t: t, ctx: t.Context(), db: db, e: e}
	h.start()
	h.deploy(xpdltest.Graph("A B", "A>B"))
	id := h.startProcess("pkg", "", nil)
	obs.finished(t, id, engine.InstanceCompleted) // after the panicking one: the engine went on
	h.requireState(id, wftype.ProcessCompleted)
	require.Contains(t, logs.String(), "observer bug")

	refusing := &attaching{err: errors.New("already attached to another engine")}
	_, err = engine.New(engine.Config{DB: dbtest.OpenSQLiteMemory(t), Observer: refusing})
	require.ErrorIs(t, err, engine.ErrConfig)
	require.ErrorContains(t, err, "already attached to another engine")
}

func TestActivityTypeOf(t *testing.T) {
	t.Parallel()
	pkg, err := xpdl.Read(strings.NewReader(toolPackage("types", tool("Tool", "double", "x", "x")+
		xpdltest.Activity("Manual", "<Implementation><No/></Implementation><Performer>clerk</Performer>", "", "")+
		xpdltest.Activity("Auto", "<Implementation><No/></Implementation>", "", "")+
		xpdltest.Activity("Route", "<Route/>", "", ""), "")), nil)
	require.NoError(t, err)
	got := map[string]engine.ActivityType{}
	for _, a := range pkg.Process("p").Activities {
		got[a.ID] = engine.ActivityTypeOf(a)
	}
	require.Equal(t, map[string]engine.ActivityType{
		"Tool": engine.ActivityApplication, "Manual": engine.ActivityManual, "Auto": engine.ActivityAutomatic, "Route": engine.ActivityRoute,
	}, got)
	for _, typ := range got {
		require.True(t, slices.Contains(engine.ActivityTypes, typ))
	}
}
