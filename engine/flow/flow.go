// Package flow is the engine's navigator: given the process model and what
// has happened so far, it decides which transitions fire when an activity
// completes, when a join is ready to start its activity, and when a flow
// (a process's top level, or one run of an ActivitySet) has finished or
// can never move again.
//
// It is pure (DESIGN.md §1): no database, clock or goroutine. Conditions
// are decided by a caller-supplied Evaluator; the arrivals waiting at joins
// are a Tokens value the caller persists with the process instance.
//
// Join semantics:
//   - XOR (and an activity with one incoming transition): every arrival
//     starts the activity, which is what makes loops work.
//   - AND: the activity starts when every incoming transition has
//     delivered; arrivals are counted per transition, so loops through an
//     AND-join work too. EXCEPTION transitions are not waited for.
//   - OR (and Complex): the activity starts when at least one incoming
//     transition has delivered and no transition still missing can be
//     reached any more from anything alive in the flow: an activity
//     instance that has not finished, or another join holding arrivals.
//     Paths that died (a split that did not choose them) are thereby
//     eliminated rather than waited for.
//
// A branch whose split chooses no transition simply ends (implicit
// termination, workflow pattern 11); the flow is Done when nothing is
// alive and nothing waits at a join, and Locked when arrivals wait at a
// join that can never fire.
package flow

import (
	"encoding/json"
	"fmt"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/goxpdl/goxpdl/xpdl"
)

// Evaluator decides the condition of a transition. It is called only for
// transitions whose condition is a rule (xpdl.Condition.IsRule).
type Evaluator func(t *xpdl.Transition) (bool, error)

// Outgoing returns the transitions leaving activity a in flow f in the
// order a split considers them: the order of the split's TransitionRefs
// when it lists them, then document order.
func Outgoing(f *xpdl.Flow, a *xpdl.Activity) []*xpdl.Transition {
	outs := f.Outgoing(a.ID)
	refs := a.Split.TransitionRefs
	if len(refs) == 0 || len(outs) < 2 {
		return outs
	}
	rank := make(map[string]int, len(refs))
	for i, id := range refs {
		if _, ok := rank[id]; !ok {
			rank[id] = i
		}
	}
	sorted := slices.Clone(outs)
	sort.SliceStable(sorted, func(i, j int) bool {
		ri, iok := rank[sorted[i].ID]
		rj, jok := rank[sorted[j].ID]
		switch {
		case iok && jok:
			return ri < rj
		default:
			return iok && !jok
		}
	})
	return sorted
}

// Choose returns the transitions that fire when activity a of flow f
// completes normally. An XOR split takes the first transition whose
// condition holds (an unconditional transition holds), else its first
// OTHERWISE transition. AND and OR splits take every transition whose
// condition holds, or the OTHERWISE transitions when none does. EXCEPTION
// and DEFAULTEXCEPTION transitions never fire here (see ChooseException).
// An empty result means no successor can fire; an error is the
// Evaluator's.
func Choose(f *xpdl.Flow, a *xpdl.Activity, eval Evaluator) ([]*xpdl.Transition, error) {
	var fired, otherwise []*xpdl.Transition
	xor := a.Split.Type == xpdl.GatewayXOR
	for _, t := range Outgoing(f, a) {
		switch conditionType(t) {
		case xpdl.ConditionOtherwise:
			otherwise = append(otherwise, t)
			continue
		case xpdl.ConditionException, xpdl.ConditionDefaultException:
			continue
		}
		ok := true
		if t.Condition.IsRule() {
			var err error
			if ok, err = eval(t); err != nil {
				return nil, fmt.Errorf("condition of transition %s: %w", t.ID, err)
			}
		}
		if !ok {
			continue
		}
		if xor {
			return []*xpdl.Transition{t}, nil
		}
		fired = append(fired, t)
	}
	if len(fired) > 0 {
		return fired, nil
	}
	if xor && len(otherwise) > 1 {
		otherwise = otherwise[:1]
	}
	return otherwise, nil
}

// ChooseException returns the transitions that fire when activity a of
// flow f fails with the named exception: its EXCEPTION transitions whose
// expression names the exception, else its DEFAULTEXCEPTION transitions.
// An empty result means the failure is not handled by the model.
func ChooseException(f *xpdl.Flow, a *xpdl.Activity, name string) []*xpdl.Transition {
	var named, dflt []*xpdl.Transition
	for _, t := range Outgoing(f, a) {
		switch conditionType(t) {
		case xpdl.ConditionException:
			if name != "" && exceptionName(t.Condition.Expression.Text) == name {
				named = append(named, t)
			}
		case xpdl.ConditionDefaultException:
			dflt = append(dflt, t)
		}
	}
	if len(named) > 0 {
		return named
	}
	return dflt
}

// exceptionName reads the exception an EXCEPTION transition catches, as
// real files write it: a bare name, or a quoted one.
func exceptionName(expr string) string {
	return strings.Trim(strings.TrimSpace(expr), `"'`)
}

