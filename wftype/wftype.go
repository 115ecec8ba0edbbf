// Package wftype holds the small vocabulary every goxpdl package shares:
// the states of process instances, activity instances and work items, the
// kinds of events, and the sentinel errors callers branch on. It depends
// on nothing of ours, so any package may import it.
package wftype

import (
	"errors"
	"fmt"
	"slices"
)

// ProcessState is the state of a process instance (docs/engine.md,
// "States").
type ProcessState string

// The process instance states.
const (
	// ProcessInitiated: created, first activities created, waiting to be
	// scheduled.
	ProcessInitiated ProcessState = "Initiated"
	// ProcessRunning is the only state in which activities may start.
	ProcessRunning ProcessState = "Running"
	// ProcessSuspended: paused by an administrator; no activity starts.
	ProcessSuspended ProcessState = "Suspended"
	// ProcessCompleted: the end activities completed.
	ProcessCompleted ProcessState = "Completed"
	// ProcessTerminated: ended by command; open work items withdrawn.
	ProcessTerminated ProcessState = "Terminated"
	// ProcessLocking: deadlock, nothing can fire; an error state whose
	// diagnosis names the cause.
	ProcessLocking ProcessState = "Locking"
	// ProcessQueued: created by a start that waits for a business-key
	// lock (engine StartOptions.Lock with Wait); it becomes Initiated
	// when it gets the lock, or is Terminated while it waits.
	ProcessQueued ProcessState = "Queued"
)

// ProcessStates lists every process state in lifecycle order.
var ProcessStates = []ProcessState{
	ProcessInitiated, ProcessRunning, ProcessSuspended, ProcessCompleted, ProcessTerminated, ProcessLocking,
	ProcessQueued,
}

// IsFinal reports whether no command moves the process on any more.
func (s ProcessState) IsFinal() bool {
	return s == ProcessCompleted || s == ProcessTerminated || s == ProcessLocking
}

// OpenProcessStates lists the states of a process instance that is under
// way: it has begun and not finished. The engine looks among them for the
// subflows a terminated parent takes down and for the instance a message
// is matched to by a variable's value. Every state is open, final
// (IsFinal) or Queued: a Queued instance has not begun (it waits for a
// business-key lock) and is neither.
var OpenProcessStates = []ProcessState{ProcessInitiated, ProcessRunning, ProcessSuspended}

// IsOpen reports whether s is one of OpenProcessStates.
func (s ProcessState) IsOpen() bool {
	return slices.Contains(OpenProcessStates, s)
}

// ActivityState is the state of an activity instance (docs/engine.md,
// "States").
type ActivityState string

// The activity instance states.
const (
	// ActivityInitiated: created, start conditions hold, waiting for a
	// worker.
	ActivityInitiated ActivityState = "Initiated"
	// ActivityActive: executing (automatic step, application call,
	// creating a subprocess).
	ActivityActive ActivityState = "Active"
	// ActivityWaiting: waiting for a subprocess to return.
	ActivityWaiting ActivityState = "Waiting"
	// ActivityInActive: waiting for a work item to be completed.
	ActivityInActive ActivityState = "InActive"
	// ActivityCompleted: done.
	ActivityCompleted ActivityState = "Completed"
	// ActivityAbnormal: a system-level fault left the next route
	// undecidable; an operator retries, skips or terminates.
	ActivityAbnormal ActivityState = "Abnormal"
)

// ActivityStates lists every activity state in lifecycle order.
var ActivityStates = []ActivityState{
	ActivityInitiated, ActivityActive, ActivityWaiting, ActivityInActive, ActivityCompleted, ActivityAbnormal,
}

// EventKind names a kind of event of the WfMC reference model's minimum
// set. The engine's outbox carries two of them (EventSubprocessCompleted,
// EventTerminateRequested) beside kinds of its own (engine/run.go;
// docs/architecture.md, "The path of one event"); the others name no
// event the engine writes today.
type EventKind string

// The event kinds.
const (
	EventWorkItemCreated     EventKind = "workitem.created"
	EventWorkItemCompleted   EventKind = "workitem.completed"
	EventActivityCompleted   EventKind = "activity.completed"
	EventSuspendRequested    EventKind = "process.suspend_requested"
	EventTerminateRequested  EventKind = "process.terminate_requested"
	EventResumeRequested     EventKind = "process.resume_requested"
	EventSubprocessCompleted EventKind = "subprocess.completed"
	EventDeadlineReached     EventKind = "deadline.reached"
	EventTimerFired          EventKind = "timer.fired"
	EventApplicationFinished EventKind = "application.finished"
	EventApplicationFailed   EventKind = "application.failed"
)

// Sentinel errors callers branch on with errors.Is.
var (
	// ErrNotFound: no instance, activity, definition or work item has the
	// given id.
	ErrNotFound = errors.New("not found")
	// ErrIllegalState: the command is not accepted in the current state
	// (a second Resume, suspending a suspended process). Returned as a
	// *StateError.
	ErrIllegalState = errors.New("illegal state for this command")
	// ErrInstanceFinished: the process instance is Completed, Terminated
	// or Locking and accepts no command. Returned as a *StateError, which
	// also matches ErrIllegalState.
	ErrInstanceFinished = errors.New("process instance is finished")
	// ErrDuplicateEvent: an event with this id was already processed.
	ErrDuplicateEvent = errors.New("duplicate event")
)

// StateError says which command a process or activity instance refused
// in which state. It matches ErrIllegalState, and ErrInstanceFinished when
// the process instance has finished.
type StateError struct {
	// Subject is "process" or "activity".
	Subject string
	// State is the state the instance was in.
	State string
	// Command is what was asked of it.
	Command string
	// Finished is true when the refusal is because the process finished.
	Finished bool
}

func (e *StateError) Error() string {
	if e.Finished {
		return fmt.Sprintf("%s: %s refused: process instance is %s and finished", e.Subject, e.Command, e.State)
	}
	return fmt.Sprintf("%s: %s refused in state %s", e.Subject, e.Command, e.State)
}

// Is matches ErrIllegalState always and ErrInstanceFinished when Finished.
func (e *StateError) Is(target error) bool {
	return target == ErrIllegalState || (e.Finished && target == ErrInstanceFinished)
}
