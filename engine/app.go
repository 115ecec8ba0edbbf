package engine

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"strings"

	"gorm.io/gorm"

	"github.com/goxpdl/goxpdl/xpdl"
)

// ApplicationFunc is the host's code for an XPDL Application (interface
// I2). The engine calls it inside the transaction that moves the activity
// on: business writes made through call.Tx commit or roll back with the
// engine's state.
//
// It returns the values of the application's OUT and INOUT formal
// parameters by parameter id (missing ones keep their value), or an
// error: Retryable(err) to have the call made again later, an
// *ApplicationException to take the activity's EXCEPTION transition, or
// any other error, which is fatal and puts the activity in state Abnormal.
//
// Calls are at-least-once: after a crash or a retry the same call comes
// again with the same IdempotencyKey.
type ApplicationFunc func(ctx context.Context, call *Call) (map[string]any, error)

// Call is one invocation of an application.
type Call struct {
	// Tx is the engine's transaction, for the host's own writes. It is
	// valid only until the ApplicationFunc returns.
	Tx *gorm.DB
	// Application is the XPDL Application id.
	Application string
	// ToolAgentClass is the application's ToolAgentClass extended
	// attribute ("" when it has none).
	ToolAgentClass string
	// Params holds the IN and INOUT parameters by formal parameter id
	// (OUT parameters are present with their current value too, or nil).
	Params map[string]any
	// Formal lists the application's formal parameters, in order.
	Formal []*xpdl.FormalParameter
	// ExtendedAttributes are the application's extended attributes
	// followed by the tool call's (e.g. Shark's Script, ToolAgentClass).
	ExtendedAttributes xpdl.ExtendedAttributes
	// IdempotencyKey is stable across repeats of this call: process
	// instance, activity instance, attempt and tool index.
	IdempotencyKey string
	// ProcessInstanceID and ActivityInstanceID say where the call is made.
	ProcessInstanceID, ActivityInstanceID int64
	// ActivityID is the XPDL id of the calling activity.
	ActivityID string
	// Hook is the hook event (HookOnEnter, HookOnFinish) when the call is
	// a hook (AttrHook) rather than an application; Application is empty
	// then, and Params holds every process variable.
	Hook string
}

// ApplicationException is a failure the process model handles: the
// activity takes its EXCEPTION transition whose condition names the
// exception, or its DEFAULTEXCEPTION transition. With neither, the
// activity goes Abnormal.
type ApplicationException struct {
	// Name is the XPDL exception name.
	Name string
	// Err is the cause, for the audit trail; may be nil.
	Err error
}

func (e *ApplicationException) Error() string {
	if e.Err == nil {
		return "application exception " + e.Name
	}
	return fmt.Sprintf("application exception %s: %v", e.Name, e.Err)
}

// Unwrap returns the cause.
func (e *ApplicationException) Unwrap() error { return e.Err }

type retryableError struct{ err error }

func (e retryableError) Error() string { return "retryable: " + e.err.Error() }
func (e retryableError) Unwrap() error { return e.err }

// Retryable marks an application error as transient: the engine rolls the
// step back and makes the call again later (with the same idempotency
// key), instead of failing the activity.
func Retryable(err error) error {
	if err == nil {
		return nil
	}
	return retryableError{err}
}

// IsRetryable reports whether err was marked with Retryable.
func IsRetryable(err error) bool {
	var r retryableError
	return errors.As(err, &r)
}

// ErrNoApplication is the fatal error of a call to an application nothing
// is registered for, when Config.NoOpUnboundApplications is false.
var ErrNoApplication = errors.New("no application registered")

// ErrNotRetried: an application declared not retryable (extended
// attribute Retryable="false") was not called again for an activity whose
// earlier attempt may have called it (the event was delivered before: a
// crash, a failed commit); the activity goes Abnormal for an operator to
// decide.
var ErrNotRetried = errors.New("application not retried")

// AttrRetryable on an Application (or a tool call) set to "false" says its
// calls must not be repeated: after a crash or a failed commit the
// activity goes Abnormal (ErrNotRetried) instead of calling it again.
// By default calls are at least once, with a stable IdempotencyKey.
const AttrRetryable = "Retryable"

// JavaScriptToolAgentClass is the Shark tool agent whose convention the
// built-in JavaScript agent follows: the ExtendedAttribute "Script" holds
// the script, formal parameters are its variables, and OUT/INOUT
// parameters are read back after it ran. Every class whose name ends in
// "JavaScriptToolAgent" runs on it. BeanShell (BshToolAgent) scripts are
// Java and do not: bind them with RegisterToolAgent, or let them run as
// no-ops (NoOpUnboundApplications).
const JavaScriptToolAgentClass = "org.enhydra.shark.toolagent.JavaScriptToolAgent"

