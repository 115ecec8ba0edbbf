package gormstore

import (
	"context"
	"errors"
	"strings"

	"github.com/goxpdl/goxpdl/store"
)

// One row, several transitions. An engine step often moves one subject
// through several states at the same instant: an automatic activity goes
// from Initiated to Active to Completed in the step that runs it. Such a
// run of entries is stored as one row, from the first entry's FromState
// to the last one's ToState, with the states between in via; ListHistory
// gives the entries back as they were written, ids included. A run holds
// entries that follow each other in the caller's slice with ids one
// apart (the engine numbers a step's entries in a row, so nearly always),
// and that agree in everything but their states: the same instance,
// activity instance, work item, subject, actor and instant, and no data.
// Nothing is lost, and a ten-step instance writes 23 history rows, not 33
// (issue #23: one row per step rather than per transition where nothing
// is lost).

const (
	// viaSeparator separates the states in via; a state that holds it
	// never joins a run.
	viaSeparator = ","
	// maxRun is how many entries one row holds at most. ListHistory
	// looks back this many ids less one for the rows that an AfterID
	// cuts into.
	maxRun = 8
	// maxVia is the size of the via column.
	maxVia = 255
)

// joinsRun reports whether b, the entry after a in an InsertHistory
// call, may join a's run (which via, so far, lists the states of).
func joinsRun(a, b store.HistoryEntry, via string) bool {
	return b.ID == a.ID+1 && b.ProcessInstanceID == a.ProcessInstanceID &&
		sameInt64(a.ActivityInstanceID, b.ActivityInstanceID) && sameInt64(a.WorkItemID, b.WorkItemID) &&
		b.Subject == a.Subject && b.Actor == a.Actor && b.At.Equal(a.At) && len(a.Data) == 0 && len(b.Data) == 0 &&
		a.ToState != "" && b.FromState == a.ToState && !strings.Contains(a.ToState, viaSeparator) &&
		len(via)+len(viaSeparator)+len(a.ToState) <= maxVia
}

// sameInt64 reports whether a and b are both nil or point at equal values.
func sameInt64(a, b *int64) bool {
	if a == nil || b == nil {
		return a == b
	}
	return *a == *b
}

// InsertHistory implements store.Tx, with the caller's ids. A run of
// transitions of one subject at one instant is one row (see above).
func (s *Store) InsertHistory(ctx context.Context, entries []store.HistoryEntry) error {
	done, err := s.writing(ctx)
	if err != nil {
		return err
	}
	defer done()
	for _, e := range entries {
		if err := errors.Join(
			requireID("insert history", e.ID),
			requireTime("insert history: at", e.At),
		); err != nil {
			return err
		}
	}
	rows := make([][]any, 0, len(entries))
	for i := 0; i < len(entries); {
		first, via, n := entries[i], "", 1
		for i+n < len(entries) && n < maxRun && joinsRun(entries[i+n-1], entries[i+n], via) {
			if via != "" {
				via += viaSeparator
			}
			via += entries[i+n-1].ToState
			n++
		}
		m := historyFromRow(first)
		m.ToState, m.Via = entries[i+n-1].ToState, via
		rows = append(rows, []any{first.ID, m.ProcessInstanceID, m.ActivityInstanceID, m.WorkItemID, m.Subject, m.FromState, m.ToState, m.Via, m.Actor, m.Data, m.At})
		i += n
	}
	if err := insertRows(ctx, s, tableHistory, historyColumnsWithID, rows); err != nil {
		return wrap(err, "insert %d history entries", len(entries))
	}
	return nil
}

// historyColumns are the columns of a history entry but its id;
// InsertHistory writes historyColumnsWithID, in the order of its rows'
// values.
var historyColumnsWithID = append([]string{"id"}, historyColumns...)

var historyColumns = []string{"process_instance_id", "activity_instance_id", "work_item_id", "subject", "from_state", "to_state", "via", "actor", "data", "at"}

// ListHistory implements store.Tx: the entries of the rows, each run
// given back as the entries it holds.
func (s *Store) ListHistory(ctx context.Context, params store.ListHistoryParams) ([]store.HistoryEntry, error) {
	q := s.db.WithContext(ctx).Where("process_instance_id = ?", params.ProcessInstanceID).Order("id")
	if params.AfterID != 0 {
		// A run that begins up to maxRun-1 ids before AfterID may hold
		// entries after it.
		q = q.Where("id > ?", params.AfterID-(maxRun-1))
	}
	if params.Limit > 0 {
		// Those runs may give no entry; every other row gives one at
		// least.
		q = q.Limit(params.Limit + maxRun - 1)
	}
	var ms []historyModel
	if err := q.Find(&ms).Error; err != nil {
		return nil, wrap(err, "list history of process instance %d", params.ProcessInstanceID)
	}
	out := make([]store.HistoryEntry, 0, len(ms))
	for i := range ms {
		for _, e := range ms[i].entries() {
			if params.AfterID != 0 && e.ID <= params.AfterID {
				continue
			}
			out = append(out, e)
		}
	}
	if params.Limit > 0 && len(out) > params.Limit {
		out = out[:params.Limit]
	}
	return out, nil
}

// entries returns the entries of m: itself, or those of its run.
func (m *historyModel) entries() []store.HistoryEntry {
	if m.Via == "" {
		return []store.HistoryEntry{m.row()}
	}
	states := append(strings.Split(m.Via, viaSeparator), m.ToState)
	out := make([]store.HistoryEntry, len(states))
	from := m.FromState
	for k, to := range states {
		e := m.row()
		e.ID, e.FromState, e.ToState = m.ID+int64(k), from, to
		out[k] = e
		from = to
	}
	return out
}
