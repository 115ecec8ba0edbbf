package xpdl

import (
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
)

// RewriteKind names one of the rewrites of docs/reentrancy.md.
type RewriteKind string

// The rewrites Rewrite applies.
const (
	// RewriteLoopEntry puts a generated non-reentrant Route in front of
	// an XOR join that is both the entry of a loop and the merge of
	// several arrivals from outside it.
	RewriteLoopEntry RewriteKind = "loop-entry"
	// RewriteRace moves an AND-split/XOR-join race that lies on a loop
	// into a generated process, called by a SubFlow activity, so that
	// every pass round the loop runs a fresh race.
	RewriteRace RewriteKind = "race"
)

// RewriteStep is one rewrite that Rewrite applied, in the order applied.
type RewriteStep struct {
	Kind RewriteKind `json:"kind"`
	// Process is the id of the process rewritten (a generated one for
	// a rewrite inside an extracted race).
	Process string `json:"process"`
	// ActivitySet is the id of the activity set rewritten, or "" for the
	// process's top-level flow.
	ActivitySet string `json:"activitySet,omitempty"`
	// Activities are the ids of the activities of the input the rewrite
	// is about: for a loop entry the joining activity; for a race the
	// activities moved into the generated process, in document order.
	Activities []string `json:"activities"`
	// Transitions are the ids of the transitions it re-routed or moved,
	// in document order.
	Transitions []string `json:"transitions"`
	// Generated are the ids of what it created: for a loop entry the
	// Route activity and its transition to the joining activity; for a
	// race the SubFlow activity and the process it calls.
	Generated []string `json:"generated"`
	// Reason says in one sentence what was done and why.
	Reason string `json:"reason"`
}

// ErrRaceRegion matches every *RaceRegionError.
var ErrRaceRegion = errors.New("race region cannot be extracted")

// RaceRegionError is why Rewrite refused to move a race that lies on a
// loop into a generated process: the activities between the AND split
// and the XOR join are not a region that can only be entered at the
// split and only be left through the join.
type RaceRegionError struct {
	// File is the package's Source; Pos is the join's position.
	File string
	Pos  Pos
	// Process and ActivitySet ("" for the top-level flow) hold the race.
	Process     string
	ActivitySet string
	// Split and Join are the ids of the AND split and the XOR join.
	Split, Join string
	// Entering are the ids of the transitions that enter the region
	// other than from outside into the split (into another of its
	// activities, from the join back into it, or from inside back to
	// the split), and of the BlockActivities that start their activity
	// set inside the region but not at the split.
	Entering []string
	// Leaving are the ids of the transitions that leave the region other
	// than from the join.
	Leaving []string
}

// Error formats the refusal as FILE:LINE:COL: message.
func (e *RaceRegionError) Error() string {
	return fmt.Sprintf("%s:%d:%d: %s", e.File, e.Pos.Line, e.Pos.Col, e.message())
}

func (e *RaceRegionError) message() string {
	var b strings.Builder
	fmt.Fprintf(&b, "the race of AND split %q and non-reentrant XOR join %q lies on a loop of %s, but cannot be moved into a subprocess:",
		e.Split, e.Join, scopeName(e.Process, e.ActivitySet))
	if len(e.Entering) > 0 {
		fmt.Fprintf(&b, " %s enter%s it other than at %q", quoteList(e.Entering), plural(len(e.Entering), "s", ""), e.Split)
		if len(e.Leaving) > 0 {
			b.WriteString(";")
		}
	}
	if len(e.Leaving) > 0 {
		fmt.Fprintf(&b, " %s leave%s it other than through %q", quoteList(e.Leaving), plural(len(e.Leaving), "s", ""), e.Join)
	}
	return b.String()
}

// Is makes errors.Is(err, ErrRaceRegion) true for every *RaceRegionError.
func (e *RaceRegionError) Is(target error) bool { return target == ErrRaceRegion }

