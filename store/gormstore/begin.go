package gormstore

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"

	"github.com/goxpdl/goxpdl/store"
)

// A pipelined MySQL transaction begins with its first text. database/sql
// begins a transaction with a round trip of its own (START TRANSACTION),
// before the transaction has anything to say; a pipelined one instead
// queues START TRANSACTION as its first held write, so that it goes to
// the server in the text of the first statement that is sent, read or
// write: one round trip less for every engine transaction. The
// transaction is then a connection of the pool (connTx) on which the
// pipeline sends START TRANSACTION, COMMIT and ROLLBACK itself.

// beginWrite is the held START TRANSACTION at the head of a connTx's
// queue. It says nothing of what it touches, so nothing moves before it.
var beginWrite = queuedWrite{what: "begin transaction", query: "START TRANSACTION"}

// connTx is a transaction on one connection of the pool, begun by the
// first text sent on it (beginWrite). It never goes back to the pool
// inside a transaction: Rollback closes the connection when its ROLLBACK
// fails.
type connTx struct {
	conn *sql.Conn
	// sent: a statement went to the server, the START TRANSACTION with
	// it; before that there is nothing to commit or roll back.
	sent bool
	// ended: Commit or Rollback gave the connection back or closed it.
	ended bool
}

func (c *connTx) ExecContext(ctx context.Context, query string, args ...any) (sql.Result, error) {
	c.sent = true
	return c.conn.ExecContext(ctx, query, args...)
}

func (c *connTx) QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error) {
	c.sent = true
	return c.conn.QueryContext(ctx, query, args...)
}

func (c *connTx) QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row {
	c.sent = true
	return c.conn.QueryRowContext(ctx, query, args...)
}

func (c *connTx) PrepareContext(ctx context.Context, query string) (*sql.Stmt, error) {
	c.sent = true
	return c.conn.PrepareContext(ctx, query)
}

// Commit commits what was sent (the pipeline sent its queue first) and
// gives the connection back to the pool.
func (c *connTx) Commit() error { return c.end("COMMIT") }

// Rollback rolls back what was sent and gives the connection back to
// the pool; one whose ROLLBACK failed is closed instead, so that no
// later user of the pool finds a transaction open.
func (c *connTx) Rollback() error { return c.end("ROLLBACK") }

// end ends the transaction with statement, COMMIT or ROLLBACK, when
// anything was sent, and gives the connection back, or closes it when
// statement failed.
func (c *connTx) end(statement string) error {
	if c.ended {
		return sql.ErrTxDone
	}
	c.ended = true
	if !c.sent {
		return c.conn.Close()
	}
	if _, err := c.conn.ExecContext(context.Background(), statement); err != nil {
		return errors.Join(err, c.discard())
	}
	return c.conn.Close()
}

// discard closes the connection for good: database/sql drops a
// connection whose Raw function answers driver.ErrBadConn.
func (c *connTx) discard() error {
	if err := c.conn.Raw(func(any) error { return driver.ErrBadConn }); !errors.Is(err, driver.ErrBadConn) {
		return errors.Join(err, c.conn.Close())
	}
	return nil // closed by Raw
}

// inPipelinedTx is InTx on MySQL with pipelined sessions: as gorm's
// Transaction, on a pipeline begun by its first text.
func (s *Store) inPipelinedTx(ctx context.Context, fn func(ctx context.Context, tx store.Tx) error) (err error) {
	pool, err := s.db.DB()
	if err != nil {
		return wrap(err, "transaction")
	}
	p, err := beginPipelined(ctx, pool)
	if err != nil {
		return wrap(err, "transaction")
	}
	tx := s.db.WithContext(ctx)
	tx.Statement.ConnPool = p
	done := false
	defer func() {
		if !done { // fn failed or panicked, or the commit failed
			_ = p.Rollback()
		}
	}()
	if err := fn(ctx, &Store{db: tx, dialect: s.dialect, readCommitted: s.readCommitted, pipelined: s.pipelined}); err != nil {
		return err
	}
	if err := p.Commit(); err != nil {
		return wrap(err, "transaction")
	}
	done = true
	return nil
}

// beginPipelined begins a pipelined transaction on a connection of pool
// whose START TRANSACTION waits in the queue.
func beginPipelined(ctx context.Context, pool *sql.DB) (*pipeline, error) {
	conn, err := pool.Conn(ctx)
	if err != nil {
		return nil, err
	}
	return &pipeline{tx: &connTx{conn: conn}, pool: pool, queue: []queuedWrite{beginWrite}}, nil
}
