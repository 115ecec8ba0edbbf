package engine

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	"gorm.io/gorm"

	"github.com/goxpdl/goxpdl/engine/flow"
	"github.com/goxpdl/goxpdl/engine/machine"
	"github.com/goxpdl/goxpdl/store"
	"github.com/goxpdl/goxpdl/wftype"
	"github.com/goxpdl/goxpdl/workitem"
	"github.com/goxpdl/goxpdl/xpdl"
)

// ErrCannotMove: a move (Move, Jump, Rollback, Withdraw) cannot be made
// consistent, and nothing was changed. The *MoveError says why.
var ErrCannotMove = errors.New("instance cannot be moved")

// MoveError says why a move was refused. It matches ErrCannotMove.
type MoveError struct {
	// Instance is the process instance.
	Instance int64
	// Reason says what is wrong, in words for an operator.
	Reason string
}

func (e *MoveError) Error() string {
	return fmt.Sprintf("process instance %d cannot be moved: %s", e.Instance, e.Reason)
}

// Is matches ErrCannotMove.
func (e *MoveError) Is(target error) bool { return target == ErrCannotMove }

// Move says how to move a process instance on, in one step.
type Move struct {
	// Cancel lists open activity instances of the process's top level to
	// cancel: their work items are withdrawn, their subflow instances
	// terminated, a block activity's set cancelled with it, their timers
	// dropped; each ends Completed with the diagnosis "cancelled by"
	// the actor, and passes nothing on.
	Cancel []int64
	// CancelAll cancels every open activity of the process and forgets
	// the arrivals waiting at its joins: the flow starts afresh from
	// Start.
	CancelAll bool
	// Start lists activities (XPDL ids of the process's top level) to
	// start, each as a new activity instance, as if a transition had
	// arrived at it.
	Start []string
	// Variables are set in the same step (see SetVariables).
	Variables Values
}

// MoveInstance cancels and starts activities of a process instance in one
// step (process instance modification): what Jump, Rollback and Withdraw
// are made of, and how a Locking instance is repaired. The instance is
// Running, Suspended (what starts waits for Resume) or Locking (it runs
// again). Branches lost before the move are forgotten: the operator has
// said where the flow goes. Arrivals waiting at joins stay, unless
// CancelAll. With nothing left alive, the process completes.
//
// It refuses, changing nothing: a finished instance (ErrInstanceFinished),
// an activity instance of another instance (ErrWrongInstance), and with
// a *MoveError (ErrCannotMove) an activity that is not of this process,
// one inside an activity set (move its block activity instead), an
// instance of a looping activity (move the loop), an activity already
// finished, and a move that neither cancels nor starts anything.
func (e *Engine) MoveInstance(ctx context.Context, instance int64, m Move, op Op) error {
	return e.MoveInstanceTx(ctx, nil, instance, m, op)
}

// MoveInstanceTx is MoveInstance inside the host's transaction tx (nil:
// its own).
func (e *Engine) MoveInstanceTx(ctx context.Context, tx *gorm.DB, instance int64, m Move, op Op) error {
	return e.command(ctx, tx, instance, op, audited{action: AuditMove}, func(r *run) error { return r.move(m, nil) })
}

// Jump moves a process instance to an activity of its process (free
// flow, 自由流): every open activity is cancelled and the activity
// starts. It is MoveInstance with CancelAll.
func (e *Engine) Jump(ctx context.Context, instance int64, to string, op Op) error {
	return e.JumpTx(ctx, nil, instance, to, op)
}

// JumpTx is Jump inside the host's transaction tx (nil: its own).
func (e *Engine) JumpTx(ctx context.Context, tx *gorm.DB, instance int64, to string, op Op) error {
	return e.command(ctx, tx, instance, op, audited{action: AuditJump}, func(r *run) error {
		return r.move(Move{CancelAll: true, Start: []string{to}}, nil)
	})
}

// Rollback moves a process instance back to an activity that completed
// in it before (回退): every open activity is cancelled and the activity
// starts again. A manual activity's work item goes straight to the user
// who completed it last time. It refuses (ErrCannotMove) an activity
// that has not completed in this instance.
func (e *Engine) Rollback(ctx context.Context, instance int64, to string, op Op) error {
	return e.RollbackTx(ctx, nil, instance, to, op)
}

