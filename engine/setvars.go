package engine

import (
	"context"
	"reflect"
	"slices"

	"gorm.io/gorm"

	"github.com/goxpdl/goxpdl/store"
	"github.com/goxpdl/goxpdl/wftype"
)

// SetVariables changes variables of a process instance that has not
// ended (Initiated, Running, Suspended, or Locking, to repair it before
// moving it on). Values are checked against their declared types, all
// before any is set; each change is a history entry with its old and new
// value and the Op. Nothing else moves: conditions are evaluated with the
// new values when the instance next routes.
//
// It refuses an unknown variable (ErrUnknownVariable), a value of the
// wrong type (ErrWrongType) and a Completed or Terminated instance
// (ErrInstanceFinished), changing nothing.
func (e *Engine) SetVariables(ctx context.Context, instance int64, values Values, op Op) error {
	return e.SetVariablesTx(ctx, nil, instance, values, op)
}

// SetVariablesTx is SetVariables inside the host's transaction tx (nil:
// its own).
func (e *Engine) SetVariablesTx(ctx context.Context, tx *gorm.DB, instance int64, values Values, op Op) error {
	return e.command(ctx, tx, instance, op, audited{action: AuditSetVariables}, func(r *run) error {
		if s := r.state(); s == wftype.ProcessCompleted || s == wftype.ProcessTerminated {
			return &wftype.StateError{Subject: "process", State: r.pi.State, Command: "set variables", Finished: true}
		}
		return r.setOperatorValues(values)
	})
}

// setOperatorValues sets the values an operator gave, type-checked, and
// writes a history entry for each variable whose value changes.
func (r *run) setOperatorValues(values Values) error {
	if len(values.Variables) == 0 && len(values.TextVariables) == 0 {
		return nil
	}
	vars, err := r.variables()
	if err != nil {
		return err
	}
	merged, err := mergeTextVariables(r.decls, values.Variables, values.TextVariables)
	if err != nil {
		return err
	}
	if err := checkValuesSize(merged); err != nil {
		return err
	}
	old := make(map[string]any, len(merged))
	for name := range merged {
		old[name] = vars[name]
	}
	if err := r.setVariables(merged, false); err != nil {
		return err
	}
	names := make([]string, 0, len(merged))
	for name := range merged {
		names = append(names, name)
	}
	slices.Sort(names)
	for _, name := range names {
		if reflect.DeepEqual(old[name], r.vars[name]) {
			continue
		}
		r.history = append(r.history, store.HistoryEntry{
			ProcessInstanceID: r.pi.ID, Subject: store.SubjectVariable, Actor: r.actor, At: r.now,
			Data: mustJSON(variableChange{Variable: name, Old: old[name], New: r.vars[name], Reason: r.op.Reason, Data: r.op.Data}),
		})
	}
	return nil
}

// variableChange is the detail of a SubjectVariable history entry.
type variableChange struct {
	Variable string         `json:"variable"`
	Old      any            `json:"old"`
	New      any            `json:"new"`
	Reason   string         `json:"reason,omitempty"`
	Data     map[string]any `json:"data,omitempty"`
}
