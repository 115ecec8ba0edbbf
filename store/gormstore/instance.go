package gormstore

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"

	"gorm.io/gorm"
	"gorm.io/gorm/clause"

	"github.com/goxpdl/goxpdl/store"
)

// InsertProcessInstance implements store.Tx.
func (s *Store) InsertProcessInstance(ctx context.Context, inst store.ProcessInstance) (store.ProcessInstance, error) {
	done, err := s.writing(ctx)
	if err != nil {
		return store.ProcessInstance{}, err
	}
	defer done()
	if err := errors.Join(
		requireTime("insert process instance: created at", inst.CreatedAt),
		requireTime("insert process instance: updated at", inst.UpdatedAt),
	); err != nil {
		return store.ProcessInstance{}, err
	}
	m := processInstanceFromRow(inst)
	m.ID = 0
	m.Version = 1
	ms := []processInstanceModel{m}
	if err := insertModels(ctx, s, tableProcessInstances, processInstanceColumns, ms, processInstanceModel.values, func(m *processInstanceModel, id int64) { m.ID = id }); err != nil {
		return store.ProcessInstance{}, wrap(err, "insert process instance")
	}
	return ms[0].row(), nil
}

// GetProcessInstance implements store.Tx.
func (s *Store) GetProcessInstance(ctx context.Context, id int64) (store.ProcessInstance, error) {
	var m processInstanceModel
	if err := s.db.WithContext(ctx).Take(&m, "id = ?", id).Error; err != nil {
		return store.ProcessInstance{}, wrap(err, "get process instance %d", id)
	}
	return m.row(), nil
}

// UpdateProcessInstance implements store.Tx.
func (s *Store) UpdateProcessInstance(ctx context.Context, params store.UpdateProcessInstanceParams) (int64, error) {
	if err := requireTime("update process instance: updated at", params.UpdatedAt); err != nil {
		return 0, err
	}
	return s.updateVersioned(ctx, tableProcessInstances, "process instance", params.ID, params.ExpectedVersion, map[string]any{
		"state":      params.State,
		"diagnosis":  params.Diagnosis,
		"tokens":     dbBytes(params.Tokens),
		"updated_at": dbTime(params.UpdatedAt),
		"ended_at":   dbTimePtr(params.EndedAt),
	})
}

// updateVersioned is the optimistic update of process and activity
// instances: one UPDATE ... WHERE id = ? AND version = ? that also
// increments the version. No row changed means the version moved on
// (ErrConflict) or the row does not exist (ErrNotFound), which a second
// read tells apart.
func (s *Store) updateVersioned(ctx context.Context, table, what string, id, expected int64, set map[string]any) (int64, error) {
	done, err := s.writing(ctx)
	if err != nil {
		return 0, err
	}
	defer done()
	// A plain statement on the connection underneath gorm: it runs on
	// every engine step, where gorm's map handling cost more than the
	// UPDATE itself. Columns in name order, so the text is always the
	// same.
	var q strings.Builder
	args := make([]any, 0, len(set)+2)
	q.WriteString("UPDATE `" + table + "` SET ")
	for _, col := range slices.Sorted(maps.Keys(set)) {
		q.WriteString("`" + col + "` = ?, ")
		args = append(args, set[col])
	}
	q.WriteString("`version` = `version` + 1 WHERE `id` = ? AND `version` = ?")
	args = append(args, id, expected)
	err = s.write(ctx, queuedWrite{
		what:   fmt.Sprintf("update %s %d", what, id),
		query:  q.String(),
		args:   args,
		rowsOK: func(n int64) bool { return n == 1 },
		failed: func(ctx context.Context) error {
			var versions []int64
			if err := s.db.WithContext(ctx).Table(table).Where("id = ?", id).Pluck("version", &versions).Error; err != nil {
				return wrap(err, "update %s %d", what, id)
			}
			if len(versions) == 0 {
				return fmt.Errorf("update %s %d: %w", what, id, store.ErrNotFound)
			}
			return fmt.Errorf("update %s %d: expected version %d, found %d: %w", what, id, expected, versions[0], store.ErrConflict)
		},
	})
	if err != nil {
		return 0, err
	}
	return expected + 1, nil
}

