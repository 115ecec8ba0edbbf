package engine

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/goxpdl/goxpdl/store"
	"github.com/goxpdl/goxpdl/wftype"
	"github.com/goxpdl/goxpdl/workitem"
)

// The read API. Every list call has one shape: a filter in, one page
// out. A filter's zero fields do not filter; After is the cursor (the
// Next of the previous page, the zero value for the first page) and
// Limit the page size (default 100, at most 1000). A page's Next is the
// cursor of the following page, the zero value when it is the last. A
// filter that names an unknown state or has a negative cursor or limit is
// refused with ErrBadFilter. The types returned are the engine's own,
// converted from the store's rows here and in filter.go.

// ActivityInstance is one execution of an activity of a process instance.
type ActivityInstance struct {
	ID int64 `json:"id"`
	// Instance is the process instance.
	Instance int64 `json:"instance"`
	// Activity and ActivityName are the XPDL Activity's id and name.
	Activity     string `json:"activity"`
	ActivityName string `json:"activityName,omitempty"`
	// ActivitySet is the ActivitySet of the activity and Block the block
	// activity instance running it; "" and 0 at the top level.
	ActivitySet string `json:"activitySet,omitempty"`
	Block       int64  `json:"block,omitempty"`
	// State is where the activity is in its life cycle; Diagnosis
	// explains an Abnormal state.
	State     wftype.ActivityState `json:"state"`
	Diagnosis string               `json:"diagnosis,omitempty"`
	// Attempt counts the executions of the activity (retries).
	Attempt int `json:"attempt"`
	// Loop is, for one instance (iteration) of a looping activity, the
	// activity instance of the loop as a whole, and LoopIndex numbers the
	// iterations from 1; 0 otherwise.
	Loop      int64 `json:"loop,omitempty"`
	LoopIndex int   `json:"loopIndex,omitempty"`
	// Outputs are, for a completed instance of a loop, the values it
	// handed back (Engine.LoopResults has them with its vote); nil
	// otherwise.
	Outputs map[string]any `json:"outputs,omitempty"`
	// CreatedAt is when the activity instance was created, UpdatedAt when
	// it last changed, EndedAt when it reached a final state.
	CreatedAt time.Time  `json:"createdAt"`
	UpdatedAt time.Time  `json:"updatedAt"`
	EndedAt   *time.Time `json:"endedAt,omitempty"`
	// Revision counts the changes of the activity instance.
	Revision int64 `json:"revision"`
}

// ActivityFilter selects the activity instances of one process instance.
type ActivityFilter struct {
	// Instance is the process instance; required.
	Instance int64
	// States keeps activities in one of these states.
	States []wftype.ActivityState
	// After is the cursor: the Next of the previous page.
	After int64
	// Limit is the page size; default 100, at most 1000.
	Limit int
}

// ActivityPage is one page of activity instances, in creation order.
// Next is the cursor of the next page; 0 when this is the last.
type ActivityPage struct {
	Activities []ActivityInstance `json:"activities"`
	Next       int64              `json:"next,omitempty"`
}

// Principal is someone a work item can be offered to: a user, or a role
// or organisational unit that users belong to.
type Principal = store.Principal

// The kinds of principals.
const (
	PrincipalUser = store.PrincipalUser
	PrincipalRole = store.PrincipalRole
	PrincipalUnit = store.PrincipalUnit
)

