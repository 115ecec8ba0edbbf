package sqlitedialect_test

import (
	"context"
	"database/sql"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
	"gorm.io/gorm"
	"gorm.io/gorm/logger"

	"github.com/goxpdl/goxpdl/store/sqlitedialect"
)

// pragmas are the DSN parameters the tests open file databases with: WAL,
// as in production, and a busy timeout so that connections of one pool
// wait for each other's write locks.
const pragmas = "?_pragma=journal_mode(WAL)&_pragma=busy_timeout(5000)"

// tempPath returns the path of a database file in a new temporary
// directory.
func tempPath(t *testing.T) string {
	t.Helper()
	return filepath.Join(t.TempDir(), "test.db")
}

// openGorm opens a gorm.DB with d and closes its pool when the test ends.
func openGorm(t *testing.T, d gorm.Dialector, config *gorm.Config) *gorm.DB {
	t.Helper()
	if config == nil {
		config = &gorm.Config{}
	}
	config.Logger = logger.Discard
	db, err := gorm.Open(d, config)
	require.NoError(t, err)
	sqlDB, err := db.DB()
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, sqlDB.Close()) })
	return db
}

// openFile opens a gorm.DB over the database file at path.
func openFile(t *testing.T, path string) *gorm.DB {
	t.Helper()
	return openGorm(t, sqlitedialect.Open(path+pragmas), nil)
}

// openSQL opens a database/sql pool with OpenDB over a new database file
// and closes it when the test ends.
func openSQL(t *testing.T, cacheSize int) *sql.DB {
	t.Helper()
	db := sqlitedialect.OpenDB(tempPath(t)+pragmas, cacheSize)
	t.Cleanup(func() { require.NoError(t, db.Close()) })
	return db
}

// oneConn returns a single connection of db, closed when the test ends,
// so that every statement of a test runs on it (and its cache).
func oneConn(t *testing.T, db *sql.DB) *sql.Conn {
	t.Helper()
	conn, err := db.Conn(context.Background())
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, conn.Close()) })
	return conn
}

// querier runs queries: a *sql.DB, *sql.Conn or *sql.Tx.
type querier interface {
	ExecContext(ctx context.Context, query string, args ...any) (sql.Result, error)
	QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error)
}

// mustExec runs a statement and fails the test on error.
func mustExec(t *testing.T, q querier, query string, args ...any) sql.Result {
	t.Helper()
	res, err := q.ExecContext(context.Background(), query, args...)
	require.NoError(t, err, query)
	return res
}

// openRows runs a query whose rows the test reads and closes. Should the
// test fail first, they are closed when it ends, before its connection,
// whose Close would wait for them.
func openRows(t *testing.T, q querier, query string, args ...any) *sql.Rows {
	t.Helper()
	rows, err := q.QueryContext(context.Background(), query, args...)
	require.NoError(t, err, query)
	t.Cleanup(func() { _ = rows.Close() })
	return rows
}

// ints runs a query whose rows have one integer column and returns the
// values in order.
func ints(t *testing.T, q querier, query string, args ...any) []int64 {
	t.Helper()
	rows, err := q.QueryContext(context.Background(), query, args...)
	require.NoError(t, err, query)
	defer func() { require.NoError(t, rows.Close()) }()
	var out []int64
	for rows.Next() {
		var v int64
		require.NoError(t, rows.Scan(&v))
		out = append(out, v)
	}
	require.NoError(t, rows.Err())
	return out
}

// seq returns the integers from lo to hi, both included.
func seq(lo, hi int64) []int64 {
	out := make([]int64, 0, hi-lo+1)
	for v := lo; v <= hi; v++ {
		out = append(out, v)
	}
	return out
}