// RollbackTx is Rollback inside the host's transaction tx (nil: its own).
func (e *Engine) RollbackTx(ctx context.Context, tx *gorm.DB, instance int64, to string, op Op) error {
	return e.command(ctx, tx, instance, op, audited{action: AuditRollback}, func(r *run) error {
		if err := r.movable("rollback"); err != nil {
			return err
		}
		done, err := r.lastCompleted(to)
		if err != nil {
			return err
		}
		owner, err := r.completedBy(done.ID)
		if err != nil {
			return err
		}
		return r.move(Move{CancelAll: true, Start: []string{to}}, map[string]string{to: owner})
	})
}

// Withdraw takes a manual activity back (追回): the user who completed
// work item item gets it again, as a new work item of the activity,
// and the successors its completion started are cancelled. It is
// allowed while none of them has been taken up: each is still waiting to
// start or offered (not claimed, started or completed by anyone). It
// refuses (ErrCannotMove) otherwise, and a work item user did not
// complete (ErrNotAllowed).
func (e *Engine) Withdraw(ctx context.Context, item int64, user string, op Op) error {
	return e.WithdrawTx(ctx, nil, item, user, op)
}

// WithdrawTx is Withdraw inside the host's transaction tx (nil: its own).
func (e *Engine) WithdrawTx(ctx context.Context, tx *gorm.DB, item int64, user string, op Op) error {
	if err := checkText("user", user, maxKey); err != nil {
		return err
	}
	if op.Actor == "" {
		op.Actor = user
	}
	what := audited{action: AuditWithdraw, kind: TargetWorkItem, target: idText(item)}
	// The item is read where the command runs: in the host's transaction
	// when there is one (a second connection could wait for the one
	// SQLite writer the host's transaction holds).
	var st store.Tx = e.store
	if tx != nil {
		hs, err := hostStore(tx)
		if err != nil {
			return err
		}
		st = hs
	}
	wi, err := st.GetWorkItem(ctx, item)
	if errors.Is(err, store.ErrNotFound) {
		return e.audit(ctx, op, what).end(ctx, tx, notFound("work item", item))
	} else if err != nil {
		return e.audit(ctx, op, what).end(ctx, tx, err)
	}
	return e.command(ctx, tx, wi.ProcessInstanceID, op, what, func(r *run) error {
		if err := r.movable("withdraw"); err != nil {
			return err
		}
		wi, err := r.snap.workItem(item)
		if err != nil {
			return err
		}
		if wi.State != string(workitem.Completed) || wi.Owner != user {
			return fmt.Errorf("%w: work item %d is %s and was not completed by %s", ErrNotAllowed, item, wi.State, user)
		}
		successors, err := r.successorsOf(wi.ActivityInstanceID)
		if err != nil {
			return err
		}
		return r.move(Move{Cancel: successors, Start: []string{wi.ActivityDefID}}, map[string]string{wi.ActivityDefID: user})
	})
}

