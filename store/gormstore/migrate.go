package gormstore

import (
	"context"
	"maps"
	"slices"

	"gorm.io/gorm"

	"github.com/goxpdl/goxpdl/store"
)

// MigrateProcessInstance implements store.Tx.
func (s *Store) MigrateProcessInstance(ctx context.Context, params store.MigrateProcessInstanceParams) (int64, error) {
	if err := requireTime("migrate process instance: updated at", params.UpdatedAt); err != nil {
		return 0, err
	}
	if !s.inTx() {
		var v int64
		err := s.InTx(ctx, func(ctx context.Context, tx store.Tx) error {
			var err error
			v, err = tx.MigrateProcessInstance(ctx, params)
			return err
		})
		return v, err
	}
	// The instance leaves its definition's count (counts.go) and, once
	// moved, joins the new one's.
	if err := s.recordCountOf(ctx, params.ID, params.ExpectedVersion, "", -1); err != nil {
		return 0, err
	}
	v, err := s.updateVersioned(ctx, params.ID, params.ExpectedVersion, setOf(tableProcessInstances, "process instance", map[string]any{
		"definition_id":  params.DefinitionID,
		"process_def_id": params.ProcessDefID,
		"tokens":         dbBytes(params.Tokens),
		"updated_at":     dbTime(params.UpdatedAt),
	}))
	if err != nil {
		return 0, err
	}
	if err := s.recordCountOf(ctx, params.ID, v, "", 1); err != nil {
		return 0, err
	}
	db := s.db.WithContext(ctx)
	for _, id := range slices.Sorted(maps.Keys(params.Activities)) {
		def := params.Activities[id]
		if err := db.Table(tableActivityInstances).Where("id = ? AND process_instance_id = ?", id, params.ID).
			Update("activity_def_id", def).Error; err != nil {
			return 0, wrap(err, "migrate activity instance %d", id)
		}
		for _, table := range []string{tableWorkItems, tableSubscriptions} {
			if err := db.Table(table).Where("activity_instance_id = ?", id).Update("activity_def_id", def).Error; err != nil {
				return 0, wrap(err, "migrate %s of activity instance %d", table, id)
			}
		}
		if err := db.Table(tableVisibility).Where("work_item_id IN (?)",
			db.Table(tableWorkItems).Select("id").Where("activity_instance_id = ?", id)).
			Updates(map[string]any{"activity_def_id": def, "process_def_id": params.ProcessDefID}).Error; err != nil {
			return 0, wrap(err, "migrate worklist of activity instance %d", id)
		}
	}
	for _, table := range []string{tableWorkItems, tableInbox} {
		if err := db.Table(table).Where("process_instance_id = ?", params.ID).Update("process_def_id", params.ProcessDefID).Error; err != nil {
			return 0, wrap(err, "migrate %s of process instance %d", table, params.ID)
		}
	}
	if len(params.Renamed) > 0 {
		expr := "CASE activity_def_id"
		var args []any
		for _, old := range slices.Sorted(maps.Keys(params.Renamed)) {
			expr += " WHEN ? THEN ?"
			args = append(args, old, params.Renamed[old])
		}
		expr += " ELSE activity_def_id END"
		if err := db.Table(tableInbox).Where("process_instance_id = ?", params.ID).
			Update("activity_def_id", gorm.Expr(expr, args...)).Error; err != nil {
			return 0, wrap(err, "migrate inbox of process instance %d", params.ID)
		}
	}
	return v, nil
}
