package gormstore

import (
	"cmp"
	"context"
	"database/sql"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"gorm.io/gorm"
	"gorm.io/gorm/clause"

	"github.com/goxpdl/goxpdl/store"
)

// The counts of process instances per definition, process and state
// (CountProcessInstanceGroups), for the console's dashboard: a COUNT …
// GROUP BY over the instances reads every row, 0.3 s and more at a
// million instances, too slow for a page that refreshes itself.
//
// Every write that inserts an instance, changes its state or definition,
// or deletes it also appends its change of the counts to
// goxpdl_instance_count_deltas, in the same transaction: +1 for the
// group an instance enters, -1 for the one it leaves. Appending never
// waits for another transaction, as incrementing one counter row per
// group would (on MySQL every engine transaction that starts or ends an
// instance of a definition would queue on that row's lock, and lock
// several such rows in varying orders: deadlocks). The totals are
// goxpdl_instance_counts; FoldInstanceCounts moves the deltas into them
// (the engine calls it every second), and a read adds both up, so it
// is exact whatever has been folded.

// instanceCountModel is the total of one group, as of the last fold.
type instanceCountModel struct {
	DefinitionID int64  `gorm:"column:definition_id;primaryKey;autoIncrement:false"`
	ProcessDefID string `gorm:"column:process_def_id;primaryKey;size:255"`
	State        string `gorm:"column:state;primaryKey;size:64"`
	N            int64  `gorm:"column:n;not null"`
}

func (instanceCountModel) TableName() string { return tableInstanceCounts }

// instanceCountDeltaModel is one change of a group's count not folded
// into its total yet.
type instanceCountDeltaModel struct {
	ID           int64  `gorm:"column:id;primaryKey;autoIncrement"`
	DefinitionID int64  `gorm:"column:definition_id;not null"`
	ProcessDefID string `gorm:"column:process_def_id;size:255;not null"`
	State        string `gorm:"column:state;size:64;not null"`
	N            int64  `gorm:"column:n;not null"`
}

func (instanceCountDeltaModel) TableName() string { return tableInstanceCountDeltas }

var countColumns = []string{"definition_id", "process_def_id", "state", "n"}

// countKey is a group of CountProcessInstanceGroups.
type countKey struct {
	definition int64
	process    string
	state      string
}

func compareCountKeys(a, b countKey) int {
	return cmp.Or(cmp.Compare(a.definition, b.definition), strings.Compare(a.process, b.process), strings.Compare(a.state, b.state))
}

// countDeltas sums changes of the counts per group.
type countDeltas map[countKey]int64

func (d countDeltas) add(definition int64, process, state string, n int64) {
	d[countKey{definition, process, state}] += n
}

// rows are the non-zero deltas as rows of countColumns, in key order.
func (d countDeltas) rows() [][]any {
	keys := slices.SortedFunc(maps.Keys(d), compareCountKeys)
	rows := make([][]any, 0, len(keys))
	for _, k := range keys {
		if n := d[k]; n != 0 {
			rows = append(rows, []any{k.definition, k.process, k.state, n})
		}
	}
	return rows
}

// recordCounts appends d to the deltas. Callers run inside a
// transaction, with the change d describes.
func (s *Store) recordCounts(ctx context.Context, d countDeltas) error {
	rows := d.rows()
	if len(rows) == 0 {
		return nil
	}
	return insertRows(ctx, s, tableInstanceCountDeltas, countColumns, rows)
}

// recordCountOf appends, for process instance id as it is now in the
// transaction (and at version, when not 0), n to its group: one INSERT
// … SELECT, queued on a pipelined transaction like the writes around it.
// Given the state and no version (an instance's change of state), it is
// a write that the counts of other changes join (countWrite).
func (s *Store) recordCountOf(ctx context.Context, id, version int64, state string, n int64) error {
	if state != "" && version == 0 {
		return s.write(ctx, countWrite(s, id, state, n))
	}
	stateExpr, args := "state", []any{}
	if state != "" {
		stateExpr, args = "?"+s.pgCast("varchar"), append(args, state)
	}
	args = append(args, n, id)
	where := "`id` = ?"
	if version != 0 {
		where += " AND `version` = ?"
		args = append(args, version)
	}
	query := s.statementVerb("INSERT", tableInstanceCountDeltas) + " INTO `" + tableInstanceCountDeltas + "` (`definition_id`,`process_def_id`,`state`,`n`) " +
		"SELECT `definition_id`, `process_def_id`, " + stateExpr + ", ?" + s.pgCast("bigint") + " FROM `" + tableProcessInstances + "` WHERE " + where
	return s.write(ctx, queuedWrite{
		what: fmt.Sprintf("count process instance %d", id), query: query, args: args,
		// It reads the instance's row as the writes before it left it.
		touches: []touch{{table: tableInstanceCountDeltas, adds: true}, {table: tableProcessInstances, ids: []int64{id}}},
	})
}

