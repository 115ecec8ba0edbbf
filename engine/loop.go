package engine

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"strconv"
	"strings"

	"github.com/goxpdl/goxpdl/engine/flow"
	"github.com/goxpdl/goxpdl/engine/machine"
	"github.com/goxpdl/goxpdl/wftype"
	"github.com/goxpdl/goxpdl/xpdl"
)

// Looping activities (XPDL 2 Loop; docs/loops.md).
//
// A looping activity runs as one activity instance for the activity as a
// whole, the loop, and one activity instance per iteration (standard
// loop) or instance (multi-instance loop), which names the loop in
// LoopParentID and its number, from 1, in LoopIndex. The loop starts
// like a BlockActivity: it goes Waiting, arms the activity's timers, and
// creates its instances, which run the activity's body (a work item, a
// tool, a script, a subflow, an activity set) each in the usual way but
// do not route when they complete: completeInstance counts them in the
// loop's LoopState and decides what happens next. Everything is in the
// activity instance rows, written in the transaction that changes them.

// DefaultMaxLoopInstances is the default of Config.MaxLoopInstances,
// which caps the instances one looping activity runs: a multi-instance
// loop whose MI_Condition asks for more goes Abnormal when it starts,
// and a standard loop without a positive LoopMaximum whose LoopCondition
// still holds after that many iterations goes Abnormal instead of
// running on. An explicit LoopMaximum is obeyed as written.
const DefaultMaxLoopInstances = 10000

// Variables the engine shows to loop expressions and to the instances of
// a looping activity while they start (their scripts, tool parameters,
// performer expressions and subflow parameters), unless a data field of
// the same name hides them. They are read-only: a script that assigns
// one fails.
const (
	// VarLoopCounter is, in an instance's body, its number (1 for the
	// first iteration or instance); in a LoopCondition, the number of
	// iterations done so far (0 before the first).
	VarLoopCounter = "loopCounter"
	// VarNumberOfInstances is the number of instances of a
	// multi-instance loop (its MI_Condition's value).
	VarNumberOfInstances = "numberOfInstances"
	// VarNumberOfCompletedInstances counts the instances of a
	// multi-instance loop that completed, the one completing included
	// (ComplexMI_FlowCondition).
	VarNumberOfCompletedInstances = "numberOfCompletedInstances"
	// VarNumberOfActiveInstances counts the instances of a multi-instance
	// loop started and not completed (ComplexMI_FlowCondition).
	VarNumberOfActiveInstances = "numberOfActiveInstances"
)

// loopState is a loop's bookkeeping, kept in its row's LoopState.
type loopState struct {
	// N is the number of instances of a multi-instance loop.
	N int `json:"n,omitempty"`
	// Started and Completed count the instances created and completed.
	Started   int `json:"started"`
	Completed int `json:"completed"`
	// Passed: an instance has passed the flow on (MI_FlowCondition None,
	// One, Complex).
	Passed bool `json:"passed,omitempty"`
	// Votes is a countersign's count of the votes (countersign.go); nil
	// for other loops.
	Votes *tally `json:"votes,omitempty"`
}

// loopOf returns the loop the engine runs for def: a standard or
// multi-instance Loop on an activity that does work (not a route or an
// event); nil for none.
func loopOf(def *xpdl.Activity) *xpdl.Loop {
	l := def.Loop
	if l == nil || def.Kind == xpdl.ActivityRoute || def.Kind == xpdl.ActivityEvent {
		return nil
	}
	if l.Type != xpdl.LoopStandard && l.Type != xpdl.LoopMultiInstance {
		return nil
	}
	return l
}

// isLoop reports whether a is the loop of a looping activity, as opposed
// to one of its instances.
func isLoop(a *act) bool { return a.row.LoopParentID == nil && loopOf(a.def) != nil }

// isLoopInstance reports whether a is an instance (iteration) of a loop.
func isLoopInstance(a *act) bool { return a.row.LoopParentID != nil }

// sequential reports whether a multi-instance loop's MI_Ordering is
// Sequential, in any case; XPDL's default is Parallel.
func sequential(l *xpdl.Loop) bool {
	return strings.EqualFold(strings.TrimSpace(l.Ordering), "Sequential")
}

// flowCondition is a multi-instance loop's MI_FlowCondition, read in any
// case: None, One, Complex, or All (XPDL's default when absent).
func flowCondition(l *xpdl.Loop) string {
	for _, v := range []string{"None", "One", "Complex"} {
		if strings.EqualFold(strings.TrimSpace(l.Behavior), v) {
			return v
		}
	}
	return "All"
}

