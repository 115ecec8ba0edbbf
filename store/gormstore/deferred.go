package gormstore

import (
	"context"
	"strconv"

	"github.com/goxpdl/goxpdl/store"
)

// Deferred savepoints (store.Tx.DeferredSavepoint). A savepoint costs a
// pipelined transaction round trips of its own: the SAVEPOINT statement,
// the send of what fn held back (Flush), and the RELEASE. The engine's
// chains set one for every step, and on MySQL those round trips were
// most of a chained step's time. A deferred savepoint is a mark in the
// queue instead: setting it sends nothing; when fn succeeds the mark is
// dropped and fn's writes stay held, free to join those before and after
// it; when fn fails before anything after the mark was sent, the queue is
// cut back to the mark, and nothing was ever sent. Only when the queue is
// sent while the mark stands (a read of fn's, a host's statement) does
// the SAVEPOINT statement go to the server, in the same text, between
// the writes queued before the mark and those after it; a failure of fn
// is then rolled back to it as Savepoint does.
//
// What this gives up is where errors land. fn's writes that fail when
// they are sent after fn ended fail whatever sends them: a later
// statement, Flush or the commit. And a text sent across a standing mark
// that fails leaves the transaction doomed (pipeline.doomed): the
// failing write may be on either side of the mark, so no rollback to it
// can be trusted to undo it, and every later statement, every rollback
// to a savepoint and the commit fail with the error. The caller runs the
// transaction again as a whole.

// queueMark is a deferred savepoint standing in a pipeline's queue.
type queueMark struct {
	name string
	// sent: the SAVEPOINT statement went to the server; everything
	// queued now came after it.
	sent bool
	// n is the queue's length when the mark was set, and cuts hold, for
	// each of those queued writes that joins rows (queuedWrite.rows), how
	// many rows, ids and touches it had then: rows joined to it later
	// came after the mark.
	n    int
	cuts []rowsCut
}

// rowsCut is the size of a joining write at a mark.
type rowsCut struct{ rows, ids, touches int }

// setMark sets a deferred savepoint named name at the end of the queue
// and returns its depth, for releaseMark and rollbackToMark.
func (p *pipeline) setMark(name string) int {
	m := queueMark{name: name, n: len(p.queue), cuts: make([]rowsCut, len(p.queue))}
	for i := range p.queue {
		if r := p.queue[i].rows; r != nil {
			m.cuts[i] = rowsCut{rows: len(r.rows), ids: len(r.ids), touches: len(p.queue[i].touches)}
		}
	}
	p.marks = append(p.marks, m)
	return len(p.marks) - 1
}

// releaseMark drops the mark at depth (and any inner one): the writes
// queued since stay, as if queued before it. A mark whose SAVEPOINT was
// sent is left on the server, which forgets it at the commit.
func (p *pipeline) releaseMark(depth int) {
	p.marks = p.marks[:depth]
}

// rollbackToMark undoes what was queued or sent since the mark at depth,
// and drops it. A mark not yet sent costs nothing: the queue is cut back
// to what it held at the mark.
func (p *pipeline) rollbackToMark(ctx context.Context, depth int) error {
	m := p.marks[depth]
	p.marks = p.marks[:depth]
	if p.doomed != nil {
		return p.doomed
	}
	if !m.sent {
		p.queue = p.queue[:m.n]
		for i, c := range m.cuts {
			if w := &p.queue[i]; w.rows != nil {
				w.rows.rows, w.rows.ids, w.touches = w.rows.rows[:c.rows], w.rows.ids[:c.ids], w.touches[:c.touches]
			}
		}
		return nil
	}
	// Everything queued, and a held write's failure a host's code saw
	// (err), came after the SAVEPOINT was sent.
	p.queue, p.err = p.queue[:0], nil
	_, err := p.tx.ExecContext(ctx, "ROLLBACK TO SAVEPOINT "+m.name)
	return err
}

// idle reports whether nothing waits to be sent: no held write, and no
// mark whose SAVEPOINT must reach the server before any other statement
// does (a statement sent past it would come before the savepoint, and a
// rollback to it would not undo it).
func (p *pipeline) idle() bool {
	return len(p.queue) == 0 && !p.unsentMarks()
}

// unsentMarks reports whether a mark stands whose SAVEPOINT statement
// has not been sent.
func (p *pipeline) unsentMarks() bool {
	return len(p.marks) > 0 && !p.marks[len(p.marks)-1].sent
}

// outgoing returns the queue as it is sent: with no unsent mark, the
// queue itself; otherwise its writes cut at each unsent mark, with the
// mark's SAVEPOINT statement between the writes before it and those
// after it. A joining write split by marks goes as several, one for the
// rows of each stretch, and a change folded into an insert's row in an
// earlier stretch goes as the write it stands for (fold.go). The marks
// are then sent (take and sendEach empty the queue).
func (p *pipeline) outgoing() []queuedWrite {
	if !p.unsentMarks() {
		return p.queue
	}
	out := make([]queuedWrite, 0, len(p.queue)+len(p.marks)*2)
	done := make([]int, len(p.queue)) // rows of each joining write already out
	next := 0                         // the first write not yet out (other than joined rows)
	emit := func(i, end int) {
		w := &p.queue[i]
		if w.rows == nil {
			if i >= next {
				out = append(out, *w)
			}
			return
		}
		if end > done[i] {
			kept, fallbacks := splitOrphans(w.rows.rows[done[i]:end])
			if len(kept) > 0 {
				part := *w
				rows := *w.rows
				rows.rows = kept
				part.rows = &rows
				out = append(out, part)
			}
			out = append(out, fallbacks...)
			done[i] = end
		}
	}
	for k := range p.marks {
		m := &p.marks[k]
		if m.sent {
			continue
		}
		for i := 0; i < m.n; i++ {
			emit(i, m.cuts[i].rows)
		}
		next = max(next, m.n)
		out = append(out, queuedWrite{what: "set savepoint " + m.name, query: "SAVEPOINT " + m.name})
		m.sent, m.n, m.cuts = true, 0, nil
	}
	for i := range p.queue {
		if r := p.queue[i].rows; r != nil {
			emit(i, len(r.rows))
		} else {
			emit(i, 0)
		}
	}
	return out
}

// DeferredSavepoint implements store.Tx. On a pipelined transaction
// (MySQL, SQLite) it is a mark in the queue (see above); elsewhere, and
// outside a transaction, it is Savepoint.
func (s *Store) DeferredSavepoint(ctx context.Context, fn func(ctx context.Context, tx store.Tx) error) (failed, err error) {
	p, ok := s.db.Statement.ConnPool.(*pipeline)
	if !ok || !s.inTx() {
		return s.Savepoint(ctx, fn)
	}
	if p.doomed != nil {
		return nil, p.doomed
	}
	depth := p.setMark("goxpdl_sp_" + strconv.FormatUint(savepoints.Add(1), 10))
	// What follows must run whatever became of ctx, as in Savepoint.
	after := context.WithoutCancel(ctx)
	panicked := true
	defer func() {
		if panicked {
			_ = p.rollbackToMark(after, depth) // the panic continues; its caller rolls back
		}
	}()
	failed = fn(ctx, s)
	panicked = false
	if failed == nil {
		p.releaseMark(depth)
		return nil, nil
	}
	if err := p.rollbackToMark(after, depth); err != nil {
		if isStoreError(err) {
			return failed, err
		}
		return failed, wrap(err, "roll back to savepoint")
	}
	return failed, nil
}
