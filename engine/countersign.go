package engine

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"

	"github.com/goxpdl/goxpdl/engine/machine"
	"github.com/goxpdl/goxpdl/xpdl"
)

// Countersign (会签): a multi-instance activity whose instances vote, and
// whose loop decides on the votes by a rule the definition chooses
// (docs/countersign.md). Every instance of a multi-instance loop keeps
// the outputs it handed back in its own activity instance row
// (instanceState, in its LoopState); a countersign also counts each
// instance's vote in the loop's bookkeeping (tally, in loopState.Votes),
// decides as soon as the rule is settled, withdraws the instances still
// open, writes the decision to the variable the definition names and
// routes once.

// AttrCountersign on a multi-instance activity makes it a countersign: a
// policy of key=value pairs separated by ";" (parseCountersign):
//
//	vote=NAME       the output of each instance that holds its vote
//	                (required): a formal parameter of the activity, or a
//	                data field of the process;
//	rule=RULE       all (the default), any, N (at least N approvals), P%
//	                (approvals of at least P percent of the instances),
//	                or condition (ComplexMI_FlowCondition decides; the
//	                default under MI_FlowCondition Complex);
//	approve=V,...   the votes that approve (default: true);
//	reject=V,...    the votes that reject; without it every vote that
//	                does not approve rejects, an absent one included,
//	                with it the others abstain;
//	result=NAME     a BOOLEAN or STRING variable that receives the
//	                decision (true or "approved", false or "rejected").
const AttrCountersign = "goxpdl.Countersign"

// VarVotes is the variable a countersign's ComplexMI_FlowCondition reads
// (rule=condition): an object with the counts total, completed, pending,
// approved, rejected and abstained, and the arrays values (each
// instance's vote, by loopCounter-1; null until it voted) and ballots
// ("approve", "reject", "abstain"; null until it voted). A data field of
// the same name hides it.
const VarVotes = "votes"

// Records of a countersign.
const (
	// RecordCountersignVoted: an instance of a countersign completed and
	// its vote was counted; ActivityInstance is the instance, Detail says
	// how it counted.
	RecordCountersignVoted = "countersign.voted"
	// RecordCountersignDecided: a countersign's rule was settled (or the
	// loop ended first: rejected); ActivityInstance is the loop, Detail
	// the decision and the counts.
	RecordCountersignDecided = "countersign.decided"
)

// ErrBadCountersign: a deployment has an activity whose goxpdl.Countersign
// policy cannot be run (a *CountersignError); the deployment is refused.
var ErrBadCountersign = errors.New("countersign cannot be run")

// CountersignError refuses a deployment with an unusable countersign
// policy, naming the activity. It matches ErrBadCountersign and
// xpdl.ErrInvalid (the definition is invalid).
type CountersignError struct {
	// Process and Activity name the activity; Policy is its
	// goxpdl.Countersign value as written.
	Process, Activity, Policy string
	// Key is the policy's key at fault ("" for the policy as a whole);
	// Reason says what is wrong.
	Key, Reason string
}

func (e *CountersignError) Error() string {
	key := ""
	if e.Key != "" {
		key = " " + e.Key + ":"
	}
	return fmt.Sprintf("%v: activity %s of process %s, %s %q:%s %s", ErrBadCountersign, e.Activity, e.Process, AttrCountersign, e.Policy, key, e.Reason)
}

// Is matches ErrBadCountersign and xpdl.ErrInvalid.
func (e *CountersignError) Is(target error) bool {
	return target == ErrBadCountersign || target == xpdl.ErrInvalid
}

// Ballot is how one vote counts.
type Ballot string

// The ballots.
const (
	BallotApprove Ballot = "approve"
	BallotReject  Ballot = "reject"
	BallotAbstain Ballot = "abstain"
)

// Decision is a countersign's outcome.
type Decision string

// The decisions.
const (
	DecisionApproved Decision = "approved"
	DecisionRejected Decision = "rejected"
)