// Problem returns the refusal as an error Problem with the code
// "race-region", so that callers can report it with validation findings.
func (e *RaceRegionError) Problem() Problem {
	ids := make([]string, 0, 2+len(e.Entering)+len(e.Leaving))
	ids = append(ids, e.Join, e.Split)
	ids = append(append(ids, e.Entering...), e.Leaving...)
	return Problem{
		File: e.File, Line: e.Pos.Line, Col: e.Pos.Col, Severity: SeverityError,
		Code: "race-region", Message: e.message(), IDs: ids,
	}
}

func scopeName(process, set string) string {
	if set == "" {
		return "process " + strconv.Quote(process)
	}
	return "activity set " + strconv.Quote(set) + " of process " + strconv.Quote(process)
}

func plural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}

// Rewrite returns the package the engine runs for pkg: the two loop
// shapes of docs/reentrancy.md rewritten, and the list of rewrites
// applied.
//
//   - Loop entry: an activity with an XOR join, not marked
//     Reentrant="true", that has at least one incoming transition from
//     its own loop and two or more from outside it gets a generated Route
//     (non-reentrant, XOR join) in front that takes the transitions from
//     outside; the activity keeps its loop-back transitions. It starts
//     once for the arrivals from outside, and again on every loop-back.
//   - Race in a loop: an AND split whose branches meet in an XOR join
//     marked Reentrant="false", both on one loop, is moved with every
//     activity on a path between them into a generated process, which a
//     generated SubFlow activity (SYNCHR, every variable of the process
//     passed INOUT) calls in its place, so that each pass round the loop
//     runs a fresh race.
//
// Races are rewritten first, outermost first, then loop entries,
// including those inside the generated processes. Everything generated
// carries the extended attribute goxpdl.Generated="true".
//
// pkg is not changed. The result has processes, activities and
// transitions of its own, indexed afresh, and shares everything else with
// pkg; when no rewrite applies it is pkg itself. The rewrites and their
// order depend on the model alone. Rewrite is
// meant for a package that Validate accepts; on others it does not fail
// but may rewrite less. When a race cannot be moved, because transitions
// enter its region other than at the split or leave it other than
// through the join, the error is a *RaceRegionError, or several of them
// joined (errors.Join), one for each such race, and no package is
// returned.
func Rewrite(pkg *Package) (*Package, []RewriteStep, error) {
	rw := &rewriter{pkg: pkg, procs: make([]*Process, len(pkg.Processes))}
	for i, p := range pkg.Processes {
		rw.procs[i] = copyProcess(p)
	}
	// Generated processes are appended as races are moved out; each is
	// looked at in turn.
	for i := 0; i < len(rw.procs); i++ {
		rw.races(rw.procs[i])
		rw.loopEntries(rw.procs[i])
	}
	switch len(rw.errs) {
	case 0:
	case 1:
		return nil, nil, rw.errs[0]
	default:
		return nil, nil, errors.Join(rw.errs...)
	}
	if len(rw.steps) == 0 {
		return pkg, nil, nil
	}
	out := *pkg
	out.Processes = rw.procs
	finish(&out)
	return &out, rw.steps, nil
}

// rewriter holds one Rewrite call's working copies. Every Process,
// ActivitySet, Activity and Transition reachable from procs belongs to
// the rewriter and may be changed in place; what they point to beyond
// that (Route, Block, SubFlow, lists of parameters...) is shared with the
// input and is replaced, never changed.
type rewriter struct {
	pkg   *Package
	procs []*Process
	steps []RewriteStep
	errs  []error
}

func copyProcess(p *Process) *Process {
	c := *p
	c.Flow = copyFlow(&p.Flow)
	c.ActivitySets = make([]*ActivitySet, len(p.ActivitySets))
	for i, s := range p.ActivitySets {
		c.ActivitySets[i] = copySet(s)
	}
	return &c
}

func copySet(s *ActivitySet) *ActivitySet {
	c := *s
	c.Flow = copyFlow(&s.Flow)
	return &c
}

// copyFlow copies a flow's activities and transitions and indexes the
// copy.
func copyFlow(f *Flow) Flow {
	out := Flow{
		Activities:  make([]*Activity, len(f.Activities)),
		Transitions: make([]*Transition, len(f.Transitions)),
	}
	for i, a := range f.Activities {
		c := *a
		out.Activities[i] = &c
	}
	for i, t := range f.Transitions {
		c := *t
		out.Transitions[i] = &c
	}
	out.index()
	return out
}

