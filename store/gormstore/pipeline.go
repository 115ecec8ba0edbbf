package gormstore

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"

	"gorm.io/gorm"

	"github.com/goxpdl/goxpdl/store"
)

// On MySQL every statement is a round trip to the server, and at the
// engine's size of statement the round trip costs both sides more than
// the statement does: the engine's step of about eight statements spent
// most of the server's CPU in its network layer and task switches. A
// store transaction on MySQL therefore pipelines: the writes whose
// callers want no result (history rows, the processed mark of events, the
// versioned updates of process and activity instances) wait in a queue
// and go to the server in one multi-statement text together with the
// next statement that does want a result, or before the commit. A write
// that must change a known number of rows is followed in that text by
// SELECT ROW_COUNT(), whose result is checked before the caller of that
// next statement sees anything.
//
// The queue keeps the order of the statements, so every read sees the
// writes before it. A queued write that fails makes the statement that
// sent it fail, or Flush, or the commit; the engine flushes at the end of
// every run and before it hands its transaction to a host's application,
// so that a failure is reported to the run it belongs to, never to the
// host's code.
//
// It needs the go-sql-driver DSN options multiStatements and
// interpolateParams (the statements are sent as text; the server cannot
// prepare several statements as one), which OpenMySQL sets unless the DSN
// says otherwise. A pool without them runs every statement at once.
//
// A SQLite transaction holds its writes the same way, for what the
// joining of coalesce.go saves: SQLite runs in the process, so there is
// no round trip, but each statement costs its bind, step and reset, and
// the writes of a group commit's members join into one statement per
// kind. Its queue is sent one statement at a time (oneByOne), each
// checked by its own row count, before any other statement and before
// the commit.

// queuedWrite is a write that may wait in a pipeline's queue.
type queuedWrite struct {
	// what the write does, for its errors ("update process instance 7").
	what  string
	query string
	args  []any
	// rowsOK, when not nil, checks the number of rows the write changed;
	// the write is then followed by SELECT ROW_COUNT() in the batch.
	rowsOK func(n int64) bool
	// failed returns the error for a row count rowsOK refused. It runs
	// after the batch is read and may query the transaction.
	failed func(ctx context.Context) error

	// touches says what the write reads or changes, so that a later
	// write may move back past it (coalesce.go); nil blocks every later
	// write.
	touches []touch
	// rows, when not nil, lets a later write of the same kind join this
	// one; the write is then sent as rows.statement of all the rows (its
	// query is built only then, sendable).
	rows *rowsWrite
	// tables are the tables of the first tablesOf touches
	// (touchedTables).
	tables   []string
	tablesOf int
}

// write runs w on s's connection or transaction: queued when s is a
// pipelined transaction (MySQL's or SQLite's), at once otherwise. Its errors say what w
// does; those of a queued write come from the statement, Flush or commit
// that sends it.
func (s *Store) write(ctx context.Context, w queuedWrite) error {
	if p, ok := s.db.Statement.ConnPool.(*pipeline); ok {
		p.enqueue(w)
		return nil
	}
	w = w.sendable(false)
	if w.query == "" {
		return nil
	}
	res, err := s.db.Statement.ConnPool.ExecContext(ctx, s.native(w.query), w.args...)
	if err != nil || w.rowsOK == nil {
		return wrap(err, "%s", w.what)
	}
	n, err := res.RowsAffected()
	if err != nil {
		return wrap(err, "%s", w.what)
	}
	if w.rowsOK(n) {
		return nil
	}
	return w.failed(ctx)
}

// Flush implements store.Tx: it sends the writes queued on a pipelined
// transaction and checks them. Elsewhere there is nothing to send.
func (s *Store) Flush(ctx context.Context) error {
	if p, ok := s.db.Statement.ConnPool.(*pipeline); ok {
		if err := p.flush(ctx); err != nil {
			if isStoreError(err) {
				return err
			}
			return wrap(err, "flush")
		}
	}
	return nil
}

// isStoreError reports an error that already carries one of package
// store's sentinels.
func isStoreError(err error) bool {
	for _, sentinel := range []error{store.ErrNotFound, store.ErrConflict, store.ErrDuplicate, store.ErrLeaseLost, store.ErrNotSupported, store.ErrExhausted} {
		if errors.Is(err, sentinel) {
			return true
		}
	}
	return false
}

