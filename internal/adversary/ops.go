package adversary

import (
	"encoding/json"
	"fmt"
	"maps"
	"math"
	"math/rand/v2"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/goxpdl/goxpdl/engine"
	"github.com/goxpdl/goxpdl/workitem"
)

// The kinds of operations the generator makes.
const (
	OpStart         = "start"          // StartProcess, good variables; sometimes a key already used
	OpStartBad      = "start-bad"      // StartProcess with an unknown variable or a value of the wrong type
	OpClaim         = "claim"          // ClaimWorkItem
	OpStartItem     = "start-item"     // StartWorkItem
	OpRelease       = "release"        // ReleaseWorkItem
	OpDelegate      = "delegate"       // DelegateWorkItem
	OpReassign      = "reassign"       // ReassignWorkItem to one user
	OpComplete      = "complete"       // CompleteWorkItem, good outputs
	OpCompleteBad   = "complete-bad"   // CompleteWorkItem with a bad output
	OpCompleteAgain = "complete-again" // a completed item again: same key and outputs, other outputs, or no key
	OpRaceComplete  = "race-complete"  // N goroutines complete one item
	OpRaceClaim     = "race-claim"     // N goroutines claim one item
	OpSuspend       = "suspend"
	OpResume        = "resume"
	OpTerminate     = "terminate"
	OpSetVars       = "set-vars"
	OpSetVarsBad    = "set-vars-bad"
	OpRetry         = "retry"    // RetryActivity
	OpSkip          = "skip"     // SkipActivity
	OpJump          = "jump"     // Jump to an activity (or one the process lacks)
	OpRollback      = "rollback" // Rollback to Review or Approve
	OpMigrate       = "migrate"  // Migrate to a deployed version
	OpWithdraw      = "withdraw" // Withdraw a completed item
	OpAdvance       = "advance"  // move the fake clock on; deadlines fire
	OpRestart       = "restart"  // Stop the engine and start a new one on the database
	OpDeploy        = "deploy"   // Deploy a new version
	OpRaceDeploy    = "race-deploy"
)

// weights are how often the generator picks each kind.
var weights = []struct {
	kind string
	w    int
}{
	{OpStart, 10}, {OpStartBad, 3}, {OpClaim, 8}, {OpStartItem, 3}, {OpRelease, 4}, {OpDelegate, 3},
	{OpReassign, 2}, {OpComplete, 16}, {OpCompleteBad, 4}, {OpCompleteAgain, 4}, {OpRaceComplete, 3},
	{OpRaceClaim, 2}, {OpSuspend, 5}, {OpResume, 5}, {OpTerminate, 2}, {OpSetVars, 4}, {OpSetVarsBad, 2},
	{OpRetry, 4}, {OpSkip, 2}, {OpJump, 3}, {OpRollback, 2}, {OpMigrate, 2}, {OpWithdraw, 3},
	{OpAdvance, 6}, {OpRestart, 1}, {OpDeploy, 1}, {OpRaceDeploy, 1},
}

// Op is one operation of a run. Inst names its instance by its place in
// start order (-1: an id no instance has); the other fields are the
// operation's arguments.
type Op struct {
	Kind string
	Inst int
	// Item is a work item id (0: none, NoSuchID: one that does not exist).
	Item int64
	// Activity is an activity instance id (retry, skip).
	Activity int64
	User     string
	// To is the user delegated or reassigned to, or the activity of a
	// jump or rollback.
	To   string
	Vars map[string]any
	Key  string // a start's or a completion's idempotency key
	BKey string // a start's business key
	N    int    // goroutines of a race
	D    time.Duration
	Dep  int64 // a migration's deployment
	Note string
}

// NoSuchID is the id the operations use for a thing that does not exist.
const NoSuchID = 1 << 40

