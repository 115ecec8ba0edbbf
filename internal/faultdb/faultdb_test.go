package faultdb_test

import (
	"database/sql/driver"
	"errors"
	"testing"

	"github.com/go-sql-driver/mysql"
	"github.com/stretchr/testify/require"
	"gorm.io/gorm"
	"modernc.org/sqlite"

	"github.com/goxpdl/goxpdl/internal/faultdb"
	"github.com/goxpdl/goxpdl/store"
	"github.com/goxpdl/goxpdl/store/dbtest"
	"github.com/goxpdl/goxpdl/store/gormstore"
)

// open opens a fresh database of the dialect named with an injector.
func open(t *testing.T, name string) (*gorm.DB, *faultdb.Injector, string) {
	t.Helper()
	in := faultdb.New()
	if name == "SQLite" {
		return dbtest.OpenSQLiteOpts(t, in.OpenOpts()), in, store.DialectSQLite
	}
	return dbtest.OpenMySQLOpts(t, in.OpenOpts()), in, store.DialectMySQL
}

// each runs fn on both databases, with a table t(v INT) to write to.
func each(t *testing.T, fn func(t *testing.T, db *gorm.DB, in *faultdb.Injector, dialect string)) {
	t.Helper()
	for _, name := range []string{"SQLite", "MySQL"} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			db, in, dialect := open(t, name)
			require.NoError(t, db.Exec("CREATE TABLE t (v INT NOT NULL)").Error)
			fn(t, db, in, dialect)
		})
	}
}

func rows(t *testing.T, db *gorm.DB) []int {
	t.Helper()
	var vs []int
	require.NoError(t, db.WithContext(faultdb.Exempt(t.Context())).Raw("SELECT v FROM t ORDER BY v").Scan(&vs).Error)
	return vs
}

func TestFailNthStatement(t *testing.T) {
	t.Parallel()
	each(t, func(t *testing.T, db *gorm.DB, in *faultdb.Injector, dialect string) {
		before := in.Stats().Statements
		in.FailNth(2, faultdb.MySQLLockWaitTimeout())
		require.NoError(t, db.Exec("INSERT INTO t (v) VALUES (1)").Error)
		err := db.Exec("INSERT INTO t (v) VALUES (2)").Error
		var me *mysql.MySQLError
		require.ErrorAs(t, err, &me)
		require.Equal(t, uint16(1205), me.Number)
		require.NoError(t, db.Exec("INSERT INTO t (v) VALUES (3)").Error)
		require.Equal(t, []int{1, 3}, rows(t, db), "the failed statement did not run")
		st := in.Stats()
		require.Equal(t, int64(3), st.Statements-before)
		require.Equal(t, int64(1), st.Injected[faultdb.Statement])
		require.False(t, in.Armed())
	})
}

// TestLockWaitTimeoutKeepsTransaction: a lock wait timeout fails the
// statement alone; the transaction's other writes commit.
func TestLockWaitTimeoutKeepsTransaction(t *testing.T) {
	t.Parallel()
	each(t, func(t *testing.T, db *gorm.DB, in *faultdb.Injector, dialect string) {
		err := db.Transaction(func(tx *gorm.DB) error {
			require.NoError(t, tx.Exec("INSERT INTO t (v) VALUES (1)").Error)
			in.FailNth(1, faultdb.MySQLLockWaitTimeout())
			require.Error(t, tx.Exec("INSERT INTO t (v) VALUES (2)").Error)
			return tx.Exec("INSERT INTO t (v) VALUES (3)").Error
		})
		require.NoError(t, err)
		require.Equal(t, []int{1, 3}, rows(t, db))
	})
}

