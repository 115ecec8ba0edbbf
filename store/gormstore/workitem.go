package gormstore

import (
	"context"
	"errors"
	"fmt"

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
	var version int64
	err = s.atomic(ctx, func(db *gorm.DB) error {
		q := db.Model(&workItemModel{}).Where("id = ?", params.ID)
		if params.ExpectedVersion != 0 {
			q = q.Where("version = ?", params.ExpectedVersion)
		}
		if params.ExpectedState != "" {
			q = q.Where("state = ?", params.ExpectedState)
		}
		res := q.Updates(map[string]any{
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
			"version":        gorm.Expr("version + 1"),
		})
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
