package statemachine

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/goxpdl/goxpdl/store"
	"github.com/goxpdl/goxpdl/wftype"
	"github.com/goxpdl/goxpdl/workitem"
)

// Visit is one stay of a machine instance in a state, as History tells
// it. A state entered again (a rollback, or a Resume to the same state)
// is a new visit.
type Visit struct {
	// State is the state visited.
	State string `json:"state"`
	// Bookmark is the visit's bookmark; zero for a final state.
	Bookmark Bookmark `json:"bookmark,omitzero"`
	// Entered is when the machine entered the state; Left when it left
	// (nil while it is there, and for a final state).
	Entered time.Time  `json:"entered"`
	Left    *time.Time `json:"left,omitempty"`
	// By is who resumed the bookmark, Input what with, and Next the
	// state it moved to; empty while the machine is there, and when it
	// left otherwise (Withdrawn: the instance was aborted).
	By    string         `json:"by,omitempty"`
	Input map[string]any `json:"input,omitempty"`
	Next  string         `json:"next,omitempty"`
	// Withdrawn: the visit ended without a Resume (Abort, an operator's
	// command).
	Withdrawn bool `json:"withdrawn,omitempty"`
}

// History lists the visits of instance to its states, in order, from
// the work items the engine kept (engine.History has every step of the
// process in detail): what a machine's trail is, rollbacks included.
func (m *Machine) History(ctx context.Context, instance int64) ([]Visit, error) {
	st := m.e.Store()
	pi, err := m.instance(ctx, st, instance)
	if err != nil {
		return nil, err
	}
	var visits []Visit
	for after := int64(0); ; {
		items, err := st.ListWorkItems(ctx, store.ListWorkItemsParams{ProcessInstanceID: instance, AfterID: after, Limit: 500})
		if err != nil {
			return nil, err
		}
		for _, wi := range items {
			v, err := m.visit(wi)
			if err != nil {
				return nil, err
			}
			if n := len(visits); n > 0 && visits[n-1].Left != nil && !visits[n-1].Withdrawn {
				visits[n-1].Next = v.State
			}
			visits = append(visits, v)
		}
		if len(items) < 500 {
			break
		}
		after = items[len(items)-1].ID
	}
	if pi.State == string(wftype.ProcessCompleted) {
		final, err := m.stateVar(ctx, st, instance)
		if err != nil {
			return nil, err
		}
		end := pi.UpdatedAt
		if pi.EndedAt != nil {
			end = *pi.EndedAt
		}
		if n := len(visits); n > 0 {
			visits[n-1].Next = final
		}
		visits = append(visits, Visit{State: final, Entered: end})
	}
	return visits, nil
}

// visit is the visit a state's work item tells.
func (m *Machine) visit(wi store.WorkItem) (Visit, error) {
	v := Visit{State: wi.ActivityDefID, Bookmark: m.bookmark(wi), Entered: wi.CreatedAt, Left: wi.EndedAt}
	switch workitem.State(wi.State) {
	case workitem.Completed:
		v.By = wi.CompletedBy
		var result map[string]json.RawMessage
		if len(wi.Result) > 0 {
			if err := json.Unmarshal(wi.Result, &result); err != nil {
				return v, fmt.Errorf("work item %d: result: %w", wi.ID, err)
			}
		}
		if raw, ok := result[varInput]; ok {
			var input map[string]any
			if err := json.Unmarshal(raw, &input); err != nil {
				return v, fmt.Errorf("work item %d: input: %w", wi.ID, err)
			}
			if in, err := normalInput(input); err == nil {
				v.Input = in
			}
		}
	case workitem.Withdrawn:
		v.Withdrawn = true
	}
	return v, nil
}