func (o Op) String() string {
	var b strings.Builder
	b.WriteString(o.Kind)
	switch {
	case o.Kind == OpAdvance, o.Kind == OpRestart, o.Kind == OpDeploy, o.Kind == OpRaceDeploy:
	case o.Inst < 0:
		b.WriteString(" p?") // an instance that does not exist
	default:
		fmt.Fprintf(&b, " p%d", o.Inst+1)
	}
	field := func(name string, v any) { fmt.Fprintf(&b, " %s=%v", name, v) }
	if o.Item != 0 {
		field("item", o.Item)
	}
	if o.Activity != 0 {
		field("activity", o.Activity)
	}
	if o.User != "" {
		field("user", o.User)
	}
	if o.To != "" {
		field("to", o.To)
	}
	if len(o.Vars) > 0 {
		keys := slices.Sorted(maps.Keys(o.Vars))
		parts := make([]string, len(keys))
		for i, k := range keys {
			parts[i] = fmt.Sprintf("%s:%s", k, short(o.Vars[k]))
		}
		field("vars", "{"+strings.Join(parts, ",")+"}")
	}
	if o.Key != "" {
		field("key", fmt.Sprintf("%q", o.Key))
	}
	if o.BKey != "" {
		field("bkey", short(o.BKey))
	}
	if o.N != 0 {
		field("n", o.N)
	}
	if o.D != 0 {
		field("d", o.D)
	}
	if o.Dep != 0 {
		field("dep", o.Dep)
	}
	if o.Note != "" {
		b.WriteString(" (" + o.Note + ")")
	}
	return b.String()
}

// short prints a value for the operation log, long strings cut.
func short(v any) string {
	s := fmt.Sprintf("%#v", v)
	if len(s) > 40 {
		s = s[:37] + "..."
	}
	return s
}

// hostile are the strings the generator puts in business keys and STRING
// variables: each must come back byte for byte, except "a\x00b" as a
// business key (a NUL, refused as a key on every database, since
// PostgreSQL's text cannot hold it; a variable keeps it).
var hostile = []string{
	"", "plain", `it's "quoted" \ back\slash`, `'; DROP TABLE goxpdl_process_instances; --`, "a\x00b",
	"🙂 ünïcödé ☃ 𝄞", "100%_off", "line\nbreak\ttab\r", "`backtick`", "<xml attr=\"&amp;\"/>",
	strings.Repeat("x", 255),
}

// refusedKeys are business keys a start must refuse (ErrBadArgument): not
// valid UTF-8, longer than 255 bytes (and, from hostile, with a NUL).
var refusedKeys = []string{"a\xff\xfeb", "\xed\xa0\x80", strings.Repeat("é", 128)}

// gen makes operations from a seeded source: the same seed and the same
// world give the same operations.
type gen struct {
	rnd  *rand.Rand
	keys int // start keys handed out
	revs int // package revisions deployed
}

func newGen(seed int64) *gen {
	return &gen{rnd: rand.New(rand.NewPCG(uint64(seed), uint64(seed)^0x9e3779b97f4a7c15))}
}

func (g *gen) pick(n int) int { return g.rnd.IntN(n) }

func (g *gen) chance(p float64) bool { return g.rnd.Float64() < p }

func (g *gen) user() string {
	if g.chance(0.08) {
		return Outsider
	}
	return Clerks[g.pick(len(Clerks))]
}

// goodVars are values of the right types for some of the data fields.
func (g *gen) goodVars(allowNegative bool) map[string]any {
	out := map[string]any{}
	if g.chance(0.6) {
		n := int64(g.pick(1000))
		if allowNegative && g.chance(0.15) {
			n = -1 - int64(g.pick(5))
		}
		out["amount"] = n
	}
	if g.chance(0.4) {
		out["note"] = hostile[g.pick(len(hostile))]
	}
	if g.chance(0.5) {
		out["ok"] = g.chance(0.5)
	}
	if g.chance(0.3) {
		out["rate"] = float64(g.pick(10000)) / 100
	}
	return out
}

// badVars holds exactly one bad value (and maybe good ones): an unknown
// name or a value of the wrong type; want is the refusal.
func (g *gen) badVars() (vars map[string]any, want error) {
	vars = g.goodVars(false)
	bad := []struct {
		name string
		v    any
		want error
	}{
		{"amount", "12", engine.ErrWrongType},
		{"amount", 1.5, engine.ErrWrongType},
		{"ok", "yes", engine.ErrWrongType},
		{"note", int64(42), engine.ErrWrongType},
		{"rate", "fast", engine.ErrWrongType},
		{"nope", int64(1), engine.ErrUnknownVariable},
		{"Amount", int64(1), engine.ErrUnknownVariable},
		{"amount'; --", int64(1), engine.ErrUnknownVariable},
		{"amount", 1e19, engine.ErrWrongType},
		{"note", "a\xffb", engine.ErrWrongType},
		{"rate", math.NaN(), engine.ErrWrongType},
	}
	b := bad[g.pick(len(bad))]
	vars[b.name] = b.v
	return vars, b.want
}

