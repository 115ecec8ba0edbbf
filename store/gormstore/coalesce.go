package gormstore

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/goxpdl/goxpdl/store"
)

// Joining held writes. The engine's group commit runs several engine
// transactions (members) one after another in one database transaction
// and, on a pipelined transaction (MySQL, SQLite), lets their writes wait in the
// queue until the group ends (store.Tx.Flush). Each member writes the same
// few things: history rows, outbox events, the processed mark of its
// event, activity rows, a versioned update of its process instance. A
// write of rows joins the queued write of the same kind (the same table
// and columns), so that the group sends one multi-row INSERT per table,
// one UPDATE … CASE for all the versioned updates of a table, and one
// processed mark, instead of one of each per member: MySQL's CPU goes per
// statement more than per row, and so does much of SQLite's in the
// process.
//
// Joining moves a write back in the queue, past the writes queued after
// the one it joins. That is allowed only past writes it cannot affect:
// each queued write says what it touches (table and row ids, or rows it
// only adds), and a write that touches rows another one between them
// touches stays where it is. Reads never wait in the queue (a read sends
// the queue first), so the writes in it are all there is to order.

// touch is what a queued write reads or changes in one table: the rows
// with ids, or, when adds, only rows it adds that no other queued write
// names (the instance count deltas, which are summed).
type touch struct {
	table string
	ids   []int64
	adds  bool
	// columns, when not nil, are all the columns of the rows the write
	// reads or changes: writes of the same rows whose columns do not meet
	// commute (a count reads an instance's definition, which its
	// versioned updates leave alone).
	columns []string
}

// overlaps reports whether writes touching a and b could see each
// other's effect, so that their order matters.
func (a touch) overlaps(b touch) bool {
	switch {
	case a.table != b.table:
		return false
	case a.adds && b.adds:
		return false
	case a.adds || b.adds:
		return true
	case a.columns != nil && b.columns != nil && !slices.ContainsFunc(a.columns, func(c string) bool { return slices.Contains(b.columns, c) }):
		return false
	}
	return idsOverlap(a.ids, b.ids)
}

// idsOverlap reports whether a and b share an id (both short: a step's
// rows).
func idsOverlap(a, b []int64) bool {
	for _, id := range a {
		if slices.Contains(b, id) {
			return true
		}
	}
	return false
}

// rowsWrite is a queued write of rows that a later write of the same kind
// may join.
type rowsWrite struct {
	// kind names what may join: table, columns and form.
	kind string
	rows []any
	ids  []int64
	// statement is the one write of rows (any of this kind's, joined or
	// not); held says it was held back (heldVerb).
	statement func(rows []any, held bool) queuedWrite
	// counted: statement checks its row count (rowsOK).
	counted bool
	// continues, when not nil, reports whether these rows may join
	// earlier ones of their kind that change the same row: a versioned
	// update of a row that an earlier queued update leaves at the version
	// this one expects. Without it, rows join only rows of other ids.
	continues func(x *rowsWrite) bool
	// compact, when not nil, merges the rows for one statement that
	// change the same row (versionedRows); the statement runs it itself,
	// and sendEach before it cuts rows into chunks, so that no chunk
	// splits them.
	compact func(rows []any) []any
	// insertInto and columns are an insert's table and columns (fold.go);
	// "" and nil for other writes.
	insertInto string
	columns    []string
	// fold, when not nil, returns these rows as patches of the rows x, a
	// queued insert, adds (fold.go), or nil when they are not all x's.
	fold func(x *rowsWrite) []any
}

// anyRows returns rows as the rows of a rowsWrite.
func anyRows[T any](rows []T) []any {
	out := make([]any, len(rows))
	for i, r := range rows {
		out[i] = r
	}
	return out
}

// mayJoin reports whether w's rows may join x's, the latest queued write
// of their kind that w may move back to.
func (w *rowsWrite) mayJoin(x *rowsWrite) bool {
	if x.kind != w.kind || len(x.rows)+len(w.rows) > batchSize {
		return false
	}
	return !idsOverlap(x.ids, w.ids) || (w.continues != nil && w.continues(x))
}

