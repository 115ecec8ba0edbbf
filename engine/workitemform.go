package engine

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/goxpdl/goxpdl/store"
	"github.com/goxpdl/goxpdl/xpdl"
)

// FormField is one value a person may hand in when completing a work
// item: a key of Completion.Outputs or Completion.TextOutputs.
type FormField struct {
	// ID is the formal parameter's or variable's id, the output's key.
	ID string `json:"id"`
	// Name is its display name; "" when it has none.
	Name string `json:"name,omitempty"`
	// Type is its declared type: STRING, INTEGER, FLOAT, BOOLEAN,
	// DATETIME, DATE, TIME, REFERENCE, PERFORMER, ENUMERATION, ARRAY
	// (JSON text), or JSON for a type the engine does not check.
	Type string `json:"type"`
	// Values lists an ENUMERATION's values.
	Values []string `json:"values,omitempty"`
	// Mode is a formal parameter's mode, OUT or INOUT; "" for a data
	// field.
	Mode xpdl.ParamMode `json:"mode,omitempty"`
	// Value is the current value of the variable of that id (nil when
	// there is none).
	Value any `json:"value,omitempty"`
}

// WorkItemForm is what completing an open work item may hand in: the
// activity's OUT and INOUT formal parameters when it declares formal
// parameters (XPDL 2.2), else the variables the activity lets its
// performer set (those its VariableToProcess_UPDATE attributes name, or
// every data field and formal parameter of the process), in declaration
// order.
type WorkItemForm struct {
	WorkItem WorkItem    `json:"workItem"`
	Fields   []FormField `json:"fields"`
}

// WorkItemForm returns the form of an open work item: what
// CompleteWorkItem takes for it. A work item that is not waiting to be
// done (completed, withdrawn, its activity no longer waiting) is refused
// with a *wftype.StateError (ErrIllegalState); an unknown one with
// ErrNotFound.
func (e *Engine) WorkItemForm(ctx context.Context, id int64) (WorkItemForm, error) {
	r := e.newRun(ctx, e.store, "host") // reads only, outside a transaction
	wi, err := r.snap.workItem(id)
	if errors.Is(err, store.ErrNotFound) {
		return WorkItemForm{}, notFound("work item", id)
	} else if err != nil {
		return WorkItemForm{}, err
	}
	if err := r.load(wi.ProcessInstanceID); err != nil {
		return WorkItemForm{}, err
	}
	a, err := r.itemActivity(wi)
	if err != nil {
		return WorkItemForm{}, err
	}
	fields, err := r.formFields(a.def)
	if err != nil {
		return WorkItemForm{}, err
	}
	return WorkItemForm{WorkItem: workItemOf(wi), Fields: fields}, nil
}

// formFields lists what the performer of activity def may hand in.
func (r *run) formFields(def *xpdl.Activity) ([]FormField, error) {
	vars, err := r.variables()
	if err != nil {
		return nil, err
	}
	fields := []FormField{}
	if params := def.FormalParameters; len(params) > 0 {
		for _, fp := range params {
			if fp.Mode != xpdl.ModeOut && fp.Mode != xpdl.ModeInOut {
				continue
			}
			f := formField(fp.ID, fp.Name, typeOf(fp.Type, fp.IsArray), vars)
			f.Mode = fp.Mode
			fields = append(fields, f)
		}
		return fields, nil
	}
	allowed := updatable(def)
	seen := map[string]int{}
	add := func(id, name string, dt xpdl.DataType, array bool) {
		if len(allowed) > 0 && !allowed[id] {
			return
		}
		f := formField(id, name, typeOf(dt, array), vars)
		if i, ok := seen[id]; ok { // the process's declaration hides the package's
			fields[i] = f
			return
		}
		seen[id] = len(fields)
		fields = append(fields, f)
	}
	for _, df := range r.dep.pkg.DataFields {
		add(df.ID, df.Name, df.Type, df.IsArray)
	}
	for _, fp := range r.proc.FormalParameters {
		add(fp.ID, fp.Name, fp.Type, fp.IsArray)
	}
	for _, df := range r.proc.DataFields {
		add(df.ID, df.Name, df.Type, df.IsArray)
	}
	return fields, nil
}

func formField(id, name string, vt varType, vars map[string]any) FormField {
	return FormField{ID: id, Name: name, Type: vt.name(), Values: slices.Clone(vt.enum), Value: vars[id]}
}

// updatable returns the variables an activity's VariableToProcess_UPDATE
// attributes name; empty when it names none (every variable may be set).
func updatable(def *xpdl.Activity) map[string]bool {
	allowed := map[string]bool{}
	for _, ea := range def.ExtendedAttributes {
		if ea.Name == AttrVariableToProcessUpdate {
			allowed[strings.TrimSpace(ea.Value)] = true
		}
	}
	return allowed
}

// outputs returns a completion's outputs with its TextOutputs parsed by
// the types of activity def's formal parameters, or of the variables
// when it declares none; a typed output wins over a text one of the same
// name. A text output that names neither is ErrUnknownVariable; one that
// does not parse, ErrWrongType (a *VariableError naming it).
func (r *run) outputs(def *xpdl.Activity, c Completion) (map[string]any, error) {
	if len(c.TextOutputs) == 0 {
		return c.Outputs, nil
	}
	if _, err := r.variables(); err != nil {
		return nil, err
	}
	out := make(map[string]any, len(c.Outputs)+len(c.TextOutputs))
	for _, name := range slices.Sorted(maps.Keys(c.TextOutputs)) {
		text := c.TextOutputs[name]
		var vt varType
		if params := def.FormalParameters; len(params) > 0 {
			i := slices.IndexFunc(params, func(fp *xpdl.FormalParameter) bool { return fp.ID == name })
			if i < 0 {
				return nil, &VariableError{Name: name, Value: text, kind: ErrUnknownVariable}
			}
			vt = typeOf(params[i].Type, params[i].IsArray)
		} else {
			d, ok := r.decls[name]
			if !ok {
				return nil, &VariableError{Name: name, Value: text, kind: ErrUnknownVariable}
			}
			vt = d.typ
		}
		v, err := vt.parseText(name, text)
		if err != nil {
			return nil, err
		}
		out[name] = v
	}
	for name, v := range c.Outputs {
		out[name] = v
	}
	return out, nil
}

// activityDef finds the definition of activity id in the run's process,
// in its top level or an activity set.
func (r *run) activityDef(id string) (*xpdl.Activity, error) {
	for _, f := range r.proc.Flows() {
		if a := f.Activity(id); a != nil {
			return a, nil
		}
	}
	return nil, fmt.Errorf("process %s has no activity %s", r.proc.ID, id)
}
