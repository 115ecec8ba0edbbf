package gormstore

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"gorm.io/gorm"
	"gorm.io/gorm/clause"

	"github.com/goxpdl/goxpdl/store"
)

// InsertProcessInstance implements store.Tx.
func (s *Store) InsertProcessInstance(ctx context.Context, inst store.ProcessInstance) (store.ProcessInstance, error) {
	out, err := s.InsertProcessInstances(ctx, []store.ProcessInstance{inst})
	if err != nil {
		return store.ProcessInstance{}, err
	}
	return out[0], nil
}

// InsertProcessInstances implements store.Tx: multi-row INSERTs of at
// most batchSize rows, with the caller's ids, and the change of the
// counts per state (counts.go), in one transaction. Rows without a start
// key are a write that needs no result (queued on a pipelined
// transaction, pipeline.go); a row with one is sent at once, so that a
// key already stored is the caller's ErrDuplicate rather than a later
// statement's.
func (s *Store) InsertProcessInstances(ctx context.Context, insts []store.ProcessInstance) ([]store.ProcessInstance, error) {
	if len(insts) == 0 {
		return nil, nil
	}
	rows := make([][]any, len(insts))
	out := make([]store.ProcessInstance, len(insts))
	deltas := countDeltas{}
	keyed := false
	for i, inst := range insts {
		if err := errors.Join(
			requireID("insert process instance", inst.ID),
			requireTime("insert process instance: created at", inst.CreatedAt),
			requireTime("insert process instance: updated at", inst.UpdatedAt),
		); err != nil {
			return nil, err
		}
		if inst.Depth < 0 {
			return nil, fmt.Errorf("gormstore: insert process instance: depth %d is negative", inst.Depth)
		}
		m := processInstanceFromRow(inst)
		m.Version = 1
		rows[i] = append([]any{m.ID}, m.values()...)
		out[i] = m.row()
		keyed = keyed || inst.StartKey != ""
		deltas.add(inst.DefinitionID, inst.ProcessDefID, inst.State, 1)
	}
	if !s.inTx() {
		var out []store.ProcessInstance
		err := s.InTx(ctx, func(ctx context.Context, tx store.Tx) error {
			var err error
			out, err = tx.InsertProcessInstances(ctx, insts)
			return err
		})
		return out, err
	}
	var err error
	if keyed {
		err = insertChunks(ctx, s, tableProcessInstances, processInstanceColumnsWithID, rows, func(db *gorm.DB, query string, args []any, _ int) error {
			_, err := db.Statement.ConnPool.ExecContext(ctx, s.native(query), args...)
			return err
		})
	} else {
		err = insertRows(ctx, s, tableProcessInstances, processInstanceColumnsWithID, rows)
	}
	if err != nil {
		return nil, wrap(err, "insert %d process instances", len(insts))
	}
	if err := s.recordCounts(ctx, deltas); err != nil {
		return nil, err
	}
	return out, nil
}

// processInstanceColumnsWithID are the id and processInstanceColumns.
var processInstanceColumnsWithID = append([]string{"id"}, processInstanceColumns...)

// GetProcessInstance implements store.Tx.
func (s *Store) GetProcessInstance(ctx context.Context, id int64) (store.ProcessInstance, error) {
	var m processInstanceModel
	if err := s.db.WithContext(ctx).Take(&m, "id = ?", id).Error; err != nil {
		return store.ProcessInstance{}, wrap(err, "get process instance %d", id)
	}
	return m.row(), nil
}

