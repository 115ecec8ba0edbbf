package engine

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
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
	// Sort is the order of the pages: SortID (the default), SortIDDesc,
	// SortStarted or SortStartedDesc.
	Sort InstanceSort
	// After is the cursor in the id orders: the Next of the previous
	// page. Cursor is the cursor in every order: the Cursor of the
	// previous page. Give at most one of them.
	After  int64
	Cursor string
	// Limit is the page size; default 100, at most 1000.
	Limit int
}

// MaxFilterIDs is the most ids InstanceFilter.IDs may list.
const MaxFilterIDs = 1000

// InstanceSort is the order of the instance pages.
type InstanceSort string

// The orders of instance pages. Each is a keyset walk of an index:
// a page reads its own rows only, however deep it is, and instances
// started meanwhile never shift the pages (no row is shown twice or
// skipped; one that sorts before the cursor is not shown).
const (
	// SortID is id ascending, oldest first: the default ("" too).
	SortID InstanceSort = "id"
	// SortIDDesc is id descending, newest first.
	SortIDDesc InstanceSort = "-id"
	// SortStarted is by start time (StartedAt), earliest first, then id.
	SortStarted InstanceSort = "started"
	// SortStartedDesc is by start time, latest first, then id
	// descending.
	SortStartedDesc InstanceSort = "-started"
)

// InstanceSorts lists the orders of instance pages.
var InstanceSorts = []InstanceSort{SortID, SortIDDesc, SortStarted, SortStartedDesc}

// order is the store's order for s.
func (s InstanceSort) order() (store.InstanceOrder, error) {
	switch s {
	case "", SortID:
		return store.OrderID, nil
	case SortIDDesc:
		return store.OrderIDDesc, nil
	case SortStarted:
		return store.OrderCreated, nil
	case SortStartedDesc:
		return store.OrderCreatedDesc, nil
	}
	return "", fmt.Errorf("%w: unknown sort %q (want one of %v)", ErrBadFilter, s, InstanceSorts)
}

// InstancePage is one page of process instances, in the filter's Sort.
// Cursor is the cursor of the next page, "" when this is the last; in
// the id orders Next is the same cursor as an id (0 when this is the
// last), in the start-time orders it is 0.
type InstancePage struct {
	Instances []ProcessInstance `json:"instances"`
	Next      int64             `json:"next,omitempty"`
	Cursor    string            `json:"cursor,omitempty"`
}

// Instances lists the process instances the filter selects, one page at
// a time.
func (e *Engine) Instances(ctx context.Context, f InstanceFilter) (InstancePage, error) {
	params, err := f.params()
	if err != nil {
		return InstancePage{}, err
	}
	if params.Order, err = f.Sort.order(); err != nil {
		return InstancePage{}, err
	}
	if err := f.cursor(&params); err != nil {
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
		last := rows[limit-1]
		page.Cursor = strconv.FormatInt(last.ID, 10)
		if params.Order.Created() {
			page.Cursor = strconv.FormatInt(last.CreatedAt.UnixMicro(), 10) + "." + page.Cursor
		} else {
			page.Next = last.ID
		}
	}
	page.Instances = make([]ProcessInstance, len(rows))
	for i, row := range rows {
		if page.Instances[i], err = e.instanceOf(ctx, row); err != nil {
			return InstancePage{}, err
		}
	}
	return page, nil
}

