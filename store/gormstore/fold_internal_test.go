package gormstore

import (
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/goxpdl/goxpdl/store"
)

// Changes folded into the queued insert of their row (fold.go), on a
// queue that is never sent.
func TestHeldWritesFoldIntoInserts(t *testing.T) {
	t.Parallel()
	s := &Store{dialect: store.DialectMySQL}
	at := time.Date(2026, 11, 27, 6, 0, 0, 0, time.UTC)
	later := at.Add(time.Millisecond)
	activity := func(id int64) queuedWrite {
		m := activityInstanceModel{ID: id, ProcessInstanceID: 1, ActivityDefID: "A", State: "open.not_running.not_started", Version: 1, CreatedAt: at, UpdatedAt: at}
		return insertWrite(s, tableActivityInstances, activityInstanceColumnsWithID, [][]any{append([]any{m.ID}, m.values()...)})
	}
	update := func(id, expected int64, state string) queuedWrite {
		return versionedWrite(s, id, expected, setOf(tableActivityInstances, "activity instance", map[string]any{"state": state, "updated_at": later}))
	}
	event := func(id int64, claimedBy string) queuedWrite {
		m := eventModel{ID: id, EventID: "e", ProcessInstanceID: 1, Kind: "activity.start", CreatedAt: at, AvailableAt: at, ClaimedBy: claimedBy}
		return insertWrite(s, tableEvents, eventColumnsWithID, [][]any{append([]any{m.ID}, m.values()...)})
	}
	mark := func(owner string, ids ...int64) queuedWrite { return markWrite(s, ids, later, owner) }
	column := func(w queuedWrite, row int, name string) any {
		columns := w.rows.columns
		return foldRows(w.rows.rows)[row][slices.Index(columns, name)]
	}
	enqueue := func(ws ...queuedWrite) *pipeline {
		p := &pipeline{}
		for _, w := range ws {
			p.enqueue(w)
		}
		return p
	}

	t.Run("an activity inserted and updated is inserted as the updates leave it", func(t *testing.T) {
		t.Parallel()
		p := enqueue(activity(7), activity(8), update(7, 1, "open.running"), update(7, 2, "closed.completed"))
		require.Len(t, p.queue, 1, "one insert, no update")
		require.Equal(t, "closed.completed", column(p.queue[0], 0, "state"))
		require.Equal(t, int64(3), column(p.queue[0], 0, "version"))
		require.Equal(t, later, column(p.queue[0], 0, "updated_at"))
		require.Equal(t, "open.not_running.not_started", column(p.queue[0], 1, "state"), "the other row as inserted")
		w := p.queue[0].sendable(true)
		require.Len(t, w.args, 2*len(activityInstanceColumnsWithID), "two rows")
		require.Nil(t, w.rowsOK, "an insert checks no row count")
	})
	t.Run("an update folds into its insert rather than join the updates after it", func(t *testing.T) {
		t.Parallel()
		p := enqueue(activity(8), update(7, 4, "closed.completed"), update(8, 1, "open.running"))
		require.Len(t, p.queue, 2, "the insert of 8 as updated, the update of 7")
		require.Equal(t, "open.running", column(p.queue[0], 0, "state"))
		require.Len(t, p.queue[1].rows.rows, 1)
	})
	t.Run("an update joins an earlier update of its row rather than fold past it", func(t *testing.T) {
		t.Parallel()
		p := &pipeline{queue: []queuedWrite{activity(7)}}
		p.queue = append(p.queue, update(7, 1, "open.running")) // as if it had not folded
		p.enqueue(update(7, 2, "closed.completed"))
		require.Len(t, p.queue, 2)
		require.Equal(t, "open.not_running.not_started", column(p.queue[0], 0, "state"))
		require.Len(t, p.queue[1].rows.rows, 2, "the two updates, sent as one")
	})
	t.Run("an update from another version than the insert's is a write of its own", func(t *testing.T) {
		t.Parallel()
		p := enqueue(activity(7), update(7, 2, "open.running"))
		require.Len(t, p.queue, 2)
		require.Equal(t, "open.not_running.not_started", column(p.queue[0], 0, "state"))
	})
	t.Run("an update of a column the insert does not name is a write of its own", func(t *testing.T) {
		t.Parallel()
		odd := versionedWrite(s, 7, 1, setOf(tableActivityInstances, "activity instance", map[string]any{"no_such_column": 1}))
		p := enqueue(activity(7), odd)
		require.Len(t, p.queue, 2)
	})
	t.Run("an update does not fold past a write that reads its row", func(t *testing.T) {
		t.Parallel()
		p := enqueue(activity(7), queuedWrite{query: "opaque"}, update(7, 1, "open.running"))
		require.Len(t, p.queue, 3)
	})
	t.Run("an event published and marked processed is not inserted", func(t *testing.T) {
		t.Parallel()
		p := enqueue(event(5, "node-1"), event(6, "node-1"), mark("node-1", 5))
		require.Len(t, p.queue, 1)
		rows := foldRows(p.queue[0].rows.rows)
		require.Len(t, rows, 1, "event 6 alone")
		require.Equal(t, int64(6), rows[0][0])
		require.Nil(t, column(p.queue[0], 0, "processed_at"))
		w := p.queue[0].sendable(true)
		require.Len(t, w.args, len(eventColumnsWithID), "one row")
		require.Nil(t, p.queue[0].rows.row(5), "no row 5 for a later change to fold into")

		// When every row is dropped, the text holds no insert.
		p = enqueue(event(5, "node-1"), activity(7), mark("node-1", 5))
		require.Len(t, p.queue, 2)
		require.Empty(t, p.queue[0].sendable(true).query)
		query, _, checked := p.take()
		require.NotContains(t, query, "goxpdl_events")
		require.Equal(t, 0, strings.Count(query, ";"), "the insert of the activity alone")
		require.Empty(t, checked)
		query, _, _ = enqueue(event(5, "node-1"), mark("node-1", 5)).take()
		require.Empty(t, query, "nothing at all to send")
	})
	t.Run("a second mark of a dropped event is a write of its own", func(t *testing.T) {
		t.Parallel()
		p := enqueue(event(5, "node-1"), mark("node-1", 5), mark("node-1", 5))
		require.Len(t, p.queue, 2, "and it fails its row count when sent")
	})
	t.Run("a mark folds only into events claimed by its owner", func(t *testing.T) {
		t.Parallel()
		p := enqueue(event(5, "node-2"), mark("node-1", 5))
		require.Len(t, p.queue, 2, "the mark stays, and fails its row count when sent")
		p = enqueue(event(5, "node-1"), mark("node-1", 5, 9))
		require.Len(t, p.queue, 2, "event 9 is not this insert's: the mark stays whole")
	})
	t.Run("a rollback to a mark drops what was folded after it", func(t *testing.T) {
		t.Parallel()
		p := enqueue(activity(7))
		m := p.setMark("a")
		p.enqueue(update(7, 1, "open.running"))
		require.Len(t, p.queue, 1)
		require.NoError(t, p.rollbackToMark(t.Context(), m))
		require.Equal(t, "open.not_running.not_started", column(p.queue[0], 0, "state"))
		require.Equal(t, int64(1), column(p.queue[0], 0, "version"))
	})
	t.Run("a change whose row is sent before a mark goes after it as its own write", func(t *testing.T) {
		t.Parallel()
		p := enqueue(activity(7))
		p.setMark("a")
		p.enqueue(update(7, 1, "open.running"))
		p.enqueue(activity(8))
		p.enqueue(update(8, 1, "open.running"))
		out := p.outgoing()
		require.Len(t, out, 4, "insert 7, SAVEPOINT, insert 8 as updated, update of 7")
		require.Equal(t, "open.not_running.not_started", foldRows(out[0].rows.rows)[0][slices.Index(activityInstanceColumnsWithID, "state")])
		require.Equal(t, "SAVEPOINT a", out[1].query)
		require.Equal(t, int64(8), foldRows(out[2].rows.rows)[0][0])
		require.Len(t, out[2].rows.rows, 2, "the row of 8 and its patch")
		require.Equal(t, "open.running", foldRows(out[2].rows.rows)[0][slices.Index(activityInstanceColumnsWithID, "state")])
		upd := out[3].sendable(true)
		require.Contains(t, upd.query, "UPDATE `goxpdl_activity_instances`")
		require.Equal(t, []any{"open.running", later, int64(7), int64(1)}, upd.args)
	})
}