func conditionType(t *xpdl.Transition) xpdl.ConditionType {
	if t.Condition == nil || t.Condition.Type == "" {
		return xpdl.ConditionCondition
	}
	return t.Condition.Type
}

// Scope is one running flow: the top level of a process (Block 0) or one
// run of an ActivitySet, identified by the activity instance of the block
// activity that runs it.
type Scope struct {
	// Flow is the process's flow or the ActivitySet's.
	Flow *xpdl.Flow
	// Block is the block activity instance running the set; 0 for the
	// process's top level.
	Block int64
}

func (sc Scope) key(activityID string) string {
	return strconv.FormatInt(sc.Block, 10) + "/" + activityID
}

func (sc Scope) owns(key string) bool {
	prefix := strconv.FormatInt(sc.Block, 10) + "/"
	return strings.HasPrefix(key, prefix)
}

func activityOf(key string) string {
	_, id, _ := strings.Cut(key, "/")
	return id
}

// Tokens is the navigation state of one process instance that activity
// instances do not already record: the arrivals waiting at AND and OR
// joins, and the activities that completed without any successor firing.
// The zero value is empty and ready to use. It is persisted with the
// process instance (Encode, Decode).
type Tokens struct {
	// Joins maps a join ("block/activity") to the arrivals waiting there,
	// counted per incoming transition id.
	Joins map[string]map[string]int `json:"joins,omitempty"`
	// DeadEnds lists the activities ("block/activity") that completed
	// while none of their outgoing transitions could fire.
	DeadEnds []string `json:"deadEnds,omitempty"`
}

// Decode reads tokens written by Encode; nil or empty data is no tokens.
func Decode(data []byte) (*Tokens, error) {
	t := &Tokens{}
	if len(data) == 0 {
		return t, nil
	}
	if err := json.Unmarshal(data, t); err != nil {
		return nil, fmt.Errorf("flow: decode tokens: %w", err)
	}
	return t, nil
}

// Encode writes the tokens for persisting; nil when there are none.
func (tk *Tokens) Encode() []byte {
	if tk.Empty() {
		return nil
	}
	data, err := json.Marshal(tk)
	if err != nil {
		panic(fmt.Sprintf("flow: encode tokens: %v", err)) // maps of strings and ints always encode
	}
	return data
}

// Empty reports whether nothing waits anywhere.
func (tk *Tokens) Empty() bool { return len(tk.Joins) == 0 && len(tk.DeadEnds) == 0 }

// Arrive records that transition t of scope sc fired and reports whether
// its target activity starts now. XOR-joins start on every arrival; an
// AND-join starts when every incoming transition has delivered, consuming
// one arrival from each; an OR-join only collects the arrival (Settle
// decides when it starts).
func (tk *Tokens) Arrive(sc Scope, t *xpdl.Transition) bool {
	target := sc.Flow.Activity(t.To)
	if target == nil {
		return false
	}
	inputs := joinInputs(sc.Flow, target)
	switch target.Join.Type {
	case xpdl.GatewayAND:
		if len(inputs) <= 1 {
			return true
		}
		waiting := tk.add(sc.key(target.ID), t.ID)
		for _, in := range inputs {
			if waiting[in.ID] == 0 {
				return false
			}
		}
		tk.consume(sc.key(target.ID), inputs)
		return true
	case xpdl.GatewayOR, xpdl.GatewayComplex:
		if len(inputs) <= 1 {
			return true
		}
		tk.add(sc.key(target.ID), t.ID)
		return false
	default:
		return true
	}
}

// DeadEnd records that activity a of scope sc completed and none of its
// outgoing transitions could fire. Settle names dead ends in the
// diagnosis of a deadlock, as the branches a join lost.
func (tk *Tokens) DeadEnd(sc Scope, a *xpdl.Activity) {
	tk.DeadEnds = append(tk.DeadEnds, sc.key(a.ID))
}

// joinInputs are the incoming transitions a join waits for: all but the
// exception paths.
func joinInputs(f *xpdl.Flow, a *xpdl.Activity) []*xpdl.Transition {
	in := f.Incoming(a.ID)
	out := in[:0:0]
	for _, t := range in {
		if ct := conditionType(t); ct != xpdl.ConditionException && ct != xpdl.ConditionDefaultException {
			out = append(out, t)
		}
	}
	return out
}

func (tk *Tokens) add(key, transition string) map[string]int {
	if tk.Joins == nil {
		tk.Joins = make(map[string]map[string]int)
	}
	w := tk.Joins[key]
	if w == nil {
		w = make(map[string]int)
		tk.Joins[key] = w
	}
	w[transition]++
	return w
}

// consume takes one arrival from each of the given transitions of a join
// (those that have one).
func (tk *Tokens) consume(key string, inputs []*xpdl.Transition) {
	w := tk.Joins[key]
	for _, in := range inputs {
		if w[in.ID] > 0 {
			w[in.ID]--
			if w[in.ID] == 0 {
				delete(w, in.ID)
			}
		}
	}
	if len(w) == 0 {
		delete(tk.Joins, key)
	}
}

// Outcome says where a flow stands after Settle.
type Outcome int

