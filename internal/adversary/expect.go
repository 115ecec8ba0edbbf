package adversary

import (
	"fmt"
	"maps"
	"math"
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/goxpdl/goxpdl/engine"
	"github.com/goxpdl/goxpdl/wftype"
	"github.com/goxpdl/goxpdl/workitem"
)

// expectation is what the model says of an operation: the refusal it
// must meet (nil: it succeeds), and, when it succeeds, how it changes
// the world. apply returns a problem when the engine's answer itself
// contradicts the model (a repeated start that returned another id).
type expectation struct {
	want  error
	apply func(w *world, res *result) string
}

func refuse(err error) expectation { return expectation{want: err} }

// succeed is an expectation of success that changes instance i with fn.
func succeed(i int, fn func(w *world, in *inst, res *result) string) expectation {
	return expectation{apply: func(w *world, res *result) string { return fn(w, w.insts[i], res) }}
}

// result is what the engine answered.
type result struct {
	err   error
	id    int64               // a start's instance
	ids   []int64             // the instances a restart started before stopping
	errs  []error             // a race: each goroutine's error
	users []string            // a race: each goroutine's user
	deps  []engine.Deployment // a deploy's versions
}

// checkVars says what a start, a completion or SetVariables refuses in
// vars: the data fields are amount (INTEGER), note and memo (STRING, valid
// UTF-8), ok (BOOLEAN) and rate (FLOAT, finite).
func checkVars(vars map[string]any) error {
	for _, name := range slices.Sorted(maps.Keys(vars)) {
		v := vars[name]
		var ok bool
		switch name {
		case "amount":
			_, ok = v.(int64)
		case "note", "memo":
			s, isString := v.(string)
			ok = isString && utf8.ValidString(s) // JSON could not keep other bytes
		case "ok":
			_, ok = v.(bool)
		case "rate":
			switch f := v.(type) {
			case float64:
				ok = !math.IsNaN(f) && !math.IsInf(f, 0)
			case int64:
				ok = true
			}
		default:
			return engine.ErrUnknownVariable
		}
		if !ok {
			return engine.ErrWrongType
		}
	}
	return nil
}

// typedVars are vars as the engine stores them (a FLOAT is a float64).
func typedVars(vars map[string]any) map[string]any {
	out := maps.Clone(vars)
	if n, ok := out["rate"].(int64); ok {
		out["rate"] = float64(n)
	}
	return out
}

// mayTake says whether user may take item it.
func mayTake(it *item, user string) bool {
	if it.offeredTo != "" {
		return user == it.offeredTo
	}
	return slices.Contains(Clerks, user)
}

// find returns the open or closed work item id of in.
func (in *inst) find(id int64) (*item, *closedItem) {
	if in.item != nil && in.item.id == id && id != 0 {
		return in.item, nil
	}
	for _, ci := range in.closed {
		if ci.id == id {
			return nil, ci
		}
	}
	return nil, nil
}

// owner finds the instance of work item id, -1 for none.
func (w *world) owner(id int64) int {
	for i, in := range w.insts {
		if it, ci := in.find(id); it != nil || ci != nil {
			return i
		}
	}
	return -1
}