// instance picks an instance, mostly an open one; -1 when there is none.
func (g *gen) instance(w *world) int {
	if len(w.insts) == 0 {
		return -1
	}
	if g.chance(0.85) {
		var open []int
		for i, in := range w.insts {
			if in.open() {
				open = append(open, i)
			}
		}
		if len(open) > 0 {
			return open[g.pick(len(open))]
		}
	}
	return g.pick(len(w.insts))
}

// itemOf picks a work item of instance in: its open item mostly, a
// closed one, or one that does not exist.
func (g *gen) itemOf(in *inst) int64 {
	switch {
	case in.item != nil && in.item.id != 0 && g.chance(0.75):
		return in.item.id
	case len(in.closed) > 0 && g.chance(0.85):
		return in.closed[len(in.closed)-1-g.pick(min(3, len(in.closed)))].id
	case in.item != nil && in.item.id != 0:
		return in.item.id
	}
	return NoSuchID
}

// next makes the next operation.
func (g *gen) next(w *world) Op {
	if len(w.insts) == 0 {
		return g.start(w)
	}
	total := 0
	for _, k := range weights {
		total += k.w
	}
	n := g.pick(total)
	kind := weights[0].kind
	for _, k := range weights {
		if n < k.w {
			kind = k.kind
			break
		}
		n -= k.w
	}
	i := g.instance(w)
	in := w.insts[i]
	op := Op{Kind: kind, Inst: i}
	if g.chance(0.03) && kind != OpAdvance && kind != OpRestart && kind != OpDeploy && kind != OpRaceDeploy && kind != OpStart && kind != OpStartBad {
		op.Inst = -1 // an instance that does not exist
	}
	switch kind {
	case OpStart:
		return g.start(w)
	case OpStartBad:
		op = g.start(w)
		op.Kind = OpStartBad
		op.Vars, _ = g.badVars()
		op.Key = ""
	case OpClaim, OpStartItem, OpRelease:
		op.Item, op.User = g.itemOf(in), g.user()
		if in.item != nil && in.item.owner != "" && g.chance(0.6) {
			op.User = in.item.owner
		}
		if in.item != nil && in.item.offeredTo != "" && g.chance(0.5) {
			op.User = in.item.offeredTo
		}
	case OpDelegate:
		op.Item, op.User, op.To = g.itemOf(in), g.user(), g.user()
		if in.item != nil && in.item.owner != "" && g.chance(0.7) {
			op.User = in.item.owner
		}
	case OpReassign:
		op.Item, op.User, op.To = g.itemOf(in), "admin", Clerks[g.pick(len(Clerks))]
	case OpComplete, OpCompleteBad:
		op.Item, op.User = g.itemOf(in), g.user()
		if in.item != nil && in.item.owner != "" && g.chance(0.7) {
			op.User = in.item.owner
		}
		if in.item != nil && in.item.offeredTo != "" && g.chance(0.7) {
			op.User = in.item.offeredTo
		}
		op.Vars = g.goodVars(true)
		if kind == OpCompleteBad {
			op.Vars, _ = g.badVars()
		}
		if g.chance(0.5) {
			op.Key = fmt.Sprintf("c%d", g.rnd.Uint32())
		}
	case OpCompleteAgain:
		var done []*closedItem
		for _, ci := range in.closed {
			if ci.state == workitem.Completed {
				done = append(done, ci)
			}
		}
		if len(done) == 0 {
			op.Kind, op.Item, op.User, op.Vars = OpComplete, g.itemOf(in), g.user(), g.goodVars(true)
			break
		}
		ci := done[len(done)-1-g.pick(min(2, len(done)))]
		op.Item, op.User, op.Key = ci.id, ci.by, ci.key
		op.Vars = decodeCanonical(ci.outputs)
		switch g.pick(3) {
		case 0:
			op.Note = "same outputs"
		case 1:
			op.Vars["note"] = "changed " + fmt.Sprint(g.pick(100))
			op.Note = "other outputs"
		default:
			op.Key = ""
			op.Note = "no key"
		}
	case OpRaceComplete, OpRaceClaim:
		op.Item, op.N = g.itemOf(in), 2+g.pick(7)
		if kind == OpRaceComplete {
			op.Vars = g.goodVars(true)
		}
	case OpSetVars:
		op.Vars = g.goodVars(true)
	case OpSetVarsBad:
		op.Vars, _ = g.badVars()
	case OpRetry, OpSkip:
		switch {
		case in.abnormal && in.abnormalID != 0 && g.chance(0.8):
			op.Activity = in.abnormalID
		case g.chance(0.2):
			op.Activity = NoSuchID
		case in.item != nil && in.item.act != 0 && g.chance(0.5):
			op.Activity = in.item.act
		default:
			op.Activity = g.someActivity(w, i)
		}
		if kind == OpSkip && g.chance(0.5) {
			op.Vars = g.goodVars(false)
		}
	case OpJump:
		targets := []string{ActReview, ActApprove, ActBook, ActChase, ActDone, "Nope"}
		op.To = targets[g.pick(len(targets))]
	case OpRollback:
		targets := []string{ActReview, ActApprove, ActChase}
		op.To = targets[g.pick(len(targets))]
	case OpMigrate:
		op.Dep = w.deploys[g.pick(len(w.deploys))].id
		if g.chance(0.1) {
			op.Dep = NoSuchID
		}
	case OpWithdraw:
		op.User = g.user()
		if in.withdrawable != nil && g.chance(0.6) {
			op.Item, op.User = in.withdrawable.id, in.withdrawable.by
		} else {
			op.Item = g.itemOf(in)
			if len(in.closed) > 0 && g.chance(0.5) {
				ci := in.closed[len(in.closed)-1]
				op.Item, op.User = ci.id, ci.by
			}
		}
	case OpAdvance:
		steps := []time.Duration{time.Minute, 10 * time.Minute, 30 * time.Minute, 59 * time.Minute, time.Hour, 61 * time.Minute, 2 * time.Hour}
		op.D = steps[g.pick(len(steps))]
	case OpRestart:
		op.N = g.pick(4) // instances started just before the engine stops (work in flight)
	case OpRaceDeploy:
		op.N = 2 + g.pick(4)
	}
	if op.Inst < 0 && op.Item != 0 {
		op.Item = NoSuchID
	}
	return op
}

