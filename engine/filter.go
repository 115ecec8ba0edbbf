package engine

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/goxpdl/goxpdl/store"
	"github.com/goxpdl/goxpdl/wftype"
)

// ErrBadFilter: a filter of a list call names an unknown state or
// cause, or has a negative cursor or limit; nothing was read.
var ErrBadFilter = errors.New("invalid filter")

// ProcessInstance is one run of a WorkflowProcess, as the engine's read
// API shows it.
type ProcessInstance struct {
	ID int64 `json:"id"`
	// Package and Version name the deployed package version the instance
	// runs; DefinitionID is that deployment's id.
	Package      string `json:"package"`
	Version      int    `json:"version"`
	DefinitionID int64  `json:"definition"`
	// Process and ProcessName are the WorkflowProcess's id and name.
	Process     string `json:"process"`
	ProcessName string `json:"processName,omitempty"`
	// State is where the instance is in its life cycle; Diagnosis
	// explains an error state such as Locking.
	State     wftype.ProcessState `json:"state"`
	Diagnosis string              `json:"diagnosis,omitempty"`
	// Parent and ParentActivity are, for a subflow, the process instance
	// and the activity instance that started it and wait for it; 0 for a
	// top-level instance.
	Parent         int64 `json:"parent,omitempty"`
	ParentActivity int64 `json:"parentActivity,omitempty"`
	// BusinessKey is the host's key of the instance
	// (StartOptions.BusinessKey; a subflow inherits its parent's); "" for
	// none.
	BusinessKey string `json:"businessKey,omitempty"`
	// StartKey is the idempotency key the instance was started with
	// (StartOptions.IdempotencyKey); "" for none.
	StartKey string `json:"startKey,omitempty"`
	// StartedAt is when the instance was started, UpdatedAt when it last
	// changed, EndedAt when it reached a final state (nil until then).
	StartedAt time.Time  `json:"startedAt"`
	UpdatedAt time.Time  `json:"updatedAt"`
	EndedAt   *time.Time `json:"endedAt,omitempty"`
	// Revision counts the changes of the instance: two reads with the
	// same Revision saw the same instance.
	Revision int64 `json:"revision"`
}

// InstanceFilter selects process instances. Zero fields do not filter;
// the fields given must all hold.
type InstanceFilter struct {
	// States keeps instances in one of these states.
	States []wftype.ProcessState
	// Package keeps instances of any version of this package; Version,
	// of this version of it (or, without Package, of any package).
	Package string
	Version int
	// DefinitionID keeps instances of this deployment.
	DefinitionID int64
	// Process keeps instances of the WorkflowProcess with this id.
	Process string
	// StartedAfter keeps instances started at or after it; StartedBefore,
	// those started before it.
	StartedAfter  time.Time
	StartedBefore time.Time
	// BusinessKey keeps instances with exactly this business key.
	BusinessKey string
	// IncidentCause keeps instances with an open incident of this cause.
	IncidentCause IncidentCause
	// Parent keeps the subflow instances this process instance started.
	Parent int64
	// IDs keeps the instances with these ids (at most MaxFilterIDs): a
	// selection, as the console's bulk actions make one.
	IDs []int64
	// After is the cursor: the Next of the previous page.
	After int64
	// Limit is the page size; default 100, at most 1000.
	Limit int
}

// MaxFilterIDs is the most ids InstanceFilter.IDs may list.
const MaxFilterIDs = 1000

// InstancePage is one page of process instances, in id order (oldest
// first). Next is the cursor of the next page; 0 when this is the last.
type InstancePage struct {
	Instances []ProcessInstance `json:"instances"`
	Next      int64             `json:"next,omitempty"`
}