// pipeline is the gorm.ConnPool of a pipelined transaction: the
// *sql.Tx underneath gorm, with the queue of writes waiting to be sent.
// Like the transaction, it is for one goroutine at a time.
type pipeline struct {
	tx    txConn
	pool  *sql.DB // the pool tx was begun on, for gorm's DB()
	queue []queuedWrite
	// oneByOne: the queue is sent as its statements one after another,
	// each checked by its own result, and before any other statement
	// (SQLite: no round trip to save, only the joining pays).
	oneByOne bool
	// err is the error of a held write that a host's code saw first
	// (hostPool). Once set, every later statement and the commit fail
	// with it, so that the host's code cannot commit the transaction
	// without the write, whatever it does with the error. (The store's
	// own callers get such errors too, and the transaction goes on: they
	// decide.) ROLLBACK TO SAVEPOINT clears it: the savepoint's statement
	// sent everything before it.
	err error
	// marks are the deferred savepoints standing (deferred.go), outermost
	// first; those whose SAVEPOINT statement was sent come before those
	// whose was not.
	marks []queueMark
	// doomed is the error of a text sent across a deferred savepoint's
	// mark that failed: every later statement, rollback to a savepoint
	// and the commit fail with it, and only Rollback ends it.
	doomed error
}

// failure is the error every statement fails with before it is sent: the
// transaction is doomed, or a host's code saw a held write fail.
func (p *pipeline) failure() error {
	if p.doomed != nil {
		return p.doomed
	}
	return p.err
}

// sentAcross marks err, the error of a text that carried held writes, as
// dooming the transaction when the text crossed a deferred savepoint's
// mark (marked: outgoing cut the queue at one).
func (p *pipeline) sentAcross(marked bool, err error) error {
	err = held(err)
	if marked && err != nil {
		p.doomed = err
	}
	return err
}

var (
	_ gorm.ConnPool       = (*pipeline)(nil)
	_ gorm.TxCommitter    = (*pipeline)(nil)
	_ gorm.GetDBConnector = (*pipeline)(nil)
)

// GetDBConn implements gorm.GetDBConnector: DB() on the transaction's
// *gorm.DB returns the pool, as it does over a plain *sql.Tx.
func (p *pipeline) GetDBConn() (*sql.DB, error) { return p.pool, nil }

// errNoRowCount is a batch whose answer lacks a row count it asked for.
var errNoRowCount = errors.New("gormstore: pipelined batch: no row count for a queued write")

// take empties the queue into one multi-statement text (each checked
// write followed by SELECT ROW_COUNT()), its arguments, and the checked
// writes in the order of their counts in the answer.
func (p *pipeline) take() (query string, args []any, checked []queuedWrite) {
	var q strings.Builder
	queue := p.outgoing()
	for i := range queue {
		w := queue[i].sendable(true)
		if w.query == "" {
			continue // an insert whose rows were all dropped (fold.go)
		}
		if q.Len() > 0 {
			q.WriteString(";\n")
		}
		q.WriteString(w.query)
		args = append(args, w.args...)
		if w.rowsOK != nil {
			q.WriteString(";\nSELECT ROW_COUNT()")
			checked = append(checked, w)
		}
	}
	p.queue = p.queue[:0]
	return q.String(), args, checked
}

// joinTexts is the text of the queued writes' batch followed by query;
// query alone when the batch is empty (every held write folded away).
func joinTexts(batch, query string) string {
	if batch == "" {
		return query
	}
	return batch + ";\n" + query
}

// readCounts reads the row counts of the checked writes, the first
// result sets of rows, and returns the error of the first write whose
// count is wrong (rows are then closed). Otherwise rows are left at the
// result set after the counts, if there is one; then reports whether
// there is.
func readCounts(ctx context.Context, rows *sql.Rows, checked []queuedWrite) (more bool, err error) {
	var wrong *queuedWrite
	for i := range checked {
		if i > 0 && !rows.NextResultSet() {
			return false, closeWith(rows, errNoRowCount)
		}
		var n int64
		if !rows.Next() {
			return false, closeWith(rows, errNoRowCount)
		}
		if err := rows.Scan(&n); err != nil {
			return false, closeWith(rows, err)
		}
		if wrong == nil && !checked[i].rowsOK(n) {
			wrong = &checked[i]
		}
	}
	if wrong != nil {
		if err := rows.Close(); err != nil {
			return false, err
		}
		return false, wrong.failed(ctx)
	}
	if len(checked) == 0 {
		return true, nil // rows are at their first result set
	}
	if rows.NextResultSet() {
		return true, nil
	}
	// No result set after the counts: the rest of the batch had none, or
	// failed.
	return false, closeWith(rows, rows.Err())
}

// closeWith closes rows and returns err, or the error of Close when err
// is nil.
func closeWith(rows *sql.Rows, err error) error {
	if cerr := rows.Close(); err == nil {
		err = cerr
	}
	return err
}

// heldError is the error of a text that carried held writes: the
// statement that failed may be any of them (or the statement sent with
// them), so it is store.ErrHeldWrite as well as its own error.
type heldError struct{ err error }

