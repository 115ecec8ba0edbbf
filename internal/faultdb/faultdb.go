// Package faultdb injects faults into goxpdl's database below GORM, for
// tests: a database/sql connector wrapper (gormstore.OpenOpts'
// WrapConnectorFunc) whose connections fail the Nth statement, a BEGIN,
// the COMMIT (the transaction rolls back), or break after a COMMIT that
// went through (the ambiguous commit), with the real drivers' error
// values: MySQL's deadlock (1213) and lock wait timeout (1205), SQLite's
// SQLITE_BUSY, and lost connections.
//
// The faults behave as the databases do where it matters to a caller:
//
//   - a deadlock on MySQL rolls the whole transaction back on the server
//     (InnoDB picks a victim); the wrapper sends the ROLLBACK, so code
//     that went on in the same transaction would write outside it, as on
//     a real server;
//   - a lock wait timeout (innodb_rollback_on_timeout off, the default)
//     and SQLITE_BUSY fail the statement alone;
//   - a connection error (driver.ErrBadConn, mysql.ErrInvalidConn, an
//     I/O error) breaks the connection: everything on it fails from then
//     on, database/sql discards it, and closing it rolls back what was
//     open, as the server does when a client goes away;
//   - a failed COMMIT rolls the transaction back; an after-commit fault
//     commits first, then breaks the connection and returns its error.
//
// A statement fault fires before the statement reaches the database. An
// outage (Fault.Outage, Injector.Outage) fails everything from its
// statement on until Clear. Fault.Query narrows a fault to the statements,
// or the transactions, that ran a given text. Operations under a context
// marked with Exempt are neither counted nor failed: a test's own look at
// the database.
//
// Open opens a database as gormstore does with an Injector in it; a test
// on the store's test databases passes Injector.OpenOpts to
// dbtest.OpenSQLiteOpts or OpenMySQLOpts. docs/recovery.md describes the
// suites that use it.
//
// The wrapper is written here rather than taken from a driver-middleware
// library: github.com/ngrok/sqlmw wraps drivers registered by name, not
// connectors, and passes Validator and SessionResetter straight through,
// so a connection could not be marked broken after an injected error;
// github.com/qustavo/sqlhooks has no hooks for BEGIN and COMMIT. What is
// needed is five methods of a connection and two of a transaction. API
// not stable: it serves goxpdl's own tests.
package faultdb

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"sync"

	"github.com/go-sql-driver/mysql"
	"gorm.io/gorm"
	"modernc.org/sqlite"

	"github.com/goxpdl/goxpdl/store"
	"github.com/goxpdl/goxpdl/store/gormstore"
)

// Kind is where a fault strikes.
type Kind string

// The kinds of fault.
const (
	// Statement: an Exec, Query or Prepare fails before it reaches the
	// database.
	Statement Kind = "statement"
	// Begin: BEGIN fails; no transaction starts.
	Begin Kind = "begin"
	// Commit: COMMIT fails and the transaction is rolled back.
	Commit Kind = "commit"
	// AfterCommit: COMMIT goes through, then the connection breaks and
	// the caller gets the error: it cannot tell whether it committed.
	AfterCommit Kind = "after-commit"
)

// Kinds are the kinds of fault, in a fixed order.
var Kinds = []Kind{Statement, Begin, Commit, AfterCommit}

// counted is the counter an operation of a kind advances: commits and
// after-commit faults count COMMITs alike.
func (k Kind) counted() Kind {
	if k == AfterCommit {
		return Commit
	}
	return k
}

// Fault is a fault armed in an Injector.
type Fault struct {
	// Kind is where it strikes.
	Kind Kind
	// At is which operation of its kind, counted from 1 since the fault
	// was armed, it strikes (operations under Exempt do not count).
	At int64
	// Err is the error the operation returns.
	Err error
	// Sticky makes every operation of its kind from At on fail, until
	// Clear: an outage rather than a blip.
	Sticky bool
	// Outage makes the database go away when the fault strikes: from
	// then on every statement, BEGIN and COMMIT fails with Err, until
	// Clear.
	Outage bool
	// Query, when set, narrows the fault to the statements whose text
	// contains it (Statement), or to the transactions that ran such a
	// statement (Begin never matches; Commit, AfterCommit): only those
	// count towards At.
	Query string
}

// Stats counts what an Injector saw and did.
type Stats struct {
	// Statements, Begins and Commits count the operations that went
	// through the wrapper (not those under Exempt), failed or not.
	Statements, Begins, Commits int64
	// Injected counts the faults that struck, by kind.
	Injected map[Kind]int64
}

// Total is the number of faults that struck.
func (s Stats) Total() int64 {
	var n int64
	for _, v := range s.Injected {
		n += v
	}
	return n
}

