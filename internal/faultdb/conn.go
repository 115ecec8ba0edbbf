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
	if err := c.statement(ctx, query); err != nil {
		return nil, err
	}
	return c.parent.ExecContext(ctx, query, args)
}

func (c *conn) QueryContext(ctx context.Context, query string, args []driver.NamedValue) (driver.Rows, error) {
	if err := c.statement(ctx, query); err != nil {
		return nil, err
	}
	return c.parent.QueryContext(ctx, query, args)
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

func (t *tx) Commit() error {
	c := t.conn
	c.inTx = false
	if c.broken {
		_ = t.parent.Rollback() // the server rolls back a transaction whose client went away
		return driver.ErrBadConn
	}
	ctx := context.Background()
	if t.exempt {
		ctx = Exempt(ctx)
	}
	f := c.in.strike(ctx, Commit, c.ranQuery)
	switch {
	case f == nil:
		return t.parent.Commit()
	case f.Kind == AfterCommit:
		if err := t.parent.Commit(); err != nil {
			return err
		}
		c.broken = true
		return f.Err
	default:
		_ = t.parent.Rollback()
		if breaks(f.Err) {
			c.broken = true
		}
		return f.Err
	}
}

func (t *tx) Rollback() error {
	c := t.conn
	c.inTx = false
	err := t.parent.Rollback()
	if c.broken {
		return driver.ErrBadConn
	}
	return err
}