// ruleKind is what a countersign's rule counts.
type ruleKind int

const (
	ruleAll ruleKind = iota
	ruleAny
	ruleCount
	rulePercent
	ruleCondition
)

// countersign is an activity's goxpdl.Countersign policy.
type countersign struct {
	vote    string
	approve []string
	reject  []string // nil: every vote that does not approve rejects
	rule    string   // as written, or its default
	kind    ruleKind
	count   int     // ruleCount
	percent float64 // rulePercent, in (0, 100]
	result  string
}

// policyError is a fault of a policy's text, before the activity is
// known.
type policyError struct{ key, reason string }

func (e *policyError) Error() string { return e.key + ": " + e.reason }

// parseCountersign reads a goxpdl.Countersign policy; complex says that
// the loop's MI_FlowCondition is Complex (rule=condition is then the
// default).
func parseCountersign(text string, complex bool) (*countersign, error) {
	vals := map[string]string{}
	for part := range strings.FieldsFuncSeq(text, func(r rune) bool { return r == ';' || r == '\n' }) {
		if strings.TrimSpace(part) == "" {
			continue
		}
		k, v, ok := strings.Cut(part, "=")
		if !ok {
			return nil, &policyError{reason: fmt.Sprintf("%q is not key=value", strings.TrimSpace(part))}
		}
		k, v = strings.ToLower(strings.TrimSpace(k)), strings.TrimSpace(v)
		switch k {
		case "vote", "rule", "approve", "reject", "result":
		default:
			return nil, &policyError{k, "unknown key; the keys are vote, rule, approve, reject and result"}
		}
		if _, dup := vals[k]; dup {
			return nil, &policyError{k, "given twice"}
		}
		if v == "" {
			return nil, &policyError{k, "no value"}
		}
		vals[k] = v
	}
	cs := &countersign{vote: vals["vote"], result: vals["result"], approve: []string{"true"}}
	if cs.vote == "" {
		return nil, &policyError{"vote", "missing: name the output that holds each instance's vote"}
	}
	var err error
	if v, ok := vals["approve"]; ok {
		if cs.approve, err = voteList("approve", v); err != nil {
			return nil, err
		}
	}
	if v, ok := vals["reject"]; ok {
		if cs.reject, err = voteList("reject", v); err != nil {
			return nil, err
		}
		for _, r := range cs.reject {
			if slices.ContainsFunc(cs.approve, func(a string) bool { return strings.EqualFold(a, r) }) {
				return nil, &policyError{"reject", fmt.Sprintf("%q both approves and rejects", r)}
			}
		}
	}
	cs.rule = strings.ToLower(vals["rule"])
	if cs.rule == "" {
		cs.rule = "all"
		if complex {
			cs.rule = "condition"
		}
	}
	switch cs.rule {
	case "all":
		cs.kind = ruleAll
	case "any":
		cs.kind = ruleAny
	case "condition":
		cs.kind = ruleCondition
	default:
		if p, ok := strings.CutSuffix(cs.rule, "%"); ok {
			f, err := strconv.ParseFloat(strings.TrimSpace(p), 64)
			if err != nil || !(f > 0 && f <= 100) {
				return nil, &policyError{"rule", fmt.Sprintf("%q is not a percentage above 0 and at most 100", vals["rule"])}
			}
			cs.kind, cs.percent = rulePercent, f
			break
		}
		n, err := strconv.Atoi(cs.rule)
		if err != nil || n < 1 {
			return nil, &policyError{"rule", fmt.Sprintf("%q is not all, any, condition, a number of approvals (at least 1) or a percentage such as 60%%", vals["rule"])}
		}
		cs.kind, cs.count = ruleCount, n
	}
	return cs, nil
}

