// Package flow is the engine's navigator: given the process model and what
// has happened so far, it decides which transitions fire when an activity
// completes, when a join is ready to start its activity, and when a flow
// (a process's top level, or one run of an ActivitySet) has finished or
// can never move again.
//
// It is pure (docs/architecture.md, "The state machines"): no database,
// clock or goroutine. Conditions
// are decided by a caller-supplied Evaluator; the arrivals waiting at joins
// are a Tokens value the caller persists with the process instance.
//
// Join semantics:
//   - XOR (and an activity with one incoming transition): every arrival
//     starts the activity, which is what makes loops work.
//   - AND: the activity starts when every incoming transition has
//     delivered; arrivals are counted per transition, so loops through an
//     AND-join work too. EXCEPTION transitions are not waited for.
//   - OR: the activity starts when at least one incoming transition has
//     delivered and no transition still missing can be reached any more
//     from anything alive in the flow: an activity instance that has not
//     finished, or another join holding arrivals. Paths that died (a split
//     that did not choose them) are thereby eliminated rather than waited
//     for.
//   - Complex (XPDL 2, with an IncomingCondition): the join passes the
//     thread of control on the first time its condition holds for the
//     number of inputs that have delivered, absorbs the later arrivals of
//     that round, and resets once every input has delivered. With the
//     condition "arrivals >= 1" it is the structured discriminator
//     (workflow pattern 9), with "arrivals >= N" the structured partial
//     join (pattern 30).
//
// An activity marked non-reentrant (xpdl.Activity.IsReentrant false)
// starts at most once per scope: the arrivals that would start it again
// are absorbed. When it starts, Losers names the activities whose work
// can now only lead to it, for the caller to withdraw.
//
// A completed activity that has outgoing transitions and fires none of them
// (its split's conditions all failed and it has no OTHERWISE) loses its
// branch (Lose). When nothing else is alive the flow is Locked (paper
// §2.1): the definition has a flaw. Under the Shark convention
// (Settle's lockLost false) such a branch simply ends instead, as an
// activity without outgoing transitions always does (implicit
// termination, workflow pattern 11). The flow is Done when nothing is
// alive and nothing waits at a join, and Locked when arrivals wait at a
// join that can never fire.
package flow

