package statemachine

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/goxpdl/goxpdl/engine"
	"github.com/goxpdl/goxpdl/store"
	"github.com/goxpdl/goxpdl/store/gormstore"
)

// hook is the machine's tool agent, which the engine calls for the hooks
// of the compiled process (Definition.compile), inside the transaction of
// the step: the onEnter hook of _start enters the initial state; the
// onFinish hook of a state's user task resumes the state and enters the
// next. What it returns are the variables to set; its error refuses the
// step (for onFinish, the completion of the bookmark's work item).
func (m *Machine) hook(ctx context.Context, call *engine.Call) (map[string]any, error) {
	switch {
	case call.Hook == engine.HookOnEnter && call.ActivityID == startID:
		return m.enterInitial(ctx, call)
	case call.Hook == engine.HookOnFinish:
		return m.resumeState(ctx, call)
	}
	return nil, fmt.Errorf("state machine %s: no %s hook for activity %s", m.def.ID, call.Hook, call.ActivityID)
}

// enterInitial enters the initial state with the start's input.
func (m *Machine) enterInitial(ctx context.Context, call *engine.Call) (map[string]any, error) {
	input, err := inputOf(call)
	if err != nil {
		return nil, err
	}
	sc := m.context(call, m.def.Initial, input)
	return m.enter(ctx, call, sc, "")
}

// resumeState resumes the state whose work item is being completed and
// enters the state its Resume returns.
func (m *Machine) resumeState(ctx context.Context, call *engine.Call) (map[string]any, error) {
	cur, ok := m.states[call.ActivityID]
	if !ok || cur.Resume == nil {
		return nil, fmt.Errorf("state machine %s: the machine's code has no state %s to resume", m.def.ID, call.ActivityID)
	}
	input, err := inputOf(call)
	if err != nil {
		return nil, err
	}
	b, err := m.resumedBookmark(ctx, call)
	if err != nil {
		return nil, err
	}
	sc := m.context(call, cur.Name, input)
	next, err := cur.Resume(ctx, sc, b, input)
	if err != nil {
		return nil, err
	}
	if _, ok := m.states[next]; !ok || !inVersion(call, next) {
		return nil, &UnknownStateError{Machine: m.def.ID, From: cur.Name, State: next}
	}
	entering := m.context(call, next, input)
	entering.vars, entering.changed = sc.Vars(), maps.Clone(sc.changed)
	return m.enter(ctx, call, entering, cur.Name)
}

// enter runs the Enter of sc.State and returns the variables the move
// sets: the machine's variables Enter and Resume set, the state, and who
// the state's work item is offered to.
func (m *Machine) enter(ctx context.Context, call *engine.Call, sc *StateContext, from string) (map[string]any, error) {
	st, ok := m.states[sc.State]
	if !ok || !inVersion(call, sc.State) {
		return nil, &UnknownStateError{Machine: m.def.ID, From: from, State: sc.State}
	}
	sc.From = from
	sc.performers = slices.Clone(st.Performers)
	if st.Enter != nil {
		if err := st.Enter(ctx, sc); err != nil {
			return nil, err
		}
	}
	out := make(map[string]any, len(sc.changed)+3)
	for _, n := range slices.Sorted(maps.Keys(sc.changed)) {
		if !m.vars[n] {
			return nil, fmt.Errorf("%w: state machine %s, state %s: %q is not a variable of the machine (Definition.Vars)",
				engine.ErrUnknownVariable, m.def.ID, sc.State, n)
		}
		out[n] = sc.changed[n]
	}
	performers := make([]any, len(sc.performers))
	for i, p := range sc.performers {
		performers[i] = p
	}
	out[varState], out[varInput], out[varPerformers] = sc.State, nil, performers
	return out, nil
}

// context makes the StateContext of a call for state.
func (m *Machine) context(call *engine.Call, state string, input map[string]any) *StateContext {
	vars := make(map[string]any, len(m.vars))
	for n := range m.vars {
		vars[n] = call.Params[n]
	}
	return &StateContext{
		Machine: m.def.ID, Instance: call.ProcessInstanceID, State: state, Input: input, Tx: call.Tx, vars: vars,
	}
}

// resumedBookmark is the bookmark of the work item being completed: the
// open item of the calling activity instance.
func (m *Machine) resumedBookmark(ctx context.Context, call *engine.Call) (Bookmark, error) {
	st, err := gormstore.New(call.Tx)
	if err != nil {
		return Bookmark{}, err
	}
	items, err := st.ListWorkItems(ctx, store.ListWorkItemsParams{ActivityInstanceID: call.ActivityInstanceID, States: openStates, Limit: 1})
	if err != nil {
		return Bookmark{}, err
	}
	if len(items) == 0 {
		return Bookmark{}, fmt.Errorf("state machine %s: activity instance %d of state %s has no open work item",
			m.def.ID, call.ActivityInstanceID, call.ActivityID)
	}
	return m.bookmark(items[0]), nil
}

// inputOf reads the input the variable _input carries, as normalInput
// gives it; an empty map for none.
func inputOf(call *engine.Call) (map[string]any, error) {
	v := call.Params[varInput]
	if v == nil {
		return map[string]any{}, nil
	}
	obj, ok := v.(map[string]any)
	if !ok {
		return nil, fmt.Errorf("%w: the input is %T, not a JSON object", engine.ErrBadArgument, v)
	}
	input, err := normalInput(obj)
	if err != nil || input == nil {
		return map[string]any{}, err
	}
	return input, nil
}

// inVersion reports whether the version the instance runs has state
// (its variable _states lists them): its routes lead only there.
func inVersion(call *engine.Call, state string) bool {
	names, _ := call.Params[varStates].(string)
	return slices.Contains(strings.Fields(names), state)
}