// voteList reads a comma-separated list of votes.
func voteList(key, v string) ([]string, error) {
	var out []string
	for s := range strings.SplitSeq(v, ",") {
		s = strings.TrimSpace(s)
		if s == "" {
			return nil, &policyError{key, fmt.Sprintf("%q has an empty vote", v)}
		}
		out = append(out, s)
	}
	return out, nil
}

// countersignOf returns the countersign policy of a looping activity;
// nil when it has none (or no multi-instance loop).
func countersignOf(def *xpdl.Activity) (*countersign, error) {
	text, ok := def.ExtendedAttributes.Get(AttrCountersign)
	l := loopOf(def)
	if !ok || l == nil || l.Type != xpdl.LoopMultiInstance {
		return nil, nil
	}
	cs, err := parseCountersign(text, flowCondition(l) == "Complex")
	if err != nil {
		return nil, fmt.Errorf("activity %s: %s %q: %w", def.ID, AttrCountersign, text, err)
	}
	return cs, nil
}

// checkCountersigns refuses a deployment with a countersign policy the
// engine cannot run (a *CountersignError naming the activity).
func checkCountersigns(d *deployment) error {
	for _, proc := range d.pkg.Processes {
		var decls map[string]decl
		for _, f := range proc.Flows() {
			for _, a := range f.Activities {
				if _, ok := a.ExtendedAttributes.Get(AttrCountersign); !ok {
					continue
				}
				if decls == nil {
					decls = declarations(d.pkg, proc)
				}
				if err := checkCountersign(proc, a, decls); err != nil {
					return err
				}
			}
		}
	}
	return nil
}

// checkCountersign checks one activity's policy against its loop and the
// process's variables.
func checkCountersign(proc *xpdl.Process, a *xpdl.Activity, decls map[string]decl) error {
	text, _ := a.ExtendedAttributes.Get(AttrCountersign)
	bad := func(key, format string, args ...any) error {
		return &CountersignError{Process: proc.ID, Activity: a.ID, Policy: text, Key: key, Reason: fmt.Sprintf(format, args...)}
	}
	n := 0
	for _, ea := range a.ExtendedAttributes {
		if ea.Name == AttrCountersign {
			n++
		}
	}
	if n > 1 {
		return bad("", "the activity has %d of them; give one", n)
	}
	l := loopOf(a)
	if l == nil || l.Type != xpdl.LoopMultiInstance {
		return bad("", "the activity has no multi-instance Loop whose instances could vote")
	}
	if a.Kind == xpdl.ActivityBlock {
		return bad("", "the instances of a BlockActivity hand back no outputs to vote with")
	}
	fc := flowCondition(l)
	cs, err := parseCountersign(text, fc == "Complex")
	if err != nil {
		var pe *policyError
		if errors.As(err, &pe) {
			return bad(pe.key, "%s", pe.reason)
		}
		return bad("", "%v", err)
	}
	switch {
	case cs.kind == ruleCondition && fc != "Complex":
		return bad("rule", "rule=condition needs MI_FlowCondition Complex, whose ComplexMI_FlowCondition decides")
	case cs.kind != ruleCondition && fc != "All":
		return bad("rule", "rule=%s cannot go with MI_FlowCondition %s: the countersign decides when the flow goes on (leave MI_FlowCondition out, or write All)", cs.rule, fc)
	}
	if params := a.FormalParameters; len(params) > 0 {
		i := slices.IndexFunc(params, func(fp *xpdl.FormalParameter) bool { return fp.ID == cs.vote })
		if i < 0 || params[i].Mode != xpdl.ModeOut && params[i].Mode != xpdl.ModeInOut {
			return bad("vote", "%s is not an OUT or INOUT formal parameter of the activity", cs.vote)
		}
	} else if _, ok := decls[cs.vote]; !ok {
		return bad("vote", "%s is not a data field or formal parameter of the process", cs.vote)
	}
	if cs.result != "" {
		d, ok := decls[cs.result]
		switch {
		case !ok:
			return bad("result", "%s is not a data field or formal parameter of the process", cs.result)
		case d.typ.array || d.typ.basic != xpdl.BasicBoolean && d.typ.basic != xpdl.BasicString:
			return bad("result", "%s is %s; the decision goes into a BOOLEAN or a STRING", cs.result, d.typ.name())
		}
	}
	return nil
}

