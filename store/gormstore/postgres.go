package gormstore

import (
	"context"
	"crypto/md5" //nolint:gosec // an index key for equality lookups, not a digest anyone relies on for security
	"database/sql"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net"
	"net/url"
	"strconv"
	"strings"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/stdlib"
	gormpostgres "gorm.io/driver/postgres"
	"gorm.io/gorm"

	"github.com/goxpdl/goxpdl/store"
)

// PostgreSQL (13 and later) through gorm.io/driver/postgres over pgx v5.
//
// What differs from MySQL, and how the store meets it:
//
//   - Isolation: every transaction the store begins runs at READ
//     COMMITTED, PostgreSQL's own default and the level the store uses on
//     MySQL; it is asked for in the BEGIN itself (no extra round trip), so
//     that a server or database whose default_transaction_isolation is
//     higher does not change the engine's behaviour. Every write of the
//     engine is guarded by a row version or a state condition; under READ
//     COMMITTED an UPDATE that waited for a concurrent one re-reads the
//     row and finds the version moved (ErrConflict), where REPEATABLE READ
//     or SERIALIZABLE would fail it with a serialization error (40001),
//     also ErrConflict, but after more work thrown away.
//   - A failed statement aborts the whole transaction: unlike MySQL and
//     SQLite, nothing runs in it until ROLLBACK (or ROLLBACK TO SAVEPOINT).
//     The one store method whose failure a caller may survive inside a
//     transaction, InsertEvents with an EventID already stored, inserts
//     with ON CONFLICT DO NOTHING and undoes its own rows instead of
//     failing (event.go).
//   - Ids: every surrogate id is the engine's (package idgen), a plain
//     bigint primary key; no sequence, and no id is read back. (The
//     RETURNING of pgInsertEvents returns the caller's ids, to find the
//     rows a conflict left out.)
//   - Identifiers are quoted with double quotes, placeholders are $1, $2,
//     ...; the store's hand-written statements are written once, MySQL
//     style, and rewritten (pgText).
//   - Variables' values are bytea; a B-tree entry holds at most about
//     2.7 kB, so the index for correlation by value is on (name,
//     md5(value)), not on the value (pgVariablesIndex).
//   - Sorting text: the rows the store orders by a text column (nodes,
//     counts) sort with COLLATE "C", byte order, as in SQLite and under
//     MySQL's utf8mb4_bin. Equality is byte-wise under every
//     deterministic collation, the default.

// The schemes of a PostgreSQL database name.
const (
	// PostgresScheme prefixes a PostgreSQL URL, as pgx reads it.
	PostgresScheme = "postgres://"
	// PostgresqlScheme is PostgresScheme's other spelling.
	PostgresqlScheme = "postgresql://"
)

// postgresIdleConns is how many idle connections OpenPostgres's pool
// keeps, as mysqlIdleConns.
const postgresIdleConns = 32

// isPostgresDSN reports whether dsn names a PostgreSQL database.
func isPostgresDSN(dsn string) bool {
	return strings.HasPrefix(dsn, PostgresScheme) || strings.HasPrefix(dsn, PostgresqlScheme)
}

// OpenPostgres opens a PostgreSQL database (13 or later) with
// gorm.io/driver/postgres over pgx v5. dsn is a URL,
// postgres://USER:PASS@HOST:PORT/DB?PARAMS (or postgresql://), with the
// parameters pgx reads (sslmode, connect_timeout, application_name, any
// run-time setting); its errors never hold the password. Every session
// runs with TimeZone UTC (the store writes UTC; one zone for every node),
// unless the DSN sets timezone itself. Transactions run at READ
// COMMITTED whatever the server's default (see InTx).
//
// The pool keeps up to 32 idle connections, as OpenMySQL's does. pgx
// prepares each statement text once per connection and keeps it.
//
// Close the database with db.DB() and Close when done.
func OpenPostgres(dsn string) (*gorm.DB, error) {
	return OpenPostgresOpts(dsn, OpenOpts{})
}