// WorkItem is a piece of work offered to people for a manual activity.
type WorkItem struct {
	ID int64 `json:"id"`
	// Instance and ActivityInstance are the process and activity
	// instances waiting for the item.
	Instance         int64 `json:"instance"`
	ActivityInstance int64 `json:"activityInstance"`
	// Process and Activity are the WorkflowProcess's and the Activity's
	// ids; ActivityName is the activity's name, the item's display name.
	Process      string `json:"process"`
	Activity     string `json:"activity"`
	ActivityName string `json:"activityName,omitempty"`
	// State is where the item is in its life cycle (package workitem);
	// SuspendedFrom is the state a Suspended item returns to on resume.
	State         workitem.State `json:"state"`
	SuspendedFrom workitem.State `json:"suspendedFrom,omitempty"`
	// Performer is the participant the item is for, Assignees the
	// principals it is offered to, Owner the user holding it ("" while
	// it is offered).
	Performer string      `json:"performer,omitempty"`
	Assignees []Principal `json:"assignees,omitempty"`
	Owner     string      `json:"owner,omitempty"`
	// Priority orders worklists, higher first; DueAt is when the item
	// should be done (nil: no deadline).
	Priority int        `json:"priority"`
	DueAt    *time.Time `json:"dueAt,omitempty"`
	// CompletedBy is who completed the item and Result the outputs they
	// gave; zero until it is completed.
	CompletedBy string         `json:"completedBy,omitempty"`
	Result      map[string]any `json:"result,omitempty"`
	// CreatedAt is when the item was created, UpdatedAt when it last
	// changed, EndedAt when it was completed or withdrawn.
	CreatedAt time.Time  `json:"createdAt"`
	UpdatedAt time.Time  `json:"updatedAt"`
	EndedAt   *time.Time `json:"endedAt,omitempty"`
	// Revision counts the changes of the item.
	Revision int64 `json:"revision"`
}

// WorkItemFilter selects work items. Zero fields do not filter; the open
// items of one instance are WorkItemFilter{Instance: id, States:
// workitem.OpenStates}. What a user may take (through their roles and
// units too) is their worklist: Engine.Worklist.
type WorkItemFilter struct {
	// Instance keeps the items of this process instance, and
	// ActivityInstance those of this activity instance.
	Instance         int64
	ActivityInstance int64
	// States keeps items in one of these states.
	States []workitem.State
	// Owner keeps the items this user holds (allocated or started).
	Owner string
	// Performer keeps the items for this participant.
	Performer string
	// Activity keeps the items of the XPDL activity with this id.
	Activity string
	// DueBefore keeps the items due before this time (with
	// Engine.Now, the overdue ones); items without a deadline are
	// never due.
	DueBefore *time.Time
	// VisibleTo keeps the items in this principal's worklist: the open
	// items offered to the user, role or unit and held by nobody, and,
	// for a user, the open items they hold. (A user's whole worklist,
	// through their roles and units, is Engine.Worklist.)
	VisibleTo *Principal
	// After is the cursor: the Next of the previous page.
	After int64
	// Limit is the page size; default 100, at most 1000.
	Limit int
}

// WorkItemPage is one page of work items, oldest first. Next is the
// cursor of the next page; 0 when this is the last.
type WorkItemPage struct {
	WorkItems []WorkItem `json:"workitems"`
	Next      int64      `json:"next,omitempty"`
}

// TimerKind says what a timer is for.
type TimerKind string

// The kinds of timers.
const (
	// TimerDeadline is an activity's Deadline.
	TimerDeadline TimerKind = timerDeadline
	// TimerLimit is an activity's Limit (timed completion).
	TimerLimit TimerKind = timerLimit
	// TimerProcessLimit is the Limit of the whole process.
	TimerProcessLimit TimerKind = timerProcessLimit
	// TimerEvent is an intermediate timer event in the flow.
	TimerEvent TimerKind = timerEvent
	// TimerBoundary is a timer event attached to an activity.
	TimerBoundary TimerKind = timerBoundary
	// TimerReminder is an overdue reminder of a manual activity.
	TimerReminder TimerKind = timerReminder
	// TimerStart is a deployment's timer start event.
	TimerStart TimerKind = timerStart
)

// TimerState is the state of a durable timer.
type TimerState string

// The timer states.
const (
	// TimerPending timers fire when they are due.
	TimerPending = TimerState(store.TimerPending)
	// TimerPaused timers belong to a suspended process: they keep the
	// time they had left and fire only after it resumes.
	TimerPaused = TimerState(store.TimerPaused)
	// TimerFired timers have fired and wait to be handled.
	TimerFired = TimerState(store.TimerFired)
)