// ballot says how a vote counts: an approve value approves; without
// reject values every other vote rejects, with them those values reject
// and the others (an absent vote too) abstain. Votes are compared as
// text, in any case.
func (cs *countersign) ballot(v any, voted bool) Ballot {
	text := ""
	if voted && v != nil {
		text = voteText(v)
	}
	match := func(list []string) bool {
		return voted && v != nil && slices.ContainsFunc(list, func(s string) bool { return strings.EqualFold(s, text) })
	}
	switch {
	case match(cs.approve):
		return BallotApprove
	case cs.reject == nil, match(cs.reject):
		return BallotReject
	}
	return BallotAbstain
}

// voteText is a vote as the approve and reject lists name it.
func voteText(v any) string {
	if s, ok := v.(string); ok {
		return strings.TrimSpace(s)
	}
	data, err := json.Marshal(v)
	if err != nil {
		return fmt.Sprint(v)
	}
	return string(data)
}

// tally is a countersign's count of the votes, kept in its loop's
// bookkeeping.
type tally struct {
	Approved  int      `json:"approved"`
	Rejected  int      `json:"rejected"`
	Abstained int      `json:"abstained"`
	Withdrawn int      `json:"withdrawn,omitempty"`
	Decision  Decision `json:"decision,omitempty"`
	// Values and Ballots are each instance's vote and how it counted, by
	// LoopIndex-1; null and "" until it voted.
	Values  []any    `json:"values"`
	Ballots []Ballot `json:"ballots"`
}

func newTally(n int) *tally {
	return &tally{Values: make([]any, n), Ballots: make([]Ballot, n)}
}

// count adds the vote of instance index (from 1).
func (t *tally) count(index int, v any, b Ballot) {
	for len(t.Values) < index {
		t.Values, t.Ballots = append(t.Values, nil), append(t.Ballots, "")
	}
	t.Values[index-1], t.Ballots[index-1] = v, b
	switch b {
	case BallotApprove:
		t.Approved++
	case BallotReject:
		t.Rejected++
	default:
		t.Abstained++
	}
}

// settled decides by an arithmetic rule once the outcome can no longer
// change: "" while it can. With every instance done it always decides.
func (cs *countersign) settled(t *tally, total, completed int) Decision {
	open := total - completed
	switch cs.kind {
	case ruleAll:
		switch {
		case t.Rejected+t.Abstained > 0:
			return DecisionRejected
		case t.Approved >= total:
			return DecisionApproved
		}
	case ruleAny:
		switch {
		case t.Approved > 0:
			return DecisionApproved
		case open <= 0:
			return DecisionRejected
		}
	case ruleCount:
		switch {
		case t.Approved >= cs.count:
			return DecisionApproved
		case t.Approved+open < cs.count:
			return DecisionRejected
		}
	case rulePercent:
		switch {
		case float64(t.Approved)*100 >= cs.percent*float64(total):
			return DecisionApproved
		case float64(t.Approved+open)*100 < cs.percent*float64(total):
			return DecisionRejected
		}
	case ruleCondition:
		if open <= 0 {
			return DecisionRejected // evaluated before: it never decided
		}
	}
	return ""
}

// votesValue is VarVotes for a countersign's condition.
func votesValue(t *tally, total, completed int) map[string]any {
	values := make([]any, total)
	ballots := make([]any, total)
	for i := range total {
		if i < len(t.Ballots) && t.Ballots[i] != "" {
			values[i], ballots[i] = t.Values[i], string(t.Ballots[i])
		}
	}
	return map[string]any{
		"total": int64(total), "completed": int64(completed), "pending": int64(total - completed),
		"approved": int64(t.Approved), "rejected": int64(t.Rejected), "abstained": int64(t.Abstained),
		"values": values, "ballots": ballots,
	}
}

