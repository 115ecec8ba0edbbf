package engine

import (
	"errors"
	"fmt"
	"maps"
	"regexp"
	"strings"

	"github.com/goxpdl/goxpdl/xpdl"
)

// AttrHook is the extended attribute with which Bonita binds a hook, a
// class of the host's code, to an event of an activity:
//
//	<ExtendedAttribute Name="hook" Value="org.example.IncrementHook">
//	  <HookEventName>automatic:onEnter</HookEventName>
//	</ExtendedAttribute>
//
// The engine calls the tool agent registered for the class
// (Engine.RegisterToolAgent, matched like a ToolAgentClass) with every
// process variable as a parameter; the values it returns are written
// back to the variables of the same names.
const AttrHook = "hook"

// The hook events the engine calls. Bonita's other task events
// (task:onReady, task:onStart, task:onSuspend, task:onResume) are read
// and not called.
const (
	// HookOnEnter: an automatic activity starts, before its
	// applications or script run. A failure is handled as an
	// application's: retryable errors roll the step back, an
	// *ApplicationException takes the exception path, any other error
	// puts the activity in Abnormal.
	HookOnEnter = "automatic:onEnter"
	// HookOnFinish: a work item of a manual activity is completed,
	// after its outputs are applied and before the activity routes. An
	// error refuses the completion and changes nothing; an
	// *ApplicationException takes the exception path.
	HookOnFinish = "task:onFinish"
)

// hookEvent reads the HookEventName of a hook extended attribute.
var hookEvent = regexp.MustCompile(`<(?:\w+:)?HookEventName>\s*([^<]*?)\s*</(?:\w+:)?HookEventName>`)

// hooks returns the hook classes of activity def bound to event, in
// document order.
func hooks(def *xpdl.Activity, event string) []string {
	var classes []string
	for _, ea := range def.ExtendedAttributes {
		if ea.Name != AttrHook || strings.TrimSpace(ea.Value) == "" {
			continue
		}
		if m := hookEvent.FindStringSubmatch(ea.Content); m != nil && m[1] == event {
			classes = append(classes, strings.TrimSpace(ea.Value))
		}
	}
	return classes
}

// callHooks calls the hooks of activity a bound to event, in order,
// inside this transaction. It returns the name of an XPDL exception a
// hook raised, or an error.
func (r *run) callHooks(a *act, event string) (exception string, err error) {
	classes := hooks(a.def, event)
	if len(classes) == 0 {
		return "", nil
	}
	for i, class := range classes {
		b, ok := r.e.resolveAgent(class)
		if !ok {
			return "", fmt.Errorf("hook %s of activity %s: %w", class, a.def.ID, ErrNoApplication)
		}
		vars, err := r.variables()
		if err != nil {
			return "", err
		}
		tx, err := r.hostTx()
		if err != nil {
			return "", err
		}
		call := &Call{
			Tx: tx, ToolAgentClass: class, Hook: event, Params: maps.Clone(vars),
			ExtendedAttributes: a.def.ExtendedAttributes,
			IdempotencyKey:     fmt.Sprintf("%d/%d/%d/%s/%d", r.pi.ID, a.row.ID, a.row.Attempt, event, i),
			ProcessInstanceID:  r.pi.ID, ActivityInstanceID: a.row.ID, ActivityID: a.def.ID,
		}
		out, err := r.call(b.fn, call)
		if err != nil {
			if exc, ok := errors.AsType[*ApplicationException](err); ok {
				return exc.Name, nil
			}
			return "", r.callError(a, "", nil, b, fmt.Errorf("hook %s of activity %s: %w", class, a.def.ID, err))
		}
		for name, v := range out {
			if err := r.setVariable(name, v); err != nil {
				return "", fmt.Errorf("hook %s of activity %s: %w", class, a.def.ID, err)
			}
		}
	}
	return "", nil
}
