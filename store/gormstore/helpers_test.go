package gormstore_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"
	"gorm.io/gorm"

	"github.com/goxpdl/goxpdl/store/dbtest"
	"github.com/goxpdl/goxpdl/store/gormstore"
)

// dialect opens a fresh, empty database for one test.
type dialect struct {
	name string
	open func(tb testing.TB) *gorm.DB
}

// dialects are SQLite in a file (WAL, several connections), SQLite in
// memory (one connection), MySQL/MariaDB when GOXPDL_MYSQL_DSN is set and
// PostgreSQL when GOXPDL_POSTGRES_DSN is.
var dialects = []dialect{
	{"SQLite", openSQLiteFile},
	{"SQLiteMemory", openSQLiteMemory},
	{"MySQL", openMySQL},
	{"Postgres", openPostgres},
}

var (
	openSQLiteFile   = dbtest.OpenSQLite
	openSQLiteMemory = dbtest.OpenSQLiteMemory
	openMySQL        = dbtest.OpenMySQL
	mysqlDSN         = dbtest.MySQLDSN
	openPostgres     = dbtest.OpenPostgres
)

// newStore returns a migrated Store over db.
func newStore(tb testing.TB, db *gorm.DB) *gormstore.Store {
	tb.Helper()
	s, err := gormstore.New(db)
	require.NoError(tb, err)
	require.NoError(tb, s.Migrate(context.Background()))
	return s
}