// instanceState is what an instance of a loop keeps in its row's
// LoopState: the outputs it handed back, how its vote counted, or that
// it was withdrawn before it was done.
type instanceState struct {
	Outputs   map[string]any `json:"outputs,omitempty"`
	Ballot    Ballot         `json:"ballot,omitempty"`
	Withdrawn bool           `json:"withdrawn,omitempty"`
}

// produce makes a, an instance of a loop, the activity whose outputs
// setVariable keeps (act.keep) until it completes (completeInstance
// takes them); done restores the previous one. A BlockActivity's
// instances keep none: their activities write the variables.
func (r *run) produce(a *act) (done func()) {
	if !isLoopInstance(a) || a.def.Kind == xpdl.ActivityBlock {
		return func() {}
	}
	prev := r.producer
	r.producer = a
	return func() { r.producer = prev }
}

// keep notes an output a loop instance handed back.
func (a *act) keep(name string, v any) {
	if a.outputs == nil {
		a.outputs = make(map[string]any)
	}
	a.outputs[name] = v
}

// handBack keeps a manual instance's completion outputs, those that are
// no data field included.
func (r *run) handBack(a *act, typed map[string]any) {
	if r.producer != a {
		return
	}
	for name, v := range typed {
		a.keep(name, v)
	}
}

// takeOutputs ends the capture of a's outputs and returns them.
func (r *run) takeOutputs(a *act) map[string]any {
	if r.producer == a {
		r.producer = nil
	}
	out := a.outputs
	a.outputs = nil
	return out
}

// keepInstance writes what instance a handed back into its row and the
// history entry of its completion (act.note); nothing for an instance
// that handed back nothing and did not vote.
func (r *run) keepInstance(a *act, outputs map[string]any, b Ballot) error {
	if len(outputs) == 0 && b == "" {
		return nil
	}
	data, err := json.Marshal(instanceState{Outputs: outputs, Ballot: b})
	if err != nil {
		return fmt.Errorf("activity instance %d: outputs: %w", a.row.ID, err)
	}
	a.row.LoopState, a.dirty = data, true
	a.note = map[string]any{}
	if len(outputs) > 0 {
		a.note["outputs"] = outputs
	}
	if b != "" {
		a.note["ballot"] = b
	}
	return nil
}

// markWithdrawn notes in an instance's row that it was withdrawn before
// it was done.
func markWithdrawn(a *act) {
	a.row.LoopState, a.dirty = mustJSON(instanceState{Withdrawn: true}), true
}

// activityDetail is r.detail for a change of activity a, with what
// a.note adds (an instance's outputs, a countersign's decision); the
// note is for one entry.
func (r *run) activityDetail(a *act, diagnosis string) []byte {
	if a.note == nil {
		return r.detail(diagnosis)
	}
	d := maps.Clone(a.note)
	a.note = nil
	if diagnosis != "" {
		d["diagnosis"] = diagnosis
	}
	if r.op.Reason != "" {
		d["reason"] = r.op.Reason
	}
	if len(r.op.Data) > 0 {
		d["data"] = r.op.Data
	}
	return mustJSON(d)
}

