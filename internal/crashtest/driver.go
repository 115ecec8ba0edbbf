package main

import (
	"context"
	"log/slog"
	"sync/atomic"
	"time"

	"github.com/goxpdl/goxpdl/engine"
	"github.com/goxpdl/goxpdl/workitem"
)

// driverPage is how many open work items the driver lists at a time.
const driverPage = 200

// driver completes open work items, as the people of the load would: it
// walks every open item, completes it, pauses, and starts over.
type driver struct {
	e     *engine.Engine
	pause time.Duration
	user  string
	log   *slog.Logger

	// completed, refused (the item or its instance had moved on already:
	// not a failure) and failed count the completions.
	completed, refused, failed atomic.Int64
}

// run drives until ctx ends.
func (d *driver) run(ctx context.Context) {
	for ctx.Err() == nil {
		f := engine.WorkItemFilter{States: workitem.OpenStates, Limit: driverPage}
		for ctx.Err() == nil {
			page, err := d.e.WorkItems(ctx, f)
			if err != nil {
				if ctx.Err() == nil {
					d.log.Warn("driver: list work items failed", "err", err)
				}
				break
			}
			for _, wi := range page.WorkItems {
				d.complete(ctx, wi)
			}
			if page.Next == 0 {
				break
			}
			f.After = page.Next
		}
		if pause(ctx, d.pause) != nil {
			return
		}
	}
}

// complete completes one work item and counts the outcome.
func (d *driver) complete(ctx context.Context, wi engine.WorkItem) {
	_, err := d.e.CompleteWorkItem(ctx, wi.ID, engine.Completion{User: d.user})
	switch {
	case err == nil:
		d.completed.Add(1)
	case ctx.Err() != nil:
	case expectedRefusal(err):
		d.refused.Add(1)
	default:
		d.failed.Add(1)
		d.log.Warn("driver: complete work item failed", "workitem", wi.ID, "activity", wi.Activity, "err", err)
	}
}
