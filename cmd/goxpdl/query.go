package main

// Every read of the engine's lists and queries that the operator commands
// make is in this file, and what they print are the row types below, so
// that a change of the engine's query API (filter → page) is a change
// here only.

import (
	"context"
	"fmt"
	"time"

	"github.com/goxpdl/goxpdl/engine"
	"github.com/goxpdl/goxpdl/store"
	"github.com/goxpdl/goxpdl/wftype"
	"github.com/goxpdl/goxpdl/workitem"
)

// definitionRow is one deployed version, as definitions prints it.
type definitionRow struct {
	ID        int64    `json:"id"`
	Package   string   `json:"package"`
	Version   int      `json:"version"`
	Processes []string `json:"processes"`
	// Instances counts its instances by state; absent states have none.
	Instances map[string]int64 `json:"instances"`
}

// listDefinitions lists the deployed versions, by package and version,
// with their instance counts.
func listDefinitions(ctx context.Context, e *engine.Engine) ([]definitionRow, error) {
	versions, err := e.Versions(ctx, "")
	if err != nil {
		return nil, err
	}
	rows := make([]definitionRow, len(versions))
	for i, v := range versions {
		rows[i] = definitionRow{ID: v.ID, Package: v.PackageID, Version: v.Version, Processes: v.Processes, Instances: map[string]int64{}}
		for s, n := range v.Instances {
			rows[i].Instances[string(s)] = n
		}
	}
	return rows, nil
}

// versionOf finds the deployment of version version of package pkg.
func versionOf(ctx context.Context, e *engine.Engine, pkg string, version int) (engine.Deployment, error) {
	versions, err := e.Versions(ctx, pkg)
	if err != nil {
		return engine.Deployment{}, err
	}
	for _, v := range versions {
		if v.Version == version {
			return v.Deployment, nil
		}
	}
	return engine.Deployment{}, &engine.NotFoundError{What: "version", ID: fmt.Sprintf("%d of package %s", version, pkg)}
}

// migratableStates are the states Engine.Migrate accepts.
var migratableStates = []wftype.ProcessState{wftype.ProcessRunning, wftype.ProcessSuspended, wftype.ProcessLocking}

// openInstancesOf lists the instances of a deployment that a migration
// may move: Running, Suspended or Locking.
func openInstancesOf(ctx context.Context, e *engine.Engine, definition int64) ([]int64, error) {
	f := engine.InstanceFilter{DefinitionID: definition, States: migratableStates, Limit: 1000}
	var ids []int64
	for {
		page, err := e.Instances(ctx, f)
		if err != nil {
			return nil, err
		}
		for _, pi := range page.Instances {
			ids = append(ids, pi.ID)
		}
		if page.Next == 0 {
			return ids, nil
		}
		f.After = page.Next
	}
}

// readInstances counts the instances by state and lists up to f.limit of
// them (those f selects). It reads the store itself: "instances" looks at
// a database without starting an engine on it.
func readInstances(ctx context.Context, st store.Store, f instanceFilter) (instancesReport, error) {
	counts, err := st.CountProcessInstancesByState(ctx)
	if err != nil {
		return instancesReport{}, err
	}
	rep := instancesReport{Counts: make(map[string]int64, len(wftype.ProcessStates)), Instances: []instanceRow{}}
	for _, s := range wftype.ProcessStates {
		rep.Counts[string(s)] = counts[string(s)]
		rep.Total += counts[string(s)]
	}
	if f.limit == 0 {
		return rep, nil
	}
	rep.Instances, err = listInstances(ctx, st, f)
	if err != nil {
		return instancesReport{}, err
	}
	return rep, nil
}

// instanceFilter selects the instances "instances" lists.
type instanceFilter struct {
	state, process, businessKey string
	limit                       int
}