// countVote is completeInstance for an instance of a countersign: the
// instance completes with its outputs, its vote is counted, and when the
// rule is settled the countersign is decided and the loop completes;
// otherwise the loop goes on (loopNext).
func (r *run) countVote(loop, a *act, st loopState, cs *countersign, outputs map[string]any) error {
	v, voted := outputs[cs.vote]
	b := cs.ballot(v, voted)
	if err := r.keepInstance(a, outputs, b); err != nil {
		return err
	}
	if err := r.setActivity(a, machine.ActivityComplete, ""); err != nil {
		return err
	}
	st.Completed++
	if st.Votes == nil {
		st.Votes = newTally(st.N)
	}
	st.Votes.count(a.row.LoopIndex, v, b)
	shown := "no " + cs.vote
	if voted {
		shown = cs.vote + "=" + voteText(v)
	}
	r.recordActivity(a, Record{Type: RecordCountersignVoted, Activity: a.def.ID,
		Detail: fmt.Sprintf("instance %d of %d: %s (%s)", a.row.LoopIndex, st.N, b, shown)})
	d, err := r.settleCountersign(loop, cs, st)
	if err != nil {
		if isStoreError(err) {
			return err
		}
		saveLoop(loop, st)
		return r.fail(loop, err.Error())
	}
	if d == "" {
		return r.loopNext(loop, st)
	}
	if err := r.decideCountersign(loop, &st, cs, d, ""); err != nil {
		return err
	}
	return r.complete(loop, "")
}

// settleCountersign decides a countersign if its rule is settled: by
// arithmetic, or by its ComplexMI_FlowCondition (rule=condition), which
// may give true or "approved", "rejected", or false, null or "" while
// undecided; anything else is an error.
func (r *run) settleCountersign(loop *act, cs *countersign, st loopState) (Decision, error) {
	if cs.kind != ruleCondition {
		return cs.settled(st.Votes, st.N, st.Completed), nil
	}
	text := strings.TrimSpace(loop.def.Loop.FlowCondition.Text)
	v, err := r.loopValue(text, map[string]any{
		VarVotes:                      votesValue(st.Votes, st.N, st.Completed),
		VarNumberOfInstances:          int64(st.N),
		VarNumberOfCompletedInstances: int64(st.Completed),
		VarNumberOfActiveInstances:    int64(st.Started - st.Completed),
	})
	if err != nil {
		return "", fmt.Errorf("ComplexMI_FlowCondition of activity %s: %w", loop.def.ID, err)
	}
	var d Decision
	switch x := v.(type) {
	case nil:
	case bool:
		if x {
			d = DecisionApproved
		}
	case string:
		switch Decision(strings.ToLower(strings.TrimSpace(x))) {
		case "":
		case DecisionApproved:
			d = DecisionApproved
		case DecisionRejected:
			d = DecisionRejected
		default:
			return "", fmt.Errorf("ComplexMI_FlowCondition of activity %s gives %q; a countersign's condition gives true, false, null, \"approved\" or \"rejected\"",
				loop.def.ID, x)
		}
	default:
		return "", fmt.Errorf("ComplexMI_FlowCondition of activity %s gives %v (%T); a countersign's condition gives true, false, null, \"approved\" or \"rejected\"",
			loop.def.ID, v, v)
	}
	if d == "" {
		d = cs.settled(st.Votes, st.N, st.Completed) // every instance done: rejected
	}
	return d, nil
}

// loopValue evaluates a loop expression as loopCondition does, for its
// value.
func (r *run) loopValue(text string, extra map[string]any) (any, error) {
	vars, err := r.variables()
	if err != nil {
		return nil, err
	}
	merged := make(map[string]any, len(vars)+len(extra))
	maps.Copy(merged, extra)
	maps.Copy(merged, vars)
	ctx, cancel := context.WithTimeout(r.ctx, r.e.cfg.ConditionTimeout)
	defer cancel()
	v, err := r.e.eval.Eval(ctx, text, merged)
	return v, r.e.conditionLimit(err)
}

