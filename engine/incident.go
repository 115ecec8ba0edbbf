package engine

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/goxpdl/goxpdl/store"
)

// IncidentCause classifies an incident.
type IncidentCause string

// The causes of incidents.
const (
	// CauseApplication: an application, hook or script failed with an
	// error its retry policy does not retry; the activity is Abnormal.
	CauseApplication IncidentCause = "application"
	// CauseFailing: an application keeps failing with retryable errors
	// (RetryPolicy.IncidentAfter calls in a row) and is being retried;
	// the incident resolves itself when a call succeeds.
	CauseFailing IncidentCause = "failing"
	// CauseRetriesExhausted: the last attempt of a retried application
	// failed; the activity is Abnormal.
	CauseRetriesExhausted IncidentCause = "retries-exhausted"
	// CauseCondition: a transition condition or an expression could not
	// be evaluated; the activity is Abnormal.
	CauseCondition IncidentCause = "condition"
	// CauseException: an exception was raised that no transition
	// handles; the activity is Abnormal.
	CauseException IncidentCause = "exception"
	// CauseSubflow: a subflow instance ended without completing, or
	// could not be started because it would nest deeper than
	// Config.MaxSubflowDepth; its activity is Abnormal.
	CauseSubflow IncidentCause = "subflow"
	// CauseLocking: the process is Locking (paper §2.1): nothing is
	// alive and a branch was lost.
	CauseLocking IncidentCause = "locking"
	// CauseOther: any other reason an activity went Abnormal (its
	// performer does not resolve, an event type not executed, ...).
	CauseOther IncidentCause = "other"
)

// IncidentCauses lists every incident cause.
var IncidentCauses = []IncidentCause{
	CauseApplication, CauseFailing, CauseRetriesExhausted, CauseCondition, CauseException, CauseSubflow, CauseLocking, CauseOther,
}

// IncidentState is whether an incident waits for an operator.
type IncidentState string

// The incident states.
const (
	IncidentOpen     IncidentState = store.IncidentOpen
	IncidentResolved IncidentState = store.IncidentResolved
)

// Incident is an activity or process that needs an operator: it failed
// (the activity is Abnormal), keeps failing (CauseFailing), or the
// process is Locking. One incident is open per activity instance (or per
// process for Locking); it is resolved when the activity is retried,
// skipped or moved past, a failing call succeeds, or the instance is
// terminated.
type Incident struct {
	ID int64 `json:"id"`
	// Instance is the process instance; Process its WorkflowProcess id.
	Instance int64  `json:"instance"`
	Process  string `json:"process,omitempty"`
	// ActivityInstance and Activity name the activity; 0 and "" for a
	// Locking process.
	ActivityInstance int64         `json:"activityInstance,omitempty"`
	Activity         string        `json:"activity,omitempty"`
	Cause            IncidentCause `json:"cause"`
	// Error is the failure, the last one of a repeated failure.
	Error string `json:"error"`
	// Application and Params are the failed call, when there was one.
	Application string         `json:"application,omitempty"`
	Params      map[string]any `json:"params,omitempty"`
	// Attempts counts the failed calls (1 for a single failure).
	Attempts     int           `json:"attempts"`
	FirstFailure time.Time     `json:"firstFailure"`
	LastFailure  time.Time     `json:"lastFailure"`
	State        IncidentState `json:"state"`
	// ResolvedAt, ResolvedBy and Resolution ("retried", "skipped",
	// "succeeded", "terminated", "moved") say how it ended.
	ResolvedAt *time.Time `json:"resolvedAt,omitempty"`
	ResolvedBy string     `json:"resolvedBy,omitempty"`
	Resolution string     `json:"resolution,omitempty"`
}

// IncidentFilter selects incidents. Zero fields do not filter, except
// States, which defaults to open incidents only.
type IncidentFilter struct {
	Instance int64
	States   []IncidentState
	Causes   []IncidentCause
	// After is the cursor: the Next of the previous page.
	After int64
	// Limit is the page size; default 100, at most 1000.
	Limit int
}

// IncidentPage is one page of incidents, oldest first. Next is the
// cursor of the next page; 0 when this is the last.
type IncidentPage struct {
	Incidents []Incident `json:"incidents"`
	Next      int64      `json:"next,omitempty"`
}