// listInstances lists up to f.limit instances, oldest first.
func listInstances(ctx context.Context, st store.Store, f instanceFilter) ([]instanceRow, error) {
	rows := []instanceRow{}
	params := store.ListProcessInstancesParams{ProcessDefID: f.process, BusinessKey: f.businessKey, Limit: min(max(f.limit, 1), 1000)}
	if f.state != "" {
		params.States = []string{f.state}
	}
	for len(rows) < f.limit {
		list, err := st.ListProcessInstances(ctx, params)
		if err != nil {
			return nil, err
		}
		for _, pi := range list {
			rows = append(rows, instanceRow{
				ID: pi.ID, Process: pi.ProcessDefID, Definition: pi.DefinitionID, State: pi.State, Parent: pi.ParentInstanceID,
				BusinessKey: pi.BusinessKey, Diagnosis: pi.Diagnosis, CreatedAt: pi.CreatedAt, UpdatedAt: pi.UpdatedAt, EndedAt: pi.EndedAt,
			})
			if len(rows) == f.limit {
				break
			}
		}
		if len(list) < params.Limit {
			break
		}
		params.AfterID = list[len(list)-1].ID
	}
	return rows, nil
}

func instanceRowOf(pi engine.ProcessInstance) instanceRow {
	r := instanceRow{
		ID: pi.ID, Process: pi.Process, Definition: pi.DefinitionID, State: string(pi.State), BusinessKey: pi.BusinessKey,
		Diagnosis: pi.Diagnosis, CreatedAt: pi.StartedAt, UpdatedAt: pi.UpdatedAt, EndedAt: pi.EndedAt,
	}
	if pi.Parent != 0 {
		parent := pi.Parent
		r.Parent = &parent
	}
	return r
}

// activityRow is an activity instance.
type activityRow struct {
	ID        int64      `json:"id"`
	Activity  string     `json:"activity"`
	State     string     `json:"state"`
	Attempt   int        `json:"attempt,omitempty"`
	Block     *int64     `json:"block,omitempty"`
	Diagnosis string     `json:"diagnosis,omitempty"`
	CreatedAt time.Time  `json:"created_at"`
	EndedAt   *time.Time `json:"ended_at,omitempty"`
}

// workItemRow is a work item.
type workItemRow struct {
	ID               int64      `json:"id"`
	Instance         int64      `json:"instance"`
	ActivityInstance int64      `json:"activity_instance"`
	Process          string     `json:"process"`
	Activity         string     `json:"activity"`
	Name             string     `json:"name,omitempty"`
	State            string     `json:"state"`
	Performer        string     `json:"performer,omitempty"`
	Assignees        []string   `json:"assignees,omitempty"`
	Owner            string     `json:"owner,omitempty"`
	CompletedBy      string     `json:"completed_by,omitempty"`
	Priority         int        `json:"priority,omitempty"`
	DueAt            *time.Time `json:"due_at,omitempty"`
}

func workItemRowOf(wi engine.WorkItem) workItemRow {
	r := workItemRow{
		ID: wi.ID, Instance: wi.Instance, ActivityInstance: wi.ActivityInstance, Process: wi.Process,
		Activity: wi.Activity, Name: wi.ActivityName, State: string(wi.State), Performer: wi.Performer, Owner: wi.Owner,
		CompletedBy: wi.CompletedBy, Priority: wi.Priority, DueAt: wi.DueAt,
	}
	for _, p := range wi.Assignees {
		r.Assignees = append(r.Assignees, string(p.Kind)+":"+p.ID)
	}
	return r
}

// timerRow is a durable timer.
type timerRow struct {
	ID               int64      `json:"id"`
	ActivityInstance int64      `json:"activity_instance,omitempty"`
	Kind             string     `json:"kind"`
	State            string     `json:"state"`
	DueAt            time.Time  `json:"due_at"`
	FiredAt          *time.Time `json:"fired_at,omitempty"`
}

// instanceDetail is what "instances show" prints.
type instanceDetail struct {
	instanceRow
	Activities []activityRow  `json:"activities"`
	Variables  map[string]any `json:"variables"`
	WorkItems  []workItemRow  `json:"workitems"`
	Timers     []timerRow     `json:"timers"`
	Incidents  []incidentRow  `json:"incidents"`
	Children   []instanceRow  `json:"children"`
	History    []historyRow   `json:"history"`
}