// loopGraph is a flow's graph with an edge from each activity to the
// boundary events attached to it (they start when it runs), and the loop
// each activity lies on.
type loopGraph struct {
	*graph
	// loop is the index of the strongly connected component (of more
	// than one activity, or one with a transition to itself) that each
	// activity belongs to, -1 for an activity on no loop.
	loop []int
}

func newLoopGraph(f *Flow) *loopGraph {
	g := newGraph(f)
	for i, a := range g.acts {
		if !isBoundary(a) {
			continue
		}
		if t, ok := g.idx[a.Event.Target]; ok && t != i {
			g.succ[t] = append(g.succ[t], i)
			g.pred[i] = append(g.pred[i], t)
		}
	}
	lg := &loopGraph{graph: g, loop: make([]int, len(g.acts))}
	for i := range lg.loop {
		lg.loop[i] = -1
	}
	for k, c := range g.cycles() {
		for _, n := range c {
			lg.loop[n] = k
		}
	}
	return lg
}

// onOneLoop reports whether a and b lie on a common loop.
func (g *loopGraph) onOneLoop(a, b int) bool { return g.loop[a] >= 0 && g.loop[a] == g.loop[b] }

// reachStop marks the nodes reachable from start along next, not going
// on from stop (which is marked when reached); stop -1 stops nowhere.
func (g *graph) reachStop(start int, next [][]int, stop int) []bool {
	seen := make([]bool, len(g.acts))
	seen[start] = true
	queue := []int{start}
	for len(queue) > 0 {
		n := queue[0]
		queue = queue[1:]
		if n == stop {
			continue
		}
		for _, m := range next[n] {
			if !seen[m] {
				seen[m] = true
				queue = append(queue, m)
			}
		}
	}
	return seen
}

// hasActivityID, hasTransitionID and hasProcessID tell uniqueID which
// ids are taken.

func (p *Process) hasActivityID(id string) bool {
	for _, f := range p.Flows() {
		if f.Activity(id) != nil {
			return true
		}
	}
	return false
}

func (p *Process) hasTransitionID(id string) bool {
	for _, f := range p.Flows() {
		if f.Transition(id) != nil {
			return true
		}
	}
	return false
}

func (rw *rewriter) hasProcessID(id string) bool {
	for _, p := range rw.procs {
		if p.ID == id {
			return true
		}
	}
	return false
}

// uniqueID returns base, or base with the first of _2, _3, ... appended
// that makes an id not taken.
func uniqueID(base string, taken func(string) bool) string {
	id := base
	for n := 2; taken(id); n++ {
		id = base + "_" + strconv.Itoa(n)
	}
	return id
}

func generatedAttrs(pos Pos) ExtendedAttributes {
	return ExtendedAttributes{{Name: AttrGenerated, Value: "true", Pos: pos}}
}

func boolPtr(v bool) *bool { return &v }

// scope is one flow of a process being rewritten.
type scope struct {
	proc *Process
	set  *ActivitySet // nil for the top-level flow
	flow *Flow
}

func (s scope) setID() string {
	if s.set == nil {
		return ""
	}
	return s.set.ID
}

// ---- Loop entries ----

// loopEntries applies the loop-entry rewrite to every flow of p.
func (rw *rewriter) loopEntries(p *Process) {
	sc := []scope{{proc: p, flow: &p.Flow}}
	for _, s := range p.ActivitySets {
		sc = append(sc, scope{proc: p, set: s, flow: &s.Flow})
	}
	for _, s := range sc {
		// Inserting a Route in front of one activity changes neither
		// which activities lie on a loop nor which transitions come
		// from the loop of another, so the candidates are found once.
		type entry struct {
			act     *Activity
			outside []*Transition
			back    []*Transition
		}
		var entries []entry
		f := s.flow
		g := newLoopGraph(f)
		for i, a := range f.Activities {
			if f.first[i] != i || a.Join.Type != GatewayXOR || g.loop[i] < 0 ||
				(a.Reentrant != nil && *a.Reentrant) {
				continue
			}
			var e entry
			for _, t := range f.in[i] {
				if from, ok := f.activityIndex[t.From]; ok && g.onOneLoop(from, i) {
					e.back = append(e.back, t)
				} else {
					e.outside = append(e.outside, t)
				}
			}
			if len(e.back) > 0 && len(e.outside) >= 2 {
				e.act = a
				entries = append(entries, e)
			}
		}
		for _, e := range entries {
			rw.insertEntry(s, e.act, e.outside, e.back)
		}
	}
}