// someActivity is an activity instance id the model knows that is not
// Abnormal: another instance's Abnormal Book, or NoSuchID.
func (g *gen) someActivity(w *world, self int) int64 {
	for _, j := range g.rnd.Perm(len(w.insts)) {
		if j != self && w.insts[j].abnormalID != 0 {
			return w.insts[j].abnormalID
		}
	}
	return NoSuchID
}

// start makes a start: good variables, a hostile business key, mostly a
// fresh idempotency key, sometimes one used before.
func (g *gen) start(w *world) Op {
	op := Op{Kind: OpStart, Inst: len(w.insts), Vars: g.goodVars(true)}
	if g.chance(0.5) {
		op.BKey = hostile[g.pick(len(hostile))]
	}
	if g.chance(0.04) {
		op.BKey = refusedKeys[g.pick(len(refusedKeys))]
	}
	if len(w.byKey) > 0 && g.chance(0.1) {
		keys := slices.Sorted(maps.Keys(w.byKey))
		op.Key = keys[g.pick(len(keys))]
		op.Note = "key used before"
		return op
	}
	g.keys++
	op.Key = fmt.Sprintf("k%d", g.keys)
	return op
}

// decodeCanonical reads outputs back from their canonical JSON, with the
// Go types of the data fields.
func decodeCanonical(s string) map[string]any {
	out := map[string]any{}
	var raw map[string]any
	if err := json.Unmarshal([]byte(s), &raw); err != nil {
		return out
	}
	keys := make([]string, 0, len(raw))
	for k := range raw {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		v := raw[k]
		if f, ok := v.(float64); ok && k == "amount" {
			v = int64(f)
		}
		out[k] = v
	}
	return out
}