// Injector decides which operations fail. It is safe for concurrent use;
// the zero value is not: use New.
type Injector struct {
	mu     sync.Mutex
	counts map[Kind]int64
	faults []armed
	hits   map[Kind]int64
	down   error // an outage's error, until Clear
}

// armed is a Fault with the operations it has seen since it was armed.
type armed struct {
	Fault
	seen int64
}

// New returns an Injector with no fault armed.
func New() *Injector {
	return &Injector{counts: map[Kind]int64{}, hits: map[Kind]int64{}}
}

// Arm arms f.
func (in *Injector) Arm(f Fault) {
	if f.At < 1 {
		f.At = 1
	}
	in.mu.Lock()
	defer in.mu.Unlock()
	in.faults = append(in.faults, armed{Fault: f})
}

// FailNth makes the nth statement from now fail with err.
func (in *Injector) FailNth(n int64, err error) {
	in.Arm(Fault{Kind: Statement, At: n, Err: err})
}

// FailBegin makes the nth BEGIN from now fail with err.
func (in *Injector) FailBegin(n int64, err error) { in.Arm(Fault{Kind: Begin, At: n, Err: err}) }

// FailCommit makes the next COMMIT fail with err, its transaction rolled
// back.
func (in *Injector) FailCommit(err error) { in.Arm(Fault{Kind: Commit, At: 1, Err: err}) }

// FailAfterCommit makes the next COMMIT go through and then break its
// connection with err.
func (in *Injector) FailAfterCommit(err error) { in.Arm(Fault{Kind: AfterCommit, At: 1, Err: err}) }

// Outage makes every statement, BEGIN and COMMIT fail with err from the
// nth statement from now on, until Clear.
func (in *Injector) Outage(n int64, err error) {
	in.Arm(Fault{Kind: Statement, At: n, Err: err, Outage: true})
}

// Clear disarms every fault and ends an outage.
func (in *Injector) Clear() {
	in.mu.Lock()
	defer in.mu.Unlock()
	in.faults, in.down = nil, nil
}

// Armed reports whether a fault is armed or an outage goes on.
func (in *Injector) Armed() bool {
	in.mu.Lock()
	defer in.mu.Unlock()
	return len(in.faults) > 0 || in.down != nil
}

// Down reports whether an outage goes on (Fault.Outage struck and no
// Clear since).
func (in *Injector) Down() bool {
	in.mu.Lock()
	defer in.mu.Unlock()
	return in.down != nil
}

// Stats returns the counts so far.
func (in *Injector) Stats() Stats {
	in.mu.Lock()
	defer in.mu.Unlock()
	s := Stats{Statements: in.counts[Statement], Begins: in.counts[Begin], Commits: in.counts[Commit], Injected: map[Kind]int64{}}
	for k, v := range in.hits {
		s.Injected[k] = v
	}
	return s
}

// strike counts an operation of kind k (Statement, Begin or Commit) and
// returns the fault that strikes it, if any. A Commit may be struck by a
// Commit or an AfterCommit fault. ran says whether the operation ran a
// statement whose text contains a fault's Query (the statement itself,
// or one of a committing transaction's).
func (in *Injector) strike(ctx context.Context, k Kind, ran func(query string) bool) *Fault {
	if exempt(ctx) {
		return nil
	}
	in.mu.Lock()
	defer in.mu.Unlock()
	in.counts[k]++
	if in.down != nil {
		in.hits[k]++
		return &Fault{Kind: k, Err: in.down}
	}
	var struck *Fault
	for i := 0; i < len(in.faults); i++ {
		f := &in.faults[i]
		if f.Kind.counted() != k || f.Query != "" && (ran == nil || !ran(f.Query)) {
			continue
		}
		f.seen++
		if struck != nil || f.seen < f.At {
			continue
		}
		fault := f.Fault
		struck = &fault
		in.hits[f.Kind]++
		if f.Outage {
			in.down = f.Err
		}
		if !f.Sticky {
			in.faults = append(in.faults[:i], in.faults[i+1:]...)
			i--
		}
	}
	return struck
}

// exemptKey marks a context whose operations the injector leaves alone.
type exemptKey struct{}

// Exempt returns ctx marked so that the operations made under it are
// neither counted nor failed: a test's own reads of the database.
func Exempt(ctx context.Context) context.Context {
	return context.WithValue(ctx, exemptKey{}, true)
}

func exempt(ctx context.Context) bool {
	v, _ := ctx.Value(exemptKey{}).(bool)
	return v
}

// OpenOpts returns gormstore options whose connector wrapper puts the
// injector's faults into every connection.
func (in *Injector) OpenOpts() gormstore.OpenOpts {
	return gormstore.OpenOpts{WrapConnectorFunc: func(c driver.Connector) driver.Connector { return Wrap(c, in) }}
}

