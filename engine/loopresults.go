package engine

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"

	"github.com/goxpdl/goxpdl/store"
	"github.com/goxpdl/goxpdl/wftype"
	"github.com/goxpdl/goxpdl/xpdl"
)

// LoopResults is what the instances of a looping activity handed back
// and, for a countersign, how their votes were counted and decided
// (docs/countersign.md).
type LoopResults struct {
	// Loop is the activity instance of the loop as a whole.
	Loop ActivityInstance `json:"loop"`
	// Instances are the loop's instances (iterations), by Index.
	Instances []InstanceResult `json:"instances"`
	// Countersign is the count of a countersign's votes and its
	// decision; nil for a loop without a goxpdl.Countersign policy.
	Countersign *CountersignOutcome `json:"countersign,omitempty"`
}

// InstanceResult is one instance of a loop and what it handed back.
type InstanceResult struct {
	// ActivityInstance is the instance's activity instance; Index its
	// number in the loop, from 1 (loopCounter).
	ActivityInstance int64 `json:"activityInstance"`
	Index            int   `json:"index"`
	// State and Diagnosis are the instance's.
	State     wftype.ActivityState `json:"state"`
	Diagnosis string               `json:"diagnosis,omitempty"`
	// Outputs are the values it handed back when it completed: a work
	// item's completion outputs, an application's or a subflow's OUT
	// parameters, the variables a script task changed; nil until then.
	Outputs map[string]any `json:"outputs,omitempty"`
	// Ballot is how its vote counted in a countersign; "" when it did
	// not vote (yet).
	Ballot Ballot `json:"ballot,omitempty"`
	// Withdrawn: the instance was ended before it was done (the
	// countersign was decided, the loop was interrupted).
	Withdrawn bool `json:"withdrawn,omitempty"`
}

// LoopResults returns the results of the loop of a looping activity:
// activity is the activity instance of the loop as a whole or of one of
// its instances. An activity instance that belongs to no loop is refused
// with ErrBadArgument; an unknown one with ErrNotFound.
func (e *Engine) LoopResults(ctx context.Context, activity int64) (LoopResults, error) {
	row, err := e.store.GetActivityInstance(ctx, activity)
	if err == nil && row.LoopParentID != nil {
		row, err = e.store.GetActivityInstance(ctx, *row.LoopParentID)
	}
	if errors.Is(err, store.ErrNotFound) {
		return LoopResults{}, notFound("activity instance", activity)
	}
	if err != nil {
		return LoopResults{}, err
	}
	pi, err := e.store.GetProcessInstance(ctx, row.ProcessInstanceID)
	if err != nil {
		return LoopResults{}, err
	}
	def, err := e.activityDef(ctx, pi, row)
	if err != nil {
		return LoopResults{}, err
	}
	if loopOf(def) == nil {
		return LoopResults{}, fmt.Errorf("%w: activity instance %d (%s) is not a loop", ErrBadArgument, row.ID, row.ActivityDefID)
	}
	rows, err := e.store.ListActivityInstances(ctx, store.ListActivityInstancesParams{ProcessInstanceID: row.ProcessInstanceID})
	if err != nil {
		return LoopResults{}, err
	}
	names := map[string]string{def.ID: def.Name}
	out := LoopResults{Loop: activityRow(row, names), Instances: []InstanceResult{}}
	for _, r := range rows {
		if r.LoopParentID == nil || *r.LoopParentID != row.ID {
			continue
		}
		ir := InstanceResult{ActivityInstance: r.ID, Index: r.LoopIndex, State: wftype.ActivityState(r.State), Diagnosis: r.Diagnosis}
		if st, ok := instanceStateOf(r); ok {
			ir.Outputs, ir.Ballot, ir.Withdrawn = st.Outputs, st.Ballot, st.Withdrawn
		}
		out.Instances = append(out.Instances, ir)
	}
	slices.SortFunc(out.Instances, func(a, b InstanceResult) int { return a.Index - b.Index })
	cs, err := countersignOf(def)
	if err != nil || cs == nil {
		return out, nil // a policy that no longer parses has no count to show
	}
	var st loopState
	if len(row.LoopState) > 0 {
		if err := json.Unmarshal(row.LoopState, &st); err != nil {
			return LoopResults{}, fmt.Errorf("activity instance %d: loop state: %w", row.ID, err)
		}
	}
	o := countersignOutcome(cs, st)
	out.Countersign = &o
	return out, nil
}

// activityDef finds the definition of an activity instance's activity.
func (e *Engine) activityDef(ctx context.Context, pi store.ProcessInstance, row store.ActivityInstance) (*xpdl.Activity, error) {
	dep, err := e.definition(ctx, e.store, pi.DefinitionID)
	if err != nil {
		return nil, err
	}
	proc := dep.pkg.Process(pi.ProcessDefID)
	if proc == nil {
		return nil, fmt.Errorf("process instance %d: process %s is not in definition %d", pi.ID, pi.ProcessDefID, pi.DefinitionID)
	}
	f := &proc.Flow
	if row.ActivitySetID != "" {
		set := proc.ActivitySet(row.ActivitySetID)
		if set == nil {
			return nil, fmt.Errorf("activity instance %d: activity set %q not in process %s", row.ID, row.ActivitySetID, proc.ID)
		}
		f = &set.Flow
	}
	def := f.Activity(row.ActivityDefID)
	if def == nil {
		return nil, fmt.Errorf("activity instance %d: activity %s not in process %s", row.ID, row.ActivityDefID, proc.ID)
	}
	return def, nil
}

// instanceStateOf reads what an instance of a loop keeps in its row; ok
// is false for none.
func instanceStateOf(r store.ActivityInstance) (instanceState, bool) {
	var st instanceState
	if r.LoopParentID == nil || len(r.LoopState) == 0 {
		return st, false
	}
	if json.Unmarshal(r.LoopState, &st) != nil {
		return st, false
	}
	return st, true
}
