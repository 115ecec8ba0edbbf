package sqlitedialect

import (
	"container/list"
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"net/url"
	"reflect"
	"strings"
	"sync"
	"time"

	"modernc.org/sqlite"
)

// DefaultStatementCacheSize is how many prepared statements each
// connection keeps unless Config says otherwise.
const DefaultStatementCacheSize = 128

// sqliteDriver returns the driver modernc.org/sqlite registers as
// "sqlite", so that connection hooks and functions registered on it apply.
var sqliteDriver = sync.OnceValue(func() driver.Driver {
	db, err := sql.Open("sqlite", "")
	if err != nil {
		return &sqlite.Driver{} // not registered: cannot happen, the import registers it
	}
	d := db.Driver()
	_ = db.Close() // sql.Open connected nothing
	return d
})

// connector opens connections to one database, each with its own cache
// of prepared statements.
type connector struct {
	dsn       string
	cacheSize int
	// plainTimes: the DSN leaves the driver's time format and zone as
	// they are, so a time.Time argument is written as its String().
	plainTimes bool
}

func (c *connector) Connect(context.Context) (driver.Conn, error) {
	conn, err := sqliteDriver().Open(c.dsn)
	if err != nil {
		return nil, err
	}
	return newCachingConn(conn, c.cacheSize, c.plainTimes)
}

func (c *connector) Driver() driver.Driver { return sqliteDriver() }

// OpenDB opens a database/sql pool over the SQLite database dsn names
// (modernc.org/sqlite's DSN: a path or ":memory:", with _pragma, _txlock
// and the other query parameters it documents). Every connection keeps
// up to cacheSize prepared statements (DefaultStatementCacheSize when 0),
// so a statement run again on the same connection skips SQLite's parser;
// a negative cacheSize turns the cache off.
func OpenDB(dsn string, cacheSize int) *sql.DB {
	return sql.OpenDB(NewConnector(dsn, cacheSize))
}

// NewConnector returns the connector OpenDB opens its pool over: each
// connection it makes keeps up to cacheSize prepared statements (as in
// OpenDB). A caller that wraps it (instrumentation, fault injection)
// opens the pool itself with sql.OpenDB and hands it to the dialector as
// Dialector.Conn.
func NewConnector(dsn string, cacheSize int) driver.Connector {
	if cacheSize == 0 {
		cacheSize = DefaultStatementCacheSize
	}
	return &connector{dsn: dsn, cacheSize: cacheSize, plainTimes: plainTimes(dsn)}
}

// plainTimes reports whether dsn keeps modernc.org/sqlite's default way of
// writing a time.Time: as the text of its String method, in its own zone.
// The query parameters _time_format, _time_integer_format and _loc change
// that.
func plainTimes(dsn string) bool {
	_, query, found := strings.Cut(dsn, "?")
	if !found {
		return true
	}
	q, err := url.ParseQuery(query)
	if err != nil {
		return false // the driver will refuse it; change nothing
	}
	for _, name := range []string{"_time_format", "_time_integer_format", "_loc"} {
		if q.Has(name) {
			return false
		}
	}
	return true
}

// conn is the driver connection that modernc.org/sqlite returns, with
// every optional interface database/sql uses.
type conn interface {
	driver.Conn
	driver.ConnBeginTx
	driver.ConnPrepareContext
	driver.ExecerContext
	driver.QueryerContext
	driver.Pinger
	driver.SessionResetter
	driver.Validator
}

// stmt is a prepared statement of modernc.org/sqlite.
type stmt interface {
	driver.Stmt
	driver.StmtExecContext
	driver.StmtQueryContext
}

