package gormstore

import (
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/goxpdl/goxpdl/store"
)

// The rules by which held writes join (coalesce.go), on a queue that is
// never sent: what joins what, and what stays where it is.
func TestHeldWritesJoin(t *testing.T) {
	t.Parallel()
	s := &Store{dialect: store.DialectMySQL}
	at := time.Date(2026, 11, 27, 6, 0, 0, 0, time.UTC)
	history := func(ids ...int64) queuedWrite {
		var rows [][]any
		for _, id := range ids {
			rows = append(rows, []any{id, "x"})
		}
		return insertWrite(s, tableHistory, []string{"id", "subject"}, rows)
	}
	instance := func(id, expected int64, state string) queuedWrite {
		return versionedWrite(s, id, expected, setOf(tableProcessInstances, "process instance", map[string]any{"state": state, "updated_at": at}))
	}
	mark := func(owner string, ids ...int64) queuedWrite { return markWrite(s, ids, at, owner) }
	count := func(id int64) queuedWrite {
		return queuedWrite{query: "INSERT … SELECT", touches: []touch{{table: tableInstanceCountDeltas, adds: true}, {table: tableProcessInstances, ids: []int64{id}}}}
	}
	deltas := func() queuedWrite {
		return insertWrite(s, tableInstanceCountDeltas, []string{"definition_id", "n"}, [][]any{{int64(1), int64(1)}})
	}
	// kinds lists the queue: a write's kind and how many rows it has.
	kinds := func(p *pipeline) []string {
		var out []string
		for _, w := range p.queue {
			if w.rows == nil {
				out = append(out, w.query)
				continue
			}
			kind := strings.Fields(w.rows.kind)
			out = append(out, kind[0]+" "+kind[1]+" ×"+string(rune('0'+len(w.rows.rows))))
		}
		return out
	}
	enqueue := func(ws ...queuedWrite) *pipeline {
		p := &pipeline{}
		for _, w := range ws {
			p.enqueue(w)
		}
		return p
	}

	t.Run("three members' steps make one write of each kind", func(t *testing.T) {
		t.Parallel()
		var ws []queuedWrite
		for m := range int64(3) {
			ws = append(ws, mark("node-1", 100+m), instance(m+1, 7, "Running"), history(10*m+1, 10*m+2))
		}
		p := enqueue(ws...)
		require.Equal(t, []string{"processed node-1 ×3", "update goxpdl_process_instances ×3", "insert goxpdl_history ×6"}, kinds(p))
		query, args, checked := p.take()
		require.Equal(t, 5, strings.Count(query, ";")+1, "three writes and two row counts")
		require.Equal(t, 2, strings.Count(query, "SELECT ROW_COUNT()"))
		require.Len(t, checked, 2, "the update and the mark have their rows counted")
		require.Contains(t, query, "CASE `id` WHEN ? THEN ?")
		require.NotEmpty(t, args)
		require.Empty(t, p.queue)
	})
	t.Run("a row updated again from the version it was left at is one update", func(t *testing.T) {
		t.Parallel()
		p := enqueue(instance(1, 7, "Running"), instance(2, 3, "Running"), history(1), instance(1, 8, "Running"), instance(1, 9, "Completed"))
		require.Equal(t, []string{"update goxpdl_process_instances ×4", "insert goxpdl_history ×1"}, kinds(p))
		w := p.queue[0].sendable(true)
		require.Equal(t, "UPDATE `goxpdl_process_instances` SET `state` = CASE `id` WHEN ? THEN ? WHEN ? THEN ? END, "+
			"`updated_at` = CASE `id` WHEN ? THEN ? WHEN ? THEN ? END, `version` = `version` + CASE `id` WHEN ? THEN ? WHEN ? THEN ? END "+
			"WHERE `id` IN (?,?) AND `version` = CASE `id` WHEN ? THEN ? WHEN ? THEN ? END", w.query)
		require.Equal(t, []any{int64(1), "Completed", int64(2), "Running", int64(1), at, int64(2), at,
			int64(1), int64(3), int64(2), int64(1), int64(1), int64(2), int64(1), int64(7), int64(2), int64(3)}, w.args,
			"instance 1 takes the last update's values and goes from version 7 to 10")
		require.True(t, w.rowsOK(2), "one row changed per instance")
		require.False(t, w.rowsOK(3))
		p = enqueue(instance(1, 7, "Running"), instance(1, 8, "Completed"))
		w = p.queue[0].sendable(true)
		require.Equal(t, "UPDATE `goxpdl_process_instances` SET `state` = ?, `updated_at` = ?, `version` = `version` + ? WHERE `id` = ? AND `version` = ?", w.query)
		require.Equal(t, []any{"Completed", at, int64(2), int64(1), int64(7)}, w.args)
	})
	t.Run("a row updated from another version than the one left stays apart", func(t *testing.T) {
		t.Parallel()
		p := enqueue(instance(1, 7, "Running"), instance(2, 3, "Running"), instance(1, 9, "Completed"))
		require.Equal(t, []string{"update goxpdl_process_instances ×2", "update goxpdl_process_instances ×1"}, kinds(p))
	})
	t.Run("an update does not move back past a read of its row", func(t *testing.T) {
		t.Parallel()
		// The count of instance 1 reads its row as the first update
		// left it: the second update of instance 2 may move back past
		// it, one of instance 1 may not.
		p := enqueue(instance(1, 7, "Running"), count(1), instance(2, 3, "Running"))
		require.Equal(t, []string{"update goxpdl_process_instances ×2", "INSERT … SELECT"}, kinds(p))
		p = enqueue(instance(2, 3, "Running"), count(1), instance(1, 8, "Completed"))
		require.Equal(t, []string{"update goxpdl_process_instances ×1", "INSERT … SELECT", "update goxpdl_process_instances ×1"}, kinds(p))
	})
	t.Run("an update moves back past a read of columns it leaves alone", func(t *testing.T) {
		t.Parallel()
		// A step's count reads only the instance's definition: the next
		// steps' updates join the first one past it.
		definition := queuedWrite{query: "INSERT … SELECT definition", touches: []touch{{table: tableInstanceCountDeltas, adds: true},
			{table: tableProcessInstances, ids: []int64{1}, columns: []string{"definition_id", "process_def_id"}}}}
		p := enqueue(instance(1, 7, "Running"), definition, instance(1, 8, "Running"), instance(1, 9, "Completed"))
		require.Equal(t, []string{"update goxpdl_process_instances ×3", "INSERT … SELECT definition"}, kinds(p))
		migrated := versionedWrite(s, 1, 8, setOf(tableProcessInstances, "process instance", map[string]any{"definition_id": int64(2), "updated_at": at}))
		p = enqueue(instance(1, 7, "Running"), definition, migrated)
		require.Len(t, p.queue, 3, "an update of the definition stays after the read of it")
	})
	t.Run("on SQLite a chain's updates of running instances and their clears of the end time are one of each", func(t *testing.T) {
		t.Parallel()
		lite := &Store{dialect: store.DialectSQLite}
		running := func(id, expected int64) queuedWrite {
			return versionedWrite(lite, id, expected, versionedSet{shape: processUpdateRunning, values: []any{"", []byte("t"), at}})
		}
		ended := func(id, expected int64) queuedWrite {
			return versionedWrite(lite, id, expected, versionedSet{shape: processUpdateKeepingState, values: []any{"", &at, []byte("t"), at}})
		}
		// Two instances, three steps each, as UpdateProcessInstance
		// queues them: the update, then the clear of the end time.
		var ws []queuedWrite
		for step := range int64(3) {
			for id := int64(1); id <= 2; id++ {
				ws = append(ws, running(id, 7+step), clearEndWrite(lite, id), history(10*id+step))
			}
		}
		p := enqueue(ws...)
		require.Equal(t, []string{"update goxpdl_process_instances ×6", "clear end ×6", "insert goxpdl_history ×6"}, kinds(p))
		w := p.queue[1].sendable(true)
		require.Equal(t, "UPDATE OR FAIL `goxpdl_process_instances` SET `ended_at` = NULL WHERE `id` IN (?,?) AND `ended_at` IS NOT NULL", w.query)
		require.Equal(t, []any{int64(1), int64(2)}, w.args, "each instance once")
		// An update that sets the end time stays after the clear, and a
		// later clear stays after it.
		p = enqueue(running(1, 7), clearEndWrite(lite, 1), ended(1, 8), running(1, 9), clearEndWrite(lite, 1))
		require.Equal(t, []string{"update goxpdl_process_instances ×1", "clear end ×1", "update goxpdl_process_instances ×1",
			"update goxpdl_process_instances ×1", "clear end ×1"}, kinds(p))
	})
	t.Run("the counts of a chain's changes of state are one statement of their sums", func(t *testing.T) {
		t.Parallel()
		p := enqueue(instance(1, 7, "Running"), countWrite(s, 1, "Initiated", -1), countWrite(s, 1, "Running", 1), history(1),
			instance(1, 8, "Running"), instance(1, 9, "Completed"), countWrite(s, 1, "Running", -1), countWrite(s, 1, "Completed", 1),
			countWrite(s, 2, "Running", 1))
		require.Equal(t, []string{"update goxpdl_process_instances ×3", "count goxpdl_process_instances ×5", "insert goxpdl_history ×1"}, kinds(p))
		w := p.queue[1].sendable(true)
		require.Equal(t, "INSERT INTO `goxpdl_instance_count_deltas` (`definition_id`,`process_def_id`,`state`,`n`) "+
			"SELECT i.`definition_id`, i.`process_def_id`, c.`state`, c.`n` FROM `goxpdl_process_instances` i JOIN ("+
			"SELECT ? AS `id`, ? AS `state`, ? AS `n` UNION ALL SELECT ?, ?, ? UNION ALL SELECT ?, ?, ?) c ON i.`id` = c.`id`", w.query)
		require.Equal(t, []any{int64(1), "Initiated", int64(-1), int64(1), "Completed", int64(1), int64(2), "Running", int64(1)}, w.args,
			"Running +1 and -1 of instance 1 cancel out")
		p = enqueue(countWrite(s, 1, "Running", 1), countWrite(s, 1, "Running", -1))
		require.Equal(t, []any{"Running", int64(0), int64(1)}, p.queue[0].sendable(true).args, "all cancel out: one row of 0")
	})
	t.Run("rows only added commute with each other", func(t *testing.T) {
		t.Parallel()
		p := enqueue(deltas(), count(1), deltas())
		require.Equal(t, []string{"insert goxpdl_instance_count_deltas ×2", "INSERT … SELECT"}, kinds(p))
	})
	t.Run("a write that says nothing of what it touches blocks", func(t *testing.T) {
		t.Parallel()
		p := enqueue(history(1), queuedWrite{query: "opaque"}, history(2))
		require.Equal(t, []string{"insert goxpdl_history ×1", "opaque", "insert goxpdl_history ×1"}, kinds(p))
	})
	t.Run("marks of different owners stay apart", func(t *testing.T) {
		t.Parallel()
		p := enqueue(mark("node-1", 1), mark("node-2", 2), mark("node-1", 3, 3))
		require.Equal(t, []string{"processed node-1 ×2", "processed node-2 ×1"}, kinds(p))
		w := p.queue[0].sendable(true)
		require.True(t, w.rowsOK(2))
		require.False(t, w.rowsOK(1), "each claimed event must be marked")
	})
	t.Run("an id of another type joins nothing", func(t *testing.T) {
		t.Parallel()
		odd := insertWrite(s, tableHistory, []string{"id", "subject"}, [][]any{{"1", "x"}})
		p := enqueue(history(1), odd, history(2))
		require.Len(t, p.queue, 3)
		require.Nil(t, p.queue[1].rows, "it blocks")
	})
	t.Run("a joined write stays within batchSize rows", func(t *testing.T) {
		t.Parallel()
		var ws []queuedWrite
		for id := range int64(batchSize + 1) {
			ws = append(ws, history(id+1))
		}
		p := enqueue(ws...)
		require.Len(t, p.queue, 2)
		require.Len(t, p.queue[0].rows.rows, batchSize)
	})
}