// countRow is n more (or fewer) instances in state, of instance id's
// definition.
type countRow struct {
	id    int64
	state string
	n     int64
}

// countWrite is the count of instance id's change of state: n more in
// state, of the instance's definition, which is all it reads of the
// instance's row. Counts of other changes join it, and it is sent as
// one INSERT … SELECT of their sums, each (instance, state) once and
// none that comes to 0: a chain of steps that takes an instance from
// Initiated to Running to Completed writes two rows, not four
// statements. The versioned updates of the instance leave its
// definition alone, so they may move back past it (touch.columns).
func countWrite(s *Store, id int64, state string, n int64) queuedWrite {
	return queuedWrite{
		touches: []touch{{table: tableInstanceCountDeltas, adds: true},
			{table: tableProcessInstances, ids: []int64{id}, columns: []string{"definition_id", "process_def_id"}}},
		rows: &rowsWrite{
			kind:    "count " + tableProcessInstances,
			rows:    []any{countRow{id: id, state: state, n: n}},
			compact: func(rows []any) []any { return anyRows(summedCounts(rows)) },
			statement: func(joined []any, held bool) queuedWrite {
				return countStatement(s, summedCounts(joined), held)
			},
		},
	}
}

// summedCounts adds up the counts of rows by instance and state, in the
// order each first appears, without those that come to 0; when all do,
// it keeps the first (a row of 0, which changes no total), so that there
// is a statement to send.
func summedCounts(rows []any) []countRow {
	out := make([]countRow, 0, len(rows))
	at := map[countRow]int{}
	for _, r := range rows {
		c := r.(countRow) //nolint:forcetypeassert // rows of count writes are countRow
		key := countRow{id: c.id, state: c.state}
		if i, ok := at[key]; ok {
			out[i].n += c.n
			continue
		}
		at[key] = len(out)
		out = append(out, c)
	}
	kept := slices.DeleteFunc(slices.Clone(out), func(c countRow) bool { return c.n == 0 })
	if len(kept) == 0 {
		return out[:1]
	}
	return kept
}

// countStatement is the INSERT … SELECT of rows into the count deltas,
// each with its instance's definition: one row's reads the instance;
// several rows' join the instances to their list.
func countStatement(s *Store, rows []countRow, held bool) queuedWrite {
	var q strings.Builder
	q.WriteString(heldVerb(s, "INSERT", tableInstanceCountDeltas, held, len(rows)) + " INTO `" + tableInstanceCountDeltas + "` (`definition_id`,`process_def_id`,`state`,`n`) ")
	args := make([]any, 0, 3*len(rows))
	if len(rows) == 1 {
		q.WriteString("SELECT `definition_id`, `process_def_id`, ?" + s.pgCast("varchar") + ", ?" + s.pgCast("bigint") +
			" FROM `" + tableProcessInstances + "` WHERE `id` = ?")
		args = append(args, rows[0].state, rows[0].n, rows[0].id)
	} else {
		q.WriteString("SELECT i.`definition_id`, i.`process_def_id`, c.`state`, c.`n` FROM `" + tableProcessInstances + "` i JOIN (")
		for i, r := range rows {
			if i == 0 {
				q.WriteString("SELECT ?" + s.pgCast("bigint") + " AS `id`, ?" + s.pgCast("varchar") + " AS `state`, ?" + s.pgCast("bigint") + " AS `n`")
			} else {
				q.WriteString(" UNION ALL SELECT ?, ?, ?")
			}
			args = append(args, r.id, r.state, r.n)
		}
		q.WriteString(") c ON i.`id` = c.`id`")
	}
	what := fmt.Sprintf("count process instance %d", rows[0].id)
	if len(rows) > 1 {
		what = fmt.Sprintf("count %d changes of process instances", len(rows))
	}
	return queuedWrite{what: what, query: q.String(), args: args}
}

