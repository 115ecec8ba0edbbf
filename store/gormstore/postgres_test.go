package gormstore_test

import (
	"context"
	"database/sql"
	"errors"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/goxpdl/goxpdl/store"
	"github.com/goxpdl/goxpdl/store/dbtest"
	"github.com/goxpdl/goxpdl/store/gormstore"
)

func TestPgText(t *testing.T) {
	t.Parallel()
	q := "UPDATE `t` SET `a` = ?, `b` = 'x?`y' WHERE `id` IN (?,?)"
	require.Equal(t, `UPDATE "t" SET "a" = $1, "b" = 'x?`+"`"+`y' WHERE "id" IN ($2,$3)`, gormstore.PgText(store.DialectPostgres, q, true))
	require.Equal(t, `UPDATE "t" SET "a" = ?, "b" = 'x?`+"`"+`y' WHERE "id" IN (?,?)`, gormstore.PgText(store.DialectPostgres, q, false))
	for _, d := range []string{store.DialectSQLite, store.DialectMySQL} {
		require.Equal(t, q, gormstore.PgText(d, q, true), "only PostgreSQL's text is rewritten")
	}
}

// TestPostgresErrors provokes on a real server each error PostgreSQL
// gives up a transaction with, and checks that it maps to the store's
// errors as MySQL's do: a unique violation is ErrDuplicate, a deadlock
// and a serialization failure ErrConflict and Transient, a lock wait
// that ran out (lock_timeout) Transient.
func TestPostgresErrors(t *testing.T) {
	t.Parallel()
	db := dbtest.OpenPostgres(t)
	pool, err := db.DB()
	require.NoError(t, err)
	ctx := t.Context()
	_, err = pool.ExecContext(ctx, "CREATE TABLE t (id int PRIMARY KEY, v int NOT NULL)")
	require.NoError(t, err)
	_, err = pool.ExecContext(ctx, "INSERT INTO t VALUES (1, 0), (2, 0), (3, 0), (4, 0)")
	require.NoError(t, err)
	// begin's transactions roll back when the subtest t ends. The
	// subtests run in parallel on rows of their own: Deadlock on 1 and 2,
	// SerializationFailure on 3, LockTimeout on 4.
	begin := func(t *testing.T, opts *sql.TxOptions) *sql.Tx {
		t.Helper()
		tx, err := pool.BeginTx(ctx, opts)
		require.NoError(t, err)
		t.Cleanup(func() { _ = tx.Rollback() })
		return tx
	}
	update := func(tx *sql.Tx, id int) error {
		_, err := tx.ExecContext(ctx, "UPDATE t SET v = v + 1 WHERE id = $1", id)
		return err
	}

	t.Run("UniqueViolation", func(t *testing.T) {
		t.Parallel()
		_, err := pool.ExecContext(ctx, "INSERT INTO t VALUES (1, 0)")
		require.ErrorIs(t, gormstore.Translate(err), store.ErrDuplicate)
		require.False(t, gormstore.Transient(err))
	})

	t.Run("Deadlock", func(t *testing.T) {
		t.Parallel()
		a, b := begin(t, nil), begin(t, nil)
		require.NoError(t, update(a, 1))
		require.NoError(t, update(b, 2))
		errA := make(chan error, 1)
		go func() { errA <- update(a, 2) }() // waits for b
		errB := update(b, 1)                 // waits for a: one of them is chosen
		if errB == nil {
			require.NoError(t, b.Rollback())
		}
		gotA := <-errA
		deadlocked := errors.Join(gotA, errB)
		require.Error(t, deadlocked, "the server breaks the cycle")
		require.ErrorIs(t, gormstore.Translate(deadlocked), store.ErrConflict)
		require.True(t, gormstore.Transient(deadlocked))
	})

	t.Run("SerializationFailure", func(t *testing.T) {
		t.Parallel()
		a := begin(t, &sql.TxOptions{Isolation: sql.LevelRepeatableRead})
		var v int
		require.NoError(t, a.QueryRowContext(ctx, "SELECT v FROM t WHERE id = 3").Scan(&v))
		b := begin(t, nil)
		require.NoError(t, update(b, 3))
		require.NoError(t, b.Commit())
		err := update(a, 3)
		require.Error(t, err)
		require.ErrorIs(t, gormstore.Translate(err), store.ErrConflict)
		require.True(t, gormstore.Transient(err))
	})

	t.Run("LockTimeout", func(t *testing.T) {
		t.Parallel()
		a, b := begin(t, nil), begin(t, nil)
		require.NoError(t, update(a, 4))
		_, err := b.ExecContext(ctx, "SET LOCAL lock_timeout = '20ms'")
		require.NoError(t, err)
		err = update(b, 4)
		require.Error(t, err)
		require.True(t, gormstore.Transient(err))
		require.NotErrorIs(t, gormstore.Translate(err), store.ErrConflict, "as MySQL's lock wait timeout: transient, not a conflict")
	})

	t.Run("Other", func(t *testing.T) {
		t.Parallel()
		_, err := pool.ExecContext(ctx, "SELECT * FROM no_such_table")
		require.Error(t, err)
		require.False(t, gormstore.Transient(err))
		require.Equal(t, err, gormstore.Translate(err))
	})
}

// TestOpenPostgres opens a database by its URL, both schemes, through
// OpenDSN as --db does; the errors of a name it cannot use hide the
// password.
func TestOpenPostgres(t *testing.T) {
	t.Parallel()
	dsn := dbtest.PostgresDSN(t)
	rest, ok := strings.CutPrefix(dsn, gormstore.PostgresScheme)
	if !ok {
		rest, ok = strings.CutPrefix(dsn, gormstore.PostgresqlScheme)
	}
	require.True(t, ok, "%s is not a postgres:// URL", dbtest.PostgresDSNEnv)
	for _, scheme := range []string{gormstore.PostgresScheme, gormstore.PostgresqlScheme} {
		name := scheme + rest
		db, err := gormstore.OpenDSN(name)
		require.NoError(t, err, gormstore.RedactDSN(name))
		s, err := gormstore.New(db)
		require.NoError(t, err)
		require.Equal(t, store.DialectPostgres, s.Capabilities().Dialect)
		v, err := s.ServerVersion(context.Background())
		require.NoError(t, err)
		require.NotEmpty(t, v)
		file, err := s.DatabaseFile(context.Background())
		require.NoError(t, err)
		require.Empty(t, file)
		sqlDB, err := db.DB()
		require.NoError(t, err)
		require.NoError(t, sqlDB.Close())
	}

	for _, bad := range []string{
		"postgres://app:" + secret + "@127.0.0.1:1/x?sslmode=disable&connect_timeout=2", // nothing listens on port 1
		"postgres://app:" + secret + "@db:port/x",
		"postgres://app:" + secret + "@127.0.0.1/x?sslmode=sometimes",
	} {
		db, err := gormstore.OpenDSN(bad)
		require.Error(t, err, gormstore.RedactDSN(bad))
		require.Nil(t, db)
		require.NotContains(t, err.Error(), secret)
		_, err = gormstore.OpenPostgres(bad)
		require.Error(t, err)
		require.NotContains(t, err.Error(), secret)
	}
	_, err := gormstore.ParsePostgresDSN("mysql://root@tcp(db)/x")
	require.ErrorIs(t, err, gormstore.ErrBadDSN)
	_, err = gormstore.ParsePostgresDSN("postgres://app:" + secret + "@db:port/x")
	require.ErrorIs(t, err, gormstore.ErrBadDSN)
	require.NotContains(t, err.Error(), secret)
}
