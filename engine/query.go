package engine

import (
	"context"
	"errors"

	"github.com/goxpdl/goxpdl/store"
	"github.com/goxpdl/goxpdl/workitem"
)

// The rows the engine's read API returns are the store's.
type (
	// ActivityInstance is one execution of an activity.
	ActivityInstance = store.ActivityInstance
	// WorkItem is a piece of work offered to a person.
	WorkItem = store.WorkItem
	// Timer is a durable timer: a deadline, a limit, a timer event or a
	// reminder.
	Timer = store.Timer
)

// Instance returns a process instance.
func (e *Engine) Instance(ctx context.Context, id int64) (ProcessInstance, error) {
	row, err := e.store.GetProcessInstance(ctx, id)
	if errors.Is(err, store.ErrNotFound) {
		return ProcessInstance{}, notFound("process instance", id)
	}
	if err != nil {
		return ProcessInstance{}, err
	}
	return e.instanceOf(ctx, row)
}

// Activities returns every activity instance of a process instance, in
// creation order.
func (e *Engine) Activities(ctx context.Context, id int64) ([]ActivityInstance, error) {
	if _, err := e.Instance(ctx, id); err != nil {
		return nil, err
	}
	return e.store.ListActivityInstances(ctx, store.ListActivityInstancesParams{ProcessInstanceID: id})
}

// Variables returns the values of a process instance's data fields and
// formal parameters, by id, in their Go form (see vars.go).
func (e *Engine) Variables(ctx context.Context, id int64) (map[string]any, error) {
	if _, err := e.Instance(ctx, id); err != nil {
		return nil, err
	}
	stored, err := e.store.GetVariables(ctx, id)
	if err != nil {
		return nil, err
	}
	out := make(map[string]any, len(stored))
	for name, sv := range stored {
		v, err := decodeVariable(sv)
		if err != nil {
			return nil, err
		}
		out[name] = v
	}
	return out, nil
}

// WorkItems lists work items, in id order, filtered as in
// store.ListWorkItemsParams (by process instance, by state).
func (e *Engine) WorkItems(ctx context.Context, filter store.ListWorkItemsParams) ([]WorkItem, error) {
	return e.store.ListWorkItems(ctx, filter)
}

// Timers returns the timers of a process instance that have not gone
// with their activity: pending, paused (the process is suspended) or
// fired, earliest due first.
func (e *Engine) Timers(ctx context.Context, id int64) ([]Timer, error) {
	return e.store.ListTimers(ctx, store.ListTimersParams{ProcessInstanceID: id})
}

// WorkItemFilter selects the open work items of one process instance.
func WorkItemFilter(processInstanceID int64) store.ListWorkItemsParams {
	states := make([]string, len(workitem.OpenStates))
	for i, s := range workitem.OpenStates {
		states[i] = string(s)
	}
	return store.ListWorkItemsParams{ProcessInstanceID: processInstanceID, States: states}
}
