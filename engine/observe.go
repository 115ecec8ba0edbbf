package engine

import (
	"errors"
	"runtime/debug"
	"time"

	"github.com/goxpdl/goxpdl/xpdl"
)

// Observer receives the engine's measurements, for metrics (package
// metrics turns them into Prometheus metrics) or tracing. Config.Observer
// sets it; nil observes nothing and costs nothing.
//
// The engine calls the methods on its own goroutines, concurrently, and
// waits for them: each must return at once (count, store an atomic,
// hand off to a buffered channel it never blocks on) and must not call
// back into the engine. A panic is recovered and logged. Outcomes are
// observed after the engine's transaction committed, never for one that
// rolled back; steps made in a host's transaction (the …Tx commands) are
// not observed, since the engine does not see whether the host commits.
// The outcomes of one transaction are observed in the order they
// happened, but for an instance's end, which comes after them all (the
// incident an instance going Locking opens is observed before
// InstanceFinished). Every duration is by the engine's Config.Clock.
//
// Embed NopObserver to implement only some of the methods and stay
// compatible when methods are added.
type Observer interface {
	// InstanceFinished: a process instance ended (Completed,
	// Terminated) or went Locking.
	InstanceFinished(InstanceFinished)
	// ActivityFinished: an activity instance ended (completed, took an
	// exception path, was skipped or cancelled) or went Abnormal.
	ActivityFinished(ActivityFinished)
	// EventProcessed: the engine processed one event of the outbox (one
	// step of one instance), whatever the result.
	EventProcessed(EventProcessed)
	// ApplicationCalled: an application or hook the host registered
	// returned. Calls are observed whether or not the step that made
	// them commits, in a host's transaction too: the call happened.
	ApplicationCalled(ApplicationCalled)
	// TimerFired: a durable timer fired (its firing committed).
	TimerFired(FiredTimer)
	// GroupCommitted: one database transaction carrying engine
	// transactions ended (committed, or rolled back by a member's
	// failure).
	GroupCommitted(GroupCommitted)
	// IncidentOpened: an incident was opened.
	IncidentOpened(IncidentOpened)
	// IncidentsResolved: open incidents of one instance were resolved.
	IncidentsResolved(IncidentsResolved)
}

// Attacher is implemented by an Observer that also reads the engine it
// observes, such as package metrics' collector, which reads Stats and
// counts at scrape time. New calls Attach with the engine it built, as
// its last step; an error fails New. So the engine and its observer are
// wired in one place:
//
//	m := metrics.New()
//	eng, err := engine.New(engine.Config{DB: db, Observer: m}) // m.Attach(eng) is called here
type Attacher interface {
	Attach(*Engine) error
}

// NopObserver observes nothing. Embed it in an Observer that needs only
// some of the methods.
type NopObserver struct{}

// InstanceFinished does nothing.
func (NopObserver) InstanceFinished(InstanceFinished) {}

// ActivityFinished does nothing.
func (NopObserver) ActivityFinished(ActivityFinished) {}

// EventProcessed does nothing.
func (NopObserver) EventProcessed(EventProcessed) {}

// ApplicationCalled does nothing.
func (NopObserver) ApplicationCalled(ApplicationCalled) {}

// TimerFired does nothing.
func (NopObserver) TimerFired(FiredTimer) {}

// GroupCommitted does nothing.
func (NopObserver) GroupCommitted(GroupCommitted) {}

// IncidentOpened does nothing.
func (NopObserver) IncidentOpened(IncidentOpened) {}

// IncidentsResolved does nothing.
func (NopObserver) IncidentsResolved(IncidentsResolved) {}

// Observers returns an Observer that hands every observation to each of
// obs in turn (nil ones are left out; a panic of one does not keep the
// observation from the others), and attaches each that is an Attacher
// when it is attached.
func Observers(obs ...Observer) Observer {
	var all multiObserver
	for _, o := range obs {
		if o != nil {
			all = append(all, o)
		}
	}
	switch len(all) {
	case 0:
		return nil
	case 1:
		return all[0]
	}
	return all
}

type multiObserver []Observer