// ListProcessInstances implements store.Tx.
func (s *Store) ListProcessInstances(ctx context.Context, params store.ListProcessInstancesParams) ([]store.ProcessInstance, error) {
	q := s.db.WithContext(ctx).Order("id")
	if len(params.States) > 0 {
		q = q.Where("state IN ?", params.States)
	}
	if params.DefinitionID != 0 {
		q = q.Where("definition_id = ?", params.DefinitionID)
	}
	if params.ParentInstanceID != 0 {
		q = q.Where("parent_instance_id = ?", params.ParentInstanceID)
	}
	if params.AfterID != 0 {
		q = q.Where("id > ?", params.AfterID)
	}
	if params.StartKey != "" {
		q = q.Where("start_key = ?", params.StartKey)
	}
	if params.BusinessKey != "" {
		q = q.Where("business_key = ?", params.BusinessKey)
	}
	if params.NoPendingEvents {
		q = q.Where("NOT EXISTS (SELECT 1 FROM " + tableEvents + " e WHERE e.process_instance_id = " +
			tableProcessInstances + ".id AND e.processed_at IS NULL)")
	}
	if params.ProcessDefID != "" {
		q = q.Where("process_def_id = ?", params.ProcessDefID)
	}
	if params.PackageID != "" || params.PackageVersion != 0 {
		defs := s.db.Model(&definitionModel{}).Select("id")
		if params.PackageID != "" {
			defs = defs.Where("package_id = ?", params.PackageID)
		}
		if params.PackageVersion != 0 {
			defs = defs.Where("version = ?", params.PackageVersion)
		}
		q = q.Where("definition_id IN (?)", defs)
	}
	if params.CreatedFrom != nil {
		q = q.Where("created_at >= ?", dbTime(*params.CreatedFrom))
	}
	if params.CreatedBefore != nil {
		q = q.Where("created_at < ?", dbTime(*params.CreatedBefore))
	}
	if params.OpenIncidentCause != "" {
		q = q.Where("EXISTS (SELECT 1 FROM "+tableIncidents+" i WHERE i.process_instance_id = "+
			tableProcessInstances+".id AND i.state = ? AND i.cause = ?)", store.IncidentOpen, params.OpenIncidentCause)
	}
	if len(params.IDs) > 0 {
		q = q.Where("id IN ?", params.IDs)
	}
	if params.Limit > 0 {
		q = q.Limit(params.Limit)
	}
	var ms []processInstanceModel
	if err := q.Find(&ms).Error; err != nil {
		return nil, wrap(err, "list process instances")
	}
	out := make([]store.ProcessInstance, len(ms))
	for i := range ms {
		out[i] = ms[i].row()
	}
	return out, nil
}

// CountProcessInstancesByState implements store.Tx.
func (s *Store) CountProcessInstancesByState(ctx context.Context) (map[string]int64, error) {
	var rows []struct {
		State string
		N     int64
	}
	err := s.db.WithContext(ctx).Model(&processInstanceModel{}).
		Select("state, COUNT(*) AS n").Group("state").Scan(&rows).Error
	if err != nil {
		return nil, wrap(err, "count process instances by state")
	}
	out := make(map[string]int64, len(rows))
	for _, r := range rows {
		out[r.State] = r.N
	}
	return out, nil
}

// InsertActivityInstances implements store.Tx.
func (s *Store) InsertActivityInstances(ctx context.Context, insts []store.ActivityInstance) ([]store.ActivityInstance, error) {
	if len(insts) == 0 {
		return nil, nil
	}
	if s.dialect == store.DialectSQLite && !s.inTx() {
		// The IDs come from a transaction's counter (ids.go).
		var out []store.ActivityInstance
		err := s.InTx(ctx, func(ctx context.Context, tx store.Tx) error {
			var err error
			out, err = tx.InsertActivityInstances(ctx, insts)
			return err
		})
		return out, err
	}
	done, err := s.writing(ctx)
	if err != nil {
		return nil, err
	}
	defer done()
	ms := make([]activityInstanceModel, len(insts))
	for i, r := range insts {
		if err := errors.Join(
			requireTime("insert activity instance: created at", r.CreatedAt),
			requireTime("insert activity instance: updated at", r.UpdatedAt),
		); err != nil {
			return nil, err
		}
		if r.ID != 0 && s.dialect != store.DialectSQLite {
			return nil, fmt.Errorf("insert activity instance with id %d: %w", r.ID, store.ErrNotSupported)
		}
		ms[i] = activityInstanceFromRow(r)
		ms[i].Version = 1
	}
	if s.dialect != store.DialectSQLite {
		if err := insertModels(ctx, s, tableActivityInstances, activityInstanceColumns, ms, activityInstanceModel.values, func(m *activityInstanceModel, id int64) { m.ID = id }); err != nil {
			return nil, wrap(err, "insert %d activity instances", len(insts))
		}
	} else if err := s.insertActivityInstancesSQLite(ctx, ms); err != nil {
		return nil, wrap(err, "insert %d activity instances", len(insts))
	}
	out := make([]store.ActivityInstance, len(ms))
	for i := range ms {
		out[i] = ms[i].row()
	}
	return out, nil
}