// pageLimit is the page size for a requested limit.
func pageLimit(limit int) int {
	switch {
	case limit <= 0:
		return 100
	case limit > 1000:
		return 1000
	}
	return limit
}

// Incidents lists the incidents the filter selects, one page at a time.
func (e *Engine) Incidents(ctx context.Context, f IncidentFilter) (IncidentPage, error) {
	if err := checkPage(f.After, f.Limit); err != nil {
		return IncidentPage{}, err
	}
	limit := pageLimit(f.Limit)
	params := store.ListIncidentsParams{ProcessInstanceID: f.Instance, AfterID: f.After, Limit: limit + 1}
	states := f.States
	if len(states) == 0 {
		states = []IncidentState{IncidentOpen}
	}
	for _, s := range states {
		if s != IncidentOpen && s != IncidentResolved {
			return IncidentPage{}, fmt.Errorf("%w: unknown incident state %q", ErrBadFilter, s)
		}
		params.States = append(params.States, string(s))
	}
	for _, c := range f.Causes {
		if !slices.Contains(IncidentCauses, c) {
			return IncidentPage{}, fmt.Errorf("%w: unknown incident cause %q", ErrBadFilter, c)
		}
		params.Causes = append(params.Causes, string(c))
	}
	rows, err := e.store.ListIncidents(ctx, params)
	if err != nil {
		return IncidentPage{}, err
	}
	var page IncidentPage
	if len(rows) > limit {
		rows = rows[:limit]
		page.Next = rows[limit-1].ID
	}
	procs := map[int64]string{}
	for _, row := range rows {
		inc := incidentOf(row)
		if p, ok := procs[row.ProcessInstanceID]; ok {
			inc.Process = p
		} else if pi, err := e.store.GetProcessInstance(ctx, row.ProcessInstanceID); err == nil {
			procs[row.ProcessInstanceID], inc.Process = pi.ProcessDefID, pi.ProcessDefID
		}
		page.Incidents = append(page.Incidents, inc)
	}
	return page, nil
}

// Incident returns one incident, open or resolved (ErrNotFound when there
// is none).
func (e *Engine) Incident(ctx context.Context, id int64) (Incident, error) {
	row, err := e.store.GetIncident(ctx, id)
	if errors.Is(err, store.ErrNotFound) {
		return Incident{}, notFound("incident", id)
	} else if err != nil {
		return Incident{}, err
	}
	inc := incidentOf(row)
	if pi, err := e.store.GetProcessInstance(ctx, row.ProcessInstanceID); err == nil {
		inc.Process = pi.ProcessDefID
	}
	return inc, nil
}

// IncidentCounts counts the open incidents by cause.
func (e *Engine) IncidentCounts(ctx context.Context) (map[IncidentCause]int64, error) {
	counts, err := e.store.CountIncidents(ctx, []string{store.IncidentOpen})
	if err != nil {
		return nil, err
	}
	out := make(map[IncidentCause]int64, len(counts))
	for c, n := range counts {
		out[IncidentCause(c)] = n
	}
	return out, nil
}

func incidentOf(row store.Incident) Incident {
	inc := Incident{
		ID: row.ID, Instance: row.ProcessInstanceID, Activity: row.ActivityDefID, Cause: IncidentCause(row.Cause),
		Error: row.Error, Application: row.Application, Attempts: row.Attempts, FirstFailure: row.FirstFailureAt,
		LastFailure: row.LastFailureAt, State: IncidentState(row.State), ResolvedAt: row.ResolvedAt,
		ResolvedBy: row.ResolvedBy, Resolution: row.Resolution,
	}
	if row.ActivityInstanceID != nil {
		inc.ActivityInstance = *row.ActivityInstanceID
	}
	if len(row.Params) > 0 {
		_ = json.Unmarshal(row.Params, &inc.Params) // written by paramsJSON
	}
	return inc
}

// failure is why an activity goes Abnormal: what its incident shows.
type failure struct {
	cause     IncidentCause
	diagnosis string
	app       string
	params    map[string]any
	attempts  int
}

// pendingIncident is an incident a run opens at flush, when its activity
// has an ID.
type pendingIncident struct {
	act     *act // nil for the process (Locking)
	failure failure
}

