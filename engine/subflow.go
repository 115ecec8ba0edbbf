package engine

import (
	"fmt"
	"strings"
	"time"

	"github.com/goxpdl/goxpdl/engine/flow"
	"github.com/goxpdl/goxpdl/engine/machine"
	"github.com/goxpdl/goxpdl/store"
	"github.com/goxpdl/goxpdl/wftype"
	"github.com/goxpdl/goxpdl/xpdl"
)

// DefaultMaxSubflowDepth is the default of Config.MaxSubflowDepth: how
// many levels of subflows may nest below a top-level instance. Real
// processes nest a few levels; 64 leaves room for a recursion that ends
// while a process that calls itself without end stops after 65
// instances.
const DefaultMaxSubflowDepth = 64

// firedStart is a timer start event that fired at due and creates an
// instance.
type firedStart struct {
	event *xpdl.Activity
	due   time.Time
}

// parentRef links a subflow instance to the activity waiting for it.
type parentRef struct {
	instance int64
	activity *int64 // nil for ASYNCHR: nobody waits
	// key is the key of the parent's activity (act.key), which begins
	// the keys of the child's activities (run.keyBase).
	key string
	// inline: the parent's transaction schedules the child (startSubflow)
	// rather than a process.schedule event of its own.
	inline bool
}

// createInstance creates a process instance in state Initiated with its
// variables and its start activities, and the event that schedules it.
// With a fired start event (a timer start event whose timer created the
// instance), that event is its only start activity, and it completes as
// soon as the instance is scheduled. The returned run holds the new
// instance.
func (e *Engine) createInstance(r0 *run, dep *deployment, proc *xpdl.Process, given map[string]any, parent *parentRef, fired *firedStart) (*run, error) {
	decls := declarations(dep.pkg, proc)
	vals, err := initialValues(decls, given)
	if err != nil {
		return nil, err
	}
	r := r0.spawn()
	r.dep, r.proc = dep, proc
	id, err := r.e.ids.Next(r.ctx)
	if err != nil {
		return nil, err
	}
	pi := store.ProcessInstance{
		ID: id, DefinitionID: dep.def.ID, ProcessDefID: proc.ID, State: string(wftype.ProcessInitiated),
		CreatedAt: r.now, UpdatedAt: r.now,
	}
	if parent == nil && fired == nil {
		pi.StartKey, pi.BusinessKey = r0.startKey, r0.businessKey
		r.op = r0.op // a start command's (StartOptions.Op), for its history
	}
	if parent != nil {
		pi.ParentInstanceID = &parent.instance
		pi.ParentActivityID = parent.activity
		pi.Depth = r0.pi.Depth + 1
		pi.BusinessKey = r0.pi.BusinessKey // a subflow works on its parent's business
		r.keyBase = "/" + parent.key + ">"
	}
	// Inserted at flush, as the run leaves it: nothing reads the row
	// before (the run's own reads of its children go through
	// openChildren).
	pi.Version = 1
	r.pi, r.fresh, r.storedState = pi, true, pi.State
	r.decls, r.vars, r.dirtyVars = decls, vals, make(map[string]bool, len(vals))
	for name := range vals {
		r.dirtyVars[name] = true
	}
	r.history = append(r.history, store.HistoryEntry{
		ProcessInstanceID: r.pi.ID, Subject: store.SubjectProcess, ToState: r.pi.State, Actor: r.actor, At: r.now,
		Data: r.detail(""),
	})
	sc := flow.Scope{Flow: &proc.Flow}
	starts := startActivities(&proc.Flow, "")
	var schedule payload
	if fired != nil {
		starts, schedule.Fired, schedule.Due = []*xpdl.Activity{fired.event}, fired.event.ID, fired.due
	}
	for _, def := range starts {
		if _, err := r.createActivity(sc, def, false); err != nil {
			return nil, err
		}
	}
	if parent == nil && fired == nil && r0.lock != nil {
		if err := r.takeLock(r0.lock); err != nil { // lock.go
			return nil, err
		}
		if r0.lock.queued() {
			return r, nil // Queued: no Limit and no schedule until it gets the lock
		}
	}
	if err := r.armProcessLimit(); err != nil {
		return nil, err
	}
	r.record(Record{Type: RecordProcessStarted, State: r.pi.State})
	if parent == nil || !parent.inline {
		r.emit(r.pi.ID, evSchedule, schedule, true)
	}
	return r, nil
}

