package engine

import (
	"context"
	"errors"
	"fmt"

	"gorm.io/gorm"

	"github.com/goxpdl/goxpdl/engine/machine"
	"github.com/goxpdl/goxpdl/store"
	"github.com/goxpdl/goxpdl/wftype"
)

// RetryActivity runs an Abnormal activity of a Running process instance
// again: it goes back to Initiated and starts afresh, as a new attempt
// (its applications get a new idempotency key). A BlockActivity runs its
// whole ActivitySet again; a SubFlow starts a new subflow instance; a
// manual activity is offered again. Its incident is resolved ("retried").
//
// It refuses an activity that is not Abnormal or a process that is not
// Running (ErrIllegalState), an unknown activity (ErrNotFound) and one of
// another instance (ErrWrongInstance), and changes nothing then.
func (e *Engine) RetryActivity(ctx context.Context, instance, activity int64, op Op) error {
	return e.RetryActivityTx(ctx, nil, instance, activity, op)
}

// RetryActivityTx is RetryActivity inside the host's transaction tx (nil:
// its own).
func (e *Engine) RetryActivityTx(ctx context.Context, tx *gorm.DB, instance, activity int64, op Op) error {
	return e.command(ctx, tx, instance, op, audited{action: AuditRetry, kind: TargetActivity, target: idText(activity)}, func(r *run) error {
		a, err := r.abnormalActivity(activity, "retry")
		if err != nil {
			return err
		}
		if err := r.setActivity(a, machine.ActivityRetry, ""); err != nil {
			return err
		}
		r.resolve(a, "retried")
		r.scheduleStart(a)
		return nil
	})
}

// Values are variables an operator sets: on a skipped activity, before
// it routes on (as its OUT values would have been), or on an instance
// (SetVariables).
type Values struct {
	// Variables are values by variable id; each must fit its declared
	// type.
	Variables map[string]any
	// TextVariables are the same written as text, parsed by the declared
	// types (as StartOptions.TextVariables).
	TextVariables map[string]string
}

// SkipActivity completes an Abnormal activity of a Running process
// instance without running it: the given variables are set, then it
// routes on as if it had completed (its transitions are chosen, joins
// collect the arrival). Its incident is resolved ("skipped").
//
// It refuses, changing nothing, what RetryActivity refuses, a value that
// does not fit its variable (ErrWrongType, ErrUnknownVariable), and an
// activity whose transitions cannot be chosen with these values
// (ErrCannotSkip: a condition fails to evaluate).
func (e *Engine) SkipActivity(ctx context.Context, instance, activity int64, values Values, op Op) error {
	return e.SkipActivityTx(ctx, nil, instance, activity, values, op)
}

// SkipActivityTx is SkipActivity inside the host's transaction tx (nil:
// its own).
func (e *Engine) SkipActivityTx(ctx context.Context, tx *gorm.DB, instance, activity int64, values Values, op Op) error {
	return e.command(ctx, tx, instance, op, audited{action: AuditSkip, kind: TargetActivity, target: idText(activity)}, func(r *run) error {
		a, err := r.abnormalActivity(activity, "skip")
		if err != nil {
			return err
		}
		defer r.produce(a)() // the values a skipped loop instance hands back (countersign.go)
		if err := r.setOperatorValues(values); err != nil {
			return err
		}
		r.resolve(a, "skipped")
		r.skipping = a
		defer func() { r.skipping = nil }()
		return r.complete(a, "")
	})
}

// abnormalActivity finds activity instance id of the loaded process, which
// an operator command may repair: the process is Running and the activity
// Abnormal. An activity of another instance is refused first
// (ErrWrongInstance), then a finished process (ErrInstanceFinished),
// whatever state the activity was left in.
func (r *run) abnormalActivity(id int64, cmd string) (*act, error) {
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
		if r.state().IsFinal() {
			return nil, &wftype.StateError{Subject: "process", State: r.pi.State, Command: cmd, Finished: true}
		}
		return nil, &wftype.StateError{Subject: "activity", State: row.State, Command: cmd}
	}
	if r.state().IsFinal() {
		return nil, &wftype.StateError{Subject: "process", State: r.pi.State, Command: cmd, Finished: true}
	}
	if a.row.State != string(wftype.ActivityAbnormal) {
		return nil, &wftype.StateError{Subject: "activity", State: a.row.State, Command: cmd}
	}
	if r.state() != wftype.ProcessRunning {
		return nil, &wftype.StateError{Subject: "process", State: r.pi.State, Command: cmd, Finished: r.state().IsFinal()}
	}
	return a, nil
}