// insertActivityInstancesSQLite writes ms with their IDs, taking those
// they lack from the transaction's counter.
func (s *Store) insertActivityInstancesSQLite(ctx context.Context, ms []activityInstanceModel) error {
	rows := make([][]any, len(ms))
	for i := range ms {
		if ms[i].ID == 0 {
			id, err := s.reserveIDs(ctx, 1)
			if err != nil {
				return err
			}
			ms[i].ID = id
		}
		rows[i] = append([]any{ms[i].ID}, ms[i].values()...)
	}
	return insertRows(ctx, s, tableActivityInstances, activityInstanceColumnsWithID, rows)
}

// activityInstanceColumnsWithID are the id and activityInstanceColumns.
var activityInstanceColumnsWithID = append([]string{"id"}, activityInstanceColumns...)

// GetActivityInstance implements store.Tx.
func (s *Store) GetActivityInstance(ctx context.Context, id int64) (store.ActivityInstance, error) {
	var m activityInstanceModel
	if err := s.db.WithContext(ctx).Take(&m, "id = ?", id).Error; err != nil {
		return store.ActivityInstance{}, wrap(err, "get activity instance %d", id)
	}
	return m.row(), nil
}

// UpdateActivityInstance implements store.Tx.
func (s *Store) UpdateActivityInstance(ctx context.Context, params store.UpdateActivityInstanceParams) (int64, error) {
	if err := requireTime("update activity instance: updated at", params.UpdatedAt); err != nil {
		return 0, err
	}
	return s.updateVersioned(ctx, tableActivityInstances, "activity instance", params.ID, params.ExpectedVersion, map[string]any{
		"state":      params.State,
		"attempt":    params.Attempt,
		"diagnosis":  params.Diagnosis,
		"updated_at": dbTime(params.UpdatedAt),
		"ended_at":   dbTimePtr(params.EndedAt),
		"loop_state": dbBytes(params.LoopState),
	})
}