// schedule moves an Initiated instance to Running and starts its first
// activities in this transaction. p.Fired names the start event whose
// timer created the instance (due at p.Due): it has happened, so it
// completes at once.
func (r *run) schedule(p payload) error {
	if r.state() != wftype.ProcessInitiated {
		return nil // already scheduled (a repeated event), or terminated first
	}
	if err := r.setProcess(machine.ProcessSchedule, ""); err != nil {
		return err
	}
	for _, a := range r.initiated() {
		if p.Fired != "" && a.def.ID == p.Fired && isTimerEvent(a.def) {
			r.due = p.Due
			if err := r.startFired(a); err != nil {
				return err
			}
			continue
		}
		if !startsOnControlPath(a.def) {
			// Its work runs the host's code (an application, a hook, a
			// script, an activity set's): on the normal pool, in a
			// transaction of its own, never on the critical path that
			// process.schedule takes.
			r.emitStart(a)
			continue
		}
		if err := r.startActivity(a); err != nil {
			return err
		}
	}
	if len(r.acts) == 0 {
		return r.settle(flow.Scope{Flow: &r.proc.Flow})
	}
	return nil
}

// startsOnControlPath reports whether an activity's start is the engine's
// own quick work (a route, an event, offering work to people, creating a
// child instance), which a critical transaction may do: nothing of the
// host's runs in it.
func startsOnControlPath(def *xpdl.Activity) bool {
	if def.Loop != nil || def.Script != nil || len(hooks(def, HookOnEnter)) > 0 {
		return false
	}
	switch {
	case IsManual(def):
		return true
	case def.Kind == xpdl.ActivityRoute, def.Kind == xpdl.ActivitySubFlow:
		return true
	case def.Kind == xpdl.ActivityEvent:
		return len(def.Tools) == 0
	}
	return false
}

// initiated lists the activities waiting to start, in creation order.
func (r *run) initiated() []*act {
	var out []*act
	for _, a := range r.acts {
		if a.row.State == string(wftype.ActivityInitiated) {
			out = append(out, a)
		}
	}
	return out
}

// subflowTarget finds the process the SubFlow of activity a calls:
// among the packages deployed with this one, then in the latest deployed
// version of a referenced package (resolveSubflow).
func (r *run) subflowTarget(a *act) (*deployment, *xpdl.Process, error) {
	return r.snap.subflowTarget(a.def)
}

// startSubflow creates the child instance. SYNCHR: the activity waits for
// it; ASYNCHR: the activity completes at once.
func (r *run) startSubflow(a *act) error {
	sf := a.def.SubFlow
	if err := r.setActivity(a, machine.ActivityStart, ""); err != nil {
		return err
	}
	dep, proc, err := r.subflowTarget(a)
	if err != nil {
		if isStoreError(err) {
			return err
		}
		return r.fail(a, err.Error())
	}
	if depth := r.pi.Depth + 1; depth > r.e.cfg.MaxSubflowDepth {
		// A recursion that does not end (issue #24): stop before the
		// child exists, whatever its Execution.
		err := &SubflowDepthError{Activity: a.def.ID, Process: proc.ID, Depth: depth, Max: r.e.cfg.MaxSubflowDepth}
		return r.failCause(a, CauseSubflow, err.Error())
	}
	in := make(map[string]any)
	for j, fp := range proc.FormalParameters {
		if j >= len(sf.ActualParameters) || fp.Mode == xpdl.ModeOut {
			continue
		}
		v, err := r.expression(sf.ActualParameters[j])
		if err != nil {
			if isStoreError(err) {
				return err
			}
			return r.fail(a, fmt.Sprintf("subflow %s: parameter %s: %v", proc.ID, fp.ID, err))
		}
		in[fp.ID] = v
	}
	synchr := sf.Execution != xpdl.ExecAsynchr
	parent := &parentRef{instance: r.pi.ID, key: a.key, inline: r.inlineStarts}
	if synchr {
		id := a.row.ID
		parent.activity = &id
	}
	child, err := r.e.createInstance(r, dep, proc, in, parent, nil)
	if err != nil {
		if isStoreError(err) {
			return err
		}
		return r.fail(a, fmt.Sprintf("subflow %s: %v", proc.ID, err))
	}
	r.children = append(r.children, child)
	if parent.inline {
		// The engine's own step schedules the child in its transaction
		// (no process.schedule of its own): its first activities that
		// are the engine's own work start here too (a route, a subflow,
		// offering work), the others get an activity.start of their own.
		// An activity of the child that fails fails there, as it would
		// in a transaction of its own (keyBase keeps its key apart).
		child.inlineStarts = true
		if err := child.schedule(payload{}); err != nil {
			return err
		}
		if err := child.drain(); err != nil {
			return err
		}
	}
	if !synchr {
		return r.complete(a, "")
	}
	return r.setActivity(a, machine.ActivityWait, "")
}