// move carries a Move out on the loaded instance; assignTo names, by
// activity id, the user a started manual activity is offered to alone.
func (r *run) move(m Move, assignTo map[string]string) error {
	refuse := func(format string, args ...any) error {
		return &MoveError{Instance: r.pi.ID, Reason: fmt.Sprintf(format, args...)}
	}
	if err := r.movable("move"); err != nil {
		return err
	}
	if len(m.Cancel) == 0 && !m.CancelAll && len(m.Start) == 0 {
		return refuse("the move neither cancels nor starts anything")
	}
	top := flow.Scope{Flow: &r.proc.Flow}
	targets := make([]*xpdl.Activity, 0, len(m.Start))
	for _, id := range m.Start {
		def, err := r.moveTarget(id)
		if err != nil {
			return err
		}
		targets = append(targets, def)
	}
	var cancel []*act
	if m.CancelAll {
		for _, a := range r.acts {
			if a.scope.Block == 0 && a.row.LoopParentID == nil && a.row.State != string(wftype.ActivityCompleted) {
				cancel = append(cancel, a)
			}
		}
	}
	for _, id := range m.Cancel {
		a, err := r.cancellable(id)
		if err != nil {
			return err
		}
		if !slices.Contains(cancel, a) {
			cancel = append(cancel, a)
		}
	}
	if err := r.setOperatorValues(m.Variables); err != nil {
		return err
	}
	if r.state() == wftype.ProcessLocking {
		if err := r.setProcess(machine.ProcessRepair, ""); err != nil {
			return err
		}
		r.resolve(nil, "moved")
	}
	var did []string
	for _, a := range cancel {
		if err := r.interrupt(a); err != nil {
			return err
		}
		if a.row.State == string(wftype.ActivityAbnormal) {
			r.resolve(a, "moved")
		}
		if err := r.forceComplete(a, "cancelled by "+r.actor); err != nil {
			return err
		}
		did = append(did, fmt.Sprintf("cancelled %s", a.def.ID))
	}
	if m.CancelAll {
		r.tokens.Clear(top)
	} else {
		r.tokens.Forgive(top)
	}
	for _, def := range targets {
		a, err := r.createActivity(top, def, false)
		if err != nil {
			return err
		}
		a.row.AssignTo = assignTo[def.ID] // kept: a Suspended instance offers it when it resumes
		r.tokens.Restart(top, def)
		if r.state() == wftype.ProcessRunning && startsOnControlPath(def) {
			if err := r.startActivity(a); err != nil {
				return err
			}
		} else if r.state() == wftype.ProcessRunning {
			r.scheduleStart(a)
		}
		did = append(did, "started "+def.ID)
	}
	r.record(Record{Type: RecordProcessMoved, State: r.pi.State, Detail: strings.Join(did, ", "), User: r.actor})
	return r.settle(top)
}

// movable refuses a move (command names it) of an instance that is not
// Running, Suspended or Locking: a finished one with ErrInstanceFinished,
// before anything else about the move is looked at.
func (r *run) movable(command string) error {
	switch s := r.state(); s {
	case wftype.ProcessRunning, wftype.ProcessSuspended, wftype.ProcessLocking:
		return nil
	default:
		return &wftype.StateError{Subject: "process", State: r.pi.State, Command: command, Finished: s.IsFinal()}
	}
}

// moveTarget finds activity id of the process's top level, or says why a
// move cannot start it.
func (r *run) moveTarget(id string) (*xpdl.Activity, error) {
	refuse := func(format string, args ...any) error {
		return &MoveError{Instance: r.pi.ID, Reason: fmt.Sprintf(format, args...)}
	}
	if def := r.proc.Activity(id); def != nil {
		return def, nil
	}
	for _, set := range r.proc.ActivitySets {
		if set.Activity(id) != nil {
			for _, f := range r.proc.Flows() {
				for _, b := range f.Activities {
					if b.Block != nil && b.Block.ActivitySet == set.ID {
						return nil, refuse("activity %s is inside activity set %s: move to its block activity %s instead", id, set.ID, b.ID)
					}
				}
			}
			return nil, refuse("activity %s is inside activity set %s, which no block activity runs", id, set.ID)
		}
	}
	for _, p := range r.dep.pkg.Processes {
		if p != r.proc && p.Activity(id) != nil {
			return nil, refuse("activity %s belongs to process %s, not to %s: an instance moves within its own process", id, p.ID, r.proc.ID)
		}
	}
	return nil, refuse("process %s has no activity %s", r.proc.ID, id)
}

// cancellable finds open activity instance id at the loaded process's top
// level, or says why a move cannot cancel it.
func (r *run) cancellable(id int64) (*act, error) {
	a := r.activity(id)
	if a == nil {
		row, err := r.snap.activityRow(id)
		switch {
		case errors.Is(err, store.ErrNotFound):
			return nil, notFound("activity instance", id)
		case err != nil:
			return nil, err
		case row.ProcessInstanceID != r.pi.ID:
			return nil, fmt.Errorf("%w: activity instance %d is in process instance %d, not %d",
				ErrWrongInstance, id, row.ProcessInstanceID, r.pi.ID)
		}
		return nil, &MoveError{Instance: r.pi.ID, Reason: fmt.Sprintf("activity instance %d (%s) is %s: only open activities are cancelled", id, row.ActivityDefID, row.State)}
	}
	switch {
	case a.row.State == string(wftype.ActivityCompleted):
		return nil, &MoveError{Instance: r.pi.ID, Reason: fmt.Sprintf("activity instance %d (%s) is Completed: only open activities are cancelled", id, a.def.ID)}
	case a.scope.Block != 0:
		return nil, &MoveError{Instance: r.pi.ID, Reason: fmt.Sprintf("activity instance %d (%s) runs inside an activity set: cancel its block activity instance %d", id, a.def.ID, a.scope.Block)}
	case a.row.LoopParentID != nil:
		return nil, &MoveError{Instance: r.pi.ID, Reason: fmt.Sprintf("activity instance %d is one instance of looping activity %s: cancel the loop, instance %d", id, a.def.ID, *a.row.LoopParentID)}
	}
	return a, nil
}