// decideCountersign records decision d of the countersign of loop: the
// instances still open are withdrawn (their work items withdrawn, their
// subflows terminated), the decision goes into the policy's result
// variable, a countersign.decided record and the history entry of the
// loop's completion tell it. The caller completes the loop. why, when
// given, says why the rule did not decide by itself.
func (r *run) decideCountersign(loop *act, st *loopState, cs *countersign, d Decision, why string) error {
	if st.Votes == nil {
		st.Votes = newTally(st.N)
	}
	t := st.Votes
	t.Decision = d
	open := r.openInstances(loop)
	t.Withdrawn = st.Started - st.Completed // open now, or ended already by what ends the loop
	detail := fmt.Sprintf("%s (rule %s): %d approve, %d reject, %d abstain of %d", d, cs.rule, t.Approved, t.Rejected, t.Abstained, st.N)
	if t.Withdrawn > 0 {
		detail += fmt.Sprintf("; %d withdrawn", t.Withdrawn)
	}
	if why != "" {
		detail += "; " + why
	}
	r.recordActivity(loop, Record{Type: RecordCountersignDecided, Activity: loop.def.ID, Detail: detail})
	for _, inst := range open {
		if err := r.interrupt(inst); err != nil {
			return err
		}
		markWithdrawn(inst)
		if err := r.forceComplete(inst, fmt.Sprintf("withdrawn: the countersign of %s was decided, %s", loop.def.ID, d)); err != nil {
			return err
		}
	}
	saveLoop(loop, *st)
	if cs.result != "" {
		var value any = string(d)
		if r.decls[cs.result].typ.basic == xpdl.BasicBoolean {
			value = d == DecisionApproved
		}
		if err := r.setVariable(cs.result, value); err != nil {
			return err
		}
	}
	loop.note = map[string]any{"countersign": countersignOutcome(cs, *st)}
	return nil
}

// countersignAtStart prepares the count of a countersign whose loop of n
// instances starts, and decides it if the rule is settled already (no
// instances, more approvals wanted than there are instances); it
// reports whether it decided.
func (r *run) countersignAtStart(loop *act, st *loopState) (bool, error) {
	cs, err := countersignOf(loop.def)
	if cs == nil || err != nil {
		return false, err
	}
	st.Votes = newTally(st.N)
	d := cs.settled(st.Votes, st.N, 0)
	if st.N == 0 && cs.kind == ruleCondition {
		if d, err = r.settleCountersign(loop, cs, *st); err != nil {
			return false, err
		}
	}
	if d == "" {
		return false, nil
	}
	return true, r.decideCountersign(loop, st, cs, d, "")
}

// closeCountersign is complete's hook for a loop: a countersign that
// ends before its rule decided (a Limit with OnLimit complete, an
// operator's skip) is rejected.
func (r *run) closeCountersign(loop *act) error {
	cs, err := countersignOf(loop.def)
	if cs == nil || err != nil {
		return err
	}
	st, err := loopStateOf(loop)
	if err != nil {
		return err
	}
	if st.Votes != nil && st.Votes.Decision != "" {
		return nil
	}
	return r.decideCountersign(loop, &st, cs, DecisionRejected, "the loop ended before the rule decided")
}

// CountersignOutcome is how the votes of a countersign were counted and
// what was decided.
type CountersignOutcome struct {
	// Rule is the policy's rule (all, any, N, P%, condition); Vote the
	// output that holds the votes.
	Rule string `json:"rule"`
	Vote string `json:"vote"`
	// Total is the number of instances; Completed those that voted.
	Total     int `json:"total"`
	Completed int `json:"completed"`
	// Approved, Rejected and Abstained count the ballots.
	Approved  int `json:"approved"`
	Rejected  int `json:"rejected"`
	Abstained int `json:"abstained"`
	// Withdrawn counts the instances withdrawn when the rule was settled.
	Withdrawn int `json:"withdrawn,omitempty"`
	// Decision is "" until the countersign is decided.
	Decision Decision `json:"decision,omitempty"`
}

func countersignOutcome(cs *countersign, st loopState) CountersignOutcome {
	o := CountersignOutcome{Rule: cs.rule, Vote: cs.vote, Total: st.N, Completed: st.Completed}
	if t := st.Votes; t != nil {
		o.Approved, o.Rejected, o.Abstained, o.Withdrawn, o.Decision = t.Approved, t.Rejected, t.Abstained, t.Withdrawn, t.Decision
	}
	return o
}