// testBefore reports whether a standard loop tests its condition before
// the first iteration (TestTime Before: a while loop); XPDL's default is
// After (do-while).
func testBefore(l *xpdl.Loop) bool { return strings.EqualFold(strings.TrimSpace(l.TestTime), "Before") }

// loopMaximum is a standard loop's LoopMaximum; 0 for none (absent, 0,
// or not a number, which the validator rejects).
func loopMaximum(l *xpdl.Loop) int {
	n, err := strconv.Atoi(strings.TrimSpace(l.Maximum))
	if err != nil || n < 0 {
		return 0
	}
	return n
}

// loopStateOf reads a loop's bookkeeping.
func loopStateOf(a *act) (loopState, error) {
	var st loopState
	if len(a.row.LoopState) == 0 {
		return st, nil
	}
	if err := json.Unmarshal(a.row.LoopState, &st); err != nil {
		return st, fmt.Errorf("activity instance %d: loop state: %w", a.row.ID, err)
	}
	return st, nil
}

// saveLoop keeps a loop's bookkeeping for flush.
func saveLoop(a *act, st loopState) {
	a.row.LoopState = mustJSON(st)
	a.dirty = true
}

// startLoop starts the loop of a looping activity (startWaiting calls it,
// having planned the activity's timers): a standard loop testing before
// whose condition does not hold, and a multi-instance loop of no
// instances, complete at once and route; otherwise the loop waits and
// creates its first instance, or all of them for a parallel
// multi-instance loop.
func (r *run) startLoop(a *act) error {
	l := loopOf(a.def)
	if err := r.setActivity(a, machine.ActivityStart, ""); err != nil {
		return err
	}
	var st loopState
	if l.Type == xpdl.LoopMultiInstance {
		n, err := r.instanceCount(a)
		if err != nil {
			return r.loopFailed(a, err)
		}
		st.N = n
		decided, err := r.countersignAtStart(a, &st)
		if err != nil {
			return r.loopFailed(a, err)
		}
		if decided || n == 0 {
			return r.complete(a, "")
		}
	} else if testBefore(l) {
		again, err := r.loopAgain(a, st)
		if err != nil {
			return r.loopFailed(a, err)
		}
		if !again {
			return r.complete(a, "")
		}
	}
	if err := r.setActivity(a, machine.ActivityWait, ""); err != nil {
		return err
	}
	n := 1
	if l.Type == xpdl.LoopMultiInstance && !sequential(l) {
		n = st.N
	}
	for range n {
		if err := r.newInstance(a, &st); err != nil {
			return err
		}
	}
	saveLoop(a, st)
	return nil
}

// loopFailed puts a loop Abnormal for an expression that could not be
// evaluated; a database error rolls the step back instead.
func (r *run) loopFailed(a *act, err error) error {
	if isStoreError(err) {
		return err
	}
	return r.fail(a, err.Error())
}

// newInstance creates and schedules the next instance of loop.
func (r *run) newInstance(loop *act, st *loopState) error {
	inst, err := r.createActivity(loop.scope, loop.def, false)
	if err != nil {
		return err
	}
	st.Started++
	parent := loop.row.ID
	inst.row.LoopParentID, inst.row.LoopIndex = &parent, st.Started
	r.scheduleStart(inst)
	return nil
}

// instanceCount evaluates a multi-instance loop's MI_Condition: the
// number of instances, as an integer literal, a variable or JavaScript
// over the variables.
func (r *run) instanceCount(a *act) (int, error) {
	expr := a.def.Loop.MICondition
	v, err := r.expression(expr)
	if err != nil {
		return 0, fmt.Errorf("MI_Condition of activity %s: %w", a.def.ID, err)
	}
	f, ok := number(v)
	if s, isString := v.(string); isString {
		n, perr := strconv.Atoi(strings.TrimSpace(s))
		f, ok = float64(n), perr == nil
	}
	switch {
	case !ok || math.IsNaN(f) || f != math.Trunc(f) || f < 0:
		return 0, fmt.Errorf("MI_Condition of activity %s: %q gives %v, not a number of instances", a.def.ID, strings.TrimSpace(expr.Text), v)
	case f > float64(r.e.cfg.MaxLoopInstances):
		return 0, fmt.Errorf("MI_Condition of activity %s: %q gives %v instances, more than the engine runs (Config.MaxLoopInstances %d)",
			a.def.ID, strings.TrimSpace(expr.Text), v, r.e.cfg.MaxLoopInstances)
	}
	return int(f), nil
}

