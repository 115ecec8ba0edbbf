package gormstore

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"gorm.io/gorm"

	"github.com/goxpdl/goxpdl/store"
)

// InsertWorkItem implements store.Tx: the item, with the caller's id, and
// its visibility rows in one transaction.
func (s *Store) InsertWorkItem(ctx context.Context, params store.InsertWorkItemParams) (store.WorkItem, error) {
	item := params.Item
	if err := errors.Join(
		requireID("insert work item", item.ID),
		requireTime("insert work item: created at", item.CreatedAt),
		requireTime("insert work item: updated at", item.UpdatedAt),
		requirePriority("insert work item", item.Priority),
	); err != nil {
		return store.WorkItem{}, err
	}
	visible, err := principalSet("insert work item: visible to", params.VisibleTo)
	if err != nil {
		return store.WorkItem{}, err
	}
	m := workItemFromRow(item)
	m.Version = 1
	if s.holding() {
		if err := s.holdWorkItem(ctx, &m, visible); err != nil {
			return store.WorkItem{}, wrap(err, "insert work item")
		}
		return m.row()
	}
	err = s.atomic(ctx, func(db *gorm.DB) error {
		if err := db.Create(&m).Error; err != nil {
			return err
		}
		return s.within(db).insertVisibility(ctx, &m, visible)
	})
	if err != nil {
		return store.WorkItem{}, wrap(err, "insert work item")
	}
	return m.row()
}

// GetWorkItem implements store.Tx.
func (s *Store) GetWorkItem(ctx context.Context, id int64) (store.WorkItem, error) {
	var m workItemModel
	if err := s.db.WithContext(ctx).Take(&m, "id = ?", id).Error; err != nil {
		return store.WorkItem{}, wrap(err, "get work item %d", id)
	}
	wi, err := m.row()
	if err != nil {
		return store.WorkItem{}, fmt.Errorf("get work item %d: %w", id, err)
	}
	return wi, nil
}

// UpdateWorkItem implements store.Tx: one UPDATE ... WHERE id = ? [AND
// version = ?] [AND state = ?] that also increments the version, then a
// read of the row, which tells a failed check (ErrConflict) from a missing
// row (ErrNotFound) and supplies the new version and the columns the
// visibility rows copy; then the item's visibility rows are replaced. The
// version always changes, so MySQL, which counts changed rather than
// matched rows, reports one row for every successful update.
func (s *Store) UpdateWorkItem(ctx context.Context, params store.UpdateWorkItemParams) (int64, error) {
	if err := errors.Join(
		requireTime("update work item: updated at", params.UpdatedAt),
		requirePriority("update work item", params.Priority),
	); err != nil {
		return 0, err
	}
	visible, err := principalSet("update work item: visible to", params.VisibleTo)
	if err != nil {
		return 0, err
	}
	if params.ExpectedVersion != 0 && params.ExpectedState == "" && s.holding() {
		if err := s.holdWorkItemUpdate(ctx, params, visible); err != nil {
			return 0, wrap(err, "update work item %d", params.ID)
		}
		return params.ExpectedVersion + 1, nil
	}
	var version int64
	err = s.atomic(ctx, func(db *gorm.DB) error {
		q := db.Model(&workItemModel{}).Where("id = ?", params.ID)
		if params.ExpectedVersion != 0 {
			q = q.Where("version = ?", params.ExpectedVersion)
		}
		if params.ExpectedState != "" {
			q = q.Where("state = ?", params.ExpectedState)
		}
		columns := workItemUpdates(params)
		columns["version"] = gorm.Expr("version + 1")
		res := q.Updates(columns)
		if res.Error != nil {
			return res.Error
		}
		var cur workItemModel
		err := db.Select("id", "process_def_id", "activity_def_id", "state", "version").Take(&cur, "id = ?", params.ID).Error
		if err != nil {
			return err // ErrRecordNotFound when there is no such item
		}
		if res.RowsAffected != 1 {
			return fmt.Errorf("expected version %d, state %q; found version %d, state %q: %w",
				params.ExpectedVersion, params.ExpectedState, cur.Version, cur.State, store.ErrConflict)
		}
		version = cur.Version
		if err := db.Where("work_item_id = ?", params.ID).Delete(&visibilityModel{}).Error; err != nil {
			return err
		}
		cur.Priority, cur.State, cur.DueAt = params.Priority, params.State, dbTimePtr(params.DueAt)
		return s.within(db).insertVisibility(ctx, &cur, visible)
	})
	if err != nil {
		return 0, wrap(err, "update work item %d", params.ID)
	}
	return version, nil
}