// UpdateProcessInstance implements store.Tx. A change of state moves
// the instance from one count per state to another (counts.go), in the
// same transaction.
func (s *Store) UpdateProcessInstance(ctx context.Context, params store.UpdateProcessInstanceParams) (int64, error) {
	if err := requireTime("update process instance: updated at", params.UpdatedAt); err != nil {
		return 0, err
	}
	if !s.inTx() {
		var v int64
		err := s.InTx(ctx, func(ctx context.Context, tx store.Tx) error {
			var err error
			v, err = tx.UpdateProcessInstance(ctx, params)
			return err
		})
		return v, err
	}
	from := params.FromState
	if from == "" {
		var states []string
		if err := s.db.WithContext(ctx).Table(tableProcessInstances).Where("id = ? AND version = ?", params.ID, params.ExpectedVersion).
			Pluck("state", &states).Error; err != nil {
			return 0, wrap(err, "update process instance %d", params.ID)
		}
		if len(states) == 1 {
			from = states[0]
		}
	}
	// SQLite rewrites the entries of every index on a column the SET
	// names, whether its value changes or not: state is in four of the
	// table's indexes, ended_at in one. An update that keeps the state
	// (most of them: every step of a running instance) leaves both out
	// of the UPDATE, and clears a stored end time, when there is one, in
	// a statement that changes no row otherwise (clearEndWrite).
	diagnosis, tokens, updatedAt := params.Diagnosis, dbBytes(params.Tokens), dbTime(params.UpdatedAt)
	set := versionedSet{shape: processUpdate, values: []any{diagnosis, dbTimePtr(params.EndedAt), params.State, tokens, updatedAt}}
	clearEnd := false
	if s.dialect == store.DialectSQLite && from != "" && from == params.State {
		set = versionedSet{shape: processUpdateKeepingState, values: []any{diagnosis, dbTimePtr(params.EndedAt), tokens, updatedAt}}
		if params.EndedAt == nil {
			set = versionedSet{shape: processUpdateRunning, values: []any{diagnosis, tokens, updatedAt}}
			clearEnd = true
		}
	}
	v, err := s.updateVersioned(ctx, params.ID, params.ExpectedVersion, set)
	if err == nil && clearEnd {
		err = s.write(ctx, clearEndWrite(s, params.ID))
	}
	if err != nil || from == params.State || from == "" {
		// No row at ExpectedVersion: updateVersioned failed, or fails
		// when a pipelined transaction sends it.
		return v, err
	}
	// No version in the count: an update that fails, fails the
	// transaction (at once, or when a pipelined one sends it), and a
	// later update of the instance in this transaction may join this one
	// (coalesce.go), so that the count would not find the version.
	if err := s.recordCountOf(ctx, params.ID, 0, from, -1); err != nil {
		return 0, err
	}
	if err := s.recordCountOf(ctx, params.ID, 0, params.State, 1); err != nil {
		return 0, err
	}
	return v, nil
}

// The shapes of UpdateProcessInstance's update: the values go in the
// order of the columns.
var (
	processUpdate             = newVersionedShape(tableProcessInstances, "process instance", "diagnosis", "ended_at", "state", "tokens", "updated_at")
	processUpdateKeepingState = newVersionedShape(tableProcessInstances, "process instance", "diagnosis", "ended_at", "tokens", "updated_at")
	processUpdateRunning      = newVersionedShape(tableProcessInstances, "process instance", "diagnosis", "tokens", "updated_at")
)

// updateVersioned is the optimistic update of process and activity
// instances: one UPDATE ... WHERE id = ? AND version = ? that also
// increments the version. No row changed means the version moved on
// (ErrConflict) or the row does not exist (ErrNotFound), which a second
// read tells apart.
func (s *Store) updateVersioned(ctx context.Context, id, expected int64, set versionedSet) (int64, error) {
	done, err := s.writing(ctx)
	if err != nil {
		return 0, err
	}
	defer done()
	if err := s.write(ctx, versionedWrite(s, id, expected, set)); err != nil {
		return 0, err
	}
	return expected + 1, nil
}