func (e heldError) Error() string        { return e.err.Error() }
func (e heldError) Unwrap() error        { return e.err }
func (e heldError) Is(target error) bool { return target == store.ErrHeldWrite }

// held marks err, when not nil, as the error of a text with held writes.
func held(err error) error {
	if err == nil {
		return nil
	}
	return heldError{err}
}

// flush sends the queue, if any, and checks the row counts.
func (p *pipeline) flush(ctx context.Context) error {
	if err := p.failure(); err != nil {
		return err
	}
	marked := p.unsentMarks()
	return p.sentAcross(marked, p.send(ctx))
}

// send is flush without the mark on its error.
func (p *pipeline) send(ctx context.Context) error {
	if p.idle() {
		return nil
	}
	if p.oneByOne {
		return p.sendEach(ctx)
	}
	query, args, checked := p.take()
	if query == "" {
		return nil
	}
	if len(checked) == 0 {
		_, err := p.tx.ExecContext(ctx, query, args...)
		return err
	}
	rows, err := p.tx.QueryContext(ctx, query, args...)
	if err != nil {
		return err
	}
	more, err := readCounts(ctx, rows, checked)
	if err != nil {
		return err
	}
	if more {
		return closeWith(rows, fmt.Errorf("gormstore: pipelined batch: a result set after the row counts"))
	}
	return nil
}

// sendEach sends the queue one statement at a time and checks each
// one's row count as it goes. The queue is emptied first: a failed check
// may read through the pipeline.
func (p *pipeline) sendEach(ctx context.Context) error {
	queue := p.outgoing()
	p.queue = nil
	for i := range queue {
		if queue[i].rows == nil {
			if err := p.exec(ctx, queue[i]); err != nil {
				return err
			}
			continue
		}
		rows := queue[i].rows.rows
		if queue[i].rows.compact != nil {
			rows = queue[i].rows.compact(rows)
		}
		for _, rows := range pow2Chunks(rows) {
			if err := p.exec(ctx, queue[i].rows.statement(rows, true)); err != nil {
				return err
			}
		}
	}
	if p.queue == nil {
		p.queue = queue[:0]
	}
	return nil
}

// exec runs w in the transaction and checks its row count.
func (p *pipeline) exec(ctx context.Context, w queuedWrite) error {
	res, err := p.tx.ExecContext(ctx, w.query, w.args...)
	if err != nil || w.rowsOK == nil {
		return err
	}
	n, err := res.RowsAffected()
	if err != nil {
		return err
	}
	if !w.rowsOK(n) {
		return w.failed(ctx)
	}
	return nil
}

// ExecContext implements gorm.ConnPool. Queued writes go first, in the
// same text when none of them needs its row count checked (the result is
// that of query, the last statement). ROLLBACK TO SAVEPOINT drops the
// queue instead: everything queued came after the latest savepoint, whose
// SAVEPOINT statement sent the queue before it.
func (p *pipeline) ExecContext(ctx context.Context, query string, args ...any) (sql.Result, error) {
	if strings.HasPrefix(strings.ToUpper(strings.TrimSpace(query)), "ROLLBACK TO") {
		if p.doomed != nil {
			return nil, p.doomed
		}
		p.queue, p.err = p.queue[:0], nil
		return p.tx.ExecContext(ctx, query, args...)
	}
	if err := p.failure(); err != nil {
		return nil, err
	}
	if p.idle() {
		return p.tx.ExecContext(ctx, query, args...)
	}
	if p.oneByOne {
		if err := p.flush(ctx); err != nil {
			return nil, err
		}
		return p.tx.ExecContext(ctx, query, args...)
	}
	for i := range p.queue {
		if p.queue[i].counted() {
			if err := p.flush(ctx); err != nil {
				return nil, err
			}
			return p.tx.ExecContext(ctx, query, args...)
		}
	}
	marked := p.unsentMarks()
	batch, batchArgs, _ := p.take()
	res, err := p.tx.ExecContext(ctx, joinTexts(batch, query), append(batchArgs, args...)...)
	if err != nil {
		return nil, p.sentAcross(marked, err)
	}
	return res, nil
}

// QueryContext implements gorm.ConnPool: the queued writes and their row
// counts go in one text with query, whose rows are returned.
func (p *pipeline) QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error) {
	if err := p.failure(); err != nil {
		return nil, err
	}
	if p.idle() {
		return p.tx.QueryContext(ctx, query, args...)
	}
	if p.oneByOne {
		if err := p.flush(ctx); err != nil {
			return nil, err
		}
		return p.tx.QueryContext(ctx, query, args...)
	}
	marked := p.unsentMarks()
	batch, batchArgs, checked := p.take()
	rows, err := p.tx.QueryContext(ctx, joinTexts(batch, query), append(batchArgs, args...)...)
	if err == nil {
		_, err = readCounts(ctx, rows, checked)
	}
	if err != nil {
		return nil, p.sentAcross(marked, err)
	}
	return rows, nil
}