import (
	"encoding/json"
	"errors"
	"fmt"
	"maps"
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
// instances do not already record: the arrivals waiting at AND, OR and
// Complex joins, the activities that completed without any successor
// firing, the non-reentrant activities that have started and the Complex
// joins that have fired in their current round. The zero value is empty
// and ready to use. It is persisted with the process instance (Encode,
// Decode).
type Tokens struct {
	// Joins maps a join ("block/activity") to the arrivals waiting there,
	// counted per incoming transition id.
	Joins map[string]map[string]int `json:"joins,omitempty"`
	// DeadEnds lists the activities ("block/activity") that completed
	// while none of their outgoing transitions could fire.
	DeadEnds []string `json:"deadEnds,omitempty"`
	// Started holds the non-reentrant activities ("block/activity") that
	// have started in their scope: later arrivals there are absorbed.
	Started map[string]bool `json:"started,omitempty"`
	// Passed holds the Complex joins ("block/activity") that have passed
	// the thread of control on in their current round.
	Passed map[string]bool `json:"passed,omitempty"`
	// Lost maps the activities ("block/activity") that completed with
	// outgoing transitions none of which fired to why (the conditions
	// they evaluated): branches lost, which lock the flow once nothing
	// else is alive.
	Lost map[string]string `json:"lost,omitempty"`
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

// Empty reports whether nothing is recorded.
func (tk *Tokens) Empty() bool {
	return len(tk.Joins) == 0 && len(tk.DeadEnds) == 0 && len(tk.Started) == 0 && len(tk.Passed) == 0 && len(tk.Lost) == 0
}

// JoinCondition decides the IncomingCondition of Complex join j when
// arrived of its inputs inputs have delivered in the current round.
type JoinCondition func(j *xpdl.Activity, arrived, inputs int) (bool, error)

// JoinConditionError is a Complex join's IncomingCondition that could not
// be decided. Arrive reports it with start true: the join fires, and the
// caller puts its activity in Abnormal for an operator to look at.
type JoinConditionError struct {
	Join string
	Err  error
}

func (e *JoinConditionError) Error() string {
	return fmt.Sprintf("IncomingCondition of Complex join %s: %v", e.Join, e.Err)
}

func (e *JoinConditionError) Unwrap() error { return e.Err }

// Arrive records that transition t of scope sc fired and reports whether
// its target activity starts now. XOR-joins start on every arrival; an
// AND-join starts when every incoming transition has delivered, consuming
// one arrival from each; an OR-join only collects the arrival (Settle
// decides when it starts); a Complex join starts when cond first holds in
// a round (cond may be nil when the flow has no Complex join). An
// arrival at a non-reentrant activity that has started in scope sc is
// absorbed. The error is a *JoinConditionError, reported with start
// true.
func (tk *Tokens) Arrive(sc Scope, t *xpdl.Transition, cond JoinCondition) (start bool, err error) {
	target := sc.Flow.Activity(t.To)
	if target == nil {
		return false, nil
	}
	key := sc.key(target.ID)
	if !target.IsReentrant() && tk.Started[key] {
		return false, nil
	}
	inputs := joinInputs(sc.Flow, target)
	switch {
	case len(inputs) <= 1:
		start = true
	case target.Join.Type == xpdl.GatewayAND:
		waiting := tk.add(key, t.ID)
		start = arrivedAll(waiting, inputs)
		if start {
			tk.consume(key, inputs)
		}
	case target.Join.Type == xpdl.GatewayOR:
		tk.add(key, t.ID)
	case target.Join.Type == xpdl.GatewayComplex:
		start, err = tk.arriveComplex(key, target, t, inputs, cond)
	default:
		start = true
	}
	if start {
		tk.started(key, target)
	}
	return start, err
}

// arriveComplex handles an arrival at a Complex join: the condition is
// decided (with this arrival counted) until it holds once in the round,
// and the round ends when every input has delivered.
func (tk *Tokens) arriveComplex(key string, j *xpdl.Activity, t *xpdl.Transition, inputs []*xpdl.Transition, cond JoinCondition) (bool, error) {
	waiting := tk.add(key, t.ID)
	start := false
	var err error
	if !tk.Passed[key] {
		arrived := 0
		for _, in := range inputs {
			if waiting[in.ID] > 0 {
				arrived++
			}
		}
		if cond == nil {
			start, err = true, &JoinConditionError{Join: j.ID, Err: errors.New("no evaluator for Complex joins")}
		} else if start, err = cond(j, arrived, len(inputs)); err != nil {
			start, err = true, &JoinConditionError{Join: j.ID, Err: err}
		}
		if start {
			if tk.Passed == nil {
				tk.Passed = make(map[string]bool)
			}
			tk.Passed[key] = true
		}
	}
	if arrivedAll(waiting, inputs) {
		tk.consume(key, inputs)
		delete(tk.Passed, key)
	}
	return start, err
}

func arrivedAll(waiting map[string]int, inputs []*xpdl.Transition) bool {
	for _, in := range inputs {
		if waiting[in.ID] == 0 {
			return false
		}
	}
	return true
}

// started notes that activity a starts in the scope of key, when it is
// non-reentrant.
func (tk *Tokens) started(key string, a *xpdl.Activity) {
	if a.IsReentrant() {
		return
	}
	if tk.Started == nil {
		tk.Started = make(map[string]bool)
	}
	tk.Started[key] = true
}

// Losers returns the activities of flow f whose work, once non-reentrant
// activity j has started, can only lead to j and is therefore wasted: an
// activity that can reach j, all of whose outgoing transitions, and those
// of the boundary events attached to it, lead to j or to other losers.
// These are the branches that lost the race to j.
func Losers(f *xpdl.Flow, j *xpdl.Activity) map[string]bool {
	reaches := map[string]bool{j.ID: true}
	for changed := true; changed; {
		changed = false
		for _, a := range f.Activities {
			if reaches[a.ID] {
				continue
			}
			for _, t := range f.Outgoing(a.ID) {
				if reaches[t.To] {
					reaches[a.ID], changed = true, true
					break
				}
			}
		}
	}
	losers := make(map[string]bool)
	for _, a := range f.Activities {
		if a.ID != j.ID && reaches[a.ID] {
			losers[a.ID] = true
		}
	}
	attached := make(map[string][]string)
	for _, a := range f.Activities {
		if a.Event != nil && a.Event.Target != "" {
			attached[a.Event.Target] = append(attached[a.Event.Target], a.ID)
		}
	}
	for changed := true; changed; {
		changed = false
		for id := range losers {
			if !onlyLeadsTo(f, id, j.ID, losers, attached) {
				delete(losers, id)
				changed = true
			}
		}
	}
	return losers
}

func onlyLeadsTo(f *xpdl.Flow, id, j string, losers map[string]bool, attached map[string][]string) bool {
	outs := f.Outgoing(id)
	if len(outs) == 0 {
		return false
	}
	for _, t := range outs {
		if t.To != j && !losers[t.To] {
			return false
		}
	}
	for _, ev := range attached[id] {
		if !losers[ev] {
			return false
		}
	}
	return true
}

// Withdraw forgets the arrivals waiting at the given activities of scope
// sc: the caller withdrew them as losers.
func (tk *Tokens) Withdraw(sc Scope, activities map[string]bool) {
	for id := range activities {
		delete(tk.Joins, sc.key(id))
		delete(tk.Passed, sc.key(id))
	}
}

// DeadEnd records that activity a of scope sc completed and none of its
// outgoing transitions could fire. Settle names dead ends in the
// diagnosis of a deadlock, as the branches a join lost.
func (tk *Tokens) DeadEnd(sc Scope, a *xpdl.Activity) {
	tk.DeadEnds = append(tk.DeadEnds, sc.key(a.ID))
}

// Lose records that activity a of scope sc completed and none of its
// outgoing transitions fired; why says which conditions failed and on
// what values. It is a dead end too. A later loss of the same activity
// in the scope keeps the first reason.
func (tk *Tokens) Lose(sc Scope, a *xpdl.Activity, why string) {
	tk.DeadEnd(sc, a)
	key := sc.key(a.ID)
	if _, ok := tk.Lost[key]; ok {
		return
	}
	if tk.Lost == nil {
		tk.Lost = make(map[string]string)
	}
	tk.Lost[key] = why
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
// still wait for, the branches lost (Lose) with why, and the other
// branches that ended without a successor (dead ends). With lockLost, a
// lost branch locks the flow once nothing else is alive (paper §2.1);
// without it (the Shark convention) a lost branch ends there like any
// other dead end, and the flow is Done once nothing else is alive and
// nothing waits.
func (tk *Tokens) Settle(sc Scope, live []string, lockLost bool) (starts []string, outcome Outcome, diagnosis string) {
	alive := make(map[string]bool, len(live))
	for _, id := range live {
		alive[id] = true
	}
	for {
		started := ""
		for _, key := range tk.scopeJoins(sc) {
			j := sc.Flow.Activity(activityOf(key))
			if j != nil && j.Join.Type == xpdl.GatewayComplex && tk.Passed[key] && tk.orJoinReady(sc, j, alive) {
				// The round's missing inputs can no longer arrive: it is
				// over, and the join has passed already.
				delete(tk.Joins, key)
				delete(tk.Passed, key)
				continue
			}
			if j == nil || j.Join.Type != xpdl.GatewayOR {
				continue
			}
			if tk.orJoinReady(sc, j, alive) {
				tk.consume(key, joinInputs(sc.Flow, j))
				tk.started(key, j)
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
	lost := lockLost && slices.ContainsFunc(dead, func(id string) bool { _, ok := tk.Lost[sc.key(id)]; return ok })
	if len(waiting) == 0 && !lost {
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
	maps.DeleteFunc(tk.Lost, func(key string, _ string) bool { return sc.owns(key) })
	maps.DeleteFunc(tk.Started, func(key string, _ bool) bool { return sc.owns(key) })
	maps.DeleteFunc(tk.Passed, func(key string, _ bool) bool { return sc.owns(key) })
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
	said := make(map[string]bool, len(dead))
	for _, id := range dead {
		if said[id] {
			continue
		}
		said[id] = true
		if why, ok := tk.Lost[sc.key(id)]; ok && why != "" {
			parts = append(parts, fmt.Sprintf("branch lost at %s: no successor could fire: %s", id, why))
			continue
		}
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

// Forgive forgets the branches of scope sc that were lost or ended
// without a successor: an operator moved the flow on (engine Move), so
// they no longer lock it nor explain a deadlock.
func (tk *Tokens) Forgive(sc Scope) {
	tk.DeadEnds = slices.DeleteFunc(tk.DeadEnds, sc.owns)
	maps.DeleteFunc(tk.Lost, func(key string, _ string) bool { return sc.owns(key) })
}

// Restart records that activity a of scope sc was started by an
// operator rather than by an arrival: what it consumed as a join is not
// asked for, and a non-reentrant activity counts as started.
func (tk *Tokens) Restart(sc Scope, a *xpdl.Activity) {
	tk.started(sc.key(a.ID), a)
}

// Waiting reports whether an arrival of transition t waits at its target
// join in scope sc.
func (tk *Tokens) Waiting(sc Scope, t *xpdl.Transition) bool {
	return tk.Joins[sc.key(t.To)][t.ID] > 0
}

// Rename renames the activities the tokens name, in every scope, by
// rename (the instance moved to another version of its definition). The
// arrivals waiting at joins keep their transition ids.
func (tk *Tokens) Rename(rename func(activityID string) string) {
	re := func(key string) string {
		block, id, _ := strings.Cut(key, "/")
		return block + "/" + rename(id)
	}
	if len(tk.Joins) > 0 {
		joins := make(map[string]map[string]int, len(tk.Joins))
		for k, v := range tk.Joins {
			joins[re(k)] = v
		}
		tk.Joins = joins
	}
	for i, k := range tk.DeadEnds {
		tk.DeadEnds[i] = re(k)
	}
	renameKeys(&tk.Started, re)
	renameKeys(&tk.Passed, re)
	renameKeys(&tk.Lost, re)
}

// Arrivals calls fn for each transition with arrivals waiting at a join:
// the join's activity id and scope block, and the transition id.
func (tk *Tokens) Arrivals(fn func(block, join, transition string)) {
	for key, waiting := range tk.Joins {
		block, join, _ := strings.Cut(key, "/")
		for t, n := range waiting {
			if n > 0 {
				fn(block, join, t)
			}
		}
	}
}

func renameKeys[V any](m *map[string]V, re func(string) string) {
	if len(*m) == 0 {
		return
	}
	out := make(map[string]V, len(*m))
	for k, v := range *m {
		out[re(k)] = v
	}
	*m = out
}
