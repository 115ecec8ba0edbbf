package enginetest

import (
	"fmt"
	"slices"
	"strings"

	"github.com/goxpdl/goxpdl/engine"
	"github.com/goxpdl/goxpdl/wftype"
)

// RunUntil lets the engine run until it is quiet and returns instance id,
// which must then be in state want; otherwise the test fails at once,
// with the instance's state, activities, incidents, work items, timers
// and recent history: a quiet engine does nothing more until the test
// acts (completes a work item, moves the clock with Advance, sends a
// message). RunUntil never moves the clock.
func (h *Harness) RunUntil(id int64, want wftype.ProcessState) engine.ProcessInstance {
	h.tb.Helper()
	h.Settle()
	pi := h.Instance(id)
	if pi.State == want {
		return pi
	}
	why := "the engine is quiet: nothing more happens until the test acts"
	if pi.State.IsFinal() {
		why = "it has finished"
	}
	h.fatalf("RunUntil: instance %d is %s, not %s, and %s\n%s", id, pi.State, want, why, h.Report(id))
	return pi
}

// WaitForState waits, in lockstep with the engine, for the next time the
// activity with XPDL id activity of instance id enters state, and returns
// that activity instance as it is now. "Next" is the lockstep: each call
// looks in the instance's history only after the entry the previous
// WaitForState of the instance matched, so that a sequence of calls
// asserts the order in which things happened, and a call for a state an
// activity enters several times (a loop) matches each time once:
//
//	h.WaitForState(id, "Check", wftype.ActivityCompleted) // first round
//	h.WaitForState(id, "Check", wftype.ActivityCompleted) // second round
//
// When the engine is quiet and the history holds no such entry, the test
// fails at once, with the instance's state (as RunUntil). Activities of a
// subflow belong to the subflow's instance (Subflows).
func (h *Harness) WaitForState(id int64, activity string, state wftype.ActivityState) engine.ActivityInstance {
	h.tb.Helper()
	h.Settle()
	ctx, cancel := h.bounded()
	defer cancel()
	h.mu.Lock()
	after := h.cursor[id]
	h.mu.Unlock()
	entries, err := history(ctx, h.e, id, after)
	h.check(err, "read the history of instance %d", id)
	for _, en := range entries {
		if en.Subject == engine.SubjectActivity && en.Activity == activity && en.To == string(state) {
			h.mu.Lock()
			h.cursor[id] = en.ID
			h.matched[matchKey{id, activity, state}]++
			h.mu.Unlock()
			return h.activity(id, en.ActivityInstance)
		}
	}
	since := "in its history"
	if after != 0 {
		since = fmt.Sprintf("after history entry %d, which the previous WaitForState matched", after)
		if earlier := h.unmatched(id, after, activity, state); earlier != 0 {
			since += fmt.Sprintf(" (it did at entry %d, before that one: the order differs)", earlier)
		}
	}
	h.fatalf("WaitForState: activity %s of instance %d did not enter %s %s, and the engine is quiet\n%s", activity, id, state, since, h.Report(id))
	return engine.ActivityInstance{}
}

// unmatched returns the entry up to after in which activity entered
// state and that no WaitForState matched (the calls matched the first
// ones), or 0.
func (h *Harness) unmatched(id, after int64, activity string, state wftype.ActivityState) int64 {
	ctx, cancel := h.bounded()
	defer cancel()
	entries, err := history(ctx, h.e, id, 0)
	if err != nil {
		return 0
	}
	h.mu.Lock()
	skip := h.matched[matchKey{id, activity, state}]
	h.mu.Unlock()
	for _, en := range entries {
		if en.ID <= after && en.Subject == engine.SubjectActivity && en.Activity == activity && en.To == string(state) {
			if skip == 0 {
				return en.ID
			}
			skip--
		}
	}
	return 0
}

// matchKey counts WaitForState's matches of one activity state.
type matchKey struct {
	instance int64
	activity string
	state    wftype.ActivityState
}

// activity returns activity instance aid of instance id.
func (h *Harness) activity(id, aid int64) engine.ActivityInstance {
	h.tb.Helper()
	for _, a := range h.Activities(id) {
		if a.ID == aid {
			return a
		}
	}
	h.fatalf("activity instance %d of instance %d not found", aid, id)
	return engine.ActivityInstance{}
}

// Subflows returns the subflow instances instance id started, oldest
// first.
func (h *Harness) Subflows(id int64) []engine.ProcessInstance {
	h.tb.Helper()
	ctx, cancel := h.bounded()
	defer cancel()
	var out []engine.ProcessInstance
	f := engine.InstanceFilter{Parent: id, Limit: 1000}
	for {
		page, err := h.e.Instances(ctx, f)
		h.check(err, "read the subflows of instance %d", id)
		out = append(out, page.Instances...)
		if page.Cursor == "" {
			break
		}
		f.Cursor = page.Cursor
	}
	slices.SortFunc(out, func(a, b engine.ProcessInstance) int { return int(a.ID - b.ID) })
	return out
}

// Steps returns the history of instance id in the short form of Step,
// oldest first.
func (h *Harness) Steps(id int64) []string {
	h.tb.Helper()
	var out []string
	for _, en := range h.History(id) {
		out = append(out, Step(en))
	}
	return out
}

// AssertHistory lets the engine settle and checks that the history of
// instance id holds the steps given, in that order, each in the form of
// Step ("activity Review Completed"); other entries may come between
// them. On a mismatch the test fails with the first step not found and
// the instance's whole history.
func (h *Harness) AssertHistory(id int64, steps ...string) {
	h.tb.Helper()
	h.Settle()
	have := h.Steps(id)
	i := 0
	for _, s := range have {
		if i < len(steps) && s == steps[i] {
			i++
		}
	}
	if i == len(steps) {
		return
	}
	where := "is not in it"
	if slices.Contains(have, steps[i]) {
		where = "is in it, but not after the steps before it"
	}
	var b strings.Builder
	for n, s := range have {
		fmt.Fprintf(&b, "    %3d %s\n", n+1, s)
	}
	h.fatalf("AssertHistory: instance %d: step %d %q %s; matched %q\n  the history:\n%s%s",
		id, i+1, steps[i], where, steps[:i], b.String(), h.Report(id))
}