// cursor sets the store's cursor from f.Cursor, whose form is the
// order's: "id" in the id orders, "start.id" (the start time in Unix
// microseconds, the store's precision) in the start-time orders.
func (f InstanceFilter) cursor(p *store.ListProcessInstancesParams) error {
	if f.Cursor == "" {
		if f.After != 0 && p.Order.Created() {
			return fmt.Errorf("%w: After is an id cursor; sorted by start time, give Cursor", ErrBadFilter)
		}
		return nil
	}
	if f.After != 0 {
		return fmt.Errorf("%w: both After and Cursor given", ErrBadFilter)
	}
	bad := fmt.Errorf("%w: malformed cursor %q for sort %q", ErrBadFilter, f.Cursor, f.Sort)
	at, id, created := strings.Cut(f.Cursor, ".")
	if !created {
		at, id = "", at
	}
	n, err := strconv.ParseInt(id, 10, 64)
	if err != nil || n <= 0 || created != p.Order.Created() {
		return bad
	}
	p.AfterID = n
	if created {
		us, err := strconv.ParseInt(at, 10, 64)
		if err != nil {
			return bad
		}
		t := time.UnixMicro(us).UTC()
		p.AfterCreatedAt = &t
	}
	return nil
}

// params is the store's filter for f, or why f is refused. The order
// and Cursor are Instances' to add: a batch walks in id order from
// After.
func (f InstanceFilter) params() (store.ListProcessInstancesParams, error) {
	if err := checkPage(f.After, f.Limit); err != nil {
		return store.ListProcessInstancesParams{}, err
	}
	if _, err := f.Sort.order(); err != nil {
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

// InstanceCount is how many process instances a filter selects.
type InstanceCount struct {
	// N is the count; with More, the filter selects more than N.
	N    int64 `json:"n"`
	More bool  `json:"more,omitempty"`
}

// CountInstances counts the process instances f selects; its Sort,
// After, Cursor and Limit are ignored. A filter by States, Package,
// Version, DefinitionID and Process only is counted exactly from the
// counts the store keeps per definition, process and state, at the cost
// of a few rows whatever the number of instances. Any other filter is
// counted by reading its rows through the filter's index: then, with
// upTo greater than 0, the count stops after upTo (N is upTo and More is
// set), so that it reads at most upTo+1 rows; upTo 0 counts them all.
func (e *Engine) CountInstances(ctx context.Context, f InstanceFilter, upTo int64) (InstanceCount, error) {
	f.Sort, f.After, f.Cursor, f.Limit = "", 0, "", 0
	params, err := f.params()
	if err != nil {
		return InstanceCount{}, err
	}
	if upTo < 0 {
		return InstanceCount{}, fmt.Errorf("%w: negative upTo %d", ErrBadFilter, upTo)
	}
	if f.StartedAfter.IsZero() && f.StartedBefore.IsZero() && f.BusinessKey == "" && f.IncidentCause == "" && f.Parent == 0 {
		return e.countGroups(ctx, f)
	}
	if upTo > 0 {
		params.Limit = int(min(upTo+1, int64(maxInt)))
	}
	n, err := e.store.CountProcessInstances(ctx, params)
	if err != nil {
		return InstanceCount{}, err
	}
	if upTo > 0 && n > upTo {
		return InstanceCount{N: upTo, More: true}, nil
	}
	return InstanceCount{N: n}, nil
}

// maxInt bounds a capped count's LIMIT.
const maxInt = int(^uint(0) >> 1)

// countGroups counts from the store's counts per definition, process and
// state the instances f selects, f having no other filter.
func (e *Engine) countGroups(ctx context.Context, f InstanceFilter) (InstanceCount, error) {
	groups, err := e.store.CountProcessInstanceGroups(ctx)
	if err != nil {
		return InstanceCount{}, err
	}
	var c InstanceCount
	for _, g := range groups {
		switch {
		case len(f.States) > 0 && !slices.Contains(f.States, wftype.ProcessState(g.State)),
			f.DefinitionID != 0 && g.DefinitionID != f.DefinitionID,
			f.Process != "" && g.ProcessDefID != f.Process:
			continue
		}
		if f.Package != "" || f.Version != 0 {
			dep, err := e.definition(ctx, e.store, g.DefinitionID)
			if err != nil {
				return InstanceCount{}, err
			}
			if (f.Package != "" && dep.def.PackageID != f.Package) || (f.Version != 0 && dep.def.Version != f.Version) {
				continue
			}
		}
		c.N += g.N
	}
	return c, nil
}