// showInstance reads everything about one instance.
func showInstance(ctx context.Context, e *engine.Engine, id int64) (instanceDetail, error) {
	pi, err := e.Instance(ctx, id)
	if err != nil {
		return instanceDetail{}, err
	}
	d := instanceDetail{instanceRow: instanceRowOf(pi), Activities: []activityRow{}, WorkItems: []workItemRow{},
		Timers: []timerRow{}, Incidents: []incidentRow{}, Children: []instanceRow{}}
	af := engine.ActivityFilter{Instance: id, Limit: 1000}
	for {
		page, err := e.Activities(ctx, af)
		if err != nil {
			return instanceDetail{}, err
		}
		for _, a := range page.Activities {
			row := activityRow{ID: a.ID, Activity: a.Activity, State: string(a.State), Attempt: a.Attempt,
				Diagnosis: a.Diagnosis, CreatedAt: a.CreatedAt, EndedAt: a.EndedAt}
			if a.Block != 0 {
				block := a.Block
				row.Block = &block
			}
			d.Activities = append(d.Activities, row)
		}
		if page.Next == 0 {
			break
		}
		af.After = page.Next
	}
	if d.Variables, err = e.Variables(ctx, id); err != nil {
		return instanceDetail{}, err
	}
	wf := engine.WorkItemFilter{Instance: id, Limit: 1000}
	for {
		page, err := e.WorkItems(ctx, wf)
		if err != nil {
			return instanceDetail{}, err
		}
		for _, wi := range page.WorkItems {
			d.WorkItems = append(d.WorkItems, workItemRowOf(wi))
		}
		if page.Next == 0 {
			break
		}
		wf.After = page.Next
	}
	tf := engine.TimerFilter{Instance: id, Limit: 1000}
	for {
		page, err := e.Timers(ctx, tf)
		if err != nil {
			return instanceDetail{}, err
		}
		for _, t := range page.Timers {
			d.Timers = append(d.Timers, timerRow{ID: t.ID, ActivityInstance: t.ActivityInstance, Kind: string(t.Kind), State: string(t.State),
				DueAt: t.DueAt, FiredAt: t.FiredAt})
		}
		if page.Next == "" {
			break
		}
		tf.After = page.Next
	}
	if d.Incidents, err = listIncidents(ctx, e, id, nil, true); err != nil {
		return instanceDetail{}, err
	}
	kf := engine.InstanceFilter{Parent: id, Limit: 1000}
	for {
		kids, err := e.Instances(ctx, kf)
		if err != nil {
			return instanceDetail{}, err
		}
		for _, k := range kids.Instances {
			d.Children = append(d.Children, instanceRowOf(k))
		}
		if kids.Next == 0 {
			break
		}
		kf.After = kids.Next
	}
	if d.History, err = history(ctx, e, id); err != nil {
		return instanceDetail{}, err
	}
	return d, nil
}

// historyRow is one entry of an instance's history.
type historyRow struct {
	ID               int64          `json:"id"`
	Subject          string         `json:"subject"`
	ActivityInstance int64          `json:"activity_instance,omitempty"`
	Activity         string         `json:"activity,omitempty"`
	ActivityName     string         `json:"activity_name,omitempty"`
	WorkItem         int64          `json:"workitem,omitempty"`
	From             string         `json:"from,omitempty"`
	To               string         `json:"to,omitempty"`
	Actor            string         `json:"actor"`
	At               time.Time      `json:"at"`
	Diagnosis        string         `json:"diagnosis,omitempty"`
	Reason           string         `json:"reason,omitempty"`
	Data             map[string]any `json:"data,omitempty"`
	Variable         string         `json:"variable,omitempty"`
	Old              any            `json:"old,omitempty"`
	New              any            `json:"new,omitempty"`
	Detail           map[string]any `json:"detail,omitempty"`
}

// history reads the whole history of an instance, page by page.
func history(ctx context.Context, e *engine.Engine, id int64) ([]historyRow, error) {
	entries := []historyRow{}
	f := engine.HistoryFilter{Instance: id, Limit: 1000}
	for {
		page, err := e.History(ctx, f)
		if err != nil {
			return nil, err
		}
		for _, h := range page.Entries {
			entries = append(entries, historyRow{
				ID: h.ID, Subject: h.Subject, ActivityInstance: h.ActivityInstance, Activity: h.Activity, ActivityName: h.ActivityName,
				WorkItem: h.WorkItem, From: h.From, To: h.To, Actor: h.Actor, At: h.At, Diagnosis: h.Diagnosis, Reason: h.Reason,
				Data: h.Data, Variable: h.Variable, Old: h.Old, New: h.New, Detail: h.Detail,
			})
		}
		if page.Next == 0 {
			return entries, nil
		}
		f.After = page.Next
	}
}