// OpenPostgresOpts is OpenPostgres with options.
func OpenPostgresOpts(dsn string, opts OpenOpts) (*gorm.DB, error) {
	cfg, err := ParsePostgresDSN(dsn)
	if err != nil {
		return nil, err
	}
	where := fmt.Sprintf("%s:%d/%s", cfg.Host, cfg.Port, cfg.Database)
	if _, ok := cfg.RuntimeParams["timezone"]; !ok {
		if _, ok := cfg.RuntimeParams["TimeZone"]; !ok {
			cfg.RuntimeParams["timezone"] = "UTC"
		}
	}
	pool := sql.OpenDB(opts.wrap(stdlib.GetConnector(*cfg)))
	db, err := gorm.Open(gormpostgres.New(gormpostgres.Config{Conn: pool}), gormConfig())
	if err != nil {
		_ = pool.Close()
		return nil, fmt.Errorf("open postgres %s: %w", where, err)
	}
	// gorm.Open over a pool of ours does not connect: ping, so that a
	// wrong address or password is the caller's error now.
	if err := pool.PingContext(context.Background()); err != nil {
		_ = pool.Close()
		return nil, fmt.Errorf("open postgres %s: %w", where, err)
	}
	pool.SetMaxIdleConns(postgresIdleConns)
	return db, nil
}

// ParsePostgresDSN reads a PostgreSQL URL (PostgresScheme or
// PostgresqlScheme) into pgx's configuration. An error matches ErrBadDSN
// and never holds the password.
func ParsePostgresDSN(dsn string) (*pgx.ConnConfig, error) {
	if !isPostgresDSN(dsn) {
		return nil, &DSNError{DSN: RedactDSN(dsn), Msg: "not a PostgreSQL URL (want " + PostgresScheme + "...)"}
	}
	cfg, err := pgx.ParseConfig(dsn)
	if err != nil {
		// pgx's error may quote the URL, password and all: name only
		// the part net/url could not read, if it was that.
		bad := &DSNError{DSN: RedactDSN(dsn), Msg: "not a PostgreSQL URL"}
		var ue *url.Error
		if _, uerr := url.Parse(dsn); errors.As(uerr, &ue) {
			bad.Err = ue.Err
		}
		return nil, bad
	}
	return cfg, nil
}

// pgText rewrites a statement written in the store's MySQL style for
// PostgreSQL: `name` becomes "name" and, when numbered is true, each ?
// becomes $1, $2, ... in order (for statements sent to the connection
// underneath gorm; gorm numbers the ? of the statements it runs itself).
// Text inside '...' literals is left alone. Other dialects get q back.
func (s *Store) pgText(q string, numbered bool) string {
	if s.dialect != store.DialectPostgres {
		return q
	}
	var b strings.Builder
	b.Grow(len(q) + len(q)/8)
	n, quoted := 0, false
	for i := range len(q) {
		c := q[i]
		switch {
		case c == '\'':
			quoted = !quoted
			b.WriteByte(c)
		case quoted:
			b.WriteByte(c)
		case c == '`':
			b.WriteByte('"')
		case c == '?' && numbered:
			n++
			b.WriteByte('$')
			b.WriteString(strconv.Itoa(n))
		default:
			b.WriteByte(c)
		}
	}
	return b.String()
}

// native is q as the connection underneath gorm takes it (pgText with
// numbered placeholders).
func (s *Store) native(q string) string { return s.pgText(q, true) }

// pgCast is the cast a placeholder needs on PostgreSQL where nothing
// around it tells the server its type (a CASE's results, an INSERT …
// SELECT's select list): "::" and the type. Elsewhere "".
func (s *Store) pgCast(typ string) string {
	if s.dialect != store.DialectPostgres {
		return ""
	}
	return "::" + typ
}

// collateC is the COLLATE clause that sorts text by its bytes on
// PostgreSQL, whose database may have a linguistic collation; "" on the
// others, whose columns sort so already.
func (s *Store) collateC() string {
	if s.dialect != store.DialectPostgres {
		return ""
	}
	return ` COLLATE "C"`
}

// rowLocks reports whether the database locks rows (SELECT … FOR UPDATE
// waits for their writer), as MySQL and PostgreSQL do; SQLite locks the
// whole database instead.
func (s *Store) rowLocks() bool { return s.dialect != store.DialectSQLite }

// pgVariablesIndex is the index of correlation by a variable's value on
// PostgreSQL: on (name, md5(value)), since a B-tree entry of the whole
// value would refuse values over about 2.7 kB.
const pgVariablesIndex = "CREATE INDEX IF NOT EXISTS goxpdl_variables_value ON " + tableVariables + " (name, md5(value))"

