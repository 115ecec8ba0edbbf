package gormstore

import (
	"slices"
	"time"
)

// Folding held writes into the insert of their row. An engine step
// often changes rows that an earlier step of the same transaction
// inserted: a chain's step marks processed the event the step before it
// published, and completes the activity the step before it created. While
// that insert still waits in the queue, the change need not be a
// statement of its own: it is folded into the row the insert will add,
// which then goes in as the change leaves it. An event marked processed
// so is not inserted at all: the outbox holds what is still to be done,
// and the processed mark of an event that no other transaction could
// ever see would only say that it was done, which the history of the
// step that processed it says already (issue #23: "the processed mark
// may be a delete"). A chain of ten steps on
// MySQL so saves two statements and their row counts, each a few tenths
// of a millisecond of the server's time.
//
// A fold is a rowPatch appended to the insert's rows, never a change of
// a row already there, so that a deferred savepoint cut back at a
// rollback (deferred.go) drops the patches made after its mark as it
// drops rows. The insert's statement applies them (foldRows). A patch
// whose row goes out in an earlier statement than it does (the queue
// sent across a deferred savepoint's mark between the insert and the
// change) is an orphan, and goes out as the write it stands for
// (splitOrphans).
//
// Folding skips what the write would have checked: the version of a
// versioned update, the claim of a processed mark. Nothing else can have
// changed a row whose insert has not been sent: the transaction's other
// statements send the queue before they run, and no other transaction
// sees the row before the commit. The fold checks the values the row
// will be inserted with instead.

// rowPatch is a change folded into the row with id of a queued insert:
// the columns at the indexes of set take their values, or, with drop,
// the row is not inserted. fallback makes the write it stands for, sent
// instead when the row goes out without it (rarely: only then is it
// made).
type rowPatch struct {
	id       int64
	set      []columnValue
	drop     bool
	fallback func() queuedWrite
}

// columnValue is the value of the column at index in a row.
type columnValue struct {
	index int
	value any
}

// row returns the row with id that x, a queued insert, adds, as the
// patches folded into it so far leave it; nil when x adds no such row,
// or no longer (a patch dropped it).
func (x *rowsWrite) row(id int64) []any {
	// An insert's ids name its rows and patches one for one: the row
	// is the last entry of id that is a row, then its patches.
	if len(x.ids) != len(x.rows) {
		return nil
	}
	base := -1
	for i := len(x.ids) - 1; i >= 0; i-- {
		if x.ids[i] != id {
			continue
		}
		if _, ok := x.rows[i].([]any); ok {
			base = i
			break
		}
	}
	if base < 0 {
		return nil
	}
	row, _ := x.rows[base].([]any)
	for i := base + 1; i < len(x.ids); i++ {
		if p, ok := x.rows[i].(rowPatch); ok && x.ids[i] == id {
			if p.drop {
				return nil
			}
			row = p.apply(row)
		}
	}
	return row
}

// apply returns row with p's values (a copy: the queued row stays as it
// was, for a rollback to a mark).
func (p rowPatch) apply(row []any) []any {
	out := slices.Clone(row)
	for _, c := range p.set {
		out[c.index] = c.value
	}
	return out
}

// foldRows returns the rows of a queued insert with the patches folded
// into them applied, without the rows they dropped (possibly none left).
// Every patch's row is among them (splitOrphans).
func foldRows(rows []any) [][]any {
	out := make([][]any, 0, len(rows))
	at := map[int64]int{}
	dropped := false
	for _, r := range rows {
		switch r := r.(type) {
		case []any:
			if id, ok := r[0].(int64); ok {
				at[id] = len(out)
			}
			out = append(out, r)
		case rowPatch:
			i := at[r.id]
			if r.drop {
				out[i], dropped = nil, true
				continue
			}
			out[i] = r.apply(out[i])
		}
	}
	if dropped {
		out = slices.DeleteFunc(out, func(row []any) bool { return row == nil })
	}
	return out
}

// splitOrphans returns the rows of a queued insert about to be sent
// without the patches whose row is not among them, and the writes those
// patches stand for, to be sent after them in their order.
func splitOrphans(rows []any) (kept []any, fallbacks []queuedWrite) {
	ids := map[int64]bool{}
	for i, r := range rows {
		switch r := r.(type) {
		case []any:
			if id, ok := r[0].(int64); ok {
				ids[id] = true
			}
		case rowPatch:
			if !ids[r.id] {
				if kept == nil {
					kept = slices.Clone(rows[:i])
				}
				fallbacks = append(fallbacks, r.fallback())
				continue
			}
		}
		if kept != nil {
			kept = append(kept, r)
		}
	}
	if kept == nil && fallbacks == nil {
		return rows, nil
	}
	return kept, fallbacks
}

// versionedFold folds the versioned update of row id (from version
// expected, to set) into x when x is the queued insert of that row and
// leaves it at version expected.
func versionedFold(x *rowsWrite, id, expected int64, set versionedSet, fallback func() queuedWrite) []any {
	if x.insertInto != set.shape.table {
		return nil
	}
	row := x.row(id)
	version := slices.Index(x.columns, "version")
	if row == nil || version < 0 {
		return nil
	}
	if v, ok := row[version].(int64); !ok || v != expected {
		return nil
	}
	p := rowPatch{id: id, set: make([]columnValue, 0, len(set.values)+1), fallback: fallback}
	p.set = append(p.set, columnValue{version, expected + 1})
	for i, col := range set.shape.columns {
		at := slices.Index(x.columns, col)
		if at < 0 {
			return nil
		}
		p.set = append(p.set, columnValue{at, set.values[i]})
	}
	return []any{p}
}

// markFold folds the processed mark of events ids (as owner's when
// owner is not "") into x when x is the queued insert of all of them,
// unprocessed and, with an owner, claimed by it: they are not inserted.
func markFold(x *rowsWrite, ids []int64, owner string, fallback func(id int64) queuedWrite) []any {
	if x.insertInto != tableEvents {
		return nil
	}
	processed, claimedBy := slices.Index(x.columns, "processed_at"), slices.Index(x.columns, "claimed_by")
	if processed < 0 || claimedBy < 0 {
		return nil
	}
	out := make([]any, 0, len(ids))
	for _, id := range ids {
		row := x.row(id)
		if row == nil {
			return nil
		}
		if p, ok := row[processed].(*time.Time); !ok || p != nil {
			return nil
		}
		if by, ok := row[claimedBy].(string); owner != "" && (!ok || by != owner) {
			return nil
		}
		out = append(out, rowPatch{id: id, drop: true, fallback: func() queuedWrite { return fallback(id) }})
	}
	return out
}