// incidentRow is an incident.
type incidentRow struct {
	ID               int64          `json:"id"`
	Instance         int64          `json:"instance"`
	Process          string         `json:"process,omitempty"`
	ActivityInstance int64          `json:"activity_instance,omitempty"`
	Activity         string         `json:"activity,omitempty"`
	Cause            string         `json:"cause"`
	Error            string         `json:"error"`
	Application      string         `json:"application,omitempty"`
	Params           map[string]any `json:"params,omitempty"`
	Attempts         int            `json:"attempts"`
	FirstFailure     time.Time      `json:"first_failure"`
	LastFailure      time.Time      `json:"last_failure"`
	State            string         `json:"state"`
	ResolvedAt       *time.Time     `json:"resolved_at,omitempty"`
	ResolvedBy       string         `json:"resolved_by,omitempty"`
	Resolution       string         `json:"resolution,omitempty"`
}

// listIncidents reads the incidents of an instance (0: of all), of the
// given causes (nil: all); open ones only unless all.
func listIncidents(ctx context.Context, e *engine.Engine, instance int64, causes []engine.IncidentCause, all bool) ([]incidentRow, error) {
	out := []incidentRow{}
	f := engine.IncidentFilter{Instance: instance, Causes: causes, Limit: 1000}
	if all {
		f.States = []engine.IncidentState{engine.IncidentOpen, engine.IncidentResolved}
	}
	for {
		page, err := e.Incidents(ctx, f)
		if err != nil {
			return nil, err
		}
		for _, inc := range page.Incidents {
			out = append(out, incidentRow{
				ID: inc.ID, Instance: inc.Instance, Process: inc.Process, ActivityInstance: inc.ActivityInstance, Activity: inc.Activity,
				Cause: string(inc.Cause), Error: inc.Error, Application: inc.Application, Params: inc.Params, Attempts: inc.Attempts,
				FirstFailure: inc.FirstFailure, LastFailure: inc.LastFailure, State: string(inc.State), ResolvedAt: inc.ResolvedAt,
				ResolvedBy: inc.ResolvedBy, Resolution: inc.Resolution,
			})
		}
		if page.Next == 0 {
			return out, nil
		}
		f.After = page.Next
	}
}

// incidentCounts counts the open incidents by cause.
func incidentCounts(ctx context.Context, e *engine.Engine) (map[string]int64, error) {
	counts, err := e.IncidentCounts(ctx)
	if err != nil {
		return nil, err
	}
	out := make(map[string]int64, len(counts))
	for c, n := range counts {
		out[string(c)] = n
	}
	return out, nil
}

// listWorkItems lists the open work items: user's worklist (those offered
// to them, directly or through their roles and units, and those they
// hold) when user is not empty, else every open item.
func listWorkItems(ctx context.Context, e *engine.Engine, user string) ([]workItemRow, error) {
	rows := []workItemRow{}
	if user != "" {
		q := engine.WorklistFilter{Limit: 1000}
		for {
			page, err := e.Worklist(ctx, user, q)
			if err != nil {
				return nil, err
			}
			for _, wi := range page.WorkItems {
				rows = append(rows, workItemRowOf(wi))
			}
			if page.Next == "" {
				return rows, nil
			}
			q.After = page.Next
		}
	}
	f := engine.WorkItemFilter{States: workitem.OpenStates, Limit: 1000}
	for {
		page, err := e.WorkItems(ctx, f)
		if err != nil {
			return nil, err
		}
		for _, wi := range page.WorkItems {
			rows = append(rows, workItemRowOf(wi))
		}
		if page.Next == 0 {
			return rows, nil
		}
		f.After = page.Next
	}
}

// workItem reads one work item.
func workItem(ctx context.Context, e *engine.Engine, id int64) (engine.WorkItem, error) {
	return e.WorkItem(ctx, id)
}

// variables reads the variables of an instance.
func variables(ctx context.Context, e *engine.Engine, id int64) (map[string]any, error) {
	return e.Variables(ctx, id)
}

// instanceState reads an instance's state after a command.
func instanceState(ctx context.Context, e *engine.Engine, id int64) (instanceRow, error) {
	pi, err := e.Instance(ctx, id)
	if err != nil {
		return instanceRow{}, err
	}
	return instanceRowOf(pi), nil
}