// loopAgain decides whether a standard loop runs another iteration after
// st.Completed of them. A positive LoopMaximum caps the iterations; the
// LoopCondition decides below the cap. A loop without a condition runs
// LoopMaximum times, or once when it has no LoopMaximum either.
func (r *run) loopAgain(a *act, st loopState) (bool, error) {
	l := a.def.Loop
	maximum := loopMaximum(l)
	if maximum > 0 && st.Completed >= maximum {
		return false, nil
	}
	text := strings.TrimSpace(l.Condition.Text)
	if text == "" || l.Condition.Language() == xpdl.LanguageText {
		return maximum > 0 || st.Completed == 0, nil
	}
	again, err := r.loopCondition(text, map[string]any{VarLoopCounter: int64(st.Completed)})
	if err != nil {
		return false, fmt.Errorf("LoopCondition of activity %s: %w", a.def.ID, err)
	}
	if again && maximum == 0 && st.Completed >= r.e.cfg.MaxLoopInstances {
		return false, fmt.Errorf("activity %s: LoopCondition %q still holds after %d iterations, the cap for loops without LoopMaximum (Config.MaxLoopInstances)",
			a.def.ID, text, st.Completed)
	}
	return again, nil
}

// loopCondition evaluates a loop expression over the variables and the
// loop's own values (extra), which data fields of the same name hide.
func (r *run) loopCondition(text string, extra map[string]any) (bool, error) {
	vars, err := r.variables()
	if err != nil {
		return false, err
	}
	merged := make(map[string]any, len(vars)+len(extra))
	for k, v := range extra {
		merged[k] = v
	}
	for k, v := range vars {
		merged[k] = v
	}
	ctx, cancel := context.WithTimeout(r.ctx, r.e.cfg.ConditionTimeout)
	defer cancel()
	ok, err := r.e.eval.Condition(ctx, text, merged)
	return ok, r.e.conditionLimit(err)
}

// enterInstance makes an instance's loop variables visible while it
// starts, and keeps what it sets as its outputs (produce); leave hides
// them again. Data fields of the same name win.
func (r *run) enterInstance(a *act) (leave func(), err error) {
	vars, err := r.variables()
	if err != nil {
		return nil, err
	}
	extra := map[string]any{VarLoopCounter: int64(a.row.LoopIndex)}
	if loop := r.activity(*a.row.LoopParentID); loop != nil && loop.def.Loop.Type == xpdl.LoopMultiInstance {
		if st, err := loopStateOf(loop); err == nil {
			extra[VarNumberOfInstances] = int64(st.N)
		}
	}
	var added []string
	for name, v := range extra {
		if _, declared := r.decls[name]; declared {
			continue
		}
		vars[name] = v
		added = append(added, name)
	}
	done := r.produce(a)
	return func() {
		done()
		for _, name := range added {
			delete(r.vars, name)
		}
	}, nil
}

// completeInstance is complete's hook for the instances of a loop; it
// reports whether it handled a. An instance that passes the flow on
// (MI_FlowCondition None, the first of One, Complex when it holds) is
// routed by complete as the activity itself would be; the others
// complete without routing. Then the loop goes on: the next iteration or
// sequential instance, or, once every instance is done, the loop
// completes, routing for a standard loop and MI_FlowCondition All (and
// for Complex when its condition never held), silently when an instance
// passed the flow on already. An exception in an instance withdraws the
// others and the loop takes the exception path. Every instance keeps the
// outputs it handed back (keepInstance); an instance of a countersign
// votes instead of passing the flow on (countVote, countersign.go).
func (r *run) completeInstance(a *act, exception string) (bool, error) {
	if !isLoopInstance(a) || a.passOn {
		return false, nil
	}
	outputs := r.takeOutputs(a)
	loop := r.activity(*a.row.LoopParentID)
	if loop == nil || loop.row.State != string(wftype.ActivityWaiting) {
		// The loop finished or failed meanwhile: nothing to pass on.
		if err := r.keepInstance(a, outputs, ""); err != nil {
			return true, err
		}
		if err := r.setActivity(a, machine.ActivityComplete, ""); err != nil {
			return true, err
		}
		return true, r.settle(a.scope)
	}
	if exception != "" {
		if err := r.keepInstance(a, outputs, ""); err != nil {
			return true, err
		}
		return true, r.loopException(loop, a, exception)
	}
	st, err := loopStateOf(loop)
	if err != nil {
		return true, err
	}
	cs, err := countersignOf(loop.def)
	if cs != nil || err != nil {
		if err == nil {
			return true, r.countVote(loop, a, st, cs, outputs)
		}
		// A policy that Deploy would refuse now (checkCountersigns).
		if err := r.setActivity(a, machine.ActivityComplete, ""); err != nil {
			return true, err
		}
		return true, r.fail(loop, err.Error())
	}
	if err := r.keepInstance(a, outputs, ""); err != nil {
		return true, err
	}
	before := st
	st.Completed++
	pass, err := r.instancePasses(loop, st)
	if err != nil {
		if isStoreError(err) {
			return true, err
		}
		if err := r.setActivity(a, machine.ActivityComplete, ""); err != nil {
			return true, err
		}
		saveLoop(loop, st)
		return true, r.fail(loop, err.Error())
	}
	if !pass {
		if err := r.setActivity(a, machine.ActivityComplete, ""); err != nil {
			return true, err
		}
		return true, r.loopNext(loop, st)
	}
	st.Passed = true
	a.passOn = true
	if err := r.complete(a, ""); err != nil {
		return true, err
	}
	switch {
	case a.row.State != string(wftype.ActivityCompleted):
		// Routing failed (a condition): the instance is Abnormal and
		// does not count.
		saveLoop(loop, before)
		return true, nil
	case r.state().IsFinal():
		return true, nil // the instance reached a Terminate end event
	}
	return true, r.loopNext(loop, st)
}