// tellParent sends the parent waiting for this instance (a SYNCHR
// subflow) the event that it ended, with how it ended.
func (r *run) tellParent() {
	r.emit(*r.pi.ParentInstanceID, evSubprocess, payload{Activity: *r.pi.ParentActivityID, Child: r.pi.ID, End: &childEnd{
		State: r.pi.State, Diagnosis: r.pi.Diagnosis, Definition: r.pi.DefinitionID, Process: r.pi.ProcessDefID,
	}}, false)
}

// subprocessEnded handles the end of a SYNCHR child: OUT and INOUT
// parameters come back and the activity completes; a child that was
// terminated or deadlocked leaves the activity Abnormal. end is how the
// child ended, as its event tells (nil: the child is read).
func (r *run) subprocessEnded(activityID, childID int64, end *childEnd) error {
	if r.state().IsFinal() {
		// The parent ended first (terminated, which terminated the
		// child in turn): its Waiting activity stays as it was.
		return nil
	}
	a := r.activity(activityID)
	if a == nil || a.row.State != string(wftype.ActivityWaiting) || a.def.SubFlow == nil {
		return nil // already handled, or the process moved on
	}
	if end == nil {
		// An event of an earlier version: the child says.
		child, err := r.snap.instance(childID)
		if err != nil {
			return err
		}
		end = &childEnd{State: child.State, Diagnosis: child.Diagnosis, Definition: child.DefinitionID, Process: child.ProcessDefID}
	}
	if end.State != string(wftype.ProcessCompleted) {
		return r.failCause(a, CauseSubflow, fmt.Sprintf("subflow instance %d ended %s: %s", childID, end.State, end.Diagnosis))
	}
	dep, err := r.snap.definition(end.Definition)
	if err != nil {
		return err
	}
	proc := dep.pkg.Process(end.Process)
	if proc == nil {
		return fmt.Errorf("subflow instance %d: process %s is not in definition %d", childID, end.Process, end.Definition)
	}
	sf := a.def.SubFlow
	defer r.produce(a)()                 // an instance of a loop keeps its OUT parameters (countersign.go)
	var stored map[string]store.Variable // read when an OUT parameter comes back
	for j, fp := range proc.FormalParameters {
		if j >= len(sf.ActualParameters) || fp.Mode == xpdl.ModeIn {
			continue
		}
		if stored == nil {
			if stored, err = r.snap.variables(childID); err != nil {
				return err
			}
		}
		sv, ok := stored[fp.ID]
		if !ok {
			continue
		}
		v, err := decodeVariable(sv)
		if err != nil {
			return err
		}
		if err := r.setVariable(strings.TrimSpace(sf.ActualParameters[j].Text), v); err != nil {
			if isStoreError(err) {
				return err
			}
			return r.fail(a, fmt.Sprintf("subflow %s: OUT parameter %s: %v", proc.ID, fp.ID, err))
		}
	}
	return r.complete(a, "")
}