// TestDeadlockRollsBackTransaction: a deadlock rolls the transaction back
// at once, as InnoDB does; a write after it, in what the client still
// takes for its transaction, runs on its own. (SQLite has no deadlock
// error: its BUSY fails the statement alone, as TestLockWaitTimeout...
// shows for MySQL's lock wait timeout.)
func TestDeadlockRollsBackTransaction(t *testing.T) {
	t.Parallel()
	each(t, func(t *testing.T, db *gorm.DB, in *faultdb.Injector, dialect string) {
		if dialect != store.DialectMySQL {
			err := db.Transaction(func(tx *gorm.DB) error {
				require.NoError(t, tx.Exec("INSERT INTO t (v) VALUES (1)").Error)
				in.FailNth(1, faultdb.SQLiteBusy())
				require.Error(t, tx.Exec("INSERT INTO t (v) VALUES (2)").Error)
				return tx.Exec("INSERT INTO t (v) VALUES (3)").Error
			})
			require.NoError(t, err)
			require.Equal(t, []int{1, 3}, rows(t, db))
			return
		}
		err := db.Transaction(func(tx *gorm.DB) error {
			require.NoError(t, tx.Exec("INSERT INTO t (v) VALUES (1)").Error)
			in.FailNth(1, faultdb.MySQLDeadlock())
			err := tx.Exec("INSERT INTO t (v) VALUES (2)").Error
			var me *mysql.MySQLError
			require.ErrorAs(t, err, &me)
			require.Equal(t, uint16(1213), me.Number)
			return tx.Exec("INSERT INTO t (v) VALUES (3)").Error // a careless caller goes on
		})
		require.NoError(t, err)
		require.Equal(t, []int{3}, rows(t, db), "the write before the deadlock was rolled back")
	})
}

func TestFailBegin(t *testing.T) {
	t.Parallel()
	each(t, func(t *testing.T, db *gorm.DB, in *faultdb.Injector, dialect string) {
		in.FailBegin(1, faultdb.SQLiteBusy())
		err := db.Transaction(func(tx *gorm.DB) error {
			return tx.Exec("INSERT INTO t (v) VALUES (1)").Error
		})
		var se *sqlite.Error
		require.ErrorAs(t, err, &se)
		require.Equal(t, 5, se.Code())
		require.Empty(t, rows(t, db))
		require.Equal(t, int64(1), in.Stats().Injected[faultdb.Begin])
	})
}

func TestFailCommitRollsBack(t *testing.T) {
	t.Parallel()
	each(t, func(t *testing.T, db *gorm.DB, in *faultdb.Injector, dialect string) {
		in.FailCommit(faultdb.Deadlock(dialect))
		err := db.Transaction(func(tx *gorm.DB) error {
			return tx.Exec("INSERT INTO t (v) VALUES (1)").Error
		})
		require.Error(t, err)
		require.Empty(t, rows(t, db))
		// The connection is still good.
		require.NoError(t, db.Exec("INSERT INTO t (v) VALUES (2)").Error)
		require.Equal(t, []int{2}, rows(t, db))
	})
}

// TestFailAfterCommit: the commit goes through, the caller gets a
// connection error, and the broken connection is not used again.
func TestFailAfterCommit(t *testing.T) {
	t.Parallel()
	each(t, func(t *testing.T, db *gorm.DB, in *faultdb.Injector, dialect string) {
		in.FailAfterCommit(faultdb.ConnectionLost(dialect))
		err := db.Transaction(func(tx *gorm.DB) error {
			return tx.Exec("INSERT INTO t (v) VALUES (1)").Error
		})
		require.Error(t, err)
		if dialect == store.DialectMySQL {
			require.ErrorIs(t, err, mysql.ErrInvalidConn)
		} else {
			require.ErrorIs(t, err, driver.ErrBadConn)
		}
		require.Equal(t, []int{1}, rows(t, db), "the commit went through")
		require.NoError(t, db.Exec("INSERT INTO t (v) VALUES (2)").Error, "a new connection serves the next statement")
		require.Equal(t, []int{1, 2}, rows(t, db))
	})
}

// TestBrokenConnectionRollsBack: a connection error in the middle of a
// transaction loses it: nothing of it commits.
func TestBrokenConnectionRollsBack(t *testing.T) {
	t.Parallel()
	each(t, func(t *testing.T, db *gorm.DB, in *faultdb.Injector, dialect string) {
		err := db.Transaction(func(tx *gorm.DB) error {
			require.NoError(t, tx.Exec("INSERT INTO t (v) VALUES (1)").Error)
			in.FailNth(1, faultdb.ConnectionLost(dialect))
			if err := tx.Exec("INSERT INTO t (v) VALUES (2)").Error; err == nil {
				return errors.New("no error")
			}
			return tx.Exec("INSERT INTO t (v) VALUES (3)").Error
		})
		require.Error(t, err)
		require.Empty(t, rows(t, db))
		require.NoError(t, db.Exec("INSERT INTO t (v) VALUES (4)").Error)
		require.Equal(t, []int{4}, rows(t, db))
	})
}