// RegisterApplication binds fn to the XPDL Application id. It takes
// precedence over a tool-agent binding. Options set how failing calls are
// retried (WithRetry).
func (e *Engine) RegisterApplication(id string, fn ApplicationFunc, opts ...AppOption) {
	b := binding{fn: fn}
	for _, o := range opts {
		o(&b)
	}
	e.appMu.Lock()
	defer e.appMu.Unlock()
	e.apps[id] = b
}

// RegisterToolAgent binds fn to a ToolAgentClass: every application whose
// ToolAgentClass extended attribute equals class, or ends with "."+class,
// is called through fn. Options set how failing calls are retried
// (WithRetry).
func (e *Engine) RegisterToolAgent(class string, fn ApplicationFunc, opts ...AppOption) {
	b := binding{fn: fn}
	for _, o := range opts {
		o(&b)
	}
	e.appMu.Lock()
	defer e.appMu.Unlock()
	e.agents[class] = b
}

// resolve finds the binding of an application.
func (e *Engine) resolve(app *xpdl.Application, class string) (binding, bool) {
	e.appMu.RLock()
	b, ok := e.apps[app.ID]
	e.appMu.RUnlock()
	if ok {
		return b, true
	}
	return e.resolveAgent(class)
}

// resolveAgent finds the tool agent registered for a class (by its full
// name or its last dotted part), else the built-in JavaScript agent or,
// when configured, the no-op one.
func (e *Engine) resolveAgent(class string) (binding, bool) {
	e.appMu.RLock()
	defer e.appMu.RUnlock()
	if class != "" {
		if b, ok := e.agents[class]; ok {
			return b, true
		}
		for name, b := range e.agents {
			if strings.HasSuffix(class, "."+name) {
				return b, true
			}
		}
		if strings.HasSuffix(class, "JavaScriptToolAgent") {
			return binding{fn: e.javaScriptAgent}, true
		}
	}
	if e.cfg.NoOpUnboundApplications {
		return binding{fn: noOpApplication}, true
	}
	return binding{}, false
}

// noOpApplication returns nothing: OUT parameters keep their values.
func noOpApplication(context.Context, *Call) (map[string]any, error) { return nil, nil }

// javaScriptAgent runs the Script extended attribute with the formal
// parameters as variables.
func (e *Engine) javaScriptAgent(ctx context.Context, call *Call) (map[string]any, error) {
	src, ok := call.ExtendedAttributes.Get("Script")
	if !ok {
		for _, ea := range call.ExtendedAttributes {
			if ea.Name == "Script" {
				src = ea.Content
			}
		}
	}
	if strings.TrimSpace(src) == "" {
		return nil, fmt.Errorf("application %s: JavaScript tool agent without a Script extended attribute", call.Application)
	}
	return e.runScript(ctx, call, src)
}

// RegisterScriptAgent binds a ToolAgentClass (as RegisterToolAgent does)
// to a JavaScript body: the call's parameters are its variables, and
// what it assigns to them is handed back, the OUT and INOUT parameters
// of an application with formal parameters, and for a hook (which gets
// every variable of the instance) the variables whose values it changed.
// An empty body does nothing. It is how a host or the CLI ("goxpdl run
// --hook CLASS=JS") plays a vendor's Java class without writing Go.
func (e *Engine) RegisterScriptAgent(class, src string) {
	e.RegisterToolAgent(class, func(ctx context.Context, call *Call) (map[string]any, error) {
		if strings.TrimSpace(src) == "" {
			return nil, nil
		}
		return e.runScript(ctx, call, src)
	})
}

// runScript runs src with the call's parameters as variables and returns
// what the call hands back: see RegisterScriptAgent.
func (e *Engine) runScript(ctx context.Context, call *Call, src string) (map[string]any, error) {
	ctx, cancel := context.WithTimeout(ctx, e.cfg.ScriptTimeout)
	defer cancel()
	out, err := e.eval.Exec(ctx, src, call.Params)
	if err != nil {
		return nil, fmt.Errorf("application %s: %w", cmp.Or(call.Application, call.Hook), e.scriptLimit(err))
	}
	res := make(map[string]any)
	if len(call.Formal) == 0 {
		// A hook's parameters have no declared types here: its changes
		// are found as JSON values (the variables' types check them when
		// they are set).
		for name, v := range out {
			if !sameJSON(v, call.Params[name]) {
				res[name] = v
			}
		}
		return res, nil
	}
	for _, fp := range call.Formal {
		if fp.Mode == xpdl.ModeOut || fp.Mode == xpdl.ModeInOut {
			res[fp.ID] = out[fp.ID]
		}
	}
	return res, nil
}