// Instances lists the process instances the filter selects, one page at
// a time.
func (e *Engine) Instances(ctx context.Context, f InstanceFilter) (InstancePage, error) {
	params, err := f.params()
	if err != nil {
		return InstancePage{}, err
	}
	limit := pageLimit(f.Limit)
	params.Limit = limit + 1
	rows, err := e.store.ListProcessInstances(ctx, params)
	if err != nil {
		return InstancePage{}, err
	}
	var page InstancePage
	if len(rows) > limit {
		rows = rows[:limit]
		page.Next = rows[limit-1].ID
	}
	page.Instances = make([]ProcessInstance, len(rows))
	for i, row := range rows {
		if page.Instances[i], err = e.instanceOf(ctx, row); err != nil {
			return InstancePage{}, err
		}
	}
	return page, nil
}

// params is the store's filter for f, or why f is refused.
func (f InstanceFilter) params() (store.ListProcessInstancesParams, error) {
	if err := checkPage(f.After, f.Limit); err != nil {
		return store.ListProcessInstancesParams{}, err
	}
	p := store.ListProcessInstancesParams{
		DefinitionID: f.DefinitionID, ParentInstanceID: f.Parent, AfterID: f.After,
		ProcessDefID: f.Process, PackageID: f.Package, PackageVersion: f.Version, BusinessKey: f.BusinessKey,
	}
	for _, s := range f.States {
		if !slices.Contains(wftype.ProcessStates, s) {
			return p, fmt.Errorf("%w: unknown process state %q", ErrBadFilter, s)
		}
		p.States = append(p.States, string(s))
	}
	if f.IncidentCause != "" {
		if !slices.Contains(IncidentCauses, f.IncidentCause) {
			return p, fmt.Errorf("%w: unknown incident cause %q", ErrBadFilter, f.IncidentCause)
		}
		p.OpenIncidentCause = string(f.IncidentCause)
	}
	if f.Version < 0 || f.DefinitionID < 0 || f.Parent < 0 {
		return p, fmt.Errorf("%w: negative version or id", ErrBadFilter)
	}
	if len(f.IDs) > MaxFilterIDs {
		return p, fmt.Errorf("%w: %d ids, at most %d", ErrBadFilter, len(f.IDs), MaxFilterIDs)
	}
	for _, id := range f.IDs {
		if id <= 0 {
			return p, fmt.Errorf("%w: instance id %d", ErrBadFilter, id)
		}
	}
	p.IDs = f.IDs
	if !f.StartedAfter.IsZero() {
		p.CreatedFrom = &f.StartedAfter
	}
	if !f.StartedBefore.IsZero() {
		p.CreatedBefore = &f.StartedBefore
	}
	return p, nil
}

// checkPage refuses a negative cursor or page size.
func checkPage(after int64, limit int) error {
	if after < 0 || limit < 0 {
		return fmt.Errorf("%w: negative cursor %d or limit %d", ErrBadFilter, after, limit)
	}
	return nil
}

// instanceOf is the read API's view of a stored process instance.
func (e *Engine) instanceOf(ctx context.Context, row store.ProcessInstance) (ProcessInstance, error) {
	pi := ProcessInstance{
		ID: row.ID, DefinitionID: row.DefinitionID, Process: row.ProcessDefID,
		State: wftype.ProcessState(row.State), Diagnosis: row.Diagnosis, StartKey: row.StartKey, BusinessKey: row.BusinessKey,
		StartedAt: row.CreatedAt, UpdatedAt: row.UpdatedAt, EndedAt: row.EndedAt, Revision: row.Version,
	}
	if row.ParentInstanceID != nil {
		pi.Parent = *row.ParentInstanceID
	}
	if row.ParentActivityID != nil {
		pi.ParentActivity = *row.ParentActivityID
	}
	dep, err := e.definition(ctx, e.store, row.DefinitionID)
	if err != nil {
		return ProcessInstance{}, fmt.Errorf("process instance %d: %w", row.ID, err)
	}
	pi.Package, pi.Version = dep.def.PackageID, dep.def.Version
	if proc := dep.pkg.Process(row.ProcessDefID); proc != nil {
		pi.ProcessName = proc.Name
	}
	return pi, nil
}