func TestOutageUntilClear(t *testing.T) {
	t.Parallel()
	each(t, func(t *testing.T, db *gorm.DB, in *faultdb.Injector, dialect string) {
		in.Outage(2, faultdb.ConnectionLost(dialect))
		require.NoError(t, db.Exec("INSERT INTO t (v) VALUES (1)").Error)
		for range 3 {
			require.Error(t, db.Exec("INSERT INTO t (v) VALUES (1)").Error)
			require.Error(t, db.Transaction(func(tx *gorm.DB) error { return nil }))
		}
		in.Clear()
		require.NoError(t, db.Exec("INSERT INTO t (v) VALUES (2)").Error)
		require.Equal(t, []int{1, 2}, rows(t, db))
		require.GreaterOrEqual(t, in.Stats().Total(), int64(6))
	})
}

func TestExemptIsNotCounted(t *testing.T) {
	t.Parallel()
	each(t, func(t *testing.T, db *gorm.DB, in *faultdb.Injector, dialect string) {
		in.FailNth(1, faultdb.Deadlock(dialect))
		before := in.Stats()
		ctx := faultdb.Exempt(t.Context())
		require.NoError(t, db.WithContext(ctx).Transaction(func(tx *gorm.DB) error {
			return tx.Exec("INSERT INTO t (v) VALUES (1)").Error
		}))
		after := in.Stats()
		require.Equal(t, before.Statements, after.Statements)
		require.Equal(t, before.Commits, after.Commits)
		require.True(t, in.Armed())
	})
}

// TestStoreOverFaults: the store works over a wrapped pool and reports a
// deadlock as store.ErrConflict, as over the plain one.
func TestStoreOverFaults(t *testing.T) {
	t.Parallel()
	each(t, func(t *testing.T, db *gorm.DB, in *faultdb.Injector, dialect string) {
		s, err := gormstore.New(db)
		require.NoError(t, err)
		require.NoError(t, s.Migrate(t.Context()))
		if dialect != store.DialectMySQL {
			return
		}
		in.FailNth(1, faultdb.MySQLDeadlock())
		_, err = s.LatestDefinition(t.Context(), "p")
		require.ErrorIs(t, err, store.ErrConflict)
	})
}

func TestOpen(t *testing.T) {
	t.Parallel()
	db, in, err := faultdb.Open(store.DialectSQLite, t.TempDir()+"/x.db")
	require.NoError(t, err)
	sqlDB, err := db.DB()
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, sqlDB.Close()) })
	in.FailNth(1, faultdb.SQLiteBusy())
	require.Error(t, db.Exec("SELECT 1").Error)
	_, _, err = faultdb.Open("postgres", "x")
	require.Error(t, err)
}

// TestQueryNarrowsFault: a fault with a Query counts only the statements
// (or the transactions) that ran such text.
func TestQueryNarrowsFault(t *testing.T) {
	t.Parallel()
	each(t, func(t *testing.T, db *gorm.DB, in *faultdb.Injector, dialect string) {
		require.NoError(t, db.Exec("CREATE TABLE u (v INT NOT NULL)").Error)
		in.Arm(faultdb.Fault{Kind: faultdb.Statement, At: 2, Err: faultdb.Deadlock(dialect), Query: "INTO u"})
		for v := 1; v <= 3; v++ {
			require.NoError(t, db.Exec("INSERT INTO t (v) VALUES (?)", v).Error)
		}
		require.NoError(t, db.Exec("INSERT INTO u (v) VALUES (1)").Error)
		require.Error(t, db.Exec("INSERT INTO u (v) VALUES (2)").Error, "the second statement on u")
		require.False(t, in.Armed())

		in.Arm(faultdb.Fault{Kind: faultdb.Commit, At: 1, Err: faultdb.Deadlock(dialect), Query: "INTO u"})
		require.NoError(t, db.Transaction(func(tx *gorm.DB) error {
			return tx.Exec("INSERT INTO t (v) VALUES (4)").Error
		}), "a transaction that does not write u commits")
		require.Error(t, db.Transaction(func(tx *gorm.DB) error {
			return tx.Exec("INSERT INTO u (v) VALUES (3)").Error
		}))
		require.Equal(t, []int{1, 2, 3, 4}, rows(t, db))
	})
}
