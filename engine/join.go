package engine

import (
	"context"
	"fmt"
	"maps"
	"sort"

	"github.com/goxpdl/goxpdl/engine/flow"
	"github.com/goxpdl/goxpdl/engine/machine"
	"github.com/goxpdl/goxpdl/wftype"
	"github.com/goxpdl/goxpdl/xpdl"
)

// fire delivers the transitions that fired in scope sc to their joins
// and creates the activities that start.
func (r *run) fire(sc flow.Scope, fired []*xpdl.Transition) error {
	for _, t := range fired {
		start, condErr := r.tokens.Arrive(sc, t, r.joinCondition)
		if !start {
			continue
		}
		target := sc.Flow.Activity(t.To)
		if target == nil {
			continue
		}
		if err := r.startJoin(sc, target, condErr); err != nil {
			return err
		}
	}
	return nil
}

// startJoin creates an instance of activity def, which the navigator
// started in scope sc. A non-reentrant activity first withdraws the work
// that can now only lead to it (the race's losers). A Complex join whose
// IncomingCondition failed (condErr) starts Abnormal, for an operator.
func (r *run) startJoin(sc flow.Scope, def *xpdl.Activity, condErr error) error {
	if !def.IsReentrant() {
		if err := r.withdrawLosers(sc, def); err != nil {
			return err
		}
	}
	if isStoreError(condErr) {
		return condErr // the variables could not be read: roll back
	}
	a, err := r.createActivity(sc, def, condErr == nil)
	if err != nil || condErr == nil {
		return err
	}
	if err := r.setActivity(a, machine.ActivityStart, ""); err != nil {
		return err
	}
	return r.failCause(a, CauseCondition, condErr.Error())
}

// withdrawLosers ends the open activities of scope sc that can only lead
// to non-reentrant activity j, which has started: their work items are
// withdrawn, their subflows terminated and their blocks cancelled, and
// they complete without passing anything on. Arrivals waiting at their
// joins are forgotten.
func (r *run) withdrawLosers(sc flow.Scope, j *xpdl.Activity) error {
	losers := flow.Losers(sc.Flow, j)
	if len(losers) == 0 {
		return nil
	}
	r.tokens.Withdraw(sc, losers)
	var withdrawn []string
	for _, a := range r.acts {
		if a.scope.Block != sc.Block || a.scope.Flow != sc.Flow || !losers[a.def.ID] ||
			a.row.State == string(wftype.ActivityCompleted) {
			continue
		}
		if err := r.interrupt(a); err != nil {
			return err
		}
		if err := r.forceComplete(a, "withdrawn: non-reentrant "+j.ID+" started first"); err != nil {
			return err
		}
		withdrawn = append(withdrawn, a.def.ID)
	}
	if len(withdrawn) > 0 {
		sort.Strings(withdrawn)
		r.record(Record{Type: RecordRaceDecided, Activity: j.ID, Detail: fmt.Sprintf("withdrawn: %v", withdrawn)})
	}
	return nil
}

// joinCondition decides a Complex join's IncomingCondition over the
// process variables and arrivals and branches.
func (r *run) joinCondition(j *xpdl.Activity, arrived, inputs int) (bool, error) {
	if j.Route == nil || j.Route.IncomingCondition == "" {
		return false, fmt.Errorf("activity %s has no IncomingCondition", j.ID)
	}
	vars, err := r.variables()
	if err != nil {
		return false, err
	}
	scope := maps.Clone(vars)
	scope["arrivals"], scope["branches"] = arrived, inputs
	ctx, cancel := context.WithTimeout(r.ctx, r.e.cfg.ConditionTimeout)
	defer cancel()
	ok, err := r.e.eval.Condition(ctx, j.Route.IncomingCondition, scope)
	return ok, r.e.conditionLimit(err)
}
