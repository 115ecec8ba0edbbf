package main

import (
	"context"

	"github.com/goxpdl/goxpdl/engine"
	"github.com/goxpdl/goxpdl/workitem"
)

// The engine's read API pages every list; run reads whole lists of one
// instance tree, page by page.

// allActivities returns every activity instance of process instance id.
func allActivities(ctx context.Context, e *engine.Engine, id int64) ([]engine.ActivityInstance, error) {
	var out []engine.ActivityInstance
	f := engine.ActivityFilter{Instance: id, Limit: 1000}
	for {
		page, err := e.Activities(ctx, f)
		if err != nil {
			return nil, err
		}
		out = append(out, page.Activities...)
		if page.Next == 0 {
			return out, nil
		}
		f.After = page.Next
	}
}

// openWorkItems returns the open work items of process instance id.
func openWorkItems(ctx context.Context, e *engine.Engine, id int64) ([]engine.WorkItem, error) {
	var out []engine.WorkItem
	f := engine.WorkItemFilter{Instance: id, States: workitem.OpenStates, Limit: 1000}
	for {
		page, err := e.WorkItems(ctx, f)
		if err != nil {
			return nil, err
		}
		out = append(out, page.WorkItems...)
		if page.Next == 0 {
			return out, nil
		}
		f.After = page.Next
	}
}

// allTimers returns the timers of process instance id, earliest due
// first.
func allTimers(ctx context.Context, e *engine.Engine, id int64) ([]engine.Timer, error) {
	var out []engine.Timer
	f := engine.TimerFilter{Instance: id, Limit: 1000}
	for {
		page, err := e.Timers(ctx, f)
		if err != nil {
			return nil, err
		}
		out = append(out, page.Timers...)
		if page.Next == "" {
			return out, nil
		}
		f.After = page.Next
	}
}