// Open opens a database as gormstore does (OpenSQLite for
// store.DialectSQLite with a file path, OpenMySQL for store.DialectMySQL
// with a DSN), with a new Injector in its connections.
func Open(dialect, dsn string) (*gorm.DB, *Injector, error) {
	in := New()
	var db *gorm.DB
	var err error
	switch dialect {
	case store.DialectSQLite:
		db, err = gormstore.OpenSQLiteOpts(dsn, in.OpenOpts())
	case store.DialectMySQL:
		db, err = gormstore.OpenMySQLOpts(dsn, in.OpenOpts())
	default:
		return nil, nil, fmt.Errorf("faultdb: unknown dialect %q (want %q or %q)", dialect, store.DialectSQLite, store.DialectMySQL)
	}
	if err != nil {
		return nil, nil, err
	}
	return db, in, nil
}

// The errors of the databases, as their drivers return them.

// MySQLDeadlock is MySQL's ER_LOCK_DEADLOCK (1213): InnoDB chose this
// transaction as a deadlock's victim and rolled it back.
func MySQLDeadlock() error {
	return &mysql.MySQLError{Number: 1213, SQLState: [5]byte{'4', '0', '0', '0', '1'},
		Message: "Deadlock found when trying to get lock; try restarting transaction"}
}

// MySQLLockWaitTimeout is MySQL's ER_LOCK_WAIT_TIMEOUT (1205): the
// statement waited innodb_lock_wait_timeout for a row lock and failed; the
// transaction goes on.
func MySQLLockWaitTimeout() error {
	return &mysql.MySQLError{Number: 1205, SQLState: [5]byte{'H', 'Y', '0', '0', '0'},
		Message: "Lock wait timeout exceeded; try restarting transaction"}
}

// sqliteBusy provokes a genuine SQLITE_BUSY from modernc.org/sqlite once:
// its error type cannot be built outside the driver.
var sqliteBusy = sync.OnceValues(func() (error, error) {
	dir, err := os.MkdirTemp("", "faultdb")
	if err != nil {
		return nil, err
	}
	defer func() { _ = os.RemoveAll(dir) }()
	dsn := filepath.Join(dir, "busy.db") + "?_pragma=busy_timeout(0)&_txlock=immediate"
	ctx := context.Background()
	holder, err := sql.Open("sqlite", dsn)
	if err != nil {
		return nil, err
	}
	defer func() { _ = holder.Close() }()
	other, err := sql.Open("sqlite", dsn)
	if err != nil {
		return nil, err
	}
	defer func() { _ = other.Close() }()
	tx, err := holder.BeginTx(ctx, nil)
	if err != nil {
		return nil, err
	}
	defer func() { _ = tx.Rollback() }()
	tx2, busy := other.BeginTx(ctx, nil)
	if busy == nil {
		_ = tx2.Rollback()
		return nil, errors.New("faultdb: a second writer was not refused")
	}
	var e *sqlite.Error
	if !errors.As(busy, &e) || e.Code()&0xff != sqliteBusyCode {
		return nil, fmt.Errorf("faultdb: want SQLITE_BUSY, got %w", busy)
	}
	return e, nil
})

// sqliteBusyCode is SQLITE_BUSY.
const sqliteBusyCode = 5

// SQLiteBusy is modernc.org/sqlite's SQLITE_BUSY (5), "database is
// locked": another connection held the write lock for longer than
// busy_timeout. It panics if the driver does not produce one, which only
// a broken installation would do.
func SQLiteBusy() error {
	err, bad := sqliteBusy()
	if bad != nil {
		panic(bad)
	}
	return err
}

// ConnectionLost is the error a broken connection gives on dialect:
// go-sql-driver/mysql's ErrInvalidConn (it does not return
// driver.ErrBadConn once a command may have reached the server), and
// driver.ErrBadConn on SQLite.
func ConnectionLost(dialect string) error {
	if dialect == store.DialectMySQL {
		return mysql.ErrInvalidConn
	}
	return driver.ErrBadConn
}

// Deadlock returns the error of a transaction aborted by a concurrent one
// on dialect: MySQLDeadlock, or SQLiteBusy (which fails the statement
// alone: SQLite has no deadlock that aborts a transaction).
func Deadlock(dialect string) error {
	if dialect == store.DialectMySQL {
		return MySQLDeadlock()
	}
	return SQLiteBusy()
}

// breaks reports whether err is a connection error, which leaves the
// connection unusable.
func breaks(err error) bool {
	var ne net.Error
	return errors.Is(err, driver.ErrBadConn) || errors.Is(err, mysql.ErrInvalidConn) ||
		errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) || errors.As(err, &ne)
}

// abortsTx reports whether err makes the database roll the transaction
// back by itself: MySQL's deadlock.
func abortsTx(err error) bool {
	var me *mysql.MySQLError
	return errors.As(err, &me) && me.Number == 1213
}
