package faultdb

import (
	"context"
	"database/sql/driver"
	"errors"
	"strings"
)

// Wrap returns a connector whose connections put in's faults into the
// connections c makes.
func Wrap(c driver.Connector, in *Injector) driver.Connector {
	return &connector{parent: c, in: in}
}

type connector struct {
	parent driver.Connector
	in     *Injector
}

func (c *connector) Connect(ctx context.Context) (driver.Conn, error) {
	dc, err := c.parent.Connect(ctx)
	if err != nil {
		return nil, err
	}
	full, ok := dc.(parentConn)
	if !ok {
		_ = dc.Close()
		return nil, errors.New("faultdb: the driver's connection lacks an interface database/sql needs")
	}
	return &conn{parent: full, in: c.in}, nil
}

func (c *connector) Driver() driver.Driver { return c.parent.Driver() }

// parentConn is what the wrapper needs of a driver's connection; both
// go-sql-driver/mysql's and modernc.org/sqlite's (through sqlitedialect)
// have it.
type parentConn interface {
	driver.Conn
	driver.ConnBeginTx
	driver.ConnPrepareContext
	driver.ExecerContext
	driver.QueryerContext
}

// conn is a connection with faults. database/sql uses a connection from
// one goroutine at a time, so its fields need no lock.
type conn struct {
	parent parentConn
	in     *Injector
	inTx   bool
	broken bool     // a connection error struck: everything fails from now on
	ran    []string // the statements of the open transaction
	// textTx: the open transaction was begun by a statement text
	// (START TRANSACTION, as gormstore's pipelined MySQL transactions
	// begin) and ends by one (COMMIT, ROLLBACK); txExempt: it was begun
	// under Exempt.
	textTx, txExempt bool
}

// ranQuery reports whether a statement of the open transaction contains
// query.
func (c *conn) ranQuery(query string) bool {
	for _, q := range c.ran {
		if strings.Contains(q, query) {
			return true
		}
	}
	return false
}

var (
	_ driver.Conn               = (*conn)(nil)
	_ driver.ConnBeginTx        = (*conn)(nil)
	_ driver.ConnPrepareContext = (*conn)(nil)
	_ driver.ExecerContext      = (*conn)(nil)
	_ driver.QueryerContext     = (*conn)(nil)
	_ driver.Pinger             = (*conn)(nil)
	_ driver.SessionResetter    = (*conn)(nil)
	_ driver.Validator          = (*conn)(nil)
	_ driver.NamedValueChecker  = (*conn)(nil)
)

// fail returns f's error for an operation on c, doing to the connection
// what the error does to a real one.
func (c *conn) fail(f *Fault) error {
	switch {
	case breaks(f.Err):
		c.broken = true
	case c.inTx && abortsTx(f.Err):
		// The server rolled the transaction back: what follows on this
		// connection runs outside it until the client ends it.
		_, _ = c.parent.ExecContext(context.Background(), "ROLLBACK", nil)
	}
	return f.Err
}

// statement is the check before a statement: a broken connection
// refuses it, and the injector may fail it.
func (c *conn) statement(ctx context.Context, query string) error {
	if c.broken {
		return driver.ErrBadConn
	}
	if c.inTx {
		c.ran = append(c.ran, query)
	}
	if f := c.in.strike(ctx, Statement, func(q string) bool { return strings.Contains(query, q) }); f != nil {
		return c.fail(f)
	}
	return nil
}

func (c *conn) Prepare(query string) (driver.Stmt, error) {
	return c.PrepareContext(context.Background(), query)
}

func (c *conn) PrepareContext(ctx context.Context, query string) (driver.Stmt, error) {
	if err := c.statement(ctx, query); err != nil {
		return nil, err
	}
	return c.parent.PrepareContext(ctx, query)
}

func (c *conn) ExecContext(ctx context.Context, query string, args []driver.NamedValue) (driver.Result, error) {
	if c.textTx && len(args) == 0 {
		// The end of a transaction begun by a text, at the same points
		// of failure as tx's.
		switch strings.TrimSpace(query) {
		case "COMMIT":
			return driver.RowsAffected(0), c.commit(c.txExempt, c.parentText("COMMIT"), c.parentText("ROLLBACK"))
		case "ROLLBACK":
			return driver.RowsAffected(0), c.rollback(c.parentText("ROLLBACK"))
		}
	}
	if err := c.textBegin(ctx, query); err != nil {
		return nil, err
	}
	if err := c.statement(ctx, query); err != nil {
		return nil, err
	}
	return c.parent.ExecContext(ctx, query, args)
}