// Deferred savepoints' marks (deferred.go) on a queue that is never
// sent: writes join across a mark, a rollback to an unsent mark cuts the
// joined rows back, and the text sent across marks puts each SAVEPOINT
// between the rows before it and those after it.
func TestHeldWritesAcrossMarks(t *testing.T) {
	t.Parallel()
	s := &Store{dialect: store.DialectMySQL}
	history := func(ids ...int64) queuedWrite {
		var rows [][]any
		for _, id := range ids {
			rows = append(rows, []any{id, "x"})
		}
		return insertWrite(s, tableHistory, []string{"id", "subject"}, rows)
	}
	// ids lists the history ids of each write of the queue as sent.
	ids := func(ws []queuedWrite) []string {
		var out []string
		for _, w := range ws {
			if w.rows == nil {
				out = append(out, w.query)
				continue
			}
			var row []string
			for _, r := range w.rows.rows {
				row = append(row, strconv.FormatInt(r.([]any)[0].(int64), 10)) //nolint:forcetypeassert // rows above
			}
			out = append(out, strings.Join(row, ","))
		}
		return out
	}

	t.Run("joined across marks, cut back at a rollback", func(t *testing.T) {
		t.Parallel()
		p := &pipeline{}
		p.enqueue(history(1))
		outer := p.setMark("a")
		p.enqueue(history(2))
		inner := p.setMark("b")
		p.enqueue(history(3, 4))
		require.Len(t, p.queue, 1, "one write for the three steps")
		require.NoError(t, p.rollbackToMark(t.Context(), inner))
		require.Equal(t, []string{"1,2"}, ids(p.queue))
		require.Equal(t, []touch{{table: tableHistory, ids: []int64{1}}, {table: tableHistory, ids: []int64{2}}}, p.queue[0].touches)
		p.enqueue(history(5))
		p.releaseMark(outer)
		require.Empty(t, p.marks)
		require.Equal(t, []string{"1,2,5"}, ids(p.outgoing()))
	})
	t.Run("joined rows split at the marks when sent", func(t *testing.T) {
		t.Parallel()
		p := &pipeline{}
		p.enqueue(history(1))
		p.setMark("a")
		p.enqueue(history(2, 3))
		p.setMark("b")
		p.enqueue(history(4))
		require.Len(t, p.queue, 1)
		require.Equal(t, []string{"1", "SAVEPOINT a", "2,3", "SAVEPOINT b", "4"}, ids(p.outgoing()))
	})
	t.Run("updates of one row joined across a mark, cut back at a rollback", func(t *testing.T) {
		t.Parallel()
		at := time.Date(2026, 11, 27, 6, 0, 0, 0, time.UTC)
		instance := func(expected int64, state string) queuedWrite {
			return versionedWrite(s, 1, expected, setOf(tableProcessInstances, "process instance", map[string]any{"state": state, "updated_at": at}))
		}
		p := &pipeline{}
		p.enqueue(instance(1, "Running"))
		m := p.setMark("a")
		p.enqueue(instance(2, "Running"))
		p.enqueue(instance(3, "Completed"))
		require.Len(t, p.queue, 1)
		require.NoError(t, p.rollbackToMark(t.Context(), m))
		w := p.queue[0].sendable(true)
		require.Equal(t, []any{"Running", at, int64(1), int64(1)}, w.args, "back to the one update from version 1")
		p.setMark("b")
		p.enqueue(instance(2, "Suspended"))
		out := p.outgoing()
		require.Len(t, out, 3, "the update before the mark, the SAVEPOINT, the update after it")
		require.Equal(t, []any{"Running", at, int64(1), int64(1)}, out[0].sendable(true).args)
		require.Equal(t, "SAVEPOINT b", out[1].query)
		require.Equal(t, []any{"Suspended", at, int64(1), int64(2)}, out[2].sendable(true).args, "from the version the first one left")
	})
	t.Run("sent across marks", func(t *testing.T) {
		t.Parallel()
		p := &pipeline{}
		p.enqueue(history(1))
		p.enqueue(queuedWrite{query: "UPDATE other"})
		p.setMark("a")
		p.enqueue(history(2))
		p.enqueue(queuedWrite{query: "UPDATE another"})
		p.setMark("b")
		p.enqueue(history(3))
		require.Equal(t, []string{"1", "UPDATE other", "SAVEPOINT a", "2", "UPDATE another", "SAVEPOINT b", "3"}, ids(p.outgoing()))
		for _, m := range p.marks {
			require.True(t, m.sent)
		}
		require.False(t, p.unsentMarks())
	})
}
