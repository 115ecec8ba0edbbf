package gormstore

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"fmt"
	"net/url"
	"strings"
	"time"

	"github.com/go-sql-driver/mysql"
	gormmysql "gorm.io/driver/mysql"
	"gorm.io/gorm"
	"gorm.io/gorm/logger"

	"github.com/goxpdl/goxpdl/store"
	"github.com/goxpdl/goxpdl/store/sqlitedialect"
)

// MemoryPath is the path that makes OpenSQLite open a private in-memory
// database.
const MemoryPath = sqlitedialect.MemoryDSN

// sqliteIdleConns is how many idle connections OpenSQLite's pool keeps.
const sqliteIdleConns = 8

// sqliteBusyTimeout is how long a connection waits for another one's write
// lock before failing with "database is locked".
const sqliteBusyTimeout = 5 * time.Second

// gormConfig is the configuration of the databases opened here.
func gormConfig() *gorm.Config {
	return &gorm.Config{
		// Silent by default, so that tests and the CLI print only what
		// they mean to; a host that wants SQL logs sets its own logger
		// with db.Session(&gorm.Session{Logger: ...}).
		Logger: logger.Discard,
		// All time comes from the caller (the engine's clock). GORM calls
		// NowFunc on every INSERT whether or not a column wants it, so it
		// cannot panic; our models switch autoCreateTime/autoUpdateTime
		// off, and a zero time that did reach a row would fail the
		// round-trip tests of the conformance suite.
		NowFunc: func() time.Time { return time.Time{} },
	}
}

// OpenSQLite opens the SQLite database at path with the pure-Go driver
// modernc.org/sqlite (no cgo) through package sqlitedialect, whose
// connections keep their prepared statements, set up to be durable and
// safe for the engine:
//
//   - journal_mode=WAL: readers do not block the writer nor it them;
//   - synchronous=FULL: a committed transaction survives a power loss;
//   - foreign_keys=ON, busy_timeout=5000 ms;
//   - temp_store=MEMORY: statement and savepoint journals stay in memory
//     instead of a temporary file;
//   - transactions begin IMMEDIATE: they take the write lock at BEGIN, so
//     two transactions never both read and then fail to upgrade to
//     writing (SQLITE_BUSY); they queue on busy_timeout instead.
//
// Every connection of the pool gets these settings (they are in the DSN).
//
// path MemoryPath (":memory:") opens a private in-memory database, for
// tests and the CLI's default. Each new connection to ":memory:" would be
// a new, empty database, so the pool is limited to a single connection:
// all use is serialised, and code that holds a transaction open must not
// wait for another statement on the same *gorm.DB outside it (it would
// wait forever). WAL does not apply in memory.
//
// Close the database with db.DB() and Close when done.
func OpenSQLite(path string) (*gorm.DB, error) {
	return openSQLite(path, sqliteBusyTimeout, OpenOpts{})
}

// OpenOpts changes how OpenSQLiteOpts and OpenMySQLOpts open a database.
// The zero value opens it as OpenSQLite and OpenMySQL do.
type OpenOpts struct {
	// WrapConnectorFunc, when set, wraps the database/sql connector of
	// the driver (modernc.org/sqlite's through package sqlitedialect, or
	// go-sql-driver/mysql's) before the pool opens over it: the place
	// for instrumentation below GORM (tracing or counting statements) and
	// for goxpdl's fault-injection tests (internal/faultdb). The wrapper
	// must pass on the optional interfaces of the connections it makes
	// (driver.ConnBeginTx, ExecerContext, QueryerContext, SessionResetter,
	// Validator, ...), as database/sql uses them.
	WrapConnectorFunc func(driver.Connector) driver.Connector
}

// wrap applies WrapConnectorFunc to c.
func (o OpenOpts) wrap(c driver.Connector) driver.Connector {
	if o.WrapConnectorFunc == nil {
		return c
	}
	return o.WrapConnectorFunc(c)
}

// OpenSQLiteOpts is OpenSQLite with options.
func OpenSQLiteOpts(path string, opts OpenOpts) (*gorm.DB, error) {
	return openSQLite(path, sqliteBusyTimeout, opts)
}