// itemCommand is the expectation of a life-cycle command on a work item
// (claim, start, release, delegate, reassign), in the order the engine
// checks: the item exists, its process has not finished, the command is
// legal in the item's state, the user may do it.
func itemCommand(w *world, op Op, cmd workitem.Command) expectation {
	i := w.owner(op.Item)
	if op.Inst < 0 || i < 0 {
		return refuse(engine.ErrNotFound)
	}
	in := w.insts[i]
	if in.state.IsFinal() {
		return refuse(wftype.ErrInstanceFinished)
	}
	it, _ := in.find(op.Item)
	if it == nil {
		return refuse(wftype.ErrIllegalState) // completed or withdrawn
	}
	to, err := workitem.Next(it.state, cmd, it.from)
	if err != nil {
		return refuse(wftype.ErrIllegalState)
	}
	if in.state != wftype.ProcessRunning && cmd != workitem.Reassign {
		return refuse(wftype.ErrIllegalState)
	}
	switch cmd {
	case workitem.Allocate:
		if !mayTake(it, op.User) {
			return refuse(engine.ErrNotAllowed)
		}
	case workitem.Start, workitem.Release:
		if it.owner != op.User {
			return refuse(engine.ErrNotAllowed)
		}
	case workitem.Delegate:
		if it.owner != op.User || !mayTake(it, op.To) {
			return refuse(engine.ErrNotAllowed)
		}
	}
	return succeed(i, func(_ *world, in *inst, _ *result) string {
		it := in.item
		it.state = to
		switch cmd {
		case workitem.Allocate:
			it.owner = op.User
		case workitem.Release:
			it.owner = ""
		case workitem.Delegate:
			it.owner = op.To
		case workitem.Reassign:
			it.owner, it.offeredTo = "", op.To
		}
		return ""
	})
}

// complete is the expectation of CompleteWorkItem, in the engine's order:
// a repeated completion with the item's key is answered first, then the
// process must not have finished, the item be open and not suspended, the
// user hold it or may take it, and the outputs fit.
func complete(w *world, op Op, user string) expectation {
	i := w.owner(op.Item)
	if op.Inst < 0 || i < 0 {
		return refuse(engine.ErrNotFound)
	}
	in := w.insts[i]
	it, ci := in.find(op.Item)
	if ci != nil && ci.state == workitem.Completed && op.Key != "" && op.Key == ci.key {
		if checkVars(op.Vars) != nil || canonical(typedVars(op.Vars)) != ci.outputs {
			return refuse(engine.ErrCompletedDifferently)
		}
		return succeed(i, func(*world, *inst, *result) string { return "" })
	}
	if in.state.IsFinal() {
		return refuse(wftype.ErrInstanceFinished)
	}
	if it == nil || it.state == workitem.Suspended || in.state != wftype.ProcessRunning {
		return refuse(wftype.ErrIllegalState)
	}
	if (it.state == workitem.Offered && !mayTake(it, user)) || (it.state != workitem.Offered && it.owner != user) {
		return refuse(engine.ErrNotAllowed)
	}
	if err := checkVars(op.Vars); err != nil {
		return refuse(err)
	}
	return succeed(i, func(w *world, in *inst, _ *result) string {
		in.completeItem(w, user, op.Key, typedVars(op.Vars))
		return ""
	})
}

// instanceOf is the instance an instance command names, or its refusal.
func instanceOf(w *world, op Op) (int, *inst, error) {
	if op.Inst < 0 {
		return -1, nil, engine.ErrNotFound
	}
	return op.Inst, w.insts[op.Inst], nil
}

