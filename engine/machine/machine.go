// Package machine holds the process-instance and activity-instance state
// machines (docs/engine.md, "States"; docs/architecture.md, "The state
// machines") as pure functions: given a state and a command they return
// the next state or a typed refusal. They touch no database, clock or
// goroutine; the engine's runs (engine/run.go) drive them and persist the
// results.
package machine

import "github.com/goxpdl/goxpdl/wftype"

// ProcessCommand is something that moves a process instance.
type ProcessCommand string

// The process commands: three administrative ones, and the ones the
// dispatch core issues as the instance runs.
const (
	// ProcessSchedule starts an Initiated instance running.
	ProcessSchedule ProcessCommand = "schedule"
	// ProcessSuspend pauses a Running instance (administrative).
	ProcessSuspend ProcessCommand = "suspend"
	// ProcessResume continues a Suspended instance (administrative).
	ProcessResume ProcessCommand = "resume"
	// ProcessTerminate ends a Running or Suspended instance
	// (administrative); its open work items are withdrawn.
	ProcessTerminate ProcessCommand = "terminate"
	// ProcessComplete ends the instance once its end activities completed.
	// A Suspended instance whose last activity completed completes too.
	ProcessComplete ProcessCommand = "complete"
	// ProcessLock records a deadlock: no current activity and no
	// successor can fire.
	ProcessLock ProcessCommand = "lock"
	// ProcessRepair sends a Locking instance back to Running: an operator
	// moved its tokens on (administrative; paper §2.1: a Locking instance
	// is not dead).
	ProcessRepair ProcessCommand = "repair"
	// ProcessQueue parks a new instance whose start waits for a
	// business-key lock held by another instance.
	ProcessQueue ProcessCommand = "queue"
	// ProcessDequeue hands a Queued instance its lock: it is Initiated
	// and scheduled as a new start is.
	ProcessDequeue ProcessCommand = "dequeue"
)

// ProcessCommands lists every process command.
var ProcessCommands = []ProcessCommand{
	ProcessSchedule, ProcessSuspend, ProcessResume, ProcessTerminate, ProcessComplete, ProcessLock, ProcessRepair,
	ProcessQueue, ProcessDequeue,
}

// processTable holds the legal process transitions; anything else is
// refused.
var processTable = map[wftype.ProcessState]map[ProcessCommand]wftype.ProcessState{
	wftype.ProcessInitiated: {
		ProcessSchedule: wftype.ProcessRunning,
		ProcessQueue:    wftype.ProcessQueued,
	},
	wftype.ProcessQueued: {
		ProcessDequeue:   wftype.ProcessInitiated,
		ProcessTerminate: wftype.ProcessTerminated,
	},
	wftype.ProcessRunning: {
		ProcessSuspend:   wftype.ProcessSuspended,
		ProcessTerminate: wftype.ProcessTerminated,
		ProcessComplete:  wftype.ProcessCompleted,
		ProcessLock:      wftype.ProcessLocking,
	},
	wftype.ProcessSuspended: {
		ProcessResume:    wftype.ProcessRunning,
		ProcessTerminate: wftype.ProcessTerminated,
		// A completed activity is routed before suspension takes
		// effect: the routing may complete the process or find that
		// nothing can fire.
		ProcessComplete: wftype.ProcessCompleted,
		ProcessLock:     wftype.ProcessLocking,
	},
	wftype.ProcessLocking: {
		ProcessRepair: wftype.ProcessRunning,
	},
}

// NextProcessState returns the state cmd moves a process instance in
// state from to. A refusal is a *wftype.StateError matching
// wftype.ErrIllegalState, and wftype.ErrInstanceFinished when the instance
// is Completed, Terminated or Locking.
func NextProcessState(from wftype.ProcessState, cmd ProcessCommand) (wftype.ProcessState, error) {
	if to, ok := processTable[from][cmd]; ok {
		return to, nil
	}
	return from, &wftype.StateError{Subject: "process", State: string(from), Command: string(cmd), Finished: from.IsFinal()}
}

// ActivityCommand is something that moves an activity instance.
type ActivityCommand string