// openSQLite is OpenSQLite with the busy timeout and options given.
func openSQLite(path string, busyTimeout time.Duration, opts OpenOpts) (*gorm.DB, error) {
	if path == "" {
		return nil, errors.New("open sqlite: empty path")
	}
	if strings.ContainsRune(path, '?') || strings.HasPrefix(path, "file:") {
		return nil, fmt.Errorf("open sqlite %q: want a plain file path or %q, not a URI", path, MemoryPath)
	}
	q := url.Values{}
	q.Add("_pragma", fmt.Sprintf("busy_timeout(%d)", busyTimeout.Milliseconds()))
	q.Add("_pragma", "journal_mode(WAL)")
	q.Add("_pragma", "synchronous(FULL)")
	q.Add("_pragma", "foreign_keys(ON)")
	q.Add("_pragma", "temp_store(MEMORY)")
	q.Set("_txlock", "immediate")

	// gorm.Open closes the pool itself when it fails.
	dsn := path + "?" + q.Encode()
	dialector := &sqlitedialect.Dialector{DSN: dsn}
	if opts.WrapConnectorFunc != nil {
		dialector.Conn = sql.OpenDB(opts.wrap(sqlitedialect.NewConnector(dsn, 0)))
	}
	db, err := gorm.Open(dialector, gormConfig())
	if err != nil {
		if pool, ok := dialector.Conn.(*sql.DB); ok {
			_ = pool.Close()
		}
		return nil, fmt.Errorf("open sqlite %q: %w", path, err)
	}
	sqlDB, err := db.DB()
	if err != nil {
		closeGorm(db)
		return nil, fmt.Errorf("open sqlite %q: %w", path, err)
	}
	if path == MemoryPath {
		sqlDB.SetMaxOpenConns(1)
		return db, nil
	}
	// Opening a connection re-reads the schema and runs the pragmas; keep
	// the readers' connections (database/sql keeps 2 by default).
	sqlDB.SetMaxIdleConns(sqliteIdleConns)
	// WAL is silently refused where the file system cannot support it;
	// say so rather than run with different guarantees.
	var mode string
	if err := sqlDB.QueryRowContext(context.Background(), "PRAGMA journal_mode").Scan(&mode); err != nil {
		closeGorm(db)
		return nil, fmt.Errorf("open sqlite %q: read journal mode: %w", path, err)
	}
	if !strings.EqualFold(mode, "wal") {
		closeGorm(db)
		return nil, fmt.Errorf("open sqlite %q: journal mode is %q, want wal", path, mode)
	}
	return db, nil
}

// OpenMySQL opens a MySQL 8 or MariaDB 10.6+ database with
// gorm.io/driver/mysql. dsn is a github.com/go-sql-driver/mysql DSN such
// as "user:pass@tcp(127.0.0.1:3306)/goxpdl", optionally after MySQLScheme
// (ParseMySQLDSN); its errors never hold the password. parseTime=true is
// always set (the store reads DATETIME columns as time.Time) and loc is
// always UTC (the store writes UTC; one location for every node sharing
// the database).
//
// Unless the DSN says otherwise, interpolateParams=true: the driver puts
// the arguments into the statement text itself (escaping them for the
// connection's character set) instead of a server-side PREPARE, EXECUTE
// and CLOSE per statement, which triples the round trips of the engine's
// many short statements. Unless the DSN says otherwise, also
// multiStatements=true: a store transaction then sends the writes that
// need no answer together with the next statement, in one round trip
// (pipeline.go); a host that runs its own SQL text on this pool should
// know that one text may then hold several statements (build SQL with
// arguments, never by pasting values in). The pool keeps up to mysqlIdleConns idle
// connections (database/sql's default of 2 makes a busy engine open and
// close connections all the time). Every session runs at READ COMMITTED,
// the level the store's transactions use (InTx), unless the DSN sets
// transaction_isolation or tx_isolation itself.
//
// Close the database with db.DB() and Close when done.
func OpenMySQL(dsn string) (*gorm.DB, error) {
	return OpenMySQLOpts(dsn, OpenOpts{})
}