// ListWorkItems implements store.Tx.
func (s *Store) ListWorkItems(ctx context.Context, params store.ListWorkItemsParams) ([]store.WorkItem, error) {
	q := s.db.WithContext(ctx).Order("id")
	if params.ProcessInstanceID != 0 {
		q = q.Where("process_instance_id = ?", params.ProcessInstanceID)
	}
	if params.ActivityInstanceID != 0 {
		q = q.Where("activity_instance_id = ?", params.ActivityInstanceID)
	}
	if len(params.States) > 0 {
		q = q.Where("state IN ?", params.States)
	}
	if params.AfterID != 0 {
		q = q.Where("id > ?", params.AfterID)
	}
	if params.Owner != "" {
		q = q.Where("owner = ?", params.Owner)
	}
	if params.Performer != "" {
		q = q.Where("performer = ?", params.Performer)
	}
	if params.ActivityDefID != "" {
		q = q.Where("activity_def_id = ?", params.ActivityDefID)
	}
	if params.DueBefore != nil {
		q = q.Where("due_at < ?", dbTime(*params.DueBefore))
	}
	if p := params.VisibleTo; p != nil {
		q = q.Where("id IN (SELECT work_item_id FROM "+tableVisibility+" WHERE principal_kind = ? AND principal_id = ?)", string(p.Kind), p.ID)
	}
	if params.Limit > 0 {
		q = q.Limit(params.Limit)
	}
	var ms []workItemModel
	if err := q.Find(&ms).Error; err != nil {
		return nil, wrap(err, "list work items")
	}
	out, err := workItemRows(ms)
	if err != nil {
		return nil, fmt.Errorf("list work items: %w", err)
	}
	return out, nil
}

// On a pipelined transaction (pipeline.go) the engine's writes of work
// items wait in the queue like its versioned updates of instances: a
// work item offered, claimed or completed is then written in the same
// round trip as the rest of its step, where the item, its visibility rows
// and the read that checked the update took three to five round trips of
// their own. A failed fence (ErrConflict), a missing item (ErrNotFound) or
// a duplicate id (ErrDuplicate) is reported by the statement, Flush or
// commit that sends the queue, as for the other held writes.

// holding reports whether s is a pipelined MySQL transaction, whose
// writes may wait in its queue. Only MySQL's: SQLite sends its queue one
// statement at a time, so holding saves it nothing, and under -race the
// countersign tests on SQLite saw a loop's items missing with it (not
// explained yet).
func (s *Store) holding() bool {
	_, ok := s.db.Statement.ConnPool.(*pipeline)
	return ok && s.dialect == store.DialectMySQL
}

// workItemColumns are the columns of a work item's INSERT, in the order
// of workItemValues.
var workItemColumns = []string{
	"id", "process_instance_id", "activity_instance_id", "process_def_id", "activity_def_id", "name", "state",
	"performer", "assignees", "owner", "priority", "due_at", "version", "completed_by", "completion_key",
	"suspended_from", "result", "created_at", "updated_at", "ended_at",
}

// workItemValues are m's values in the order of workItemColumns.
func workItemValues(m *workItemModel) []any {
	return []any{
		m.ID, m.ProcessInstanceID, m.ActivityInstanceID, m.ProcessDefID, m.ActivityDefID, m.Name, m.State,
		m.Performer, m.Assignees, m.Owner, m.Priority, m.DueAt, m.Version, m.CompletedBy, m.CompletionKey,
		m.SuspendedFrom, m.Result, m.CreatedAt, m.UpdatedAt, m.EndedAt,
	}
}