// pgVariableModel is variableModel as PostgreSQL migrates it: without the
// index on (name, value), which pgVariablesIndex replaces.
type pgVariableModel struct {
	ProcessInstanceID int64  `gorm:"column:process_instance_id;primaryKey;autoIncrement:false"`
	Name              string `gorm:"column:name;primaryKey;size:255"`
	Type              string `gorm:"column:type;size:64;not null"`
	Value             []byte `gorm:"column:value"`
}

func (pgVariableModel) TableName() string { return tableVariables }

// md5Hex is what PostgreSQL's md5(bytea) returns for b.
func md5Hex(b []byte) string {
	sum := md5.Sum(b) //nolint:gosec // see the import
	return hex.EncodeToString(sum[:])
}

// PostgreSQL's SQLSTATE codes translated at the boundary.
const (
	pgUniqueViolation      = "23505"
	pgSerializationFailure = "40001"
	pgDeadlockDetected     = "40P01"
	pgLockNotAvailable     = "55P03" // lock_timeout ran out (MySQL's 1205)
	pgAdminShutdown        = "57P01" // the server is going down
	pgCrashShutdown        = "57P02"
	pgCannotConnectNow     = "57P03" // the server is starting or recovering
)

// pgCode returns the SQLSTATE of a PostgreSQL error in err's chain, or "".
func pgCode(err error) string {
	var pe *pgconn.PgError
	if errors.As(err, &pe) {
		return pe.Code
	}
	return ""
}

// pgTransient reports a PostgreSQL error that gave up on the transaction
// or its connection rather than on what the statement asked for.
func pgTransient(err error) bool {
	switch code := pgCode(err); {
	case code == pgSerializationFailure, code == pgDeadlockDetected, code == pgLockNotAvailable,
		code == pgAdminShutdown, code == pgCrashShutdown, code == pgCannotConnectNow:
		return true
	case strings.HasPrefix(code, "08"): // connection exception
		return true
	case code != "":
		return false
	}
	// No answer from the server: the connection broke before or during
	// the statement. pgconn's own errors (the only ones that say whether
	// the statement was sent) wrap the network's; an error of the host's
	// code that merely reads "unexpected EOF" is not one of them.
	if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return false
	}
	var ce *pgconn.ConnectError
	if errors.As(err, &ce) {
		return true
	}
	var sent interface{ SafeToRetry() bool }
	if !errors.As(err, &sent) {
		return false
	}
	var ne net.Error
	return sent.SafeToRetry() || errors.As(err, &ne) || errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF)
}

// pgTxOptions are the options of a transaction the store begins on
// PostgreSQL: READ COMMITTED, sent with BEGIN.
var pgTxOptions = []*sql.TxOptions{{Isolation: sql.LevelReadCommitted}}

// postgresServerVersion is the query of ServerVersion on PostgreSQL.
const postgresServerVersion = "SHOW server_version"

// errPgDuplicateEvent is the ErrDuplicate of pgInsertEvents.
var errPgDuplicateEvent = fmt.Errorf("an event's EventID or id is stored already, or twice in the batch: %w", store.ErrDuplicate)

// pgInsertEvents returns InsertEvents' insert of one chunk on PostgreSQL,
// where a failed statement would leave the caller's transaction unusable
// (postgres.go): INSERT … ON CONFLICT DO NOTHING RETURNING id, and, when
// a row was left out (a duplicate EventID or id, stored before or twice
// in the batch), a DELETE of the rows it did insert and ErrDuplicate,
// which leaves the transaction as it was. A batch of several chunks runs
// in a savepoint (insertChunks), rolled back on that error.
func (s *Store) pgInsertEvents(ctx context.Context) func(db *gorm.DB, query string, args []any, n int) error {
	return func(db *gorm.DB, query string, args []any, n int) error {
		rows, err := db.Statement.ConnPool.QueryContext(ctx, s.native(query+" ON CONFLICT DO NOTHING RETURNING `id`"), args...)
		if err != nil {
			return err
		}
		var ids []int64
		for rows.Next() {
			var id int64
			if err := rows.Scan(&id); err != nil {
				return closeWith(rows, err)
			}
			ids = append(ids, id)
		}
		if err := closeWith(rows, rows.Err()); err != nil {
			return err
		}
		if len(ids) == n {
			return nil
		}
		if len(ids) > 0 {
			if _, err := db.Statement.ConnPool.ExecContext(ctx, s.native("DELETE FROM `"+tableEvents+"` WHERE `id` = ANY(?)"), ids); err != nil {
				return err
			}
		}
		return errPgDuplicateEvent
	}
}