// CountProcessInstanceGroups implements store.Tx: the totals plus the
// deltas not folded yet, in one statement (so one snapshot).
func (s *Store) CountProcessInstanceGroups(ctx context.Context) ([]store.InstanceCount, error) {
	var rows []struct {
		DefinitionID int64
		ProcessDefID string
		State        string
		N            int64
	}
	query := "SELECT definition_id, process_def_id, state, SUM(n) AS n FROM (" +
		"SELECT definition_id, process_def_id, state, n FROM " + tableInstanceCounts +
		" UNION ALL SELECT definition_id, process_def_id, state, n FROM " + tableInstanceCountDeltas +
		") c GROUP BY definition_id, process_def_id, state HAVING SUM(n) <> 0 ORDER BY definition_id, process_def_id" + s.collateC() + ", state" + s.collateC()
	if err := s.db.WithContext(ctx).Raw(query).Scan(&rows).Error; err != nil {
		return nil, wrap(err, "count process instances")
	}
	out := make([]store.InstanceCount, len(rows))
	for i, r := range rows {
		out[i] = store.InstanceCount{DefinitionID: r.DefinitionID, ProcessDefID: r.ProcessDefID, State: r.State, N: r.N}
	}
	return out, nil
}

// CountProcessInstancesByState implements store.Tx.
func (s *Store) CountProcessInstancesByState(ctx context.Context) (map[string]int64, error) {
	groups, err := s.CountProcessInstanceGroups(ctx)
	if err != nil {
		return nil, err
	}
	out := make(map[string]int64)
	for _, g := range groups {
		out[g.State] += g.N
	}
	return out, nil
}

// CountProcessInstancesByDefinition implements store.Tx.
func (s *Store) CountProcessInstancesByDefinition(ctx context.Context) (map[int64]map[string]int64, error) {
	groups, err := s.CountProcessInstanceGroups(ctx)
	if err != nil {
		return nil, err
	}
	out := make(map[int64]map[string]int64)
	for _, g := range groups {
		if out[g.DefinitionID] == nil {
			out[g.DefinitionID] = make(map[string]int64)
		}
		out[g.DefinitionID][g.State] += g.N
	}
	return out, nil
}

// FoldInstanceCounts implements store.Tx. On MySQL and PostgreSQL it locks the deltas
// it folds, from the first: a second fold waits for the first to commit
// and then folds what is left. Folds run one at a time, so that their
// upserts of the totals never deadlock (two multi-row INSERT … ON
// DUPLICATE KEY UPDATE can, whatever their order); the engine's
// transactions that append deltas meanwhile are not held up (READ
// COMMITTED takes no gap locks).
func (s *Store) FoldInstanceCounts(ctx context.Context, limit int) (int, error) {
	if limit <= 0 {
		return 0, fmt.Errorf("fold instance counts: limit %d, want > 0", limit)
	}
	folded := 0
	err := s.atomic(ctx, func(db *gorm.DB) error {
		q := db.Order("id").Limit(limit)
		if s.rowLocks() {
			q = q.Clauses(clause.Locking{Strength: clause.LockingStrengthUpdate})
		}
		var deltas []instanceCountDeltaModel
		if err := q.Find(&deltas).Error; err != nil {
			return err
		}
		if len(deltas) == 0 {
			return nil
		}
		sums := countDeltas{}
		ids := make([]int64, len(deltas))
		for i, d := range deltas {
			sums.add(d.DefinitionID, d.ProcessDefID, d.State, d.N)
			ids[i] = d.ID
		}
		for chunk := range slices.Chunk(sums.rows(), batchSize) {
			query, args := insertStatement(s.statementVerb("INSERT", tableInstanceCounts), tableInstanceCounts, countColumns, chunk)
			if s.dialect == store.DialectMySQL {
				query += " ON DUPLICATE KEY UPDATE `n` = `n` + VALUES(`n`)"
			} else {
				query += " ON CONFLICT (`definition_id`, `process_def_id`, `state`) DO UPDATE SET `n` = `" + tableInstanceCounts + "`.`n` + excluded.`n`"
			}
			if err := db.Exec(s.pgText(query, false), args...).Error; err != nil {
				return err
			}
		}
		for chunk := range slices.Chunk(ids, batchSize) {
			if err := db.Where("id IN ?", chunk).Delete(&instanceCountDeltaModel{}).Error; err != nil {
				return err
			}
		}
		folded = len(deltas)
		defs := make([]int64, 0, len(sums))
		for k := range sums {
			defs = append(defs, k.definition)
		}
		return db.Where("n = 0 AND definition_id IN ?", defs).Delete(&instanceCountModel{}).Error
	})
	if err != nil {
		return 0, wrap(err, "fold instance counts")
	}
	return folded, nil
}

