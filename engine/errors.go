package engine

import (
	"errors"
	"fmt"
	"strconv"
	"unicode/utf8"

	"github.com/goxpdl/goxpdl/store"
	"github.com/goxpdl/goxpdl/wftype"
)

// Sentinel errors of the engine's API; match them with errors.Is. State
// refusals (a second Resume, a command on a finished instance) are
// *wftype.StateError values matching wftype.ErrIllegalState and
// wftype.ErrInstanceFinished, re-exported here.
var (
	// ErrNotFound: no process instance, activity instance, work item,
	// definition or process has the given id.
	ErrNotFound = wftype.ErrNotFound
	// ErrIllegalState: the command is not accepted in the current state.
	ErrIllegalState = wftype.ErrIllegalState
	// ErrInstanceFinished: the process instance is Completed, Terminated or
	// Locking.
	ErrInstanceFinished = wftype.ErrInstanceFinished
	// ErrUnknownVariable: a value was given for a name that is not a data
	// field or formal parameter of the process.
	ErrUnknownVariable = errors.New("unknown variable")
	// ErrWrongType: a value does not fit the declared type of its data
	// field or parameter.
	ErrWrongType = errors.New("value of the wrong type")
	// ErrNotRunning: the engine was not started, or is stopping.
	ErrNotRunning = errors.New("engine is not running")
	// ErrConfig: the Config is unusable (engine.New, Retention, an
	// Observer that cannot be registered).
	ErrConfig = errors.New("invalid engine configuration")
	// ErrBadArgument: an argument of a command is unusable: a business
	// key longer than its column or text that is not valid UTF-8 (a
	// *TextError), a lock without a business key or with an unknown
	// scope, a signal or message without its name or id, Op.Data that
	// does not encode as JSON, a work item reassigned to nobody. Nothing
	// was changed.
	ErrBadArgument = errors.New("invalid argument")
	// ErrBadTimer: a deployment's timer start event has a TimeDate or
	// TimeCycle that cannot be worked out; the deployment is refused.
	ErrBadTimer = errors.New("timer cannot be worked out")
	// ErrKeyReused: a StartOptions.IdempotencyKey already started an
	// instance of another package or process.
	ErrKeyReused = errors.New("idempotency key already used for another process")
	// ErrEmptyProcess: the process to start has no activities, so an
	// instance could never do anything (an *EmptyProcessError).
	ErrEmptyProcess = errors.New("process has no activities")
	// ErrConflict: the instance changed while a command was applied
	// (another operator, the engine's own progress) more often than the
	// command retries; nothing was changed, and the command may be given
	// again.
	ErrConflict = store.ErrConflict
	// ErrCannotSkip: an Abnormal activity cannot be skipped because it
	// cannot be routed on (a transition condition fails with the values
	// given); nothing was changed.
	ErrCannotSkip = errors.New("activity cannot be skipped")
	// ErrWrongInstance: an activity instance named in a command belongs
	// to another process instance than the one named.
	ErrWrongInstance = errors.New("activity instance belongs to another process instance")
	// ErrLocked: a start's business key is locked by another instance
	// (StartOptions.Lock); returned as a *LockedError naming the holder.
	// Nothing was created.
	ErrLocked = errors.New("business key is locked")
	// ErrTooLarge: a value is larger than MaxValueBytes, or the values one
	// command gives are together (a *VariableError); nothing was changed.
	ErrTooLarge = errors.New("value too large")
	// ErrSubflowDepth: a SubFlow activity would start its child deeper
	// than Config.MaxSubflowDepth (a *SubflowDepthError); the activity
	// goes Abnormal and no child is created.
	ErrSubflowDepth = errors.New("subflow depth limit exceeded")
)

// SubflowDepthError is why a SubFlow activity did not start its child:
// the child would nest deeper than Config.MaxSubflowDepth, as a process
// that calls itself (directly or through others) without end does. Its
// text is the error of the activity's incident. It matches
// ErrSubflowDepth.
type SubflowDepthError struct {
	// Activity is the SubFlow activity's id; Process the process it
	// calls.
	Activity, Process string
	// Depth is the depth the child would have (its top-level instance
	// is at 0); Max is Config.MaxSubflowDepth.
	Depth, Max int
}

func (e *SubflowDepthError) Error() string {
	return fmt.Sprintf("%v: activity %s would start process %s at depth %d, more than Config.MaxSubflowDepth (%d)",
		ErrSubflowDepth, e.Activity, e.Process, e.Depth, e.Max)
}

// Is matches ErrSubflowDepth.
func (e *SubflowDepthError) Is(target error) bool { return target == ErrSubflowDepth }

// EmptyProcessError refuses to start a process without activities: an
// instance of it would complete at once having done nothing, which is
// almost always a mistake in the definition (the validator warns about it
// with the same words, code "empty-process"). It matches ErrEmptyProcess.
type EmptyProcessError struct {
	// Process is the WorkflowProcess id.
	Process string
}

func (e *EmptyProcessError) Error() string {
	return fmt.Sprintf("process %q has no activities and cannot run", e.Process)
}

// Is matches ErrEmptyProcess.
func (e *EmptyProcessError) Is(target error) bool { return target == ErrEmptyProcess }

// VariableError says which variable a value was refused for. It matches
// ErrWrongType, ErrUnknownVariable or ErrTooLarge.
type VariableError struct {
	// Name is the variable.
	Name string
	// Want describes the declared type ("" for an unknown variable).
	Want string
	// Value is the refused value.
	Value any
	kind  error
}

func (e *VariableError) Error() string {
	switch {
	case errors.Is(e.kind, ErrUnknownVariable):
		return fmt.Sprintf("variable %q: not a data field or formal parameter of the process", e.Name)
	case errors.Is(e.kind, ErrTooLarge):
		return fmt.Sprintf("variable %q: the value is larger than %d bytes", e.Name, MaxValueBytes)
	}
	return fmt.Sprintf("variable %q: %s (%T) is not a valid %s", e.Name, shortValue(e.Value), e.Value, e.Want)
}

// shortValue prints a refused value for an error message: at most 200
// bytes of it, and a string that is not valid UTF-8 quoted.
func shortValue(v any) string {
	s := fmt.Sprint(v)
	if str, ok := v.(string); ok && !utf8.ValidString(str) {
		s = strconv.Quote(str)
	}
	if len(s) > 200 {
		s = clip(s, 200) + "..."
	}
	return s
}

// Is matches the kind of refusal.
func (e *VariableError) Is(target error) bool { return target == e.kind }

// NotFoundError says what was not found. It matches ErrNotFound.
type NotFoundError struct {
	// What names the kind of thing: "process instance", "work item", ...
	What string
	// ID is the id asked for.
	ID string
}

func (e *NotFoundError) Error() string { return fmt.Sprintf("%s %s not found", e.What, e.ID) }

// Is matches ErrNotFound.
func (e *NotFoundError) Is(target error) bool { return target == ErrNotFound }

func notFound(what string, id any) error { return &NotFoundError{What: what, ID: fmt.Sprint(id)} }
