package gormstore

import (
	"context"
	"errors"
	"fmt"

	"github.com/goxpdl/goxpdl/store"
)

// InsertWorkItem implements store.Tx.
func (s *Store) InsertWorkItem(ctx context.Context, item store.WorkItem) (store.WorkItem, error) {
	if err := errors.Join(
		requireTime("insert work item: created at", item.CreatedAt),
		requireTime("insert work item: updated at", item.UpdatedAt),
	); err != nil {
		return store.WorkItem{}, err
	}
	m := workItemFromRow(item)
	m.ID = 0
	if err := s.db.WithContext(ctx).Create(&m).Error; err != nil {
		return store.WorkItem{}, wrap(err, "insert work item")
	}
	return m.row(), nil
}

// GetWorkItem implements store.Tx.
func (s *Store) GetWorkItem(ctx context.Context, id int64) (store.WorkItem, error) {
	var m workItemModel
	if err := s.db.WithContext(ctx).Take(&m, "id = ?", id).Error; err != nil {
		return store.WorkItem{}, wrap(err, "get work item %d", id)
	}
	return m.row(), nil
}

// UpdateWorkItem implements store.Tx.
func (s *Store) UpdateWorkItem(ctx context.Context, params store.UpdateWorkItemParams) error {
	if err := requireTime("update work item: updated at", params.UpdatedAt); err != nil {
		return err
	}
	db := s.db.WithContext(ctx)
	q := db.Model(&workItemModel{}).Where("id = ?", params.ID)
	if params.ExpectedState != "" {
		q = q.Where("state = ?", params.ExpectedState)
	}
	res := q.Updates(map[string]any{
		"state":      params.State,
		"performer":  params.Performer,
		"updated_at": dbTime(params.UpdatedAt),
		"ended_at":   dbTimePtr(params.EndedAt),
	})
	if res.Error != nil {
		return wrap(res.Error, "update work item %d", params.ID)
	}
	if res.RowsAffected == 1 {
		return nil
	}
	// No row changed: it does not exist, it left ExpectedState, or (MySQL
	// counts changed rows, not matched ones) it already had these values.
	var states []string
	if err := db.Model(&workItemModel{}).Where("id = ?", params.ID).Pluck("state", &states).Error; err != nil {
		return wrap(err, "update work item %d", params.ID)
	}
	switch {
	case len(states) == 0:
		return fmt.Errorf("update work item %d: %w", params.ID, store.ErrNotFound)
	case params.ExpectedState != "" && states[0] != params.ExpectedState:
		return fmt.Errorf("update work item %d: expected state %q, found %q: %w", params.ID, params.ExpectedState, states[0], store.ErrConflict)
	}
	return nil
}

// ListWorkItems implements store.Tx.
func (s *Store) ListWorkItems(ctx context.Context, params store.ListWorkItemsParams) ([]store.WorkItem, error) {
	q := s.db.WithContext(ctx).Order("id")
	if params.ProcessInstanceID != 0 {
		q = q.Where("process_instance_id = ?", params.ProcessInstanceID)
	}
	if len(params.States) > 0 {
		q = q.Where("state IN ?", params.States)
	}
	if params.AfterID != 0 {
		q = q.Where("id > ?", params.AfterID)
	}
	if params.Limit > 0 {
		q = q.Limit(params.Limit)
	}
	var ms []workItemModel
	if err := q.Find(&ms).Error; err != nil {
		return nil, wrap(err, "list work items")
	}
	out := make([]store.WorkItem, len(ms))
	for i := range ms {
		out[i] = ms[i].row()
	}
	return out, nil
}