// Timer is a durable timer: a deadline, a limit, a timer event, a
// reminder or a deployment's timer start event.
type Timer struct {
	ID int64 `json:"id"`
	// Instance and ActivityInstance are what the timer belongs to: 0 for
	// a deployment's start timer, ActivityInstance 0 for a timer of the
	// whole process. Deployment is a start timer's deployment.
	Instance         int64     `json:"instance,omitempty"`
	ActivityInstance int64     `json:"activityInstance,omitempty"`
	Deployment       int64     `json:"deployment,omitempty"`
	Kind             TimerKind `json:"kind"`
	// Key names the element the timer was armed for: a deadline's index,
	// an event's activity id.
	Key   string     `json:"key,omitempty"`
	State TimerState `json:"state"`
	// DueAt is when the timer fires (never before); PausedAt when a
	// paused timer was paused.
	DueAt    time.Time  `json:"dueAt"`
	PausedAt *time.Time `json:"pausedAt,omitempty"`
	// Count is how many times a repeating timer fired before this one.
	Count int `json:"count,omitempty"`
	// CreatedAt is when the timer was armed, FiredAt when it fired.
	CreatedAt time.Time  `json:"createdAt"`
	FiredAt   *time.Time `json:"firedAt,omitempty"`
}

// TimerFilter selects timers. Zero fields do not filter.
type TimerFilter struct {
	// Instance keeps the timers of this process instance, and
	// ActivityInstance those of this activity instance.
	Instance         int64
	ActivityInstance int64
	// Deployment keeps the start timers of this deployment (Deploy's
	// Deployment.ID).
	Deployment int64
	// States keeps timers in one of these states, Kinds those of one of
	// these kinds.
	States []TimerState
	Kinds  []TimerKind
	// After is the cursor: the Next of the previous page.
	After string
	// Limit is the page size; default 100, at most 1000.
	Limit int
}

// TimerPage is one page of timers, earliest due first (then in arming
// order). Next is the cursor of the next page, opaque; "" when this is
// the last.
type TimerPage struct {
	Timers []Timer `json:"timers"`
	Next   string  `json:"next,omitempty"`
}

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

// Activities lists the activity instances of a process instance, in
// creation order, one page at a time.
func (e *Engine) Activities(ctx context.Context, f ActivityFilter) (ActivityPage, error) {
	if err := checkPage(f.After, f.Limit); err != nil {
		return ActivityPage{}, err
	}
	limit := pageLimit(f.Limit)
	params := store.ListActivityInstancesParams{ProcessInstanceID: f.Instance, AfterID: f.After, Limit: limit + 1}
	for _, s := range f.States {
		if !slices.Contains(wftype.ActivityStates, s) {
			return ActivityPage{}, fmt.Errorf("%w: unknown activity state %q", ErrBadFilter, s)
		}
		params.States = append(params.States, string(s))
	}
	row, err := e.store.GetProcessInstance(ctx, f.Instance)
	if errors.Is(err, store.ErrNotFound) {
		return ActivityPage{}, notFound("process instance", f.Instance)
	}
	if err != nil {
		return ActivityPage{}, err
	}
	rows, err := e.store.ListActivityInstances(ctx, params)
	if err != nil {
		return ActivityPage{}, err
	}
	var page ActivityPage
	if len(rows) > limit {
		rows = rows[:limit]
		page.Next = rows[limit-1].ID
	}
	names := e.activityNames(ctx, row.DefinitionID, row.ProcessDefID)
	page.Activities = make([]ActivityInstance, len(rows))
	for i, r := range rows {
		page.Activities[i] = activityRow(r, names)
	}
	return page, nil
}

// activityNames maps the activity ids of a process to their names; empty
// when the definition cannot be read (the names are for display).
func (e *Engine) activityNames(ctx context.Context, definitionID int64, process string) map[string]string {
	names := map[string]string{}
	if dep, err := e.definition(ctx, e.store, definitionID); err == nil {
		if proc := dep.pkg.Process(process); proc != nil {
			for _, f := range proc.Flows() {
				for _, a := range f.Activities {
					names[a.ID] = a.Name
				}
			}
		}
	}
	return names
}