// OpenMySQLOpts is OpenMySQL with options.
func OpenMySQLOpts(dsn string, opts OpenOpts) (*gorm.DB, error) {
	cfg, err := ParseMySQLDSN(dsn)
	if err != nil {
		return nil, err
	}
	cfg.ParseTime = true
	cfg.Loc = time.UTC
	if !strings.Contains(dsn, "interpolateParams=") {
		cfg.InterpolateParams = true
	}
	if !strings.Contains(dsn, "multiStatements=") {
		cfg.MultiStatements = true
	}
	db, err := openMySQLSessions(cfg, opts)
	if err != nil {
		return nil, fmt.Errorf("open mysql %s/%s: %w", cfg.Addr, cfg.DBName, err)
	}
	sqlDB, err := db.DB()
	if err != nil {
		closeGorm(db)
		return nil, fmt.Errorf("open mysql %s/%s: %w", cfg.Addr, cfg.DBName, err)
	}
	sqlDB.SetMaxIdleConns(mysqlIdleConns)
	return db, nil
}

// openMySQLSessions opens cfg with every session at READ COMMITTED, unless
// cfg chooses an isolation level itself: the store's transactions then
// need no SET TRANSACTION first (mysqlsession.go). MySQL 8 and MariaDB
// 11.1 call the session variable transaction_isolation, older MariaDB
// tx_isolation; the server refuses the name it does not know (error
// 1193) when the first connection is made, and the other name is tried.
func openMySQLSessions(cfg *mysql.Config, opts OpenOpts) (*gorm.DB, error) {
	for _, name := range isolationParams {
		if _, ok := cfg.Params[name]; ok {
			return openMySQLConfig(cfg, opts)
		}
	}
	var err error
	for _, name := range isolationParams {
		c := cfg.Clone()
		if c.Params == nil {
			c.Params = map[string]string{}
		}
		c.Params[name] = "'READ-COMMITTED'"
		var db *gorm.DB
		db, err = openMySQLConfig(c, opts)
		if err == nil {
			return db, nil
		}
		if me := (*mysql.MySQLError)(nil); !errors.As(err, &me) || me.Number != mysqlUnknownSystemVariable {
			return nil, err
		}
	}
	return nil, err
}

// openMySQLConfig opens cfg with GORM, through opts' connector wrapper
// when there is one.
func openMySQLConfig(cfg *mysql.Config, opts OpenOpts) (*gorm.DB, error) {
	if opts.WrapConnectorFunc == nil {
		return gorm.Open(gormmysql.New(gormmysql.Config{DSNConfig: cfg}), gormConfig())
	}
	connector, err := mysql.NewConnector(cfg)
	if err != nil {
		return nil, err
	}
	pool := sql.OpenDB(opts.wrap(connector))
	db, err := gorm.Open(gormmysql.New(gormmysql.Config{DSNConfig: cfg, Conn: pool}), gormConfig())
	if err != nil {
		_ = pool.Close()
		return nil, err
	}
	return db, nil
}

// mysqlUnknownSystemVariable is MySQL's error "Unknown system variable".
const mysqlUnknownSystemVariable = 1193

// mysqlIdleConns is how many idle connections OpenMySQL's pool keeps:
// enough for the engine's commit lanes, its poller and a host's requests.
const mysqlIdleConns = 32

// closeGorm closes the pool of a *gorm.DB that opened but cannot be used.
func closeGorm(db *gorm.DB) {
	if sqlDB, err := db.DB(); err == nil {
		_ = sqlDB.Close()
	}
}

// DatabaseFile returns the file of a SQLite database ("" for an in-memory
// one, and for MySQL): the file an engine process locks for itself.
func (s *Store) DatabaseFile(ctx context.Context) (string, error) {
	if s.dialect != store.DialectSQLite {
		return "", nil
	}
	var rows []struct {
		Seq  int
		Name string
		File string
	}
	if err := s.db.WithContext(ctx).Raw("PRAGMA database_list").Scan(&rows).Error; err != nil {
		return "", wrap(err, "database file")
	}
	for _, r := range rows {
		if r.Name == "main" {
			return r.File, nil
		}
	}
	return "", nil
}