// insertEntry puts a generated Route in front of a, taking the
// transitions from outside a's loop.
func (rw *rewriter) insertEntry(s scope, a *Activity, outside, back []*Transition) {
	p, f := s.proc, s.flow
	rid := uniqueID(a.ID+"__entry", p.hasActivityID)
	tid := uniqueID(rid+"__out", p.hasTransitionID)
	route := &Activity{
		ID: rid, Name: a.Name, Kind: ActivityRoute, Pos: a.Pos,
		Route:              &Route{GatewayType: GatewayXOR, declared: true, typed: true},
		Join:               Gateway{Type: GatewayXOR, Pos: a.Pos},
		Reentrant:          boolPtr(false),
		ExtendedAttributes: generatedAttrs(a.Pos),
	}
	moved := make([]string, len(outside))
	for i, t := range outside {
		t.To = rid
		moved[i] = t.ID
	}
	backIDs := make([]string, len(back))
	for i, t := range back {
		backIDs[i] = t.ID
	}
	reason := fmt.Sprintf("activity %q is the entry of a loop (loop-back %s) and also the XOR join of %d transitions from outside it (%s); "+
		"the generated non-reentrant Route %q now takes those, so that %q starts once for them (the first to arrive) and again on every loop-back",
		a.ID, quoteList(backIDs), len(outside), quoteList(moved), rid, a.ID)
	if a.Reentrant != nil && !*a.Reentrant {
		// The mark meant "the arrivals race"; the loop must still go round.
		a.Reentrant = boolPtr(true)
		reason += fmt.Sprintf("; its Reentrant=\"false\" now applies to %q, and %q itself is reentrant", rid, a.ID)
	}
	acts := make([]*Activity, 0, len(f.Activities)+1)
	for _, x := range f.Activities {
		if x == a {
			acts = append(acts, route)
		}
		acts = append(acts, x)
	}
	f.Activities = acts
	f.Transitions = append(f.Transitions[:len(f.Transitions):len(f.Transitions)], &Transition{
		ID: tid, From: rid, To: a.ID, Pos: a.Pos, ExtendedAttributes: generatedAttrs(a.Pos),
	})
	f.index()
	rw.steps = append(rw.steps, RewriteStep{
		Kind: RewriteLoopEntry, Process: p.ID, ActivitySet: s.setID(),
		Activities: []string{a.ID}, Transitions: moved, Generated: []string{rid, tid},
		Reason: reason,
	})
}

// ---- Races ----

// race is an AND split and an XOR join of one flow, by activity index,
// the region between them, and what crosses its border other than into
// the split and out of the join (see RaceRegionError).
type race struct {
	split, join       int
	region            []bool
	size              int
	entering, leaving []string
}

func (r race) movable() bool { return len(r.entering) == 0 && len(r.leaving) == 0 }

// better reports whether r is to be moved (or refused) before o: a race
// that can be moved before one that cannot, then the larger region (the
// outer race), then the earlier join and split (the order they are
// found in).
func (r race) better(o race) bool {
	if r.movable() != o.movable() {
		return r.movable()
	}
	return r.size > o.size
}