func (m multiObserver) Attach(e *Engine) error {
	var errs []error
	for _, o := range m {
		if a, ok := o.(Attacher); ok {
			errs = append(errs, a.Attach(e))
		}
	}
	return errors.Join(errs...)
}

func (m multiObserver) InstanceFinished(o InstanceFinished) {
	for _, obs := range m {
		obs.InstanceFinished(o)
	}
}

func (m multiObserver) ActivityFinished(o ActivityFinished) {
	for _, obs := range m {
		obs.ActivityFinished(o)
	}
}

func (m multiObserver) EventProcessed(o EventProcessed) {
	for _, obs := range m {
		obs.EventProcessed(o)
	}
}

func (m multiObserver) ApplicationCalled(o ApplicationCalled) {
	for _, obs := range m {
		obs.ApplicationCalled(o)
	}
}

func (m multiObserver) TimerFired(o FiredTimer) {
	for _, obs := range m {
		obs.TimerFired(o)
	}
}

func (m multiObserver) GroupCommitted(o GroupCommitted) {
	for _, obs := range m {
		obs.GroupCommitted(o)
	}
}

func (m multiObserver) IncidentOpened(o IncidentOpened) {
	for _, obs := range m {
		obs.IncidentOpened(o)
	}
}

func (m multiObserver) IncidentsResolved(o IncidentsResolved) {
	for _, obs := range m {
		obs.IncidentsResolved(o)
	}
}

// InstanceOutcome is how a process instance finished.
type InstanceOutcome string

// The outcomes of process instances.
const (
	// InstanceCompleted: the instance completed.
	InstanceCompleted InstanceOutcome = "completed"
	// InstanceTerminated: it was terminated by command (or its parent's
	// termination).
	InstanceTerminated InstanceOutcome = "terminated"
	// InstanceLocked: it went Locking (a lost branch, paper §2.1). An
	// operator may move it on, so it may finish again later.
	InstanceLocked InstanceOutcome = "locked"
)

// InstanceOutcomes lists every instance outcome.
var InstanceOutcomes = []InstanceOutcome{InstanceCompleted, InstanceTerminated, InstanceLocked}

// InstanceFinished is the observation of a process instance that ended
// or went Locking.
type InstanceFinished struct {
	// Package and Process are the XPDL package and WorkflowProcess ids
	// of its definition; Version the package's deployed version.
	Package string
	Process string
	Version int
	// Instance is the process instance id.
	Instance int64
	Outcome  InstanceOutcome
	// Duration is the time from the instance's creation to its end.
	Duration time.Duration
}

// ActivityOutcome is how an activity instance finished.
type ActivityOutcome string

// The outcomes of activity instances.
const (
	// ActivityCompleted: its work was done and it routed on.
	ActivityCompleted ActivityOutcome = "completed"
	// ActivityException: it completed by raising an exception (an
	// application's, a deadline's) that an exception transition took.
	ActivityException ActivityOutcome = "exception"
	// ActivitySkipped: an operator skipped it (SkipActivity).
	ActivitySkipped ActivityOutcome = "skipped"
	// ActivityCancelled: it ended without its work: withdrawn (a race or
	// a deferred choice decided against it, its loop or block ended),
	// interrupted by a boundary timer, or cancelled by an operator's move.
	ActivityCancelled ActivityOutcome = "cancelled"
	// ActivityAbnormal: it failed and waits for an operator (an
	// incident). A retry may finish it again later.
	ActivityAbnormal ActivityOutcome = "abnormal"
)

// ActivityOutcomes lists every activity outcome.
var ActivityOutcomes = []ActivityOutcome{ActivityCompleted, ActivityException, ActivitySkipped, ActivityCancelled, ActivityAbnormal}

// ActivityType is what kind of work an activity does, for observations.
type ActivityType string

