package gormstore

import (
	"context"
	"errors"

	"github.com/goxpdl/goxpdl/store"
)

// InsertHistory implements store.Tx, with the caller's ids.
func (s *Store) InsertHistory(ctx context.Context, entries []store.HistoryEntry) error {
	done, err := s.writing(ctx)
	if err != nil {
		return err
	}
	defer done()
	rows := make([][]any, len(entries))
	for i, e := range entries {
		if err := errors.Join(
			requireID("insert history", e.ID),
			requireTime("insert history: at", e.At),
		); err != nil {
			return err
		}
		m := historyFromRow(e)
		rows[i] = []any{e.ID, m.ProcessInstanceID, m.ActivityInstanceID, m.WorkItemID, m.Subject, m.FromState, m.ToState, m.Actor, m.Data, m.At}
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

var historyColumns = []string{"process_instance_id", "activity_instance_id", "work_item_id", "subject", "from_state", "to_state", "actor", "data", "at"}

// ListHistory implements store.Tx.
func (s *Store) ListHistory(ctx context.Context, params store.ListHistoryParams) ([]store.HistoryEntry, error) {
	q := s.db.WithContext(ctx).Where("process_instance_id = ?", params.ProcessInstanceID).Order("id")
	if params.AfterID != 0 {
		q = q.Where("id > ?", params.AfterID)
	}
	if params.Limit > 0 {
		q = q.Limit(params.Limit)
	}
	var ms []historyModel
	if err := q.Find(&ms).Error; err != nil {
		return nil, wrap(err, "list history of process instance %d", params.ProcessInstanceID)
	}
	out := make([]store.HistoryEntry, len(ms))
	for i := range ms {
		out[i] = ms[i].row()
	}
	return out, nil
}
