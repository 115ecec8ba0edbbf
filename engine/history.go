package engine

import (
	"context"
	"encoding/json"
	"time"

	"github.com/goxpdl/goxpdl/store"
)

// The subjects of history entries.
const (
	SubjectProcess  = store.SubjectProcess
	SubjectActivity = store.SubjectActivity
	SubjectWorkItem = store.SubjectWorkItem
	// SubjectVariable marks a change of a variable by a command
	// (SetVariables): Variable, Old and New say which and how.
	SubjectVariable = store.SubjectVariable
)

// HistoryEntry is one line of an instance's audit trail: a state change
// of the process, one of its activities or work items, or a variable
// changed by a command, with who did it and why.
type HistoryEntry struct {
	ID       int64  `json:"id"`
	Instance int64  `json:"instance"`
	Subject  string `json:"subject"`
	// ActivityInstance, Activity and ActivityName name the activity the
	// entry is about (or whose work item it is about); zero otherwise.
	ActivityInstance int64  `json:"activityInstance,omitempty"`
	Activity         string `json:"activity,omitempty"`
	ActivityName     string `json:"activityName,omitempty"`
	WorkItem         int64  `json:"workitem,omitempty"`
	// From and To are the states left and entered; From is "" for a
	// creation.
	From string `json:"from,omitempty"`
	To   string `json:"to,omitempty"`
	// Actor is who caused the change: a user, "engine", "host", ...
	Actor string    `json:"actor"`
	At    time.Time `json:"at"`
	// Diagnosis explains an error state.
	Diagnosis string `json:"diagnosis,omitempty"`
	// Reason and Data are the Op of the command that made the change.
	Reason string         `json:"reason,omitempty"`
	Data   map[string]any `json:"data,omitempty"`
	// Variable, Old and New describe a SubjectVariable entry.
	Variable string `json:"variable,omitempty"`
	Old      any    `json:"old,omitempty"`
	New      any    `json:"new,omitempty"`
	// Detail holds the engine's other detail (a work item's performer and
	// assignees, what recovery re-sent).
	Detail map[string]any `json:"detail,omitempty"`
}

// HistoryFilter selects the history of one instance.
type HistoryFilter struct {
	// Instance is the process instance; required.
	Instance int64
	// After is the cursor: the Next of the previous page.
	After int64
	// Limit is the page size; default 100, at most 1000.
	Limit int
}

// HistoryPage is one page of history, oldest first. Next is the cursor of
// the next page; 0 when this is the last.
type HistoryPage struct {
	Entries []HistoryEntry `json:"entries"`
	Next    int64          `json:"next,omitempty"`
}

// History returns a page of the audit trail of a process instance: every
// state change of it, its activities and its work items, and every
// variable a command changed, oldest first.
func (e *Engine) History(ctx context.Context, f HistoryFilter) (HistoryPage, error) {
	if err := checkPage(f.After, f.Limit); err != nil {
		return HistoryPage{}, err
	}
	pi, err := e.Instance(ctx, f.Instance)
	if err != nil {
		return HistoryPage{}, err
	}
	limit := pageLimit(f.Limit)
	rows, err := e.store.ListHistory(ctx, store.ListHistoryParams{ProcessInstanceID: f.Instance, AfterID: f.After, Limit: limit + 1})
	if err != nil {
		return HistoryPage{}, err
	}
	var page HistoryPage
	if len(rows) > limit {
		rows = rows[:limit]
		page.Next = rows[limit-1].ID
	}
	acts, err := e.store.ListActivityInstances(ctx, store.ListActivityInstancesParams{ProcessInstanceID: f.Instance})
	if err != nil {
		return HistoryPage{}, err
	}
	defOf := make(map[int64]string, len(acts))
	for _, a := range acts {
		defOf[a.ID] = a.ActivityDefID
	}
	names := e.activityNames(ctx, pi.DefinitionID, pi.Process)
	page.Entries = make([]HistoryEntry, len(rows))
	for i, row := range rows {
		h := HistoryEntry{
			ID: row.ID, Instance: row.ProcessInstanceID, Subject: row.Subject, From: row.FromState, To: row.ToState,
			Actor: row.Actor, At: row.At,
		}
		if row.ActivityInstanceID != nil {
			h.ActivityInstance = *row.ActivityInstanceID
			h.Activity = defOf[h.ActivityInstance]
			h.ActivityName = names[h.Activity]
		}
		if row.WorkItemID != nil {
			h.WorkItem = *row.WorkItemID
		}
		h.decode(row.Data)
		page.Entries[i] = h
	}
	return page, nil
}

// decode spreads an entry's JSON detail over its fields.
func (h *HistoryEntry) decode(data []byte) {
	if len(data) == 0 {
		return
	}
	var d map[string]any
	if json.Unmarshal(data, &d) != nil {
		return
	}
	take := func(key string) (any, bool) {
		v, ok := d[key]
		delete(d, key)
		return v, ok
	}
	if v, ok := take("diagnosis"); ok {
		h.Diagnosis, _ = v.(string)
	}
	if v, ok := take("reason"); ok {
		h.Reason, _ = v.(string)
	}
	if v, ok := take("data"); ok {
		h.Data, _ = v.(map[string]any)
	}
	if v, ok := take("variable"); ok {
		h.Variable, _ = v.(string)
		h.Old, _ = take("old")
		h.New, _ = take("new")
	}
	if len(d) > 0 {
		h.Detail = d
	}
}