// counted reports whether w, as it is sent, checks its row count.
func (w *queuedWrite) counted() bool {
	if w.rows != nil {
		return w.rows.counted
	}
	return w.rowsOK != nil
}

// blocks reports whether w must stay before later, which cannot move
// back past it. A write that does not say what it touches blocks every
// other.
func (w *queuedWrite) blocks(later *queuedWrite) bool {
	if w.touches == nil || later.touches == nil {
		return true
	}
	// A joined write has a touch per write that joined it, all on a
	// table or two: the tables tell most pairs apart at once.
	tables := w.touchedTables()
	if !slices.ContainsFunc(later.touches, func(b touch) bool { return slices.Contains(tables, b.table) }) {
		return false
	}
	for _, a := range w.touches {
		for _, b := range later.touches {
			if a.overlaps(b) {
				return true
			}
		}
	}
	return false
}

// touchedTables returns the tables of w's touches. It keeps them in
// w.tables and extends them as writes join w; touches cut back at a
// rollback to a mark leave them as they were, which only makes blocks
// look closer.
func (w *queuedWrite) touchedTables() []string {
	if w.tablesOf > len(w.touches) {
		w.tables, w.tablesOf = w.tables[:0], 0
	}
	for _, t := range w.touches[w.tablesOf:] {
		if !slices.Contains(w.tables, t.table) {
			w.tables = append(w.tables, t.table)
		}
	}
	w.tablesOf = len(w.touches)
	return w.tables
}

// enqueue appends w to the queue, or joins it to the latest queued write
// of its kind that it may move back to.
func (p *pipeline) enqueue(w queuedWrite) {
	if w.rows == nil {
		p.queue = append(p.queue, w)
		return
	}
	var join *queuedWrite
	for j := len(p.queue) - 1; j >= 0; j-- {
		x := &p.queue[j]
		if join == nil && x.rows != nil && w.rows.mayJoin(x.rows) {
			join = x
			if w.rows.fold == nil || x.blocks(&w) {
				break
			}
			// A write that folds looks on for the insert of its rows,
			// which saves a statement where joining saves none.
			continue
		}
		if x.blocks(&w) {
			if x.rows != nil && w.rows.fold != nil && len(x.rows.rows)+len(w.rows.rows) <= batchSize {
				// x is the latest write of w's rows: when it inserts
				// them, w is folded into it.
				if patches := w.rows.fold(x.rows); patches != nil {
					x.join(&w, patches)
					return
				}
			}
			break
		}
	}
	if join != nil {
		join.join(&w, w.rows.rows)
		return
	}
	p.queue = append(p.queue, w)
}

// join appends rows, w's or patches standing for them, to x's, with w's
// ids and touches.
func (x *queuedWrite) join(w *queuedWrite, rows []any) {
	x.rows.rows = append(x.rows.rows, rows...)
	x.rows.ids = append(x.rows.ids, w.rows.ids...)
	x.touches = append(x.touches, w.touches...)
}

// sendable returns the write as it is sent: a write of rows becomes the
// statement of all its rows (its own and those that joined it), held
// when it waited in a queue.
func (w *queuedWrite) sendable(held bool) queuedWrite {
	if w.rows == nil {
		return *w
	}
	return w.rows.statement(w.rows.rows, held)
}

// heldVerb is verb (INSERT or UPDATE) as a statement of n rows on table
// begins; held says it waited in a pipeline's queue. A held statement of
// several rows on SQLite takes verb OR FAIL, whatever the table: with
// ABORT, the default, SQLite would keep a statement journal (a copy of
// each page the statement changes) to undo the earlier rows when a later
// one fails, and a held write that fails fails its transaction (the
// caller rolls back, store.Tx.Flush), which undoes them anyway.
func heldVerb(s *Store, verb, table string, held bool, n int) string {
	if held && n > 1 && s.dialect == store.DialectSQLite {
		return verb + " OR FAIL"
	}
	return s.statementVerb(verb, table)
}