// The activity types.
const (
	// ActivityManual waits for a person (IsManual): a work item.
	ActivityManual ActivityType = "manual"
	// ActivityApplication calls applications (XPDL 1 Tool, XPDL 2
	// application and service tasks).
	ActivityApplication ActivityType = "application"
	// ActivityScript runs a script.
	ActivityScript ActivityType = "script"
	// ActivityRoute only routes (a gateway).
	ActivityRoute ActivityType = "route"
	// ActivitySubflow runs a subprocess.
	ActivitySubflow ActivityType = "subflow"
	// ActivityBlock runs an activity set.
	ActivityBlock ActivityType = "block"
	// ActivityEvent is a BPMN event (start, intermediate, end).
	ActivityEvent ActivityType = "event"
	// ActivityAutomatic is automatic work without an implementation (an
	// XPDL 1 "No" implementation, an XPDL 2 task of none).
	ActivityAutomatic ActivityType = "automatic"
)

// ActivityTypes lists every activity type.
var ActivityTypes = []ActivityType{
	ActivityManual, ActivityApplication, ActivityScript, ActivityRoute, ActivitySubflow, ActivityBlock, ActivityEvent, ActivityAutomatic,
}

// ActivityTypeOf says what kind of work activity a does.
func ActivityTypeOf(a *xpdl.Activity) ActivityType {
	switch {
	case a.Kind == xpdl.ActivityRoute:
		return ActivityRoute
	case a.Kind == xpdl.ActivitySubFlow:
		return ActivitySubflow
	case a.Kind == xpdl.ActivityBlock:
		return ActivityBlock
	case a.Kind == xpdl.ActivityEvent:
		return ActivityEvent
	case IsManual(a):
		return ActivityManual
	case a.Kind == xpdl.ActivityTool || len(a.Tools) > 0:
		return ActivityApplication
	case a.Kind == xpdl.ActivityScript || a.Script != nil:
		return ActivityScript
	}
	return ActivityAutomatic
}

// ActivityFinished is the observation of an activity instance that ended
// or went Abnormal. Each instance of a looping activity is observed, and
// so is the loop itself.
type ActivityFinished struct {
	// Package, Process and Version name the definition, as in
	// InstanceFinished.
	Package string
	Process string
	Version int
	// Activity is the XPDL activity id and Type what kind of work it
	// does.
	Activity string
	Type     ActivityType
	// Instance and ActivityInstance are the process and activity
	// instance ids.
	Instance         int64
	ActivityInstance int64
	Outcome          ActivityOutcome
	// Duration is the time from the activity instance's creation to
	// its end (waiting for a worker, for people or for a subflow
	// included).
	Duration time.Duration
}

// EventResult is what came of processing one event.
type EventResult string

// The results of processing an event.
const (
	// EventDone: the event was processed and its step committed (or had
	// nothing to do).
	EventDone EventResult = "processed"
	// EventRetried: processing failed (a database error, an application
	// to retry) and the event comes again after a backoff.
	EventRetried EventResult = "retried"
	// EventDropped: the event was not processed here: another node holds
	// it now or processed it already, or its payload is unreadable.
	EventDropped EventResult = "dropped"
)

// EventResults lists every event result.
var EventResults = []EventResult{EventDone, EventRetried, EventDropped}

// The kinds of events the engine processes, EventProcessed.Kind.
const (
	// EventKindSchedule starts a new instance running.
	EventKindSchedule = evSchedule
	// EventKindActivityStart starts an activity.
	EventKindActivityStart = evActivityStart
	// EventKindSubprocess returns a subflow's end to its parent.
	EventKindSubprocess = evSubprocess
	// EventKindTimer handles a timer that fired.
	EventKindTimer = evTimer
	// EventKindSignal delivers a signal or message to a waiting event.
	EventKindSignal = evSignal
	// EventKindTerminate terminates an instance (a parent's
	// termination).
	EventKindTerminate = evTerminate
	// EventKindNotify hands a durable notification to Config.Notify.
	EventKindNotify = evNotify
)

// EventKinds lists every event kind.
var EventKinds = []string{
	EventKindSchedule, EventKindActivityStart, EventKindSubprocess, EventKindTimer, EventKindSignal, EventKindTerminate, EventKindNotify,
}