// cachingConn is a connection that runs ExecContext and QueryContext
// through prepared statements it keeps, least recently used first out.
// modernc.org/sqlite keeps a prepared statement's SQLite handle and only
// resets it between runs, while its ExecContext and QueryContext on the
// connection prepare and finalize the statement every time; for the short
// statements of a workflow engine, preparing costs as much as running.
//
// database/sql uses a connection from one goroutine at a time, so the
// cache needs no lock. A statement whose rows are still open is busy: a
// second run of the same SQL meanwhile gets a statement of its own.
//
// It also writes the text of a time.Time argument itself when the DSN
// keeps the driver's default format (plainTimes), and keeps the texts of
// the last few times it wrote: the engine binds one timestamp to every
// row of a multi-row INSERT (a run's history has dozens), and a group
// commit sends the rows of several runs, each with its own time, in one
// statement per table, one table after another; the driver would format
// each time again for every row and table.
type cachingConn struct {
	conn
	size  int
	lru   *list.List // of *cachedStmt, most recently used first
	bySQL map[string]*list.Element

	plainTimes bool
	times      [timeTexts]timeText // the texts of recent times, a ring
	nextTime   int                 // where the next one goes in times
}

// timeTexts is how many recent times a connection keeps the text of:
// more than the runs of a group commit.
const timeTexts = 64

// timeText is a time and the text the driver would write for it, as a
// driver.Value already (boxing a string allocates; a time repeats over
// a step's rows).
type timeText struct {
	t    time.Time
	text driver.Value
}

type cachedStmt struct {
	query string
	stmt  stmt
	busy  bool // rows of the statement are open
}

func newCachingConn(c driver.Conn, size int, plainTimes bool) (driver.Conn, error) {
	full, ok := c.(conn)
	if !ok {
		_ = c.Close()
		return nil, errors.New("sqlitedialect: the driver's connection lacks an interface database/sql needs")
	}
	if size < 0 {
		return full, nil
	}
	return &cachingConn{conn: full, size: size, lru: list.New(), bySQL: make(map[string]*list.Element), plainTimes: plainTimes}, nil
}

// formatTimes replaces each time.Time in args by the text the driver
// would write for it. args is database/sql's copy for this one call.
func (c *cachingConn) formatTimes(args []driver.NamedValue) {
	if !c.plainTimes {
		return
	}
	for i := range args {
		t, ok := args[i].Value.(time.Time)
		if !ok {
			continue
		}
		args[i].Value = c.timeText(t)
	}
}

// timeText returns the text of t, formatting it when it is not one of
// the recent times.
func (c *cachingConn) timeText(t time.Time) driver.Value {
	// Newest first: a statement's rows mostly repeat the time just used.
	for k := range timeTexts {
		i := (c.nextTime - 1 - k + timeTexts) % timeTexts
		// ==, not Equal: the text also shows the zone and a monotonic
		// reading, which Equal ignores.
		if e := &c.times[i]; e.text != nil && e.t == t { //nolint:staticcheck // see above
			return e.text
		}
	}
	var text driver.Value = t.String()
	c.times[c.nextTime] = timeText{t: t, text: text}
	c.nextTime = (c.nextTime + 1) % timeTexts
	return text
}

// prepared returns the cached statement for query, preparing it when
// there is none, or nil and a fresh statement when the cached one is busy.
func (c *cachingConn) prepared(ctx context.Context, query string) (*cachedStmt, stmt, error) {
	if el, ok := c.bySQL[query]; ok {
		cs := el.Value.(*cachedStmt)
		if !cs.busy {
			c.lru.MoveToFront(el)
			return cs, cs.stmt, nil
		}
		s, err := c.prepare(ctx, query)
		return nil, s, err
	}
	s, err := c.prepare(ctx, query)
	if err != nil {
		return nil, nil, err
	}
	cs := &cachedStmt{query: query, stmt: s}
	c.bySQL[query] = c.lru.PushFront(cs)
	c.evict()
	return cs, s, nil
}

func (c *cachingConn) prepare(ctx context.Context, query string) (stmt, error) {
	s, err := c.PrepareContext(ctx, query)
	if err != nil {
		return nil, err
	}
	full, ok := s.(stmt)
	if !ok {
		_ = s.Close()
		return nil, errors.New("sqlitedialect: the driver's statement lacks an interface database/sql needs")
	}
	return full, nil
}