// pow2Chunks cuts rows into pieces whose lengths are powers of two,
// longest first (13 rows: 8, 4, 1), so that the statements of a kind
// have few texts: SQLite keeps each text's prepared statement
// (sqlitedialect), and a text per number of rows would crowd its cache.
func pow2Chunks(rows []any) [][]any {
	var out [][]any
	for len(rows) > 0 {
		n := 1
		for n*2 <= len(rows) {
			n *= 2
		}
		out = append(out, rows[:n])
		rows = rows[n:]
	}
	return out
}

// insertWrite is the queued INSERT of rows into table, which other
// inserts of the same columns may join. Rows whose first column is "id"
// touch those ids; others (the count deltas) only add.
func insertWrite(s *Store, table string, columns []string, rows [][]any) queuedWrite {
	t := touch{table: table}
	if columns[0] == "id" {
		t.ids = make([]int64, 0, len(rows))
		for _, r := range rows {
			id, ok := r[0].(int64)
			if !ok {
				// An id of another type: blocks, joins nothing.
				query, args := insertStatement(s.statementVerb("INSERT", table), table, columns, rows)
				return queuedWrite{what: "insert into " + table, query: query, args: args}
			}
			t.ids = append(t.ids, id)
		}
	} else {
		t.adds = true
	}
	w := queuedWrite{touches: []touch{t}}
	w.rows = &rowsWrite{
		kind:       insertKind(table, columns),
		ids:        t.ids,
		rows:       make([]any, len(rows)),
		insertInto: table,
		columns:    columns,
		compact:    func(rows []any) []any { return anyRows(foldRows(rows)) },
		statement: func(joined []any, held bool) queuedWrite {
			all := foldRows(joined)
			if len(all) == 0 {
				return queuedWrite{} // every row dropped (fold.go): nothing to send
			}
			query, args := insertStatement(heldVerb(s, "INSERT", table, held, len(all)), table, columns, all)
			what := "insert into " + table
			if len(all) > 1 {
				what = fmt.Sprintf("insert %d rows into %s", len(all), table)
			}
			return queuedWrite{what: what, query: query, args: args}
		},
	}
	for i, r := range rows {
		w.rows.rows[i] = r
	}
	return w
}

// insertKinds holds, for each table, the rowsWrite kind of inserts of the
// columns the table's rows were last inserted with (a table's inserts
// almost always name the same columns), so that a step's inserts do not
// each build the same string.
var insertKinds sync.Map // table → insertKindEntry

type insertKindEntry struct {
	columns []string
	kind    string
}

// insertKind is the rowsWrite kind of inserts of columns into table:
// inserts of the same kind may join.
func insertKind(table string, columns []string) string {
	if e, ok := insertKinds.Load(table); ok {
		if e := e.(insertKindEntry); slices.Equal(e.columns, columns) { //nolint:forcetypeassert // the map holds insertKindEntry
			return e.kind
		}
	}
	e := insertKindEntry{columns: slices.Clone(columns), kind: "insert " + table + " " + strings.Join(columns, ",")}
	insertKinds.Store(table, e)
	return e.kind
}

// versionedRow is one row of a versioned update: its id, the version it
// must have, the new values of the columns in name order, and by how
// much the version goes up: 1, or the number of updates of the row that
// joined into this one (versionedRows).
type versionedRow struct {
	id, expected int64
	values       []any
	steps        int64
}

// versionedShape is what the versioned updates of one table and one set
// of columns share, made once for the engine's hot updates (an activity's,
// a process instance's) rather than on every step.
type versionedShape struct {
	table, what string
	// columns are the columns the update sets, in name order, so that the
	// text is always the same.
	columns []string
	// touched are columns and "version": what the update changes.
	touched []string
	// kind is the rowsWrite kind: updates of one shape may join.
	kind string
}

// newVersionedShape returns the shape of the versioned updates of table
// (what names its rows in errors) that set columns, in any order.
func newVersionedShape(table, what string, columns ...string) *versionedShape {
	sorted := slices.Sorted(slices.Values(columns))
	return &versionedShape{
		table: table, what: what, columns: sorted,
		touched: append(slices.Clone(sorted), "version"),
		kind:    "update " + table + " " + strings.Join(sorted, ","),
	}
}