const (
	// Busy: something in the flow is alive or starting.
	Busy Outcome = iota
	// Done: nothing is alive and nothing waits; the flow has finished.
	Done
	// Locked: nothing is alive, but arrivals wait at a join that can never
	// fire: a deadlock.
	Locked
)

// Settle is called after the activities of scope sc changed. live holds
// the activity ids of the scope's activity instances that have not
// finished. It starts every OR-join that can no longer receive another
// arrival (returning their activity ids, in a stable order, with their
// arrivals consumed), and reports the flow's outcome; for Locked, a
// diagnosis naming the joins that can never fire, the transitions they
// still wait for, and the branches that ended without a successor (dead
// ends). Dead ends alone do not lock a flow: a branch whose split chose
// no transition ends there (implicit termination), and the flow is Done
// once nothing else is alive and nothing waits.
func (tk *Tokens) Settle(sc Scope, live []string) (starts []string, outcome Outcome, diagnosis string) {
	alive := make(map[string]bool, len(live))
	for _, id := range live {
		alive[id] = true
	}
	for {
		started := ""
		for _, key := range tk.scopeJoins(sc) {
			j := sc.Flow.Activity(activityOf(key))
			if j == nil || (j.Join.Type != xpdl.GatewayOR && j.Join.Type != xpdl.GatewayComplex) {
				continue
			}
			if tk.orJoinReady(sc, j, alive) {
				tk.consume(key, joinInputs(sc.Flow, j))
				started = j.ID
				break
			}
		}
		if started == "" {
			break
		}
		starts = append(starts, started)
		alive[started] = true
	}
	if len(alive) > 0 {
		return starts, Busy, ""
	}
	waiting := tk.scopeJoins(sc)
	var dead []string
	for _, key := range tk.DeadEnds {
		if sc.owns(key) {
			dead = append(dead, activityOf(key))
		}
	}
	if len(waiting) == 0 {
		// Branches that ended without a successor terminated
		// implicitly (workflow pattern 11): nothing waits for them.
		return nil, Done, ""
	}
	return nil, Locked, tk.diagnose(sc, waiting, dead)
}

// Clear forgets everything recorded for scope sc (its run ended).
func (tk *Tokens) Clear(sc Scope) {
	for key := range tk.Joins {
		if sc.owns(key) {
			delete(tk.Joins, key)
		}
	}
	tk.DeadEnds = slices.DeleteFunc(tk.DeadEnds, sc.owns)
}

func (tk *Tokens) scopeJoins(sc Scope) []string {
	var keys []string
	for key := range tk.Joins {
		if sc.owns(key) {
			keys = append(keys, key)
		}
	}
	sort.Strings(keys)
	return keys
}

// orJoinReady reports whether OR-join j has an arrival and none of its
// missing inputs can still be reached: from a live activity, or from
// another join that holds arrivals, along transitions that do not pass
// through j.
func (tk *Tokens) orJoinReady(sc Scope, j *xpdl.Activity, alive map[string]bool) bool {
	waiting := tk.Joins[sc.key(j.ID)]
	if len(waiting) == 0 {
		return false
	}
	missing := make(map[string]bool)
	for _, in := range joinInputs(sc.Flow, j) {
		if waiting[in.ID] == 0 {
			missing[in.From] = true
		}
	}
	if len(missing) == 0 {
		return true
	}
	var frontier []string
	seen := make(map[string]bool)
	push := func(id string) {
		if !seen[id] {
			seen[id] = true
			frontier = append(frontier, id)
		}
	}
	for id := range alive {
		push(id)
	}
	for _, key := range tk.scopeJoins(sc) {
		if id := activityOf(key); id != j.ID {
			push(id)
		}
	}
	for len(frontier) > 0 {
		id := frontier[len(frontier)-1]
		frontier = frontier[:len(frontier)-1]
		if missing[id] {
			return false
		}
		for _, t := range sc.Flow.Outgoing(id) {
			if t.To != j.ID {
				push(t.To)
			}
		}
	}
	return true
}

func (tk *Tokens) diagnose(sc Scope, waiting, dead []string) string {
	var parts []string
	for _, key := range waiting {
		j := sc.Flow.Activity(activityOf(key))
		if j == nil {
			continue
		}
		var have, lack []string
		for _, in := range joinInputs(sc.Flow, j) {
			desc := fmt.Sprintf("%s from %s", in.ID, in.From)
			if tk.Joins[key][in.ID] > 0 {
				have = append(have, desc)
			} else {
				lack = append(lack, desc)
			}
		}
		parts = append(parts, fmt.Sprintf("%s-join %s can never fire: it waits for %s (arrived: %s)",
			j.Join.Type, j.ID, orNone(lack), orNone(have)))
	}
	for _, id := range dead {
		parts = append(parts, fmt.Sprintf("branch lost at %s: no successor could fire", id))
	}
	return strings.Join(parts, "; ")
}

func orNone(s []string) string {
	if len(s) == 0 {
		return "none"
	}
	return strings.Join(s, ", ")
}
