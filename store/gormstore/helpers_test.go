package gormstore_test

import (
	"context"
	"crypto/rand"
	"database/sql"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/go-sql-driver/mysql"
	"github.com/stretchr/testify/require"
	"gorm.io/gorm"

	"github.com/goxpdl/goxpdl/store/gormstore"
)

// mysqlDSNEnv names the environment variable with the DSN of a MySQL or
// MariaDB server for the MySQL tests, e.g.
// root:@tcp(127.0.0.1:3306)/test?parseTime=true. Each test creates a
// database of its own there and drops it afterwards.
const mysqlDSNEnv = "GOXPDL_MYSQL_DSN"

// dialect opens a fresh, empty database for one test.
type dialect struct {
	name string
	open func(tb testing.TB) *gorm.DB
}

var dialects = []dialect{
	{"SQLite", openSQLiteFile},
	{"SQLiteMemory", openSQLiteMemory},
	{"MySQL", openMySQL},
}

// openSQLiteFile opens a new SQLite database file in a temporary
// directory, in WAL mode like a real one.
func openSQLiteFile(tb testing.TB) *gorm.DB {
	tb.Helper()
	db, err := gormstore.OpenSQLite(filepath.Join(tb.TempDir(), "goxpdl.db"))
	require.NoError(tb, err)
	tb.Cleanup(func() { closeDB(tb, db) })
	return db
}

// openSQLiteMemory opens a new private in-memory SQLite database.
func openSQLiteMemory(tb testing.TB) *gorm.DB {
	tb.Helper()
	db, err := gormstore.OpenSQLite(gormstore.MemoryPath)
	require.NoError(tb, err)
	tb.Cleanup(func() { closeDB(tb, db) })
	return db
}

// mysqlDSN returns GOXPDL_MYSQL_DSN, or skips the test when it is not set.
func mysqlDSN(tb testing.TB) string {
	tb.Helper()
	dsn := os.Getenv(mysqlDSNEnv)
	if dsn == "" {
		tb.Skip(mysqlDSNEnv + " not set; MySQL conformance skipped")
	}
	return dsn
}

// openMySQL creates a database goxpdl_t_<random> on the server named by
// GOXPDL_MYSQL_DSN, opens it and drops it when the test ends. It skips
// the test when the variable is not set. The database's default collation
// is case-insensitive on purpose: Migrate must make goxpdl's tables
// case-sensitive whatever the host's database says.
func openMySQL(tb testing.TB) *gorm.DB {
	tb.Helper()
	cfg, err := mysql.ParseDSN(mysqlDSN(tb))
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
	db, err := gormstore.OpenMySQL(cfg.FormatDSN())
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

// newStore returns a migrated Store over db.
func newStore(tb testing.TB, db *gorm.DB) *gormstore.Store {
	tb.Helper()
	s, err := gormstore.New(db)
	require.NoError(tb, err)
	require.NoError(tb, s.Migrate(context.Background()))
	return s
}