// versionedSet is what one versioned update sets: values are those of
// shape.columns, in their order.
type versionedSet struct {
	shape  *versionedShape
	values []any
}

// setOf returns the versioned set of the columns and values of set, a
// map from column to value, for updates that are not hot enough for a
// shape of their own.
func setOf(table, what string, set map[string]any) versionedSet {
	shape := newVersionedShape(table, what, slices.Collect(maps.Keys(set))...)
	values := make([]any, len(shape.columns))
	for i, col := range shape.columns {
		values[i] = set[col]
	}
	return versionedSet{shape: shape, values: values}
}

// versionedWrite is the optimistic update of row id of set's table (a
// process or activity instance, a work item) from version expected: the
// columns of set take their values and the version goes up by one. It
// must change the row; when it does not, the version moved on
// (ErrConflict) or the row does not exist (ErrNotFound), which a second
// read tells apart. A plain statement on the connection underneath gorm:
// it runs on every engine step, where gorm's map handling cost more than
// the UPDATE itself. Other versioned updates of the same shape may join
// it, and so may a later update of the same row that expects the version
// this one leaves: a chain of engine steps updates its process instance
// once a step, all in one transaction, and the queue sends them as one
// UPDATE that moves the version on by their number, with the last one's
// values. Between two such updates no queued write reads the row (the
// scan back in enqueue stops at any that does), and the transaction holds
// the row from the first one on, so no other transaction can tell the
// difference.
func versionedWrite(s *Store, id, expected int64, set versionedSet) queuedWrite {
	shape := set.shape
	row := versionedRow{id: id, expected: expected, values: set.values, steps: 1}
	ids := []int64{id} // joins append to the rows' ids, never to a touch's
	return queuedWrite{
		touches: []touch{{table: shape.table, ids: ids, columns: shape.touched}},
		rows: &rowsWrite{
			kind:    shape.kind,
			rows:    []any{row},
			ids:     ids,
			counted: true,
			fold: func(x *rowsWrite) []any {
				return versionedFold(x, id, expected, set, func() queuedWrite {
					return versionedWrite(s, id, expected, set)
				})
			},
			continues: func(x *rowsWrite) bool {
				// The ids of versioned rows name them one for one.
				for i := len(x.ids) - 1; i >= 0; i-- {
					if x.ids[i] == id {
						r := x.rows[i].(versionedRow) //nolint:forcetypeassert // rows of this kind are versionedRow
						return r.expected+r.steps == expected
					}
				}
				return false
			},
			compact: func(rows []any) []any { return anyRows(versionedRows(rows)) },
			statement: func(joined []any, held bool) queuedWrite {
				return versionedStatement(s, shape.table, shape.what, shape.columns, versionedRows(joined), held)
			},
		},
	}
}

// versionedRows returns rows as versioned rows, one per id: an update
// of a row that an earlier one of rows updated too (it expects the
// version that one leaves) merges into it, with its values and the
// steps of both.
func versionedRows(rows []any) []versionedRow {
	out := make([]versionedRow, 0, len(rows))
	at := make(map[int64]int, len(rows))
	for _, r := range rows {
		v := r.(versionedRow) //nolint:forcetypeassert // rows of versioned writes are versionedRow
		i, seen := at[v.id]
		if !seen {
			at[v.id] = len(out)
			out = append(out, v)
			continue
		}
		out[i].values = v.values
		out[i].steps += v.steps
	}
	return out
}