// QueryRowContext implements gorm.ConnPool. A *sql.Row cannot be moved
// past the row counts, so the queue is sent first. When that fails, the
// returned row's Scan fails, with the context's error that stopped it.
func (p *pipeline) QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row {
	if err := p.flush(ctx); err != nil {
		failed, cancel := context.WithCancelCause(ctx)
		cancel(err)
		return p.tx.QueryRowContext(failed, query, args...)
	}
	return p.tx.QueryRowContext(ctx, query, args...)
}

// PrepareContext implements gorm.ConnPool; the queue is sent first.
func (p *pipeline) PrepareContext(ctx context.Context, query string) (*sql.Stmt, error) {
	if err := p.flush(ctx); err != nil {
		return nil, err
	}
	return p.tx.PrepareContext(ctx, query)
}

// Commit implements gorm.TxCommitter: the queue is sent and checked
// before the transaction commits.
func (p *pipeline) Commit() error {
	if err := p.flush(context.Background()); err != nil {
		return err
	}
	return p.tx.Commit()
}

// Rollback implements gorm.TxCommitter; the queue is dropped.
func (p *pipeline) Rollback() error {
	p.queue, p.marks, p.doomed = p.queue[:0], nil, nil
	return p.tx.Rollback()
}

// txConn is what a pipeline sends its statements on: a *sql.Tx, or a
// transaction whose START TRANSACTION waits in the queue (connTx).
type txConn interface {
	ExecContext(ctx context.Context, query string, args ...any) (sql.Result, error)
	QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error)
	QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row
	PrepareContext(ctx context.Context, query string) (*sql.Stmt, error)
	Commit() error
	Rollback() error
}

// hostPool is the gorm.ConnPool of a host's code inside a pipelined
// transaction (HostDB): before each of its statements the held writes are
// sent on their own, so that the statement's result and error are its
// own, unless a held write failed; that failure then stays the
// transaction's (pipeline.err).
type hostPool struct{ p *pipeline }

// flush sends the held writes before a statement of the host's code.
func (h *hostPool) flush(ctx context.Context) error {
	if err := h.p.flush(ctx); err != nil {
		h.p.err = err
		return err
	}
	return nil
}

var (
	_ gorm.ConnPool       = (*hostPool)(nil)
	_ gorm.TxCommitter    = (*hostPool)(nil)
	_ gorm.GetDBConnector = (*hostPool)(nil)
)

// GetDBConn implements gorm.GetDBConnector.
func (h *hostPool) GetDBConn() (*sql.DB, error) { return h.p.pool, nil }

// ExecContext implements gorm.ConnPool. ROLLBACK TO SAVEPOINT (of a
// savepoint the host's code made) drops what was held since, as on the
// pipeline.
func (h *hostPool) ExecContext(ctx context.Context, query string, args ...any) (sql.Result, error) {
	if !strings.HasPrefix(strings.ToUpper(strings.TrimSpace(query)), "ROLLBACK TO") {
		if err := h.flush(ctx); err != nil {
			return nil, err
		}
	}
	return h.p.ExecContext(ctx, query, args...)
}

// QueryContext implements gorm.ConnPool.
func (h *hostPool) QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error) {
	if err := h.flush(ctx); err != nil {
		return nil, err
	}
	return h.p.tx.QueryContext(ctx, query, args...)
}

// QueryRowContext implements gorm.ConnPool.
func (h *hostPool) QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row {
	if err := h.flush(ctx); err != nil {
		failed, cancel := context.WithCancelCause(ctx)
		cancel(err)
		return h.p.tx.QueryRowContext(failed, query, args...)
	}
	return h.p.tx.QueryRowContext(ctx, query, args...)
}

// PrepareContext implements gorm.ConnPool.
func (h *hostPool) PrepareContext(ctx context.Context, query string) (*sql.Stmt, error) {
	if err := h.flush(ctx); err != nil {
		return nil, err
	}
	return h.p.tx.PrepareContext(ctx, query)
}

// Commit implements gorm.TxCommitter. The engine commits its
// transaction; a host's code that tries gets an error.
func (h *hostPool) Commit() error {
	return errors.New("gormstore: the engine's transaction is committed by the engine, not by a host's code")
}

// Rollback implements gorm.TxCommitter, likewise.
func (h *hostPool) Rollback() error {
	return errors.New("gormstore: the engine's transaction is rolled back by the engine, not by a host's code")
}