// instancePasses reports whether the instance whose completion st
// counts passes the flow on.
func (r *run) instancePasses(loop *act, st loopState) (bool, error) {
	l := loopOf(loop.def)
	if l.Type != xpdl.LoopMultiInstance {
		return false, nil
	}
	switch flowCondition(l) {
	case "None":
		return true, nil
	case "One":
		return !st.Passed, nil
	case "Complex":
		if st.Passed {
			return false, nil
		}
		ok, err := r.loopCondition(strings.TrimSpace(l.FlowCondition.Text), map[string]any{
			VarNumberOfInstances:          int64(st.N),
			VarNumberOfCompletedInstances: int64(st.Completed),
			VarNumberOfActiveInstances:    int64(st.Started - st.Completed),
		})
		if err != nil {
			return false, fmt.Errorf("ComplexMI_FlowCondition of activity %s: %w", loop.def.ID, err)
		}
		return ok, nil
	}
	return false, nil
}

// loopNext moves a loop on after one of its instances completed.
func (r *run) loopNext(loop *act, st loopState) error {
	l := loopOf(loop.def)
	saveLoop(loop, st)
	if l.Type == xpdl.LoopStandard {
		again, err := r.loopAgain(loop, st)
		switch {
		case err != nil:
			return r.loopFailed(loop, err)
		case again:
			err = r.newInstance(loop, &st)
			saveLoop(loop, st)
			return err
		}
		return r.complete(loop, "")
	}
	if st.Completed < st.N {
		if sequential(l) && st.Started < st.N {
			err := r.newInstance(loop, &st)
			saveLoop(loop, st)
			return err
		}
		return nil
	}
	if !st.Passed {
		return r.complete(loop, "")
	}
	if err := r.setActivity(loop, machine.ActivityComplete, ""); err != nil {
		return err
	}
	return r.settle(loop.scope)
}

// loopException ends loop with the exception an instance raised: the
// instance completes, the other instances are withdrawn, and the loop
// takes its EXCEPTION (or DEFAULTEXCEPTION) transition. An exception the
// activity does not handle leaves the instance Abnormal, as it would an
// activity without a loop.
func (r *run) loopException(loop, a *act, exception string) error {
	if len(flow.ChooseException(loop.scope.Flow, loop.def, exception)) == 0 {
		return r.failCause(a, CauseException, fmt.Sprintf("exception %s: no EXCEPTION or DEFAULTEXCEPTION transition", exception))
	}
	if err := r.setActivity(a, machine.ActivityComplete, "exception "+exception); err != nil {
		return err
	}
	if err := r.interrupt(loop); err != nil {
		return err
	}
	return r.complete(loop, exception)
}

// interruptInstances is interrupt's hook for a loop: its open instances
// are interrupted in turn (work items withdrawn, subflows terminated)
// and completed unfinished, so that the loop itself can complete.
func (r *run) interruptInstances(a *act) error {
	if !isLoop(a) || !a.stored {
		return nil
	}
	for _, inst := range r.openInstances(a) {
		if err := r.interrupt(inst); err != nil {
			return err
		}
		markWithdrawn(inst)
		if err := r.forceComplete(inst, "withdrawn with the loop of "+a.def.ID); err != nil {
			return err
		}
	}
	return nil
}

// openInstances are the instances of loop a that have not completed.
func (r *run) openInstances(a *act) []*act {
	var out []*act
	for _, inst := range r.acts {
		if p := inst.row.LoopParentID; p != nil && *p == a.row.ID && inst.row.State != string(wftype.ActivityCompleted) {
			out = append(out, inst)
		}
	}
	return out
}