func (c *conn) QueryContext(ctx context.Context, query string, args []driver.NamedValue) (driver.Rows, error) {
	if err := c.textBegin(ctx, query); err != nil {
		return nil, err
	}
	if err := c.statement(ctx, query); err != nil {
		return nil, err
	}
	return c.parent.QueryContext(ctx, query, args)
}

// textBegin is BeginTx for a statement text that begins with START
// TRANSACTION: the injector may fail it as a BEGIN, before any of the
// text reaches the database.
func (c *conn) textBegin(ctx context.Context, query string) error {
	if c.inTx || !strings.HasPrefix(query, "START TRANSACTION") {
		return nil
	}
	if c.broken {
		return driver.ErrBadConn
	}
	if f := c.in.strike(ctx, Begin, nil); f != nil {
		return c.fail(f)
	}
	c.inTx, c.ran, c.textTx, c.txExempt = true, c.ran[:0], true, exempt(ctx)
	return nil
}

// parentText returns a function that runs query on the connection
// underneath.
func (c *conn) parentText(query string) func() error {
	return func() error {
		_, err := c.parent.ExecContext(context.Background(), query, nil)
		return err
	}
}

func (c *conn) Begin() (driver.Tx, error) {
	return c.BeginTx(context.Background(), driver.TxOptions{})
}

func (c *conn) BeginTx(ctx context.Context, opts driver.TxOptions) (driver.Tx, error) {
	if c.broken {
		return nil, driver.ErrBadConn
	}
	if f := c.in.strike(ctx, Begin, nil); f != nil {
		return nil, c.fail(f)
	}
	t, err := c.parent.BeginTx(ctx, opts)
	if err != nil {
		return nil, err
	}
	c.inTx, c.ran = true, c.ran[:0]
	return &tx{parent: t, conn: c, exempt: exempt(ctx)}, nil
}

func (c *conn) Close() error { return c.parent.Close() }

func (c *conn) Ping(ctx context.Context) error {
	if c.broken {
		return driver.ErrBadConn
	}
	if p, ok := c.parent.(driver.Pinger); ok {
		return p.Ping(ctx)
	}
	return nil
}

func (c *conn) ResetSession(ctx context.Context) error {
	if c.broken {
		return driver.ErrBadConn
	}
	if r, ok := c.parent.(driver.SessionResetter); ok {
		return r.ResetSession(ctx)
	}
	return nil
}

func (c *conn) IsValid() bool {
	if c.broken {
		return false
	}
	if v, ok := c.parent.(driver.Validator); ok {
		return v.IsValid()
	}
	return true
}

// CheckNamedValue passes the driver's own conversion on, or leaves the
// value to database/sql's default one.
func (c *conn) CheckNamedValue(nv *driver.NamedValue) error {
	if ch, ok := c.parent.(driver.NamedValueChecker); ok {
		return ch.CheckNamedValue(nv)
	}
	return driver.ErrSkip
}

// tx is a transaction with faults at its commit.
type tx struct {
	parent driver.Tx
	conn   *conn
	exempt bool // begun under Exempt
}

func (t *tx) Commit() error { return t.conn.commit(t.exempt, t.parent.Commit, t.parent.Rollback) }

func (t *tx) Rollback() error { return t.conn.rollback(t.parent.Rollback) }

// commit ends the open transaction with commit, or with a fault: then
// rollback ends it, unless the fault strikes after the commit.
func (c *conn) commit(exempted bool, commit, rollback func() error) error {
	c.inTx, c.textTx = false, false
	if c.broken {
		_ = rollback() // the server rolls back a transaction whose client went away
		return driver.ErrBadConn
	}
	ctx := context.Background()
	if exempted {
		ctx = Exempt(ctx)
	}
	f := c.in.strike(ctx, Commit, c.ranQuery)
	switch {
	case f == nil:
		return commit()
	case f.Kind == AfterCommit:
		if err := commit(); err != nil {
			return err
		}
		c.broken = true
		return f.Err
	default:
		_ = rollback()
		if breaks(f.Err) {
			c.broken = true
		}
		return f.Err
	}
}

// rollback ends the open transaction with rollback.
func (c *conn) rollback(rollback func() error) error {
	c.inTx, c.textTx = false, false
	err := rollback()
	if c.broken {
		return driver.ErrBadConn
	}
	return err
}