// expect says what the model expects of op.
func expect(w *world, op Op) expectation {
	switch op.Kind {
	case OpStart, OpStartBad:
		return expectStart(w, op)
	case OpClaim:
		return itemCommand(w, op, workitem.Allocate)
	case OpStartItem:
		return itemCommand(w, op, workitem.Start)
	case OpRelease:
		return itemCommand(w, op, workitem.Release)
	case OpDelegate:
		return itemCommand(w, op, workitem.Delegate)
	case OpReassign:
		return itemCommand(w, op, workitem.Reassign)
	case OpComplete, OpCompleteBad, OpCompleteAgain:
		return complete(w, op, op.User)
	case OpAdvance:
		return expectation{apply: func(w *world, _ *result) string { w.advance(op.D); return "" }}
	case OpRestart:
		return expectation{apply: func(w *world, res *result) string {
			for j, id := range res.ids {
				if p := w.addInstance(id, restartKey(op, j), "", nil); p != "" {
					return p
				}
			}
			return ""
		}}
	case OpDeploy, OpRaceDeploy:
		return expectation{apply: func(w *world, res *result) string {
			next := w.latest().version + 1
			deps := slices.Clone(res.deps)
			slices.SortFunc(deps, func(a, b engine.Deployment) int { return a.Version - b.Version })
			for _, d := range deps {
				if d.Version != next {
					return fmt.Sprintf("deployed version %d, want %d (versions gapless and distinct)", d.Version, next)
				}
				w.deploys = append(w.deploys, deployment{id: d.ID, version: d.Version})
				next++
			}
			return ""
		}}
	}
	i, in, err := instanceOf(w, op)
	if err != nil {
		return refuse(err)
	}
	switch op.Kind {
	case OpSuspend:
		switch {
		case in.state.IsFinal():
			return refuse(wftype.ErrInstanceFinished)
		case in.state != wftype.ProcessRunning:
			return refuse(wftype.ErrIllegalState)
		}
		return succeed(i, func(w *world, in *inst, _ *result) string { in.suspend(w); return "" })
	case OpResume:
		switch {
		case in.state.IsFinal():
			return refuse(wftype.ErrInstanceFinished)
		case in.state != wftype.ProcessSuspended:
			return refuse(wftype.ErrIllegalState)
		}
		return succeed(i, func(w *world, in *inst, _ *result) string { in.resume(w); return "" })
	case OpTerminate:
		if in.state.IsFinal() {
			return refuse(wftype.ErrInstanceFinished)
		}
		return succeed(i, func(_ *world, in *inst, _ *result) string { in.terminate(); return "" })
	case OpSetVars, OpSetVarsBad:
		if in.state.IsFinal() {
			return refuse(wftype.ErrInstanceFinished)
		}
		if err := checkVars(op.Vars); err != nil {
			return refuse(err)
		}
		return succeed(i, func(_ *world, in *inst, _ *result) string { maps.Copy(in.vars, typedVars(op.Vars)); return "" })
	case OpRetry, OpSkip:
		return expectRepair(w, op, i, in)
	case OpJump:
		if in.state.IsFinal() {
			return refuse(wftype.ErrInstanceFinished)
		}
		if op.To == "Nope" {
			return refuse(engine.ErrCannotMove)
		}
		return succeed(i, func(w *world, in *inst, _ *result) string { in.cancelAll(); in.enter(w, op.To, ""); return "" })
	case OpRollback:
		if in.state.IsFinal() {
			return refuse(wftype.ErrInstanceFinished)
		}
		by, done := in.lastDone[op.To]
		if !done {
			return refuse(engine.ErrCannotMove)
		}
		return succeed(i, func(w *world, in *inst, _ *result) string { in.cancelAll(); in.enter(w, op.To, by); return "" })
	case OpMigrate:
		switch {
		case in.state.IsFinal():
			return refuse(wftype.ErrInstanceFinished)
		case op.Dep == NoSuchID:
			return refuse(engine.ErrNotFound)
		case op.Dep == in.defID:
			return refuse(engine.ErrCannotMigrate)
		}
		return succeed(i, func(w *world, in *inst, _ *result) string {
			for _, d := range w.deploys {
				if d.id == op.Dep {
					in.defID, in.version = d.id, d.version
				}
			}
			return ""
		})
	case OpWithdraw:
		return expectWithdraw(w, op)
	case OpRaceComplete, OpRaceClaim:
		panic("races are expected per goroutine") // runner.race
	}
	panic("adversary: no expectation for " + op.Kind)
}

func expectStart(w *world, op Op) expectation {
	if !utf8.ValidString(op.BKey) || strings.IndexByte(op.BKey, 0) >= 0 || len(op.BKey) > 255 {
		return refuse(engine.ErrBadArgument) // checked before anything else
	}
	if j, used := w.byKey[op.Key]; used && op.Key != "" {
		return expectation{apply: func(w *world, res *result) string {
			if res.id != w.insts[j].id {
				return fmt.Sprintf("a start with key %q used before returned instance %d, want %d", op.Key, res.id, w.insts[j].id)
			}
			return ""
		}}
	}
	if err := checkVars(op.Vars); err != nil {
		return refuse(err)
	}
	return expectation{apply: func(w *world, res *result) string { return w.addInstance(res.id, op.Key, op.BKey, op.Vars) }}
}