// races moves every race on a loop of p into a generated process, the
// outermost first: a race inside another goes with it, and is looked at
// again in the generated process.
func (rw *rewriter) races(p *Process) {
	usedBefore := usedSets(p)
	refused := map[string]bool{} // join ids
	done := map[*ActivitySet]bool{}
	top := false
	for {
		s, ok := nextScope(p, &top, done)
		if !ok {
			return
		}
		for {
			r, ok := findRace(s, refused)
			if !ok {
				break
			}
			if !r.movable() {
				join := s.flow.Activities[r.join]
				refused[join.ID] = true
				rw.errs = append(rw.errs, &RaceRegionError{
					File: rw.pkg.Source, Pos: join.Pos, Process: p.ID, ActivitySet: s.setID(),
					Split: s.flow.Activities[r.split].ID, Join: join.ID, Entering: r.entering, Leaving: r.leaving,
				})
				continue
			}
			rw.moveRace(s, r)
			dropUnusedSets(p, usedBefore)
		}
		if s.set == nil {
			top = true
		} else {
			done[s.set] = true
		}
	}
}

// nextScope returns the first flow of p not yet done: the top-level one,
// then the activity sets in order.
func nextScope(p *Process, top *bool, done map[*ActivitySet]bool) (scope, bool) {
	if !*top {
		return scope{proc: p, flow: &p.Flow}, true
	}
	for _, s := range p.ActivitySets {
		if !done[s] {
			return scope{proc: p, set: s, flow: &s.Flow}, true
		}
	}
	return scope{}, false
}

// isParallelSplit reports whether activity i splits as AND: declared so,
// or an implicit OR split none of whose ordinary transitions has a
// condition.
func isParallelSplit(f *Flow, i int) bool {
	a := f.Activities[i]
	switch {
	case a.Split.Type == GatewayAND:
		return true
	case a.Split.Type != GatewayOR || !a.Split.Implicit:
		return false
	}
	for _, t := range f.out[i] {
		if isExceptional(t) {
			continue
		}
		if c := t.Condition; c != nil && (c.Type != ConditionCondition || c.IsRule()) {
			return false
		}
	}
	return true
}

// isExceptional reports whether a transition is taken only for an
// exception.
func isExceptional(t *Transition) bool {
	return t.Condition != nil && (t.Condition.Type == ConditionException || t.Condition.Type == ConditionDefaultException)
}

// isRaceJoin reports whether a is an XOR join marked Reentrant="false":
// where a race ends.
func isRaceJoin(a *Activity) bool {
	return a.Join.Type == GatewayXOR && a.Reentrant != nil && !*a.Reentrant
}

// findRace returns the race on a loop of f to move next, leaving out
// refused joins: of all pairs of an AND split and an XOR join that race
// on one loop, the best (race.better).
func findRace(sc scope, refused map[string]bool) (race, bool) {
	f := sc.flow
	if !slices.ContainsFunc(f.Activities, isRaceJoin) {
		return race{}, false
	}
	g := newLoopGraph(f)
	var best race
	found := false
	for j, ja := range f.Activities {
		if f.first[j] != j || !isRaceJoin(ja) || g.loop[j] < 0 || refused[ja.ID] {
			continue
		}
		for s := range f.Activities {
			if s == j || f.first[s] != s || !g.onOneLoop(s, j) || !isParallelSplit(f, s) {
				continue
			}
			// The activities that lead to the join other than through
			// the split again.
			toJoin := g.reachStop(j, g.pred, s)
			branches := 0
			for _, t := range f.out[s] {
				if to, ok := f.activityIndex[t.To]; ok && !isExceptional(t) && to != s && toJoin[to] {
					branches++
				}
			}
			if branches < 2 {
				continue
			}
			r := race{split: s, join: j, region: regionOf(g, s, j, toJoin)}
			for _, in := range r.region {
				if in {
					r.size++
				}
			}
			r.entering, r.leaving = crossings(sc, r)
			if !found || r.better(best) {
				best, found = r, true
			}
		}
	}
	return best, found
}

// regionOf returns the activities on a path from split to join that does
// not pass through either again, and the boundary events attached to
// them; toJoin marks the activities that lead to join other than through
// split.
func regionOf(g *loopGraph, split, join int, toJoin []bool) []bool {
	region := g.reachStop(split, g.succ, join)
	for i := range region {
		region[i] = region[i] && toJoin[i]
	}
	for i, a := range g.acts {
		if !region[i] && isBoundary(a) {
			if t, ok := g.idx[a.Event.Target]; ok && region[t] {
				region[i] = true
			}
		}
	}
	return region
}

