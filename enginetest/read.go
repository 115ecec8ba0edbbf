package enginetest

import (
	"context"

	"github.com/goxpdl/goxpdl/engine"
	"github.com/goxpdl/goxpdl/workitem"
)

// Instance returns the process instance id.
func (h *Harness) Instance(id int64) engine.ProcessInstance {
	h.tb.Helper()
	ctx, cancel := h.bounded()
	defer cancel()
	pi, err := h.e.Instance(ctx, id)
	h.check(err, "read instance %d", id)
	return pi
}

// Vars returns the variables of instance id, by id.
func (h *Harness) Vars(id int64) map[string]any {
	h.tb.Helper()
	ctx, cancel := h.bounded()
	defer cancel()
	v, err := h.e.Variables(ctx, id)
	h.check(err, "read the variables of instance %d", id)
	return v
}

// Activities returns every activity instance of instance id, in the
// order they were created.
func (h *Harness) Activities(id int64) []engine.ActivityInstance {
	h.tb.Helper()
	ctx, cancel := h.bounded()
	defer cancel()
	acts, err := activities(ctx, h.e, id)
	h.check(err, "read the activities of instance %d", id)
	return acts
}

// WorkItems returns the open work items of instance id (offered,
// allocated, started or suspended), oldest first.
func (h *Harness) WorkItems(id int64) []engine.WorkItem {
	h.tb.Helper()
	ctx, cancel := h.bounded()
	defer cancel()
	items, err := workItems(ctx, h.e, engine.WorkItemFilter{Instance: id, States: workitem.OpenStates})
	h.check(err, "read the work items of instance %d", id)
	return items
}

// History returns the whole history of instance id, oldest first.
func (h *Harness) History(id int64) []engine.HistoryEntry {
	h.tb.Helper()
	ctx, cancel := h.bounded()
	defer cancel()
	entries, err := history(ctx, h.e, id, 0)
	h.check(err, "read the history of instance %d", id)
	return entries
}

// Incidents returns the open incidents of instance id.
func (h *Harness) Incidents(id int64) []engine.Incident {
	h.tb.Helper()
	ctx, cancel := h.bounded()
	defer cancel()
	inc, err := incidents(ctx, h.e, id)
	h.check(err, "read the incidents of instance %d", id)
	return inc
}

// Timers returns the pending and paused timers of instance id, earliest
// due first.
func (h *Harness) Timers(id int64) []engine.Timer {
	h.tb.Helper()
	ctx, cancel := h.bounded()
	defer cancel()
	ts, err := timers(ctx, h.e, engine.TimerFilter{Instance: id, States: []engine.TimerState{engine.TimerPending, engine.TimerPaused}})
	h.check(err, "read the timers of instance %d", id)
	return ts
}

// The read API, every page.

// allPages reads every page of a list call from cursor first on: read
// returns the page after a cursor and the next one, the zero cursor on
// the last page.
func allPages[C comparable, T any](first C, read func(after C) ([]T, C, error)) ([]T, error) {
	var out []T
	var last C
	for after := first; ; {
		items, next, err := read(after)
		if err != nil {
			return nil, err
		}
		out = append(out, items...)
		if next == last {
			return out, nil
		}
		after = next
	}
}

// pageSize is how many rows one read of the kit asks for.
const pageSize = 1000

func activities(ctx context.Context, e *engine.Engine, id int64) ([]engine.ActivityInstance, error) {
	return allPages(0, func(after int64) ([]engine.ActivityInstance, int64, error) {
		page, err := e.Activities(ctx, engine.ActivityFilter{Instance: id, After: after, Limit: pageSize})
		return page.Activities, page.Next, err
	})
}

func workItems(ctx context.Context, e *engine.Engine, f engine.WorkItemFilter) ([]engine.WorkItem, error) {
	f.Limit = pageSize
	return allPages(f.After, func(after int64) ([]engine.WorkItem, int64, error) {
		f.After = after
		page, err := e.WorkItems(ctx, f)
		return page.WorkItems, page.Next, err
	})
}

// history reads the history of instance id after entry after (0: all).
func history(ctx context.Context, e *engine.Engine, id, after int64) ([]engine.HistoryEntry, error) {
	return allPages(after, func(after int64) ([]engine.HistoryEntry, int64, error) {
		page, err := e.History(ctx, engine.HistoryFilter{Instance: id, After: after, Limit: pageSize})
		return page.Entries, page.Next, err
	})
}

func incidents(ctx context.Context, e *engine.Engine, id int64) ([]engine.Incident, error) {
	return allPages(0, func(after int64) ([]engine.Incident, int64, error) {
		page, err := e.Incidents(ctx, engine.IncidentFilter{Instance: id, After: after, Limit: pageSize})
		return page.Incidents, page.Next, err
	})
}

func timers(ctx context.Context, e *engine.Engine, f engine.TimerFilter) ([]engine.Timer, error) {
	f.Limit = pageSize
	return allPages(f.After, func(after string) ([]engine.Timer, string, error) {
		f.After = after
		page, err := e.Timers(ctx, f)
		return page.Timers, page.Next, err
	})
}