func activityRow(r store.ActivityInstance, names map[string]string) ActivityInstance {
	a := ActivityInstance{
		ID: r.ID, Instance: r.ProcessInstanceID, Activity: r.ActivityDefID, ActivityName: names[r.ActivityDefID],
		ActivitySet: r.ActivitySetID, State: wftype.ActivityState(r.State), Diagnosis: r.Diagnosis, Attempt: r.Attempt,
		LoopIndex: r.LoopIndex, CreatedAt: r.CreatedAt, UpdatedAt: r.UpdatedAt, EndedAt: r.EndedAt, Revision: r.Version,
	}
	if r.BlockInstanceID != nil {
		a.Block = *r.BlockInstanceID
	}
	if r.LoopParentID != nil {
		a.Loop = *r.LoopParentID
	}
	if st, ok := instanceStateOf(r); ok {
		a.Outputs = st.Outputs
	}
	return a
}

// Variables returns the values of a process instance's data fields and
// formal parameters, by id, in their Go form (see vars.go).
func (e *Engine) Variables(ctx context.Context, id int64) (map[string]any, error) {
	if _, err := e.store.GetProcessInstance(ctx, id); err != nil {
		if errors.Is(err, store.ErrNotFound) {
			return nil, notFound("process instance", id)
		}
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

// WorkItems lists the work items the filter selects, one page at a time.
func (e *Engine) WorkItems(ctx context.Context, f WorkItemFilter) (WorkItemPage, error) {
	if err := checkPage(f.After, f.Limit); err != nil {
		return WorkItemPage{}, err
	}
	limit := pageLimit(f.Limit)
	params := store.ListWorkItemsParams{
		ProcessInstanceID: f.Instance, ActivityInstanceID: f.ActivityInstance, Owner: f.Owner, Performer: f.Performer,
		ActivityDefID: f.Activity, AfterID: f.After, Limit: limit + 1,
	}
	if f.DueBefore != nil {
		t := f.DueBefore.UTC()
		params.DueBefore = &t
	}
	if p := f.VisibleTo; p != nil {
		if p.ID == "" || (p.Kind != PrincipalUser && p.Kind != PrincipalRole && p.Kind != PrincipalUnit) {
			return WorkItemPage{}, fmt.Errorf("%w: VisibleTo %q:%q is not a user, role or unit", ErrBadFilter, p.Kind, p.ID)
		}
		params.VisibleTo = p
	}
	for _, s := range f.States {
		if !slices.Contains(workitem.States, s) {
			return WorkItemPage{}, fmt.Errorf("%w: unknown work item state %q", ErrBadFilter, s)
		}
		params.States = append(params.States, string(s))
	}
	rows, err := e.store.ListWorkItems(ctx, params)
	if err != nil {
		return WorkItemPage{}, err
	}
	var page WorkItemPage
	if len(rows) > limit {
		rows = rows[:limit]
		page.Next = rows[limit-1].ID
	}
	page.WorkItems = workItemsOf(rows)
	return page, nil
}

// WorkItem returns one work item, in any state.
func (e *Engine) WorkItem(ctx context.Context, id int64) (WorkItem, error) {
	row, err := e.store.GetWorkItem(ctx, id)
	if errors.Is(err, store.ErrNotFound) {
		return WorkItem{}, notFound("work item", id)
	} else if err != nil {
		return WorkItem{}, err
	}
	return workItemOf(row), nil
}

func workItemsOf(rows []store.WorkItem) []WorkItem {
	out := make([]WorkItem, len(rows))
	for i, r := range rows {
		out[i] = workItemOf(r)
	}
	return out
}

func workItemOf(r store.WorkItem) WorkItem {
	wi := WorkItem{
		ID: r.ID, Instance: r.ProcessInstanceID, ActivityInstance: r.ActivityInstanceID, Process: r.ProcessDefID,
		Activity: r.ActivityDefID, ActivityName: r.Name, State: workitem.State(r.State),
		SuspendedFrom: workitem.State(r.SuspendedFrom), Performer: r.Performer, Assignees: r.Assignees, Owner: r.Owner,
		Priority: r.Priority, DueAt: r.DueAt, CompletedBy: r.CompletedBy, CreatedAt: r.CreatedAt,
		UpdatedAt: r.UpdatedAt, EndedAt: r.EndedAt, Revision: r.Version,
	}
	if len(r.Result) > 0 {
		_ = json.Unmarshal(r.Result, &wi.Result) // written by the engine as a JSON object
	}
	return wi
}

// openItems selects the open work items of one process instance.
func openItems(processInstanceID int64) store.ListWorkItemsParams {
	states := make([]string, len(workitem.OpenStates))
	for i, s := range workitem.OpenStates {
		states[i] = string(s)
	}
	return store.ListWorkItemsParams{ProcessInstanceID: processInstanceID, States: states}
}

// Timers lists the timers the filter selects, earliest due first, one
// page at a time. A process instance's timers are those that have not
// gone with their activity: pending, paused (the process is suspended)
// or fired.
func (e *Engine) Timers(ctx context.Context, f TimerFilter) (TimerPage, error) {
	if err := checkPage(0, f.Limit); err != nil {
		return TimerPage{}, err
	}
	limit := pageLimit(f.Limit)
	params := store.ListTimersParams{
		ProcessInstanceID: f.Instance, ActivityInstanceID: f.ActivityInstance, DefinitionID: f.Deployment, Limit: limit + 1,
	}
	for _, s := range f.States {
		if s != TimerPending && s != TimerPaused && s != TimerFired {
			return TimerPage{}, fmt.Errorf("%w: unknown timer state %q", ErrBadFilter, s)
		}
		params.States = append(params.States, store.TimerState(s))
	}
	for _, k := range f.Kinds {
		params.Kinds = append(params.Kinds, string(k))
	}
	if f.After != "" {
		c, err := decodeTimerCursor(f.After)
		if err != nil {
			return TimerPage{}, err
		}
		params.After = &c
	}
	rows, err := e.store.ListTimers(ctx, params)
	if err != nil {
		return TimerPage{}, err
	}
	var page TimerPage
	if len(rows) > limit {
		rows = rows[:limit]
		last := rows[limit-1]
		page.Next = strconv.FormatInt(last.DueAt.UnixMicro(), 10) + "." + strconv.FormatInt(last.ID, 10)
	}
	page.Timers = timersOf(rows)
	return page, nil
}

// decodeTimerCursor reads a TimerPage.Next: "due.id", the due time in
// Unix microseconds (the store's precision).
func decodeTimerCursor(s string) (store.TimerCursor, error) {
	due, id, ok := strings.Cut(s, ".")
	if ok {
		us, err1 := strconv.ParseInt(due, 10, 64)
		n, err2 := strconv.ParseInt(id, 10, 64)
		if err1 == nil && err2 == nil && n > 0 {
			return store.TimerCursor{DueAt: time.UnixMicro(us).UTC(), ID: n}, nil
		}
	}
	return store.TimerCursor{}, fmt.Errorf("%w: malformed timer cursor %q", ErrBadFilter, s)
}

func timersOf(rows []store.Timer) []Timer {
	out := make([]Timer, len(rows))
	for i, r := range rows {
		out[i] = timerOf(r)
	}
	return out
}

func timerOf(r store.Timer) Timer {
	return Timer{
		ID: r.ID, Instance: r.ProcessInstanceID, ActivityInstance: r.ActivityInstanceID, Deployment: r.DefinitionID,
		Kind: TimerKind(r.Kind), Key: r.Key, State: TimerState(r.State), DueAt: r.DueAt, PausedAt: r.PausedAt,
		Count: r.Count, CreatedAt: r.CreatedAt, FiredAt: r.FiredAt,
	}
}