// addInstance adds a started instance of the latest version.
func (w *world) addInstance(id int64, key, bkey string, vars map[string]any) string {
	for _, in := range w.insts {
		if in.id == id {
			return fmt.Sprintf("a new start returned instance %d, which an earlier start returned", id)
		}
	}
	d := w.latest()
	in := &inst{id: id, key: key, bkey: bkey, defID: d.id, version: d.version, state: wftype.ProcessRunning,
		vars: initialVars(), lastDone: map[string]string{}}
	maps.Copy(in.vars, typedVars(vars))
	w.insts = append(w.insts, in)
	if key != "" {
		w.byKey[key] = len(w.insts) - 1
	}
	in.enter(w, ActBegin, "")
	return ""
}

// restartKey is the start key of the j-th instance a restart starts.
func restartKey(op Op, j int) string { return fmt.Sprintf("%s-%d", op.Key, j) }

// expectRepair is the expectation of RetryActivity and SkipActivity, in
// the engine's order: the activity exists and is the instance's, the
// instance has not finished, the activity is Abnormal, the instance runs;
// for a skip, the values fit.
func expectRepair(w *world, op Op, i int, in *inst) expectation {
	switch {
	case op.Activity == NoSuchID:
		return refuse(engine.ErrNotFound)
	case w.activityOwner(op.Activity) != i:
		return refuse(engine.ErrWrongInstance)
	case in.state.IsFinal():
		return refuse(wftype.ErrInstanceFinished)
	case op.Activity != in.abnormalID || !in.abnormal:
		return refuse(wftype.ErrIllegalState)
	case in.state != wftype.ProcessRunning:
		return refuse(wftype.ErrIllegalState)
	}
	if op.Kind == OpSkip {
		if err := checkVars(op.Vars); err != nil {
			return refuse(err)
		}
	}
	return succeed(i, func(w *world, in *inst, _ *result) string {
		in.abnormal = false
		id := in.abnormalID
		if op.Kind == OpSkip {
			maps.Copy(in.vars, typedVars(op.Vars))
			in.abnormalID = 0
			in.lastDone[ActBook] = ""
			in.enter(w, ActApprove, "")
			return ""
		}
		in.enter(w, ActBook, "")
		if in.abnormal {
			in.abnormalID = id // the same activity instance, a new attempt
		}
		return ""
	})
}

func itemActivity(in *inst) int64 {
	if in.item == nil {
		return 0
	}
	return in.item.act
}

// activityOwner finds the instance an activity instance id the model
// knows belongs to, -1 for none.
func (w *world) activityOwner(id int64) int {
	for i, in := range w.insts {
		if id != 0 && (in.abnormalID == id || itemActivity(in) == id) {
			return i
		}
	}
	return -1
}

// expectWithdraw is the expectation of Withdraw: the item exists, its
// process has not finished, the user completed it, and the successors
// its completion started have not been taken up. In this process only an
// Approve item whose completion looped back to a Review that is still
// open and offered can be withdrawn (a Review's or Chase's completion
// runs Book at once).
func expectWithdraw(w *world, op Op) expectation {
	i := w.owner(op.Item)
	if op.Inst < 0 || i < 0 {
		return refuse(engine.ErrNotFound)
	}
	in := w.insts[i]
	_, ci := in.find(op.Item)
	switch {
	case in.state.IsFinal():
		return refuse(wftype.ErrInstanceFinished)
	case ci == nil || ci.state != workitem.Completed || ci.by != op.User:
		return refuse(engine.ErrNotAllowed)
	case ci != in.withdrawable || in.item == nil || in.item.state != workitem.Offered:
		return refuse(engine.ErrCannotMove)
	}
	return succeed(i, func(w *world, in *inst, _ *result) string {
		in.cancelAll()
		in.enter(w, ActApprove, op.User)
		return ""
	})
}
