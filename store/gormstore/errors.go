package gormstore

import (
	"database/sql/driver"
	"errors"
	"fmt"
	"strings"

	"github.com/go-sql-driver/mysql"
	"gorm.io/gorm"

	"github.com/goxpdl/goxpdl/store"
)

// Error numbers and result codes translated at the boundary.
const (
	mysqlErrDupEntry = 1062 // ER_DUP_ENTRY
	mysqlErrDeadlock = 1213 // ER_LOCK_DEADLOCK: InnoDB rolled the transaction back

	sqliteConstraintPrimaryKey = 1555 // SQLITE_CONSTRAINT_PRIMARYKEY
	sqliteConstraintUnique     = 2067 // SQLITE_CONSTRAINT_UNIQUE
	sqliteBusySnapshot         = 517  // SQLITE_BUSY_SNAPSHOT: a WAL read snapshot went stale before the write
)

// translate maps database errors to the store's sentinels, keeping the
// original in the chain: the result matches both errors.Is(err,
// store.ErrDuplicate) and errors.As(err, &*mysql.MySQLError) (or
// *pgconn.PgError). Errors it
// does not know pass through unchanged.
func translate(err error) error {
	if err == nil {
		return nil
	}
	switch {
	case errors.Is(err, gorm.ErrRecordNotFound):
		return store.ErrNotFound
	case errors.Is(err, gorm.ErrDuplicatedKey): // a host *gorm.DB with TranslateError
		return fmt.Errorf("%w: %w", store.ErrDuplicate, err)
	}

	var myErr *mysql.MySQLError
	if errors.As(err, &myErr) {
		switch myErr.Number {
		case mysqlErrDupEntry:
			return fmt.Errorf("%w: %w", store.ErrDuplicate, err)
		case mysqlErrDeadlock:
			return fmt.Errorf("%w: %w", store.ErrConflict, err)
		}
		return err
	}

	switch pgCode(err) {
	case pgUniqueViolation:
		return fmt.Errorf("%w: %w", store.ErrDuplicate, err)
	case pgSerializationFailure, pgDeadlockDetected:
		return fmt.Errorf("%w: %w", store.ErrConflict, err)
	case "":
	default:
		return err
	}

	// SQLite drivers over modernc.org/sqlite (modernc's own,
	// glebarez/go-sqlite) report extended result codes through Code().
	var coded interface{ Code() int }
	if errors.As(err, &coded) {
		switch coded.Code() {
		case sqliteConstraintUnique, sqliteConstraintPrimaryKey:
			return fmt.Errorf("%w: %w", store.ErrDuplicate, err)
		case sqliteBusySnapshot:
			return fmt.Errorf("%w: %w", store.ErrConflict, err)
		}
		return err
	}
	// Any other SQLite driver a host may bring: its message is stable.
	if msg := err.Error(); strings.Contains(msg, "UNIQUE constraint failed") {
		return fmt.Errorf("%w: %w", store.ErrDuplicate, err)
	}
	return err
}

// Error numbers of a transaction the database gave up on.
const (
	mysqlErrLockWaitTimeout = 1205 // ER_LOCK_WAIT_TIMEOUT
	sqliteBusy              = 5    // SQLITE_BUSY and its extended codes
)

// Transient reports whether err says that the database gave up on the
// transaction or its connection, rather than on what a statement asked
// for: a deadlock (MySQL 1213, which rolls the whole transaction back;
// PostgreSQL 40P01), a serialization failure (PostgreSQL 40001), a lock
// wait timeout (MySQL 1205, PostgreSQL 55P03), SQLite's BUSY, a lost
// connection (driver.ErrBadConn, mysql.ErrInvalidConn, PostgreSQL's
// class 08, a server shutting down or starting, pgx's closed connection). Nothing is wrong with the
// work itself: the transaction is to be rolled back and tried again. The
// engine does so for a step that met one, even through an application's
// own statement in the step's transaction (Call.Tx), rather than failing
// the activity; on MySQL, after a deadlock, the rest of that transaction
// would no longer be in a transaction at all.
func Transient(err error) bool {
	if err == nil {
		return false
	}
	if errors.Is(err, driver.ErrBadConn) || errors.Is(err, mysql.ErrInvalidConn) {
		return true
	}
	var myErr *mysql.MySQLError
	if errors.As(err, &myErr) {
		return myErr.Number == mysqlErrDeadlock || myErr.Number == mysqlErrLockWaitTimeout
	}
	var coded interface{ Code() int }
	if errors.As(err, &coded) {
		return coded.Code()&0xff == sqliteBusy
	}
	return pgTransient(err)
}

// wrap adds the operation to a translated error.
func wrap(err error, format string, args ...any) error {
	if err == nil {
		return nil
	}
	return fmt.Errorf(format+": %w", append(args, translate(err))...)
}