// seedInstanceCounts fills the totals from the instances: Migrate calls
// it when it has just created the counts' tables on a database that has
// instances already.
func seedInstanceCounts(db *gorm.DB) error {
	return db.Exec("INSERT INTO " + tableInstanceCounts + " (definition_id, process_def_id, state, n) " +
		"SELECT definition_id, process_def_id, state, COUNT(*) FROM " + tableProcessInstances +
		" GROUP BY definition_id, process_def_id, state").Error
}

// CountProcessInstances implements store.Tx: COUNT(*) over the rows
// ListProcessInstances would return, with a LIMIT inside when
// params.Limit caps it, so that a capped count reads at most Limit rows.
func (s *Store) CountProcessInstances(ctx context.Context, params store.ListProcessInstancesParams) (int64, error) {
	q, err := s.instancesQuery(ctx, params)
	if err != nil {
		return 0, err
	}
	if params.Limit > 0 {
		q = q.Select("1").Limit(params.Limit)
	} else {
		q = q.Select("1")
	}
	var n int64
	if err := s.db.WithContext(ctx).Raw("SELECT COUNT(*) FROM (?) t", q).Scan(&n).Error; err != nil {
		return 0, wrap(err, "count process instances")
	}
	return n, nil
}

// CountProcessInstancesPerMinute implements store.Tx with two grouped
// range scans in one statement: of goxpdl_process_instances_created for
// the starts, of goxpdl_process_instances_ended for the ends. The minute is the text of
// the time up to its minutes ("2006-01-02 15:04"): SQLite keeps times as
// text in that layout, MySQL formats its DATETIME so, PostgreSQL's to_char
// writes the UTC time so.
func (s *Store) CountProcessInstancesPerMinute(ctx context.Context, params store.CountPerMinuteParams) ([]store.MinuteCount, error) {
	from, to := dbTime(params.From.Truncate(time.Minute)), dbTime(params.To)
	minute := func(col string) string {
		switch s.dialect {
		case store.DialectMySQL:
			return "DATE_FORMAT(" + col + ", '%Y-%m-%d %H:%i')"
		case store.DialectPostgres:
			return "to_char(" + col + " AT TIME ZONE 'UTC', 'YYYY-MM-DD HH24:MI')"
		}
		return "substr(" + col + ", 1, 16)"
	}
	var rows []struct {
		Minute string
		State  string // "" for the starts
		N      int64
	}
	db := s.db.WithContext(ctx)
	started := db.Model(&processInstanceModel{}).Select(minute("created_at")+" AS minute, '' AS state, COUNT(*) AS n").
		Where("created_at >= ? AND created_at < ?", from, to).Group("minute")
	ended := db.Model(&processInstanceModel{}).Select(minute("ended_at")+" AS minute, state, COUNT(*) AS n").
		Where("state IN ? AND ended_at >= ? AND ended_at < ?", finalProcessStates, from, to).Group("minute, state")
	if err := db.Raw("SELECT * FROM (?) AS s UNION ALL SELECT * FROM (?) AS e", started, ended).Scan(&rows).Error; err != nil {
		return nil, wrap(err, "count process instances per minute")
	}
	byMinute := map[string]*store.MinuteCount{}
	get := func(text string) (*store.MinuteCount, error) {
		if m, ok := byMinute[text]; ok {
			return m, nil
		}
		t, err := time.Parse("2006-01-02 15:04", text)
		if err != nil {
			return nil, fmt.Errorf("count process instances per minute: minute %q: %w", text, err)
		}
		m := &store.MinuteCount{Minute: t.UTC(), Ended: map[string]int64{}}
		byMinute[text] = m
		return m, nil
	}
	for _, r := range rows {
		m, err := get(r.Minute)
		if err != nil {
			return nil, err
		}
		if r.State == "" {
			m.Started += r.N
		} else {
			m.Ended[r.State] += r.N
		}
	}
	out := make([]store.MinuteCount, 0, len(byMinute))
	for _, k := range slices.Sorted(maps.Keys(byMinute)) {
		out = append(out, *byMinute[k])
	}
	return out, nil
}