// versionedStatement is the UPDATE of rows of table, each from its
// expected version: one row's is `… WHERE id = ? AND version = ?`;
// several rows' columns take their values by id (CASE `id` WHEN … THEN
// …), and their versions are checked the same way. Each version goes up
// by the row's steps. It must change every row; when it does not, failed
// reads the versions and names the first row that had moved on or did
// not exist.
func versionedStatement(s *Store, table, what string, columns []string, rows []versionedRow, held bool) queuedWrite {
	var q strings.Builder
	args := make([]any, 0, len(rows)*(2*len(columns)+3))
	q.WriteString(heldVerb(s, "UPDATE", table, held, len(rows)) + " `" + table + "` SET ")
	byID := func(args []any, value func(versionedRow) any) []any {
		q.WriteString("CASE `id`")
		for _, r := range rows {
			q.WriteString(" WHEN ? THEN ?")
			args = append(args, r.id, value(r))
		}
		q.WriteString(" END")
		return args
	}
	oneStep := !slices.ContainsFunc(rows, func(r versionedRow) bool { return r.steps != 1 })
	if len(rows) == 1 {
		for c, col := range columns {
			q.WriteString("`" + col + "` = ?, ")
			args = append(args, rows[0].values[c])
		}
		if oneStep {
			q.WriteString("`version` = `version` + 1")
		} else {
			q.WriteString("`version` = `version` + ?")
			args = append(args, rows[0].steps)
		}
		q.WriteString(" WHERE `id` = ? AND `version` = ?")
		args = append(args, rows[0].id, rows[0].expected)
	} else {
		for c, col := range columns {
			q.WriteString("`" + col + "` = ")
			args = byID(args, func(r versionedRow) any { return r.values[c] })
			q.WriteString(", ")
		}
		if oneStep {
			q.WriteString("`version` = `version` + 1")
		} else {
			q.WriteString("`version` = `version` + ")
			args = byID(args, func(r versionedRow) any { return r.steps })
		}
		q.WriteString(" WHERE `id` IN (" + strings.TrimSuffix(strings.Repeat("?,", len(rows)), ",") + ") AND `version` = ")
		for _, r := range rows {
			args = append(args, r.id)
		}
		args = byID(args, func(r versionedRow) any { return r.expected })
	}
	ids := make([]int64, len(rows))
	for i, r := range rows {
		ids[i] = r.id
	}
	what1 := fmt.Sprintf("update %s %d", what, rows[0].id)
	if len(rows) > 1 {
		what1 = fmt.Sprintf("update %d %ss", len(rows), what)
	}
	return queuedWrite{
		what:   what1,
		query:  q.String(),
		args:   args,
		rowsOK: func(n int64) bool { return n == int64(len(rows)) },
		failed: func(ctx context.Context) error {
			var found []struct{ ID, Version int64 }
			if err := s.db.WithContext(ctx).Table(table).Select("id, version").Where("id IN ?", ids).Scan(&found).Error; err != nil {
				return wrap(err, "%s", what1)
			}
			for _, r := range rows {
				i := slices.IndexFunc(found, func(f struct{ ID, Version int64 }) bool { return f.ID == r.id })
				switch {
				case i < 0:
					return fmt.Errorf("update %s %d: %w", what, r.id, store.ErrNotFound)
				case found[i].Version != r.expected+r.steps || len(rows) == 1:
					// Moved on: not this update's version. (One row
					// changed nothing: whatever it has, it moved on.)
					return fmt.Errorf("update %s %d: expected version %d, found %d: %w", what, r.id, r.expected, found[i].Version, store.ErrConflict)
				}
			}
			return fmt.Errorf("%s: %w", what1, store.ErrConflict)
		},
	}
}

// processedRow is one event of a processed mark and its time.
type processedRow struct {
	id int64
	at time.Time
}

// markStatement is the UPDATE (verb) that marks events processed at their
// times, as owner's when owner is not "".
func markStatement(verb string, rows []processedRow, owner string) (string, []any) {
	var q strings.Builder
	args := make([]any, 0, 3*len(rows)+1)
	q.WriteString(verb + " `" + tableEvents + "` SET `processed_at` = ")
	if sameTime(rows) {
		q.WriteString("?")
		args = append(args, dbTime(rows[0].at))
	} else {
		q.WriteString("CASE `id`")
		for _, r := range rows {
			q.WriteString(" WHEN ? THEN ?")
			args = append(args, r.id, dbTime(r.at))
		}
		q.WriteString(" END")
	}
	q.WriteString(" WHERE `id` IN (" + strings.TrimSuffix(strings.Repeat("?,", len(rows)), ",") + ") AND `processed_at` IS NULL")
	for _, r := range rows {
		args = append(args, r.id)
	}
	if owner != "" {
		q.WriteString(" AND `claimed_by` = ?")
		args = append(args, owner)
	}
	return q.String(), args
}