// evict closes the least recently used statements beyond the cache's
// size. A busy one is dropped from the cache and closed when its rows
// close.
func (c *cachingConn) evict() {
	for c.lru.Len() > c.size {
		el := c.lru.Back()
		cs := el.Value.(*cachedStmt)
		c.lru.Remove(el)
		delete(c.bySQL, cs.query)
		if !cs.busy {
			_ = cs.stmt.Close()
		}
	}
}

// ExecContext implements driver.ExecerContext.
func (c *cachingConn) ExecContext(ctx context.Context, query string, args []driver.NamedValue) (driver.Result, error) {
	cs, s, err := c.prepared(ctx, query)
	if err != nil {
		return nil, err
	}
	if cs == nil {
		defer func() { _ = s.Close() }()
	}
	c.formatTimes(args)
	return s.ExecContext(ctx, args)
}

// QueryContext implements driver.QueryerContext.
func (c *cachingConn) QueryContext(ctx context.Context, query string, args []driver.NamedValue) (driver.Rows, error) {
	cs, s, err := c.prepared(ctx, query)
	if err != nil {
		return nil, err
	}
	c.formatTimes(args)
	rows, err := s.QueryContext(ctx, args)
	if err != nil {
		if cs == nil {
			_ = s.Close()
		}
		return nil, err
	}
	full, ok := rows.(driverRows)
	if !ok {
		_ = rows.Close()
		return nil, errors.New("sqlitedialect: the driver's rows lack an interface database/sql needs")
	}
	if cs == nil {
		return &closingRows{rows: full, close: s.Close}, nil
	}
	cs.busy = true
	return &closingRows{rows: full, close: func() error {
		cs.busy = false
		if el, cached := c.bySQL[cs.query]; !cached || el.Value.(*cachedStmt) != cs {
			return cs.stmt.Close() // evicted while its rows were open
		}
		return nil
	}}, nil
}

// Close closes the cached statements, then the connection.
func (c *cachingConn) Close() error {
	for el := c.lru.Front(); el != nil; el = el.Next() {
		if cs := el.Value.(*cachedStmt); !cs.busy {
			_ = cs.stmt.Close()
		}
	}
	c.lru.Init()
	clear(c.bySQL)
	return c.conn.Close()
}

// driverRows is modernc.org/sqlite's result set, with the column-type
// interfaces that gorm's migrator reads through database/sql.
type driverRows interface {
	driver.Rows
	driver.RowsColumnTypeDatabaseTypeName
	driver.RowsColumnTypeLength
	driver.RowsColumnTypeNullable
	driver.RowsColumnTypePrecisionScale
	driver.RowsColumnTypeScanType
}

// closingRows runs close after the rows close: it frees a busy cached
// statement, or closes a statement prepared for this one query.
type closingRows struct {
	rows  driverRows
	close func() error
	done  bool
}

func (r *closingRows) Columns() []string              { return r.rows.Columns() }
func (r *closingRows) Next(dest []driver.Value) error { return r.rows.Next(dest) }

func (r *closingRows) Close() error {
	err := r.rows.Close()
	if !r.done {
		r.done = true
		if cerr := r.close(); err == nil {
			err = cerr
		}
	}
	return err
}

func (r *closingRows) ColumnTypeDatabaseTypeName(i int) string {
	return r.rows.ColumnTypeDatabaseTypeName(i)
}

func (r *closingRows) ColumnTypeLength(i int) (int64, bool) { return r.rows.ColumnTypeLength(i) }

func (r *closingRows) ColumnTypeNullable(i int) (nullable, ok bool) {
	return r.rows.ColumnTypeNullable(i)
}

func (r *closingRows) ColumnTypePrecisionScale(i int) (precision, scale int64, ok bool) {
	return r.rows.ColumnTypePrecisionScale(i)
}

func (r *closingRows) ColumnTypeScanType(i int) reflect.Type { return r.rows.ColumnTypeScanType(i) }