// crossings returns what enters the region of r other than at the
// split, and what leaves it other than through the join.
func crossings(s scope, r race) (entering, leaving []string) {
	f := s.flow
	in := func(i int) bool { return i >= 0 && r.region[i] }
	for k, t := range f.Transitions {
		e := f.ends[k]
		switch from, to := in(e.from), in(e.to); {
		case e.from == r.join && e.to == r.split:
			// The loop closing straight from the join to the split: it
			// becomes the call's transition to itself.
		case from && to && (e.from == r.join || e.to == r.split):
			entering = append(entering, t.ID)
		case !from && to && e.to != r.split:
			entering = append(entering, t.ID)
		case from && !to && e.from != r.join:
			leaving = append(leaving, t.ID)
		}
	}
	if s.set != nil {
		for _, fl := range s.proc.Flows() {
			for _, a := range fl.Activities {
				if a.Block == nil || a.Block.ActivitySet != s.set.ID || a.Block.StartActivity == "" {
					continue
				}
				if i, ok := f.activityIndex[a.Block.StartActivity]; ok && r.region[i] && i != r.split {
					entering = append(entering, a.ID)
				}
			}
		}
	}
	return entering, leaving
}

// moveRace moves a movable race into a generated process and puts a
// SubFlow activity calling it in its place.
func (rw *rewriter) moveRace(s scope, r race) {
	p, f := s.proc, s.flow
	split, join := f.Activities[r.split], f.Activities[r.join]
	callID := uniqueID(join.ID+"__race", p.hasActivityID)
	childID := uniqueID(p.ID+"__race_"+join.ID, rw.hasProcessID)
	params := variables(rw.pkg, p)
	actuals := make([]Expression, len(params))
	for i, fp := range params {
		actuals[i] = Expression{Text: fp.ID, Pos: join.Pos}
	}
	call := &Activity{
		ID: callID, Name: join.Name, Kind: ActivitySubFlow, Pos: join.Pos,
		SubFlow: &SubFlow{Process: childID, Execution: ExecSynchr, ActualParameters: actuals, Pos: join.Pos},
		// It is entered as the split was, and left as the join was.
		Join: split.Join, Split: join.Split,
		ExtendedAttributes: generatedAttrs(join.Pos),
	}

	var parentActs, childActs []*Activity
	var moved []string
	for i, a := range f.Activities {
		if !r.region[i] {
			parentActs = append(parentActs, a)
			continue
		}
		moved = append(moved, a.ID)
		switch i {
		case r.split:
			parentActs = append(parentActs, call)
			a.Join = Gateway{} // the generated process starts here
		case r.join:
			a.Split = Gateway{} // and ends here
		}
		childActs = append(childActs, a)
	}
	var parentTrans, childTrans []*Transition
	var touched []string
	for k, t := range f.Transitions {
		e := f.ends[k]
		from, to := e.from >= 0 && r.region[e.from], e.to >= 0 && r.region[e.to]
		switch {
		case e.from == r.join && e.to == r.split: // the loop closing on itself
			t.From, t.To = callID, callID
			parentTrans = append(parentTrans, t)
		case from && to:
			childTrans = append(childTrans, t)
		case to: // into the split (the race is movable)
			t.To = callID
			parentTrans = append(parentTrans, t)
		case from: // out of the join
			t.From = callID
			parentTrans = append(parentTrans, t)
		default:
			parentTrans = append(parentTrans, t)
			continue
		}
		touched = append(touched, t.ID)
	}

	child := &Process{
		ID: childID, Name: fmt.Sprintf("race %s of %s", join.ID, p.ID), AccessLevel: "PRIVATE", Pos: join.Pos,
		Header:           ProcessHeader{DurationUnit: p.Header.DurationUnit},
		FormalParameters: params,
		// The process's own participants and applications stay
		// resolvable; the package's are visible to every process.
		Participants:       p.Participants,
		Applications:       p.Applications,
		ExtendedAttributes: generatedAttrs(join.Pos),
	}
	child.Activities, child.Transitions = childActs, childTrans
	child.index()
	child.ActivitySets = setsUsedBy(p, child)

	f.Activities, f.Transitions = parentActs, parentTrans
	f.index()
	if s.set != nil {
		// A BlockActivity that started its set at the split now starts it
		// at the call.
		for _, fl := range p.Flows() {
			for _, a := range fl.Activities {
				if b := a.Block; b != nil && b.ActivitySet == s.set.ID && b.StartActivity == split.ID {
					nb := *b
					nb.StartActivity = callID
					a.Block = &nb
				}
			}
		}
	}
	rw.procs = append(rw.procs, child)
	rw.steps = append(rw.steps, RewriteStep{
		Kind: RewriteRace, Process: p.ID, ActivitySet: s.setID(),
		Activities: moved, Transitions: touched, Generated: []string{callID, childID},
		Reason: fmt.Sprintf("AND split %q and non-reentrant XOR join %q race on a loop; so that every pass round the loop runs a fresh race, "+
			"the %d activities from %q to %q move into the generated process %q, which the SubFlow activity %q calls (SYNCHR) in their place",
			split.ID, join.ID, len(moved), split.ID, join.ID, childID, callID),
	})
}