// callError wraps the failure of a call of application app by activity
// a with what an incident needs.
func (r *run) callError(a *act, app string, params map[string]any, b binding, err error) error {
	ce := &callError{app: app, params: params, policy: r.e.policyOf(b), err: err}
	// The incident of a failing call outlives the rolled-back step: only
	// an activity that exists outside it can carry one.
	if t := r.failTarget(a); t.key != "" && t.key[0] == '#' {
		ce.activity, ce.actDef = t.row.ID, t.def.ID
	}
	return ce
}

// flushIncidents writes the incidents the run opened and resolved.
func (r *run) flushIncidents() error {
	for _, p := range r.incidents {
		inc := store.Incident{
			ProcessInstanceID: r.pi.ID, Cause: string(p.failure.cause), Error: errorText(p.failure.diagnosis),
			Application: p.failure.app, Params: paramsJSON(p.failure.params), Attempts: max(p.failure.attempts, 1),
			LastFailureAt: r.now,
		}
		if p.act != nil {
			id := p.act.row.ID
			inc.ActivityInstanceID, inc.ActivityDefID = &id, p.act.def.ID
		}
		var err error
		if inc.ID, err = r.idNow(); err != nil {
			return err
		}
		_, opened, err := r.tx.RecordIncident(r.ctx, inc)
		if err != nil {
			return err
		}
		if opened {
			o := IncidentOpened{Cause: IncidentCause(inc.Cause), Process: r.pi.ProcessDefID, Instance: r.pi.ID,
				Activity: inc.ActivityDefID, Application: inc.Application}
			if inc.ActivityInstanceID != nil {
				o.ActivityInstance = *inc.ActivityInstanceID
			}
			r.note(func(obs Observer) { obs.IncidentOpened(o) })
		}
	}
	for _, res := range r.resolved {
		res.ProcessInstanceID, res.At = r.pi.ID, r.now
		if res.By == "" {
			res.By = r.actor
		}
		n, err := r.tx.ResolveIncidents(r.ctx, res)
		if err != nil {
			return err
		}
		if n > 0 {
			o := IncidentsResolved{Instance: r.pi.ID, Count: int(n), Resolution: res.Resolution}
			r.note(func(obs Observer) { obs.IncidentsResolved(o) })
		}
	}
	return nil
}

// resolve resolves the open incident of activity a (or, with a nil, of
// the process itself) at flush.
func (r *run) resolve(a *act, resolution string) {
	res := store.ResolveIncidentsParams{Resolution: resolution}
	if a != nil {
		res.ActivityInstanceIDs = []int64{a.row.ID}
	} else {
		res.ProcessLevel = true
	}
	r.resolved = append(r.resolved, res)
}

// resolveAll resolves every open incident of the instance at flush.
func (r *run) resolveAll(resolution string) {
	r.resolved = append(r.resolved, store.ResolveIncidentsParams{Resolution: resolution})
}

// recordFailing shows a call that keeps failing as a CauseFailing
// incident, after its step rolled back: from the policy's IncidentAfter
// failed calls in a row, if the activity exists outside the step.
func (e *Engine) recordFailing(ctx context.Context, instance int64, attempt int, err error) {
	ce, ok := asCallError(err)
	if !ok || ce.activity == 0 || attempt < ce.policy.IncidentAfter || !ce.policy.retries(err) {
		return
	}
	id := ce.activity
	inc := store.Incident{
		ProcessInstanceID: instance, ActivityInstanceID: &id, ActivityDefID: ce.actDef, Cause: string(CauseFailing),
		Error: errorText(err.Error()), Application: ce.app, Params: paramsJSON(ce.params), Attempts: attempt, LastFailureAt: e.now(),
	}
	for try := 0; try < 2; try++ {
		var rerr error
		if inc.ID, rerr = e.ids.Next(ctx); rerr != nil {
			e.log.Warn("could not record a failing application's incident", "instance", instance, "err", rerr)
			return
		}
		_, opened, rerr := e.store.RecordIncident(ctx, inc)
		if opened {
			o := IncidentOpened{Cause: CauseFailing, Instance: instance, Activity: ce.actDef, ActivityInstance: id, Application: ce.app}
			e.observe(func(obs Observer) { obs.IncidentOpened(o) })
		}
		if rerr == nil || !errors.Is(rerr, store.ErrDuplicate) {
			if rerr != nil {
				e.log.Warn("could not record a failing application's incident", "instance", instance, "err", rerr)
			}
			return
		}
	}
}
