// Package dbtest opens fresh databases for tests of packages that run on
// goxpdl's store: a SQLite file (WAL, as in production) always, a
// MySQL/MariaDB database when GOXPDL_MYSQL_DSN names a server, and a
// PostgreSQL database when GOXPDL_POSTGRES_DSN names one.
package dbtest

import (
	"context"
	"crypto/rand"
	"database/sql"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"

	_ "github.com/jackc/pgx/v5/stdlib" // the "pgx" driver of the admin connections
	"github.com/stretchr/testify/require"
	"gorm.io/gorm"

	"github.com/goxpdl/goxpdl/store/gormstore"
)

// MySQLDSNEnv names the environment variable with the DSN of a MySQL or
// MariaDB server, in either form gormstore.ParseMySQLDSN reads: the
// driver's root:@tcp(127.0.0.1:3306)/test?parseTime=true, or the same after
// mysql:// as goxpdl's --db writes it.
const MySQLDSNEnv = "GOXPDL_MYSQL_DSN"

// PostgresDSNEnv names the environment variable with the URL of a
// PostgreSQL database, postgres://USER:PASS@HOST:PORT/DB?sslmode=disable
// as goxpdl's --db writes it. Each test gets a schema of its own in that
// database, created for it and dropped when it ends (OpenPostgres).
const PostgresDSNEnv = "GOXPDL_POSTGRES_DSN"

// Dialect opens a fresh, empty database for one test.
type Dialect struct {
	// Name is "SQLite", "MySQL" or "Postgres".
	Name string
	// Open returns the database; it is closed (and, for MySQL and
	// PostgreSQL, dropped) when the test ends. The MySQL and Postgres
	// dialects skip the test, with the reason, when GOXPDL_MYSQL_DSN or
	// GOXPDL_POSTGRES_DSN is not set.
	Open func(tb testing.TB) *gorm.DB
}

// Dialects are the databases every store-backed test runs on.
var Dialects = []Dialect{
	{"SQLite", OpenSQLite},
	{"MySQL", OpenMySQL},
	{"Postgres", OpenPostgres},
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

// PostgresDSN returns GOXPDL_POSTGRES_DSN, or skips the test, with the
// reason, when it is not set.
func PostgresDSN(tb testing.TB) string {
	tb.Helper()
	dsn := os.Getenv(PostgresDSNEnv)
	if dsn == "" {
		tb.Skip(PostgresDSNEnv + " not set; the PostgreSQL variant of this test is skipped")
	}
	return dsn
}

// OpenPostgres opens a fresh schema of the database named by
// GOXPDL_POSTGRES_DSN (PostgresURL), in which goxpdl's tables are made,
// and closes it when the test ends. It skips the test when the variable
// is not set.
func OpenPostgres(tb testing.TB) *gorm.DB {
	tb.Helper()
	return OpenPostgresOpts(tb, gormstore.OpenOpts{})
}

// OpenPostgresOpts is OpenPostgres with gormstore's options (a connector
// wrapper).
func OpenPostgresOpts(tb testing.TB, opts gormstore.OpenOpts) *gorm.DB {
	tb.Helper()
	db, err := gormstore.OpenPostgresOpts(PostgresURL(tb), opts)
	require.NoError(tb, err)
	tb.Cleanup(func() { closeDB(tb, db) }) // runs before the DROP
	return db
}

// PostgresURL creates a schema goxpdl_t_<random> in the database named
// by GOXPDL_POSTGRES_DSN and returns that URL with the schema first on
// its search_path, so that goxpdl's tables are made there (a --db value);
// the schema is dropped, with what it holds, when the test ends. It skips
// the test when the variable is not set.
//
// A schema rather than a database per test: creating a database copies
// its template (0.3 to 0.6 s each here, a schema 10 ms), and goxpdl's
// tables live in whatever schema the host's connection uses. .ci/run
// creates the database with a linguistic collation (ICU en-US, which
// sorts "a" before "B"), so that goxpdl's sorting of text is checked not
// to depend on the host's database (CreatePostgresDatabase).
func PostgresURL(tb testing.TB) string {
	tb.Helper()
	dsn := PostgresDSN(tb)
	name := "goxpdl_t_" + strings.ToLower(rand.Text())
	require.NoError(tb, postgresAdmin(context.Background(), dsn, `CREATE SCHEMA "`+name+`"`))
	tb.Cleanup(func() {
		require.NoError(tb, postgresAdmin(context.Background(), dsn, `DROP SCHEMA "`+name+`" CASCADE`))
	})
	u, err := url.Parse(dsn)
	require.NoError(tb, err)
	q := u.Query()
	q.Set("search_path", name)
	u.RawQuery = q.Encode()
	return u.String()
}

// PostgresDatabaseURL returns dsn, a PostgreSQL URL, naming database
// name instead of its own.
func PostgresDatabaseURL(dsn, name string) (string, error) {
	u, err := url.Parse(dsn)
	if err != nil {
		return "", fmt.Errorf("%s: not a URL: %w", PostgresDSNEnv, err)
	}
	u.Path = "/" + name
	return u.String(), nil
}

// CreatePostgresDatabase creates database name on the server dsn names,
// from template0 in UTF-8, with ICU's en-US collation where the server
// has ICU (PostgreSQL 15 and later built with it), else its default.
func CreatePostgresDatabase(ctx context.Context, dsn, name string) error {
	create := `CREATE DATABASE "` + name + `" TEMPLATE template0 ENCODING 'UTF8'`
	if err := postgresAdmin(ctx, dsn, create+` LOCALE_PROVIDER icu ICU_LOCALE 'en-US' LOCALE 'C.UTF-8'`); err == nil {
		return nil
	}
	return postgresAdmin(ctx, dsn, create)
}

// DropPostgresDatabase drops database name on the server dsn names,
// closing the connections still open to it.
func DropPostgresDatabase(ctx context.Context, dsn, name string) error {
	return postgresAdmin(ctx, dsn, `DROP DATABASE IF EXISTS "`+name+`" WITH (FORCE)`)
}

// postgresAdmin runs one statement on the database dsn names, over a
// connection of its own.
func postgresAdmin(ctx context.Context, dsn, statement string) error {
	conn, err := sql.Open("pgx", dsn)
	if err != nil {
		return err
	}
	defer func() { _ = conn.Close() }()
	_, err = conn.ExecContext(ctx, statement)
	return err
}