// sameTime reports whether every row has the first one's time.
func sameTime(rows []processedRow) bool {
	for _, r := range rows[1:] {
		if !r.at.Equal(rows[0].at) {
			return false
		}
	}
	return true
}

// markWrite is the queued processed mark of events, which later marks
// of the same owner may join. With an owner it must mark every event (the
// claims are the owner's); otherwise a claim was lost (ErrLeaseLost).
func markWrite(s *Store, ids []int64, at time.Time, owner string) queuedWrite {
	ids = slices.Sorted(maps.Keys(uniqueIDs(ids)))
	rows := make([]processedRow, len(ids))
	for i, id := range ids {
		rows[i] = processedRow{id: id, at: at}
	}
	statement := func(rows []processedRow, held bool) queuedWrite {
		query, args := markStatement(heldVerb(s, "UPDATE", tableEvents, held, len(rows)), rows, owner)
		w := queuedWrite{what: fmt.Sprintf("mark %d events processed", len(rows)), query: query, args: args}
		if owner != "" {
			claimed := int64(len(rows))
			w.rowsOK = func(marked int64) bool { return marked >= claimed }
			w.failed = func(context.Context) error {
				ids := make([]int64, len(rows))
				for i, r := range rows {
					ids[i] = r.id
				}
				return fmt.Errorf("mark events %v processed for %q: %w", ids, owner, store.ErrLeaseLost)
			}
		}
		return w
	}
	w := queuedWrite{touches: []touch{{table: tableEvents, ids: ids}}}
	w.rows = &rowsWrite{
		kind:    "processed " + owner,
		ids:     ids,
		rows:    make([]any, len(rows)),
		counted: owner != "",
		fold: func(x *rowsWrite) []any {
			return markFold(x, ids, owner, func(id int64) queuedWrite { return markWrite(s, []int64{id}, at, owner) })
		},
		statement: func(joined []any, held bool) queuedWrite {
			all := make([]processedRow, len(joined))
			for i, r := range joined {
				all[i] = r.(processedRow) //nolint:forcetypeassert // rows below are processedRow
			}
			return statement(all, held)
		},
	}
	for i, r := range rows {
		w.rows.rows[i] = r
	}
	return w
}

// clearEndWrite is the UPDATE that clears the end time of process
// instance id where it has one, which later ones may join: on SQLite it
// stands in for `ended_at` = NULL in the versioned update of an instance
// whose state stays (UpdateProcessInstance), so that a row without an
// end time, the usual one, is not written and its index entry not
// rewritten.
func clearEndWrite(s *Store, id int64) queuedWrite {
	ids := []int64{id} // joins append to the rows' ids, never to a touch's
	return queuedWrite{
		// Only ended_at: the versioned updates that leave it alone move
		// back past this write and join the instance's earlier one.
		touches: []touch{{table: tableProcessInstances, ids: ids, columns: clearEndColumns}},
		rows: &rowsWrite{
			kind: "clear end " + tableProcessInstances,
			rows: []any{id},
			ids:  ids,
			// A second clear of a row is the first one again.
			continues: func(*rowsWrite) bool { return true },
			statement: func(joined []any, held bool) queuedWrite {
				args := make([]any, 0, len(joined))
				for _, id := range joined {
					if !slices.Contains(args, id) {
						args = append(args, id)
					}
				}
				query := heldVerb(s, "UPDATE", tableProcessInstances, held, len(args)) + " `" + tableProcessInstances +
					"` SET `ended_at` = NULL WHERE `id` IN (" + strings.TrimSuffix(strings.Repeat("?,", len(args)), ",") + ") AND `ended_at` IS NOT NULL"
				return queuedWrite{what: fmt.Sprintf("clear the end time of %d process instances", len(args)), query: query, args: args}
			},
		},
	}
}

// clearEndColumns are the columns clearEndWrite reads and changes.
var clearEndColumns = []string{"ended_at"}