// EventProcessed is the observation of one event's processing: one step
// of one process instance.
type EventProcessed struct {
	// Kind is the event's kind, one of EventKinds (an unknown kind from a
	// newer engine sharing the database is observed as it is).
	Kind string
	// Critical says the event ran on the critical pool (process
	// control), else on the normal pool.
	Critical bool
	// Instance is the process instance it is for (0 for none).
	Instance int64
	// Attempt numbers the event's deliveries, from 1.
	Attempt int
	// Lag is the time from when the event could first be processed (it
	// was written, or its retry's backoff ended) to when its processing
	// began: the time it waited in the outbox, the scheduler's queue and
	// its instance's mailbox.
	Lag time.Duration
	// Duration is how long the processing took: its transaction, the
	// application calls in it and its commit.
	Duration time.Duration
	Result   EventResult
	// Chained says the event was processed in the transaction of the
	// step that sent it (Config.ChainSteps): Duration is then its own
	// part of that transaction, without the commit.
	Chained bool
}

// CallResult is how an application call ended.
type CallResult string

// The results of application calls.
const (
	// CallOK: the call returned without an error.
	CallOK CallResult = "ok"
	// CallException: the call raised an *ApplicationException.
	CallException CallResult = "exception"
	// CallError: the call returned another error, or panicked.
	CallError CallResult = "error"
)

// CallResults lists every call result.
var CallResults = []CallResult{CallOK, CallException, CallError}

// ApplicationCalled is the observation of one call of an application (or
// hook) function the host registered.
type ApplicationCalled struct {
	// Application is the XPDL Application id; empty for a hook.
	Application string
	// ToolAgentClass is the application's tool agent class, or the
	// hook's class.
	ToolAgentClass string
	// Hook is the hook event (HookOnEnter, HookOnFinish) of a hook.
	Hook string
	// Process, Activity, Instance and ActivityInstance say where the
	// call was made.
	Process          string
	Activity         string
	Instance         int64
	ActivityInstance int64
	Duration         time.Duration
	Result           CallResult
}

// FiredTimer is the observation of a durable timer that fired.
type FiredTimer struct {
	Kind TimerKind
	// Instance is the process instance it belongs to; 0 for a start
	// timer.
	Instance int64
	// Due is when it was due; Lateness how long after that it fired.
	Due      time.Time
	Lateness time.Duration
}

// GroupCommitted is the observation of one database transaction of the
// engine's own (group commit: several engine transactions that arrive
// together share one).
type GroupCommitted struct {
	// Members is how many engine transactions ran in it.
	Members int
	// Critical says it carried process control (the critical lane).
	Critical bool
	// Duration is how long the transaction took, from its start to its
	// commit or rollback.
	Duration time.Duration
	// Failed says it was rolled back: a member failed (the others run
	// again in the next transaction) or the commit did.
	Failed bool
}

// IncidentOpened is the observation of an incident that was opened.
type IncidentOpened struct {
	Cause IncidentCause
	// Process and Instance are the process instance's; Activity and
	// ActivityInstance the activity's (empty and 0 for a Locking
	// process).
	Process          string
	Instance         int64
	Activity         string
	ActivityInstance int64
	// Application is the failed call's application, when there was one.
	Application string
}

// IncidentsResolved is the observation of open incidents of one process
// instance that were resolved together.
type IncidentsResolved struct {
	Instance int64
	// Count is how many were resolved.
	Count int
	// Resolution says how: "retried", "skipped", "succeeded" (a failing
	// call succeeded), "terminated", "moved", "ended" (its activity was
	// ended otherwise).
	Resolution string
}

// observe hands one observation to the configured observer, if any (to
// each member of Observers in turn), recovering a panic of an
// observer's.
func (e *Engine) observe(fn func(Observer)) {
	if all, ok := e.observer.(multiObserver); ok {
		for _, o := range all {
			e.observeOne(o, fn)
		}
		return
	}
	if e.observer != nil {
		e.observeOne(e.observer, fn)
	}
}

func (e *Engine) observeOne(o Observer, fn func(Observer)) {
	defer func() {
		if p := recover(); p != nil {
			e.log.Error("the observer panicked; the observation is lost", "panic", p, "stack", string(debug.Stack()))
		}
	}()
	fn(o)
}