// visibilityColumns are the columns of a visibility row's INSERT.
var visibilityColumns = []string{
	"principal_kind", "principal_id", "neg_priority", "work_item_id", "process_def_id", "activity_def_id", "state", "due_at",
}

// holdWorkItem queues the INSERT of the new item m and of its visibility
// rows.
func (s *Store) holdWorkItem(ctx context.Context, m *workItemModel, visible []store.Principal) error {
	if err := s.write(ctx, insertWrite(s, tableWorkItems, workItemColumns, [][]any{workItemValues(m)})); err != nil {
		return err
	}
	if len(visible) == 0 {
		return nil
	}
	rows := make([][]any, len(visible))
	for i, p := range visible {
		rows[i] = []any{string(p.Kind), p.ID, -int64(m.Priority), m.ID, m.ProcessDefID, m.ActivityDefID, m.State, m.DueAt}
	}
	return insertRows(ctx, s, tableVisibility, visibilityColumns, rows)
}

// holdWorkItemUpdate queues the versioned UPDATE of a work item and the
// replacement of its visibility rows, which take the item's process and
// activity from its row (INSERT … SELECT), so that nothing needs reading
// first.
func (s *Store) holdWorkItemUpdate(ctx context.Context, params store.UpdateWorkItemParams, visible []store.Principal) error {
	id := params.ID
	dueAt := dbTimePtr(params.DueAt)
	err := s.write(ctx, versionedWrite(s, id, params.ExpectedVersion, setOf(tableWorkItems, "work item", workItemUpdates(params))))
	if err != nil {
		return err
	}
	// The visibility rows of this item, before and after: no write of
	// them may move past these.
	rows := []touch{{table: tableVisibility, ids: []int64{id}}}
	err = s.write(ctx, queuedWrite{
		what:    fmt.Sprintf("delete the worklist rows of work item %d", id),
		query:   s.statementVerb("DELETE", tableVisibility) + " FROM `" + tableVisibility + "` WHERE `work_item_id` = ?",
		args:    []any{id},
		touches: rows,
	})
	if err != nil || len(visible) == 0 {
		return err
	}
	var q strings.Builder
	q.WriteString(s.statementVerb("INSERT", tableVisibility) + " INTO `" + tableVisibility + "` (`" + strings.Join(visibilityColumns, "`,`") + "`) ")
	args := make([]any, 0, 6*len(visible))
	for i, p := range visible {
		if i > 0 {
			q.WriteString(" UNION ALL ")
		}
		q.WriteString("SELECT ?, ?, ?, `id`, `process_def_id`, `activity_def_id`, ?, ? FROM `" + tableWorkItems + "` WHERE `id` = ?")
		args = append(args, string(p.Kind), p.ID, -int64(params.Priority), params.State, dueAt, id)
	}
	return s.write(ctx, queuedWrite{
		what:    fmt.Sprintf("insert the worklist rows of work item %d", id),
		query:   q.String(),
		args:    args,
		touches: append(rows, touch{table: tableWorkItems, ids: []int64{id}}),
	})
}

// workItemUpdates are the columns UpdateWorkItem sets, but the version.
func workItemUpdates(params store.UpdateWorkItemParams) map[string]any {
	return map[string]any{
		"state":          params.State,
		"performer":      params.Performer,
		"owner":          params.Owner,
		"assignees":      dbPrincipals(params.Assignees),
		"priority":       params.Priority,
		"due_at":         dbTimePtr(params.DueAt),
		"completed_by":   params.CompletedBy,
		"completion_key": params.CompletionKey,
		"suspended_from": params.SuspendedFrom,
		"result":         dbBytes(params.Result),
		"updated_at":     dbTime(params.UpdatedAt),
		"ended_at":       dbTimePtr(params.EndedAt),
	}
}