// ListProcessInstances implements store.Tx.
func (s *Store) ListProcessInstances(ctx context.Context, params store.ListProcessInstancesParams) ([]store.ProcessInstance, error) {
	q, err := s.listQuery(ctx, params)
	if err != nil {
		return nil, err
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

// listQuery is the query of ListProcessInstances. A page of a filter by
// several definitions (a package, a version) or several states is the
// union of the pages of each definition and state, each a walk of an
// index in the page's order that stops after Limit rows, merged and cut
// to Limit: with one query MySQL reads every row of those definitions
// and sorts them (at a million instances, 125,000 rows of a package of
// four versions), since no index is in the order of a list of values.
func (s *Store) listQuery(ctx context.Context, params store.ListProcessInstancesParams) (*gorm.DB, error) {
	q, err := s.instancesQuery(ctx, params)
	if err != nil {
		return nil, err
	}
	order := orderBy(params.Order)
	if params.Limit <= 0 {
		return q.Order(order), nil
	}
	branches, err := s.listBranches(ctx, params)
	switch {
	case err != nil:
		return nil, err
	case len(branches) == 1:
		params = branches[0]
		if q, err = s.instancesQuery(ctx, params); err != nil {
			return nil, err
		}
	case len(branches) > 1:
		parts := make([]string, len(branches))
		args := make([]any, len(branches), len(branches)+1)
		for i, p := range branches {
			bq, err := s.instancesQuery(ctx, p)
			if err != nil {
				return nil, err
			}
			parts[i] = "SELECT * FROM (?) AS u" + strconv.Itoa(i)
			args[i] = s.pageIndex(bq, p).Order(order).Limit(params.Limit)
		}
		return s.db.WithContext(ctx).Raw("SELECT * FROM ("+strings.Join(parts, " UNION ALL ")+") AS u ORDER BY "+order+" LIMIT ?",
			append(args, params.Limit)...), nil
	}
	q = s.pageIndex(q, params)
	if (params.CreatedFrom != nil || params.CreatedBefore != nil) && !params.Order.Created() {
		// Started between, by id: the ids of the page come from the
		// start-time index alone (sorting ids, not rows: MariaDB sorted
		// the rows of a day, 35,000 at a million instances, in 0.5 s),
		// and only the page's rows are read.
		ids := q.Select("id").Order(order).Limit(params.Limit)
		return s.db.WithContext(ctx).Model(&processInstanceModel{}).Where("id IN (SELECT id FROM (?) AS page)", ids).Order(order), nil
	}
	return q.Order(order).Limit(params.Limit), nil
}

// pageIndex makes q, a page of params, use the index written for it on
// MySQL (FORCE INDEX). For ORDER BY … LIMIT, MariaDB prefers to walk the
// primary key and skip the rows that do not match whenever it expects
// to find a page soon, and it misjudges: a page of the instances started
// on a day a third of the way through a million instances walked 600,000
// rows (0.2 s), one of a definition and a state intersected two indexes
// and sorted (0.3 s). The index chosen here holds the filter's rows in
// the page's order (or, started between by id, their ids), so the page
// reads its rows and stops. SQLite's planner picks these indexes itself
// (TestConsoleQueriesUseTheirIndexes), and a filter by anything else is
// left to the database.
func (s *Store) pageIndex(q *gorm.DB, p store.ListProcessInstancesParams) *gorm.DB {
	if s.dialect != store.DialectMySQL || p.ParentInstanceID != 0 || p.StartKey != "" || p.BusinessKey != "" || len(p.IDs) > 0 ||
		p.OpenIncidentCause != "" || p.PackageID != "" || p.PackageVersion != 0 || len(p.States) > 1 {
		return q
	}
	byTime := p.CreatedFrom != nil || p.CreatedBefore != nil
	created := p.Order.Created()
	var index string
	switch {
	case p.DefinitionID != 0 && len(p.States) == 1 && !created:
		index = "goxpdl_process_instances_definition_state"
	case p.DefinitionID != 0 && !created:
		index = "goxpdl_process_instances_definition"
	case p.DefinitionID != 0:
		index = "goxpdl_process_instances_definition_created"
	case byTime:
		index = "goxpdl_process_instances_created"
	case len(p.States) == 1 && created:
		index = "goxpdl_process_instances_state_created"
	case len(p.States) == 1:
		index = "goxpdl_process_instances_state"
	case created:
		index = "goxpdl_process_instances_created"
	default:
		return q // the primary key
	}
	return q.Table("`" + tableProcessInstances + "` FORCE INDEX (`" + index + "`)")
}

// maxListBranches bounds the union of listQuery.
const maxListBranches = 64

// listBranches splits params by definition (those of its package and
// version) and by state: nil when it filters by at most one of each
// already, or when the split would have more than maxListBranches parts.
func (s *Store) listBranches(ctx context.Context, params store.ListProcessInstancesParams) ([]store.ListProcessInstancesParams, error) {
	defs := []int64{params.DefinitionID}
	if params.PackageID != "" || params.PackageVersion != 0 {
		q := s.db.WithContext(ctx).Model(&definitionModel{})
		if params.PackageID != "" {
			q = q.Where("package_id = ?", params.PackageID)
		}
		if params.PackageVersion != 0 {
			q = q.Where("version = ?", params.PackageVersion)
		}
		if params.DefinitionID != 0 {
			q = q.Where("id = ?", params.DefinitionID)
		}
		defs = nil
		if err := q.Pluck("id", &defs).Error; err != nil {
			return nil, wrap(err, "list process instances")
		}
		if len(defs) == 0 {
			return nil, nil // the query finds nothing
		}
	}
	states := params.States
	if len(states) == 0 {
		states = []string{""}
	}
	n := len(defs) * len(states)
	if n > maxListBranches || (n == 1 && params.PackageID == "" && params.PackageVersion == 0) {
		return nil, nil
	}
	out := make([]store.ListProcessInstancesParams, 0, n)
	for _, d := range defs {
		for _, st := range states {
			p := params
			p.PackageID, p.PackageVersion, p.DefinitionID, p.States = "", 0, d, nil
			if st != "" {
				p.States = []string{st}
			}
			out = append(out, p)
		}
	}
	return out, nil
}

// orderBy is the ORDER BY of o.
func orderBy(o store.InstanceOrder) string {
	switch o {
	case store.OrderIDDesc:
		return "id DESC"
	case store.OrderCreated:
		return "created_at, id"
	case store.OrderCreatedDesc:
		return "created_at DESC, id DESC"
	}
	return "id"
}

// instancesQuery is the query of the process instances params selects,
// their cursor included, without order or limit.
func (s *Store) instancesQuery(ctx context.Context, params store.ListProcessInstancesParams) (*gorm.DB, error) {
	if !slices.Contains(store.InstanceOrders, params.Order) {
		return nil, fmt.Errorf("list process instances: unknown order %q", params.Order)
	}
	if params.AfterCreatedAt != nil && !params.Order.Created() {
		return nil, fmt.Errorf("list process instances: AfterCreatedAt in order %q", params.Order)
	}
	if params.AfterID != 0 && params.Order.Created() && params.AfterCreatedAt == nil {
		return nil, fmt.Errorf("list process instances: AfterID %d without AfterCreatedAt in order %q", params.AfterID, params.Order)
	}
	q := s.db.WithContext(ctx).Model(&processInstanceModel{})
	if len(params.States) > 0 {
		q = q.Where("state IN ?", params.States)
	}
	if params.DefinitionID != 0 {
		q = q.Where("definition_id = ?", params.DefinitionID)
	}
	if params.ParentInstanceID != 0 {
		q = q.Where("parent_instance_id = ?", params.ParentInstanceID)
	}
	switch {
	case params.AfterCreatedAt != nil:
		// The keyset (created_at, id) after the cursor, written so that
		// both databases see the range of created_at it starts (MySQL
		// does not range-scan a row comparison (a, b) > (x, y)).
		at := dbTime(*params.AfterCreatedAt)
		if params.Order.Desc() {
			q = q.Where("created_at <= ? AND (created_at < ? OR id < ?)", at, at, params.AfterID)
		} else {
			q = q.Where("created_at >= ? AND (created_at > ? OR id > ?)", at, at, params.AfterID)
		}
	case params.AfterID != 0 && params.Order.Desc():
		q = q.Where("id < ?", params.AfterID)
	case params.AfterID != 0:
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
	if params.ActivityState != "" {
		// One probe of goxpdl_activity_instances_process_state an
		// instance.
		q = q.Where("EXISTS (SELECT 1 FROM "+tableActivityInstances+" a WHERE a.process_instance_id = "+
			tableProcessInstances+".id AND a.state = ?)", params.ActivityState)
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
		// IN, not EXISTS: both databases can then start from
		// goxpdl_incidents_cause, which holds the few instances of the
		// cause, rather than probe the incidents for every instance.
		q = q.Where("id IN (SELECT i.process_instance_id FROM "+tableIncidents+" i WHERE i.state = ? AND i.cause = ?)",
			store.IncidentOpen, params.OpenIncidentCause)
	}
	if len(params.IDs) > 0 {
		q = q.Where("id IN ?", params.IDs)
	}
	return q, nil
}

// InsertActivityInstances implements store.Tx: one multi-row INSERT with
// the caller's IDs, queued on a pipelined transaction like history.
func (s *Store) InsertActivityInstances(ctx context.Context, insts []store.ActivityInstance) ([]store.ActivityInstance, error) {
	if len(insts) == 0 {
		return nil, nil
	}
	done, err := s.writing(ctx)
	if err != nil {
		return nil, err
	}
	defer done()
	rows := make([][]any, len(insts))
	out := make([]store.ActivityInstance, len(insts))
	for i, r := range insts {
		if err := errors.Join(
			requireID("insert activity instance", r.ID),
			requireTime("insert activity instance: created at", r.CreatedAt),
			requireTime("insert activity instance: updated at", r.UpdatedAt),
		); err != nil {
			return nil, err
		}
		m := activityInstanceFromRow(r)
		m.Version = 1
		rows[i] = append([]any{m.ID}, m.values()...)
		out[i] = m.row()
	}
	if err := insertRows(ctx, s, tableActivityInstances, activityInstanceColumnsWithID, rows); err != nil {
		return nil, wrap(err, "insert %d activity instances", len(insts))
	}
	return out, nil
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
	return s.updateVersioned(ctx, params.ID, params.ExpectedVersion, versionedSet{shape: activityUpdate, values: []any{
		params.Attempt, params.Diagnosis, dbTimePtr(params.EndedAt), dbBytes(params.LoopState), params.State, dbTime(params.UpdatedAt),
	}})
}

// activityUpdate is the shape of UpdateActivityInstance's update: the
// values go in this order.
var activityUpdate = newVersionedShape(tableActivityInstances, "activity instance",
	"attempt", "diagnosis", "ended_at", "loop_state", "state", "updated_at")

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
	// pgType is the column's type, which PostgreSQL needs told: a CASE
	// whose results are all placeholders would be text.
	columns := []struct {
		name, pgType string
		value        func(store.UpdateActivityInstanceParams) any
	}{
		{"attempt", "integer", func(p store.UpdateActivityInstanceParams) any { return p.Attempt }},
		{"diagnosis", "text", func(p store.UpdateActivityInstanceParams) any { return p.Diagnosis }},
		{"ended_at", "timestamptz", func(p store.UpdateActivityInstanceParams) any { return dbTimePtr(p.EndedAt) }},
		{"loop_state", "bytea", func(p store.UpdateActivityInstanceParams) any { return dbBytes(p.LoopState) }},
		{"state", "varchar", func(p store.UpdateActivityInstanceParams) any { return p.State }},
		{"updated_at", "timestamptz", func(p store.UpdateActivityInstanceParams) any { return dbTime(p.UpdatedAt) }},
	}
	byID := func(q *strings.Builder, args []any, pgType string, value func(store.UpdateActivityInstanceParams) any) []any {
		q.WriteString("CASE `id`")
		then := " WHEN ? THEN ?" + s.pgCast(pgType)
		for _, p := range params {
			q.WriteString(then)
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
		args = byID(&q, args, c.pgType, c.value)
		q.WriteString(", ")
	}
	q.WriteString("`version` = `version` + 1 WHERE `id` IN (" + strings.TrimSuffix(strings.Repeat("?,", len(params)), ",") + ")")
	ids := make([]int64, len(params))
	for i, p := range params {
		ids[i] = p.ID
		args = append(args, p.ID)
	}
	q.WriteString(" AND `version` = ")
	args = byID(&q, args, "bigint", func(p store.UpdateActivityInstanceParams) any { return p.ExpectedVersion })
	var updated int64
	return s.write(ctx, queuedWrite{
		touches: []touch{{table: tableActivityInstances, ids: ids}},
		what:    fmt.Sprintf("update %d activity instances", len(params)),
		query:   q.String(),
		args:    args,
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
// on SQLite and PostgreSQL, ON DUPLICATE KEY UPDATE on MySQL).
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