// lastCompleted finds the latest completed top-level instance of activity
// def, for a rollback to it.
func (r *run) lastCompleted(def string) (store.ActivityInstance, error) {
	if _, err := r.moveTarget(def); err != nil {
		return store.ActivityInstance{}, err
	}
	done, err := r.snap.activityRows(string(wftype.ActivityCompleted))
	if err != nil {
		return store.ActivityInstance{}, err
	}
	for i := len(done) - 1; i >= 0; i-- {
		if a := done[i]; a.ActivityDefID == def && a.BlockInstanceID == nil && a.LoopParentID == nil && !strings.HasPrefix(a.Diagnosis, "cancelled by ") {
			return a, nil
		}
	}
	return store.ActivityInstance{}, &MoveError{Instance: r.pi.ID, Reason: fmt.Sprintf("activity %s has not completed in this instance: roll back only to where it has been", def)}
}

// completedBy is the user who completed the work item of activity
// instance id; "" when it had none.
func (r *run) completedBy(id int64) (string, error) {
	items, err := r.snap.workItems(store.ListWorkItemsParams{ProcessInstanceID: r.pi.ID, ActivityInstanceID: id, States: []string{string(workitem.Completed)}})
	if err != nil {
		return "", err
	}
	if len(items) == 0 {
		return "", nil
	}
	return items[len(items)-1].Owner, nil
}

// successorsOf lists the open activity instances created by the
// completion of activity instance id (the targets of its transitions
// created when or after it completed), refusing a withdraw when one of
// them has been taken up or has finished.
func (r *run) successorsOf(id int64) ([]int64, error) {
	done, err := r.snap.activityRow(id)
	if err != nil {
		return nil, err
	}
	def := r.proc.Activity(done.ActivityDefID)
	if def == nil || done.BlockInstanceID != nil || done.EndedAt == nil {
		return nil, &MoveError{Instance: r.pi.ID, Reason: fmt.Sprintf("activity %s runs inside an activity set or a loop: it cannot be withdrawn", done.ActivityDefID)}
	}
	next := map[string]bool{}
	for _, t := range r.proc.Outgoing(def.ID) {
		next[t.To] = true
	}
	all, err := r.snap.activityRows()
	if err != nil {
		return nil, err
	}
	var out []int64
	for _, a := range all {
		if !next[a.ActivityDefID] || a.ID <= id || a.CreatedAt.Before(*done.EndedAt) || a.BlockInstanceID != nil {
			continue
		}
		switch wftype.ActivityState(a.State) {
		case wftype.ActivityInitiated:
		case wftype.ActivityInActive:
			items, err := r.snap.workItems(store.ListWorkItemsParams{ProcessInstanceID: r.pi.ID, ActivityInstanceID: a.ID})
			if err != nil {
				return nil, err
			}
			for _, wi := range items {
				if wi.State != string(workitem.Offered) {
					return nil, &MoveError{Instance: r.pi.ID, Reason: fmt.Sprintf("successor %s has been taken up (work item %d is %s)", a.ActivityDefID, wi.ID, wi.State)}
				}
			}
		default:
			return nil, &MoveError{Instance: r.pi.ID, Reason: fmt.Sprintf("successor %s is %s: it has run already", a.ActivityDefID, a.State)}
		}
		out = append(out, a.ID)
	}
	for _, t := range r.proc.Outgoing(def.ID) {
		if r.tokens.Waiting(flow.Scope{Flow: &r.proc.Flow}, t) {
			return nil, &MoveError{Instance: r.pi.ID, Reason: fmt.Sprintf("its completion arrived at join %s, which waits for other branches: it cannot be taken back alone", t.To)}
		}
	}
	return out, nil
}