// finalProcessStates are the states an instance ends in (wftype's
// ProcessState.IsFinal; the store does not import wftype).
var finalProcessStates = []string{"Completed", "Terminated", "Locking"}

// EventBacklog implements store.Tx. The count walks the unprocessed end
// of goxpdl_events_unclaimed (processed_at IS NULL). The first event in
// ID order is the smaller of two: the first unclaimed one, read off the
// index in its order, and the smallest ID of the claimed ones, whose
// walk is bounded by the claims the nodes hold (their backlogs).
func (s *Store) EventBacklog(ctx context.Context, limit int64) (store.EventBacklog, error) {
	db := s.db.WithContext(ctx)
	sub := db.Model(&eventModel{}).Select("1").Where("processed_at IS NULL")
	if limit > 0 {
		sub = sub.Limit(int(limit))
	}
	var b store.EventBacklog
	if err := db.Raw("SELECT COUNT(*) FROM (?) t", sub).Scan(&b.Events).Error; err != nil {
		return b, wrap(err, "event backlog")
	}
	if b.Events == 0 {
		return b, nil
	}
	var unclaimed []int64
	err := db.Model(&eventModel{}).Where("processed_at IS NULL AND claimed_until IS NULL").
		Order(s.claimOrders()[1]).Limit(1).Pluck("id", &unclaimed).Error
	if err != nil {
		return b, wrap(err, "event backlog")
	}
	// id + 0: PostgreSQL would otherwise answer MIN(id) by walking the
	// primary key from its start, through every processed event.
	var claimed sql.NullInt64
	err = db.Model(&eventModel{}).Where("processed_at IS NULL AND claimed_until IS NOT NULL").
		Select("MIN(id + 0)").Scan(&claimed).Error
	if err != nil {
		return b, wrap(err, "event backlog")
	}
	first := claimed.Int64
	if len(unclaimed) == 1 && (!claimed.Valid || unclaimed[0] < first) {
		first = unclaimed[0]
	}
	if first == 0 {
		return b, nil // processed meanwhile
	}
	var m []eventModel
	if err := db.Select("id, created_at").Where("id = ?", first).Find(&m).Error; err != nil {
		return b, wrap(err, "event backlog")
	}
	if len(m) == 1 {
		t := rowTime(m[0].CreatedAt)
		b.Oldest = &t
	}
	return b, nil
}

// CountPendingTimers implements store.Tx with two range scans of
// goxpdl_timers_due in one statement.
func (s *Store) CountPendingTimers(ctx context.Context, params store.CountTimersParams) (store.PendingTimerCounts, error) {
	if params.DueBy.IsZero() {
		return store.PendingTimerCounts{}, errors.New("count pending timers: DueBy is the zero time")
	}
	db := s.db.WithContext(ctx)
	pending := func() *gorm.DB {
		q := db.Model(&timerModel{}).Select("1").Where("state = ?", store.TimerPending)
		if params.Limit > 0 {
			q = q.Limit(int(params.Limit))
		}
		return q
	}
	var c store.PendingTimerCounts
	err := db.Raw("SELECT (SELECT COUNT(*) FROM (?) AS d) AS due, (SELECT COUNT(*) FROM (?) AS p) AS pending",
		pending().Where("due_at <= ?", dbTime(params.DueBy)), pending()).Scan(&c).Error
	if err != nil {
		return store.PendingTimerCounts{}, wrap(err, "count pending timers")
	}
	return c, nil
}

// ServerVersion implements store.Store.
func (s *Store) ServerVersion(ctx context.Context) (string, error) {
	query := "SELECT VERSION()"
	switch s.dialect {
	case store.DialectSQLite:
		query = "SELECT sqlite_version()"
	case store.DialectPostgres:
		query = postgresServerVersion
	}
	var v string
	if err := s.db.WithContext(ctx).Raw(query).Scan(&v).Error; err != nil {
		return "", wrap(err, "server version")
	}
	return v, nil
}
