// Package workitem holds the life cycle of a work item (I1): the states a
// person's piece of work goes through and the commands that move it, as
// pure code with no database, clock or goroutine: Next says where a
// command takes an item, or refuses it (*TransitionError).
//
// The engine drives it (engine/workitems.go): in the transaction of the
// command it checks the transition here, checks who may give the command
// (the host's resource.Directory), writes the item with whose worklists
// show it, and writes a history entry and a trace record for every
// change; a command an operator gives on someone's behalf, and every
// reassignment, also goes into the audit log. The records the host asks
// for (engine.Config.Notify) reach it as durable notifications.
//
// A manual activity offers a work item to the users, roles and units its
// performer resolves to (Offered). One of them claims it (Allocated, with
// an owner), starts it (Started) and completes it (Completed), which
// completes the activity and moves the process on in the same
// transaction. An Offered or Allocated item may be completed at once:
// the one who completes it becomes its owner. An owner may release the
// item (back to Offered) or delegate it to another user; an administrator
// may reassign it to other people. A suspended process suspends its open
// items and resuming it restores them; terminating the process, a
// deadline, a lost race or a cancelled activity withdraws them.
package workitem

import (
	"errors"
	"fmt"

	"github.com/goxpdl/goxpdl/wftype"
)

// State is a work item's state.
type State string

// The work item states.
const (
	// Offered: visible in the worklists of the people it is offered to;
	// nobody holds it.
	Offered State = "Offered"
	// Allocated: claimed by one user (its owner), not yet started.
	Allocated State = "Allocated"
	// Started: its owner is working on it.
	Started State = "Started"
	// Suspended: its process is suspended; it keeps its owner and returns
	// to its earlier state on resume.
	Suspended State = "Suspended"
	// Completed: done; the process moved on. Final.
	Completed State = "Completed"
	// Withdrawn: no longer needed (process terminated, deadline, race
	// lost, activity cancelled). Final.
	Withdrawn State = "Withdrawn"
)

// States lists every state.
var States = []State{Offered, Allocated, Started, Suspended, Completed, Withdrawn}

// OpenStates lists the states in which an item is still to be done.
var OpenStates = []State{Offered, Allocated, Started, Suspended}

// IsFinal reports whether no command moves the item any more.
func (s State) IsFinal() bool { return s == Completed || s == Withdrawn }

// Command is something that moves a work item.
type Command string

// The commands.
const (
	// Allocate: a user claims an offered item.
	Allocate Command = "allocate"
	// Start: the owner begins work.
	Start Command = "start"
	// Complete: the work is done. From Offered or Allocated it claims and
	// starts on the way.
	Complete Command = "complete"
	// Release: the owner gives the item back to the people it was offered
	// to.
	Release Command = "release"
	// Delegate: the owner hands the item to another user, who holds it
	// allocated.
	Delegate Command = "delegate"
	// Reassign: an administrator offers the item to other people; any
	// owner loses it.
	Reassign Command = "reassign"
	// Suspend: the process was suspended.
	Suspend Command = "suspend"
	// Resume: the process was resumed; the item returns to the state it
	// was suspended in.
	Resume Command = "resume"
	// Withdraw: the item is no longer needed.
	Withdraw Command = "withdraw"
)

// Commands lists every command.
var Commands = []Command{Allocate, Start, Complete, Release, Delegate, Reassign, Suspend, Resume, Withdraw}

// ErrIllegal is matched by every refusal of Next (a *TransitionError).
var ErrIllegal = errors.New("illegal work item transition")

// TransitionError says which command a work item refused in which state.
// It matches ErrIllegal.
type TransitionError struct {
	// State is the state the item was in.
	State State
	// Command is what was asked of it.
	Command Command
}

func (e *TransitionError) Error() string {
	if e.State.IsFinal() {
		return fmt.Sprintf("work item: %s refused: the item is %s", e.Command, e.State)
	}
	return fmt.Sprintf("work item: %s refused in state %s", e.Command, e.State)
}

// Is matches ErrIllegal, and wftype.ErrIllegalState like the engine's
// other refusals.
func (e *TransitionError) Is(target error) bool {
	return target == ErrIllegal || target == wftype.ErrIllegalState
}

// table holds the legal transitions except Resume, whose target is the
// state the item was suspended in.
var table = map[State]map[Command]State{
	Offered: {
		Allocate: Allocated,
		Complete: Completed,
		Reassign: Offered,
		Suspend:  Suspended,
		Withdraw: Withdrawn,
	},
	Allocated: {
		Start:    Started,
		Complete: Completed,
		Release:  Offered,
		Delegate: Allocated,
		Reassign: Offered,
		Suspend:  Suspended,
		Withdraw: Withdrawn,
	},
	Started: {
		Complete: Completed,
		Release:  Offered,
		Delegate: Allocated,
		Reassign: Offered,
		Suspend:  Suspended,
		Withdraw: Withdrawn,
	},
	Suspended: {
		Withdraw: Withdrawn,
	},
}

// Next returns the state cmd moves an item in state from to. For Resume,
// suspendedFrom is the state the item was suspended in (ignored
// otherwise). A refusal returns from unchanged and a *TransitionError.
func Next(from State, cmd Command, suspendedFrom State) (State, error) {
	if from == Suspended && cmd == Resume {
		switch suspendedFrom {
		case Offered, Allocated, Started:
			return suspendedFrom, nil
		}
		return from, &TransitionError{State: from, Command: cmd}
	}
	if to, ok := table[from][cmd]; ok {
		return to, nil
	}
	return from, &TransitionError{State: from, Command: cmd}
}

// HasOwner reports whether an item in state s is held by one user.
func HasOwner(s State) bool { return s == Allocated || s == Started }