// UpdateActivityInstances implements store.Tx with one UPDATE whose
// columns take their value by id (CASE `id` WHEN … THEN …) and whose WHERE
// checks each row's version the same way: a step that completes one
// activity and moves several others (an activity set's, a join's) pays one
// statement, not one per activity.
func (s *Store) UpdateActivityInstances(ctx context.Context, params []store.UpdateActivityInstanceParams) error {
	switch len(params) {
	case 0:
		return nil
	case 1:
		_, err := s.UpdateActivityInstance(ctx, params[0])
		return err
	}
	if len(params) > batchSize {
		for start := 0; start < len(params); start += batchSize {
			if err := s.UpdateActivityInstances(ctx, params[start:min(start+batchSize, len(params))]); err != nil {
				return err
			}
		}
		return nil
	}
	for _, p := range params {
		if err := requireTime("update activity instance: updated at", p.UpdatedAt); err != nil {
			return err
		}
	}
	done, err := s.writing(ctx)
	if err != nil {
		return err
	}
	defer done()
	columns := []struct {
		name  string
		value func(store.UpdateActivityInstanceParams) any
	}{
		{"attempt", func(p store.UpdateActivityInstanceParams) any { return p.Attempt }},
		{"diagnosis", func(p store.UpdateActivityInstanceParams) any { return p.Diagnosis }},
		{"ended_at", func(p store.UpdateActivityInstanceParams) any { return dbTimePtr(p.EndedAt) }},
		{"loop_state", func(p store.UpdateActivityInstanceParams) any { return dbBytes(p.LoopState) }},
		{"state", func(p store.UpdateActivityInstanceParams) any { return p.State }},
		{"updated_at", func(p store.UpdateActivityInstanceParams) any { return dbTime(p.UpdatedAt) }},
	}
	byID := func(q *strings.Builder, args []any, value func(store.UpdateActivityInstanceParams) any) []any {
		q.WriteString("CASE `id`")
		for _, p := range params {
			q.WriteString(" WHEN ? THEN ?")
			args = append(args, p.ID, value(p))
		}
		q.WriteString(" END")
		return args
	}
	var q strings.Builder
	args := make([]any, 0, len(params)*(2*len(columns)+3))
	q.WriteString(s.statementVerb("UPDATE", tableActivityInstances) + " `" + tableActivityInstances + "` SET ")
	for _, c := range columns {
		q.WriteString("`" + c.name + "` = ")
		args = byID(&q, args, c.value)
		q.WriteString(", ")
	}
	q.WriteString("`version` = `version` + 1 WHERE `id` IN (" + strings.TrimSuffix(strings.Repeat("?,", len(params)), ",") + ")")
	ids := make([]int64, len(params))
	for i, p := range params {
		ids[i] = p.ID
		args = append(args, p.ID)
	}
	q.WriteString(" AND `version` = ")
	args = byID(&q, args, func(p store.UpdateActivityInstanceParams) any { return p.ExpectedVersion })
	var updated int64
	return s.write(ctx, queuedWrite{
		what:  fmt.Sprintf("update %d activity instances", len(params)),
		query: q.String(),
		args:  args,
		rowsOK: func(n int64) bool {
			updated = n
			return n == int64(len(params))
		},
		failed: func(ctx context.Context) error {
			var found []int64
			if err := s.db.WithContext(ctx).Table(tableActivityInstances).Where("id IN ?", ids).Pluck("id", &found).Error; err != nil {
				return wrap(err, "update %d activity instances", len(params))
			}
			for _, id := range ids {
				if !slices.Contains(found, id) {
					return fmt.Errorf("update activity instance %d: %w", id, store.ErrNotFound)
				}
			}
			return fmt.Errorf("update %d activity instances: %d had the expected version: %w", len(params), updated, store.ErrConflict)
		},
	})
}

// ListActivityInstances implements store.Tx.
func (s *Store) ListActivityInstances(ctx context.Context, params store.ListActivityInstancesParams) ([]store.ActivityInstance, error) {
	q := s.db.WithContext(ctx).Where("process_instance_id = ?", params.ProcessInstanceID).Order("id")
	if len(params.States) > 0 {
		q = q.Where("state IN ?", params.States)
	}
	if params.AfterID != 0 {
		q = q.Where("id > ?", params.AfterID)
	}
	if params.Limit > 0 {
		q = q.Limit(params.Limit)
	}
	var ms []activityInstanceModel
	if err := q.Find(&ms).Error; err != nil {
		return nil, wrap(err, "list activity instances of process instance %d", params.ProcessInstanceID)
	}
	out := make([]store.ActivityInstance, len(ms))
	for i := range ms {
		out[i] = ms[i].row()
	}
	return out, nil
}

// PutVariables implements store.Tx with an upsert (INSERT ... ON CONFLICT
// on SQLite, ON DUPLICATE KEY UPDATE on MySQL).
func (s *Store) PutVariables(ctx context.Context, vars []store.Variable) error {
	if len(vars) == 0 {
		return nil
	}
	ms := make([]variableModel, len(vars))
	for i, v := range vars {
		ms[i] = variableFromRow(v)
	}
	upsert := clause.OnConflict{
		Columns:   []clause.Column{{Name: "process_instance_id"}, {Name: "name"}},
		DoUpdates: clause.AssignmentColumns([]string{"type", "value"}),
	}
	err := s.atomic(ctx, func(db *gorm.DB) error {
		for start := 0; start < len(ms); start += batchSize {
			chunk := ms[start:min(start+batchSize, len(ms))]
			if err := db.Clauses(upsert).Create(&chunk).Error; err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return wrap(err, "put %d variables", len(vars))
	}
	return nil
}

// GetVariables implements store.Tx.
func (s *Store) GetVariables(ctx context.Context, processInstanceID int64) (map[string]store.Variable, error) {
	var ms []variableModel
	if err := s.db.WithContext(ctx).Where("process_instance_id = ?", processInstanceID).Find(&ms).Error; err != nil {
		return nil, wrap(err, "get variables of process instance %d", processInstanceID)
	}
	out := make(map[string]store.Variable, len(ms))
	for i := range ms {
		out[ms[i].Name] = ms[i].row()
	}
	return out, nil
}