// variables returns the variables an activity of p sees (the package's
// data fields, then p's formal parameters and data fields, an inner one
// replacing an outer one of the same id) as INOUT formal parameters.
func variables(pkg *Package, p *Process) []*FormalParameter {
	var out []*FormalParameter
	at := map[string]int{}
	add := func(id string, t DataType, isArray bool, pos Pos) {
		if id == "" {
			return
		}
		fp := &FormalParameter{ID: id, Mode: ModeInOut, Type: t, IsArray: isArray, Pos: pos}
		if i, ok := at[id]; ok {
			out[i] = fp
			return
		}
		at[id] = len(out)
		out = append(out, fp)
	}
	for _, df := range pkg.DataFields {
		add(df.ID, df.Type, df.IsArray, df.Pos)
	}
	for _, fp := range p.FormalParameters {
		add(fp.ID, fp.Type, fp.IsArray, fp.Pos)
	}
	for _, df := range p.DataFields {
		add(df.ID, df.Type, df.IsArray, df.Pos)
	}
	return out
}

// usedSets returns the ids of the activity sets of p that a
// BlockActivity of p names.
func usedSets(p *Process) map[string]bool {
	used := map[string]bool{}
	for _, f := range p.Flows() {
		for _, a := range f.Activities {
			if a.Block != nil {
				used[a.Block.ActivitySet] = true
			}
		}
	}
	return used
}

// dropUnusedSets removes the activity sets of p that were used before
// its races were moved out and are used no more.
func dropUnusedSets(p *Process, usedBefore map[string]bool) {
	for {
		used := usedSets(p)
		kept := p.ActivitySets[:0:0]
		for _, s := range p.ActivitySets {
			if used[s.ID] || !usedBefore[s.ID] {
				kept = append(kept, s)
			}
		}
		if len(kept) == len(p.ActivitySets) {
			return
		}
		p.ActivitySets = kept
	}
}

// setsUsedBy returns copies of the activity sets of p that the
// BlockActivities of child name, directly or through other sets, in p's
// order.
func setsUsedBy(p *Process, child *Process) []*ActivitySet {
	need := map[string]bool{}
	var visit func(f *Flow)
	visit = func(f *Flow) {
		for _, a := range f.Activities {
			if a.Block == nil || need[a.Block.ActivitySet] {
				continue
			}
			need[a.Block.ActivitySet] = true
			if s := p.ActivitySet(a.Block.ActivitySet); s != nil {
				visit(&s.Flow)
			}
		}
	}
	visit(&child.Flow)
	var out []*ActivitySet
	for _, s := range p.ActivitySets {
		if need[s.ID] {
			out = append(out, copySet(s))
		}
	}
	return out
}