// The activity commands.
const (
	// ActivityStart begins automatic work: a route, an application call,
	// starting a subprocess.
	ActivityStart ActivityCommand = "start"
	// ActivityOffer hands manual work to people: a work item is created.
	ActivityOffer ActivityCommand = "offer"
	// ActivityWait parks an Active activity until its subprocess returns.
	ActivityWait ActivityCommand = "wait"
	// ActivityComplete finishes the activity: its work is done, its work
	// item completed, or its subprocess returned.
	ActivityComplete ActivityCommand = "complete"
	// ActivityFail records a system-level fault (a fatal application
	// error, a terminated subprocess) that leaves the route undecidable.
	ActivityFail ActivityCommand = "fail"
	// ActivityRetry sends an Abnormal activity back to be run again
	// (operator).
	ActivityRetry ActivityCommand = "retry"
	// ActivitySkip completes an Abnormal activity without running it
	// (operator).
	ActivitySkip ActivityCommand = "skip"
	// ActivityCancel ends an open activity without running it on or
	// routing it: an operator's move (Jump, Rollback, Withdraw,
	// MoveInstance) cancels it. It is the one command a Suspended
	// process accepts from every open state, as the move is accepted
	// there (what the move starts waits for the resume).
	ActivityCancel ActivityCommand = "cancel"
)

// ActivityCommands lists every activity command.
var ActivityCommands = []ActivityCommand{
	ActivityStart, ActivityOffer, ActivityWait, ActivityComplete, ActivityFail, ActivityRetry, ActivitySkip,
	ActivityCancel,
}

// activityTable holds the legal activity transitions.
var activityTable = map[wftype.ActivityState]map[ActivityCommand]wftype.ActivityState{
	wftype.ActivityInitiated: {
		ActivityStart:  wftype.ActivityActive,
		ActivityOffer:  wftype.ActivityInActive,
		ActivityCancel: wftype.ActivityCompleted,
	},
	wftype.ActivityActive: {
		ActivityWait:     wftype.ActivityWaiting,
		ActivityComplete: wftype.ActivityCompleted,
		ActivityFail:     wftype.ActivityAbnormal,
		ActivityCancel:   wftype.ActivityCompleted,
	},
	wftype.ActivityWaiting: {
		ActivityComplete: wftype.ActivityCompleted,
		ActivityFail:     wftype.ActivityAbnormal,
		ActivityCancel:   wftype.ActivityCompleted,
	},
	wftype.ActivityInActive: {
		ActivityComplete: wftype.ActivityCompleted,
		// The work cannot be offered (its performer does not resolve):
		// a fault for an operator, as for an automatic activity.
		ActivityFail:   wftype.ActivityAbnormal,
		ActivityCancel: wftype.ActivityCompleted,
	},
	wftype.ActivityAbnormal: {
		ActivityRetry:  wftype.ActivityInitiated,
		ActivitySkip:   wftype.ActivityCompleted,
		ActivityCancel: wftype.ActivityCompleted,
	},
}

// allowedWhileSuspended are the activity commands a Suspended process
// still accepts: a subprocess may return to, or fail, its Waiting parent
// activity, whose completion is then routed before the suspension holds;
// and an operator's move may cancel any open activity (ActivityCancel).
// Nothing becomes Active, and work items are suspended with the process.
func allowedWhileSuspended(from wftype.ActivityState, cmd ActivityCommand) bool {
	switch cmd {
	case ActivityComplete, ActivityFail:
		return from == wftype.ActivityWaiting
	case ActivityCancel:
		return true
	}
	return false
}

// NextActivityState returns the state cmd moves an activity instance in
// state from to, given the state of its process instance. Activities move
// freely only while the process is Running; a Suspended process accepts
// only a Waiting activity's completion or failure (docs/engine.md,
// "States": a Waiting activity may still receive its subflow's result) and
// an operator's cancellation; a finished process accepts nothing. Refusals
// are *wftype.StateError.
func NextActivityState(process wftype.ProcessState, from wftype.ActivityState, cmd ActivityCommand) (wftype.ActivityState, error) {
	refuse := func(subject, state string, finished bool) (wftype.ActivityState, error) {
		return from, &wftype.StateError{Subject: subject, State: state, Command: string(cmd), Finished: finished}
	}
	switch {
	case process.IsFinal():
		return refuse("process", string(process), true)
	case process == wftype.ProcessSuspended && !allowedWhileSuspended(from, cmd):
		return refuse("process", string(process), false)
	case process != wftype.ProcessRunning && process != wftype.ProcessSuspended:
		return refuse("process", string(process), false)
	}
	if to, ok := activityTable[from][cmd]; ok {
		return to, nil
	}
	return refuse("activity", string(from), false)
}
