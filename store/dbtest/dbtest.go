// Package dbtest opens fresh databases for tests of packages that run on
// goxpdl's store: a SQLite file (WAL, as in production) always, and a
// MySQL/MariaDB database when GOXPDL_MYSQL_DSN names a server.
package dbtest

import (
	"context"
	"crypto/rand"
	"database/sql"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	"gorm.io/gorm"

	"github.com/goxpdl/goxpdl/store/gormstore"
)

// MySQLDSNEnv names the environment variable with the DSN of a MySQL or
// MariaDB server, in either form gormstore.ParseMySQLDSN reads: the
// driver's root:@tcp(127.0.0.1:3306)/test?parseTime=true, or the same after
// mysql:// as goxpdl's --db writes it.
const MySQLDSNEnv = "GOXPDL_MYSQL_DSN"

// Dialect opens a fresh, empty database for one test.
type Dialect struct {
	// Name is "SQLite" or "MySQL".
	Name string
	// Open returns the database; it is closed (and, for MySQL, dropped)
	// when the test ends. The MySQL dialect skips the test, with the
	// reason, when GOXPDL_MYSQL_DSN is not set.
	Open func(tb testing.TB) *gorm.DB
}

// Dialects are the databases every store-backed test runs on.
var Dialects = []Dialect{
	{"SQLite", OpenSQLite},
	{"MySQL", OpenMySQL},
}

// Each runs fn as a subtest per dialect, with a fresh database.
func Each(t *testing.T, fn func(t *testing.T, db *gorm.DB)) {
	t.Helper()
	for _, d := range Dialects {
		t.Run(d.Name, func(t *testing.T) {
			fn(t, d.Open(t))
		})
	}
}

// OpenSQLite opens a new SQLite database file in a temporary directory.
func OpenSQLite(tb testing.TB) *gorm.DB {
	tb.Helper()
	return OpenSQLiteOpts(tb, gormstore.OpenOpts{})
}

// OpenSQLiteOpts is OpenSQLite with gormstore's options (a connector
// wrapper).
func OpenSQLiteOpts(tb testing.TB, opts gormstore.OpenOpts) *gorm.DB {
	tb.Helper()
	db, err := gormstore.OpenSQLiteOpts(filepath.Join(tb.TempDir(), "goxpdl.db"), opts)
	require.NoError(tb, err)
	tb.Cleanup(func() { closeDB(tb, db) })
	return db
}

// OpenSQLiteMemory opens a new private in-memory SQLite database (one
// connection).
func OpenSQLiteMemory(tb testing.TB) *gorm.DB {
	tb.Helper()
	db, err := gormstore.OpenSQLite(gormstore.MemoryPath)
	require.NoError(tb, err)
	tb.Cleanup(func() { closeDB(tb, db) })
	return db
}

// MySQLDSN returns GOXPDL_MYSQL_DSN as a go-sql-driver/mysql DSN (without
// the mysql:// it may start with), or skips the test, with the reason,
// when it is not set.
func MySQLDSN(tb testing.TB) string {
	tb.Helper()
	dsn := os.Getenv(MySQLDSNEnv)
	if dsn == "" {
		tb.Skip(MySQLDSNEnv + " not set; the MySQL/MariaDB variant of this test is skipped")
	}
	return strings.TrimPrefix(dsn, gormstore.MySQLScheme)
}

// OpenMySQL creates a database goxpdl_t_<random> on the server named by
// GOXPDL_MYSQL_DSN, opens it, and drops it when the test ends. It skips
// the test when the variable is not set. The database's default collation
// is case-insensitive on purpose: goxpdl's tables must be case-sensitive
// whatever the host's database says.
func OpenMySQL(tb testing.TB) *gorm.DB {
	tb.Helper()
	return OpenMySQLOpts(tb, gormstore.OpenOpts{})
}

// OpenMySQLOpts is OpenMySQL with gormstore's options (a connector
// wrapper).
func OpenMySQLOpts(tb testing.TB, opts gormstore.OpenOpts) *gorm.DB {
	tb.Helper()
	cfg, err := gormstore.ParseMySQLDSN(MySQLDSN(tb))
	require.NoError(tb, err)
	admin, err := sql.Open("mysql", cfg.FormatDSN())
	require.NoError(tb, err)
	tb.Cleanup(func() { require.NoError(tb, admin.Close()) })

	name := "goxpdl_t_" + strings.ToLower(rand.Text())
	_, err = admin.ExecContext(context.Background(), "CREATE DATABASE `"+name+"` CHARACTER SET utf8mb4 COLLATE utf8mb4_general_ci")
	require.NoError(tb, err)
	tb.Cleanup(func() {
		_, err := admin.ExecContext(context.Background(), "DROP DATABASE `"+name+"`")
		require.NoError(tb, err)
	})
	cfg.DBName = name
	cfg.ParseTime = false // OpenMySQL must add it
	db, err := gormstore.OpenMySQLOpts(cfg.FormatDSN(), opts)
	require.NoError(tb, err)
	tb.Cleanup(func() { closeDB(tb, db) }) // runs before the DROP
	return db
}

func closeDB(tb testing.TB, db *gorm.DB) {
	tb.Helper()
	sqlDB, err := db.DB()
	require.NoError(tb, err)
	require.NoError(tb, sqlDB.Close())
}
