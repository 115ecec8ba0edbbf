package sqlitedialect_test

import (
	"context"
	"database/sql"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"gorm.io/gorm"

	"github.com/goxpdl/goxpdl/store/sqlitedialect"
)

// cacheSizes are the statement cache settings the cache tests run with:
// the default, one too small for the statements of a test, and none.
var cacheSizes = []struct {
	name string
	size int
}{
	{"default", 0},
	{"size1", 1},
	{"off", -1},
}

// TestStatementCacheRepeatedInsert runs one INSERT 100 times on one
// connection and reads every row back.
func TestStatementCacheRepeatedInsert(t *testing.T) {
	t.Parallel()
	for _, cs := range cacheSizes {
		t.Run(cs.name, func(t *testing.T) {
			t.Parallel()
			conn := oneConn(t, openSQL(t, cs.size))
			mustExec(t, conn, "CREATE TABLE t (id integer PRIMARY KEY, n integer NOT NULL, s text NOT NULL)")
			for i := range 100 {
				res := mustExec(t, conn, "INSERT INTO t (n, s) VALUES (?, ?)", i, fmt.Sprintf("row %d", i))
				id, err := res.LastInsertId()
				require.NoError(t, err)
				require.Equal(t, int64(i+1), id)
				affected, err := res.RowsAffected()
				require.NoError(t, err)
				require.Equal(t, int64(1), affected)
			}
			require.Equal(t, seq(0, 99), ints(t, conn, "SELECT n FROM t ORDER BY id"))

			// The same SELECT with other arguments, many times.
			for i := range 100 {
				var s string
				require.NoError(t, conn.QueryRowContext(context.Background(), "SELECT s FROM t WHERE n = ?", i).Scan(&s))
				require.Equal(t, fmt.Sprintf("row %d", i), s)
			}
			// A run that finds no row leaves the statement usable.
			err := conn.QueryRowContext(context.Background(), "SELECT s FROM t WHERE n = ?", 1000).Scan(new(string))
			require.ErrorIs(t, err, sql.ErrNoRows)
			var s string
			require.NoError(t, conn.QueryRowContext(context.Background(), "SELECT s FROM t WHERE n = ?", 7).Scan(&s))
			require.Equal(t, "row 7", s)
		})
	}
}

// TestStatementCacheSameSQLWhileRowsOpen runs a query again, with other
// arguments, on the same connection while the rows of its first run are
// still open: both runs give their own rows.
func TestStatementCacheSameSQLWhileRowsOpen(t *testing.T) {
	t.Parallel()
	for _, cs := range cacheSizes {
		t.Run(cs.name, func(t *testing.T) {
			t.Parallel()
			conn := oneConn(t, openSQL(t, cs.size))
			mustExec(t, conn, "CREATE TABLE t (n integer NOT NULL)")
			for i := range 10 {
				mustExec(t, conn, "INSERT INTO t (n) VALUES (?)", i)
			}
			const query = "SELECT n FROM t WHERE n >= ? ORDER BY n"

			outer := openRows(t, conn, query, 5)
			require.True(t, outer.Next())
			var first int64
			require.NoError(t, outer.Scan(&first))
			require.Equal(t, int64(5), first)

			// The same SQL twice more while outer is open, one nested in
			// the other.
			middle := openRows(t, conn, query, 8)
			require.True(t, middle.Next())
			require.Equal(t, seq(0, 9), ints(t, conn, query, 0))
			var m int64
			require.NoError(t, middle.Scan(&m))
			require.Equal(t, int64(8), m)
			require.True(t, middle.Next())
			require.NoError(t, middle.Scan(&m))
			require.Equal(t, int64(9), m)
			require.False(t, middle.Next())
			require.NoError(t, middle.Err())

			// An Exec of the same SQL while outer is open.
			mustExec(t, conn, query, 3)

			rest := []int64{first}
			for outer.Next() {
				var v int64
				require.NoError(t, outer.Scan(&v))
				rest = append(rest, v)
			}
			require.NoError(t, outer.Err())
			require.NoError(t, outer.Close())
			require.Equal(t, seq(5, 9), rest)

			// Once both are closed, the statement runs again as before.
			require.Equal(t, seq(2, 9), ints(t, conn, query, 2))
			require.Equal(t, seq(6, 9), ints(t, conn, query, 6))
		})
	}
}

// TestStatementCacheRowsClosedEarly closes rows before reading them all;
// the statement then runs again from the start, and holds no lock.
func TestStatementCacheRowsClosedEarly(t *testing.T) {
	t.Parallel()
	// The rollback journal, not WAL: there an open read blocks a commit
	// on another connection. The short busy timeout makes it fail fast.
	db := sqlitedialect.OpenDB(tempPath(t)+"?_pragma=busy_timeout(50)", 0)
	t.Cleanup(func() { require.NoError(t, db.Close()) })
	conn := oneConn(t, db)
	other := oneConn(t, db)
	ctx := context.Background()
	mustExec(t, conn, "CREATE TABLE t (n integer NOT NULL)")
	mustExec(t, conn, "INSERT INTO t (n) VALUES (1), (2), (3)")
	const query = "SELECT n FROM t ORDER BY n"

	// While the rows are open, their read blocks the other connection's
	// write: the check below can fail.
	rows := openRows(t, conn, query)
	require.True(t, rows.Next())
	_, err := other.ExecContext(ctx, "INSERT INTO t (n) VALUES (0)")
	require.ErrorContains(t, err, "database is locked")
	require.NoError(t, rows.Close())

	for range 3 {
		rows := openRows(t, conn, query)
		require.True(t, rows.Next())
		var v int64
		require.NoError(t, rows.Scan(&v))
		require.Equal(t, int64(1), v)
		require.NoError(t, rows.Close())
		// Closed half read, the cached statement holds no lock.
		mustExec(t, other, "UPDATE t SET n = n")
	}
	require.Equal(t, []int64{1, 2, 3}, ints(t, conn, query))
	var n int64
	require.NoError(t, conn.QueryRowContext(ctx, "SELECT count(*) FROM t").Scan(&n))
	mustExec(t, other, "INSERT INTO t (n) VALUES (4)")
	require.Equal(t, []int64{1, 2, 3, 4}, ints(t, conn, query))
}

// TestStatementCacheEviction runs more distinct statements than the cache
// holds, over and over, also while the rows of an evicted statement are
// open and while that statement is run again.
func TestStatementCacheEviction(t *testing.T) {
	t.Parallel()
	db := openGorm(t, &sqlitedialect.Dialector{DSN: tempPath(t) + pragmas, StatementCacheSize: 2}, nil)
	sqlDB, err := db.DB()
	require.NoError(t, err)
	conn := oneConn(t, sqlDB)

	mustExec(t, conn, "CREATE TABLE t (n integer NOT NULL)")
	for i := range 20 {
		mustExec(t, conn, "INSERT INTO t (n) VALUES (?)", i)
	}
	// query k selects the multiples of k+1 below 20.
	queries := make([]string, 5)
	want := make([][]int64, 5)
	for k := range queries {
		queries[k] = fmt.Sprintf("SELECT n FROM t WHERE n %% %d = 0 AND n >= ? ORDER BY n", k+1)
		for v := int64(0); v < 20; v += int64(k + 1) {
			want[k] = append(want[k], v)
		}
	}

	for range 4 {
		for k, q := range queries {
			require.Equal(t, want[k], ints(t, conn, q, 0), q)
		}
		for k := len(queries) - 1; k >= 0; k-- {
			require.Equal(t, want[k], ints(t, conn, queries[k], 0), queries[k])
		}
	}

	// Open rows of query 0, then evict it by running the others.
	open := openRows(t, conn, queries[0], 10)
	require.True(t, open.Next())
	var got []int64
	var v int64
	require.NoError(t, open.Scan(&v))
	got = append(got, v)
	for k := 1; k < len(queries); k++ {
		require.Equal(t, want[k], ints(t, conn, queries[k], 0))
	}
	// Query 0 again while its evicted statement's rows are open: it is
	// prepared and cached anew.
	require.Equal(t, seq(15, 19), ints(t, conn, queries[0], 15))
	for open.Next() {
		require.NoError(t, open.Scan(&v))
		got = append(got, v)
	}
	require.NoError(t, open.Err())
	require.NoError(t, open.Close())
	require.Equal(t, seq(10, 19), got)

	// Closing the evicted statement's rows left the new cached one alone.
	require.Equal(t, seq(12, 19), ints(t, conn, queries[0], 12))
	require.Equal(t, want[0], ints(t, conn, queries[0], 0))

	// Rows of two cached statements open at once, then evicted by a third
	// and fourth statement before they are read.
	a := openRows(t, conn, queries[1], 0)
	b := openRows(t, conn, queries[2], 0)
	require.Equal(t, want[3], ints(t, conn, queries[3], 0))
	require.Equal(t, want[4], ints(t, conn, queries[4], 0))
	require.Equal(t, want[1], readInts(t, a))
	require.Equal(t, want[2], readInts(t, b))
	for k, q := range queries {
		require.Equal(t, want[k], ints(t, conn, q, 0), q)
	}
}

// readInts reads and closes rows of one integer column.
func readInts(t *testing.T, rows *sql.Rows) []int64 {
	t.Helper()
	var out []int64
	for rows.Next() {
		var v int64
		require.NoError(t, rows.Scan(&v))
		out = append(out, v)
	}
	require.NoError(t, rows.Err())
	require.NoError(t, rows.Close())
	return out
}

// TestStatementCacheOff runs statements through a dialector whose cache
// is off (a negative size).
func TestStatementCacheOff(t *testing.T) {
	t.Parallel()
	db := openGorm(t, &sqlitedialect.Dialector{DSN: tempPath(t) + pragmas, StatementCacheSize: -1}, nil)
	type row struct {
		ID   int64
		Name string
	}
	require.NoError(t, db.AutoMigrate(&row{}))
	for i := range 20 {
		require.NoError(t, db.Create(&row{Name: fmt.Sprint(i)}).Error)
	}
	var rows []row
	require.NoError(t, db.Order("id").Find(&rows).Error)
	require.Len(t, rows, 20)
	for i, r := range rows {
		require.Equal(t, int64(i+1), r.ID)
		require.Equal(t, fmt.Sprint(i), r.Name)
	}

	sqlDB, err := db.DB()
	require.NoError(t, err)
	conn := oneConn(t, sqlDB)
	open := openRows(t, conn, "SELECT id FROM rows WHERE id > ? ORDER BY id", 15)
	require.Equal(t, seq(18, 20), ints(t, conn, "SELECT id FROM rows WHERE id > ? ORDER BY id", 17))
	require.Equal(t, seq(16, 20), readInts(t, open))
}

// TestStatementCacheSchemaChange runs cached statements after the table
// they read changes: SQLite prepares them again, and SELECT * sees the
// new columns.
func TestStatementCacheSchemaChange(t *testing.T) {
	t.Parallel()
	conn := oneConn(t, openSQL(t, 0))
	ctx := context.Background()
	mustExec(t, conn, "CREATE TABLE t (a integer)")
	mustExec(t, conn, "INSERT INTO t (a) VALUES (?)", 1)

	selectAll := func() ([]string, [][]any) {
		rows, err := conn.QueryContext(ctx, "SELECT * FROM t ORDER BY a")
		require.NoError(t, err)
		defer func() { require.NoError(t, rows.Close()) }()
		cols, err := rows.Columns()
		require.NoError(t, err)
		var out [][]any
		for rows.Next() {
			vals := make([]any, len(cols))
			ptrs := make([]any, len(cols))
			for i := range vals {
				ptrs[i] = &vals[i]
			}
			require.NoError(t, rows.Scan(ptrs...))
			out = append(out, vals)
		}
		require.NoError(t, rows.Err())
		return cols, out
	}

	cols, got := selectAll()
	require.Equal(t, []string{"a"}, cols)
	require.Equal(t, [][]any{{int64(1)}}, got)

	mustExec(t, conn, "ALTER TABLE t ADD COLUMN b text DEFAULT 'x'")
	cols, got = selectAll()
	require.Equal(t, []string{"a", "b"}, cols)
	require.Equal(t, [][]any{{int64(1), "x"}}, got)

	// The cached INSERT also runs on the changed table.
	mustExec(t, conn, "INSERT INTO t (a) VALUES (?)", 2)
	_, got = selectAll()
	require.Equal(t, [][]any{{int64(1), "x"}, {int64(2), "x"}}, got)

	// Dropped: the cached statements fail; created again with other
	// columns: they run again.
	mustExec(t, conn, "DROP TABLE t")
	rows, err := conn.QueryContext(ctx, "SELECT * FROM t ORDER BY a")
	if err == nil {
		require.NoError(t, rows.Close())
	}
	require.ErrorContains(t, err, "no such table")
	_, err = conn.ExecContext(ctx, "INSERT INTO t (a) VALUES (?)", 3)
	require.ErrorContains(t, err, "no such table")
	mustExec(t, conn, "CREATE TABLE t (c text, a integer)")
	mustExec(t, conn, "INSERT INTO t (a) VALUES (?)", 3)
	cols, got = selectAll()
	require.Equal(t, []string{"c", "a"}, cols)
	require.Equal(t, [][]any{{nil, int64(3)}}, got)
}

// TestOpenDBDatabaseSQL uses OpenDB's pool with database/sql alone:
// Ping, Exec, Query, QueryRow, Prepare and a script of two statements.
func TestOpenDBDatabaseSQL(t *testing.T) {
	t.Parallel()
	db := openSQL(t, 0)
	ctx := context.Background()
	require.NoError(t, db.PingContext(ctx))
	mustExec(t, db, "CREATE TABLE t (id integer PRIMARY KEY AUTOINCREMENT, v text)")

	stmt, err := db.PrepareContext(ctx, "INSERT INTO t (v) VALUES (?)")
	require.NoError(t, err)
	for _, v := range []string{"a", "b", "c"} {
		_, err := stmt.ExecContext(ctx, v)
		require.NoError(t, err)
	}
	require.NoError(t, stmt.Close())

	// A script: every statement of it runs, each time.
	for range 2 {
		mustExec(t, db, "INSERT INTO t (v) VALUES ('d'); INSERT INTO t (v) VALUES ('e')")
	}
	var count int64
	require.NoError(t, db.QueryRowContext(ctx, "SELECT count(*) FROM t").Scan(&count))
	require.Equal(t, int64(7), count)

	var vs []string
	rows, err := db.QueryContext(ctx, "SELECT v FROM t ORDER BY id")
	require.NoError(t, err)
	for rows.Next() {
		var v string
		require.NoError(t, rows.Scan(&v))
		vs = append(vs, v)
	}
	require.NoError(t, rows.Err())
	require.NoError(t, rows.Close())
	require.Equal(t, []string{"a", "b", "c", "d", "e", "d", "e"}, vs)

	// A syntax error is reported, and the connection goes on.
	_, err = db.ExecContext(ctx, "INSERT INTO")
	require.Error(t, err)
	require.NoError(t, db.QueryRowContext(ctx, "SELECT count(*) FROM t").Scan(&count))
	require.Equal(t, int64(7), count)

	// The pool's connections are the dialector's own, with the column
	// types the migrator reads.
	rows, err = db.QueryContext(ctx, "SELECT id, v FROM t LIMIT 1")
	require.NoError(t, err)
	types, err := rows.ColumnTypes()
	require.NoError(t, err)
	require.NoError(t, rows.Close())
	require.Len(t, types, 2)
	require.Equal(t, "INTEGER", types[0].DatabaseTypeName())
	require.Equal(t, "TEXT", types[1].DatabaseTypeName())
}

// TestOpenDBMemory opens the in-memory database over one connection.
func TestOpenDBMemory(t *testing.T) {
	t.Parallel()
	db := sqlitedialect.OpenDB(sqlitedialect.MemoryDSN, 0)
	db.SetMaxOpenConns(1)
	t.Cleanup(func() { require.NoError(t, db.Close()) })
	mustExec(t, db, "CREATE TABLE t (n integer)")
	for i := range 5 {
		mustExec(t, db, "INSERT INTO t (n) VALUES (?)", i)
	}
	require.Equal(t, seq(0, 4), ints(t, db, "SELECT n FROM t ORDER BY n"))
}

// TestStatementCacheAcrossTransactions runs cached statements in a
// transaction, then after its commit in another, and in one rolled back.
func TestStatementCacheAcrossTransactions(t *testing.T) {
	t.Parallel()
	db := openSQL(t, 0)
	db.SetMaxOpenConns(1) // every transaction on the same connection and cache
	ctx := context.Background()
	mustExec(t, db, "CREATE TABLE t (n integer NOT NULL)")

	const (
		insert = "INSERT INTO t (n) VALUES (?)"
		list   = "SELECT n FROM t ORDER BY n"
	)
	run := func(lo, hi int64, commit bool) {
		tx, err := db.BeginTx(ctx, nil)
		require.NoError(t, err)
		for v := lo; v <= hi; v++ {
			mustExec(t, tx, insert, v)
		}
		require.Equal(t, seq(0, hi), ints(t, tx, list))
		// The same query twice at once in the transaction.
		outer := openRows(t, tx, list)
		require.Equal(t, seq(0, hi), ints(t, tx, list))
		require.Equal(t, seq(0, hi), readInts(t, outer))
		if commit {
			require.NoError(t, tx.Commit())
		} else {
			require.NoError(t, tx.Rollback())
		}
	}
	run(0, 4, true)
	require.Equal(t, seq(0, 4), ints(t, db, list))
	run(5, 9, true)
	require.Equal(t, seq(0, 9), ints(t, db, list))
	run(10, 14, false)
	require.Equal(t, seq(0, 9), ints(t, db, list))
	mustExec(t, db, insert, 10)
	require.Equal(t, seq(0, 10), ints(t, db, list))

	// With gorm: a transaction whose function fails rolls back.
	gdb := openGorm(t, &sqlitedialect.Dialector{Conn: db}, nil)
	err := gdb.Transaction(func(tx *gorm.DB) error {
		require.NoError(t, tx.Exec(insert, 11).Error)
		return sql.ErrTxDone // any error
	})
	require.ErrorIs(t, err, sql.ErrTxDone)
	require.NoError(t, gdb.Transaction(func(tx *gorm.DB) error {
		return tx.Exec(insert, 12).Error
	}))
	require.Equal(t, append(seq(0, 10), 12), ints(t, db, list))
}

// TestStatementCacheContextCanceled cancels a query's context while its
// rows are open; the statement then runs again.
func TestStatementCacheContextCanceled(t *testing.T) {
	t.Parallel()
	conn := oneConn(t, openSQL(t, 0))
	mustExec(t, conn, "CREATE TABLE t (n integer NOT NULL)")
	for i := range 10 {
		mustExec(t, conn, "INSERT INTO t (n) VALUES (?)", i)
	}
	const query = "SELECT n FROM t ORDER BY n"
	ctx, cancel := context.WithCancel(context.Background())
	rows, err := conn.QueryContext(ctx, query)
	require.NoError(t, err)
	t.Cleanup(func() { _ = rows.Close() })
	require.True(t, rows.Next())
	cancel()
	// Whether the rows end because the cancellation closed them or because
	// they were all read depends on timing; either way they end.
	left := 0
	for rows.Next() {
		left++
	}
	require.LessOrEqual(t, left, 9)
	if err := rows.Err(); err != nil {
		require.ErrorIs(t, err, context.Canceled)
	}
	require.NoError(t, rows.Close())
	require.Equal(t, seq(0, 9), ints(t, conn, query))

	_, err = conn.ExecContext(ctx, "INSERT INTO t (n) VALUES (?)", 10)
	require.ErrorIs(t, err, context.Canceled)
	require.Equal(t, seq(0, 9), ints(t, conn, query))
}

// TestTimeArguments writes times through every cache setting and checks
// that the stored text is what the driver writes itself (the cache off),
// with the default time format and with a DSN that chooses another. The
// same time is bound several times in a row, and a time that differs only
// in its zone, so the connection's memo of recent formatted times must
// not mix them up; then more distinct times than the memo holds, and the
// first ones again.
func TestTimeArguments(t *testing.T) {
	t.Parallel()
	at := time.Date(2026, 11, 24, 1, 35, 51, 714965000, time.UTC)
	cet := at.In(time.FixedZone("CET", 3600))
	times := []time.Time{at, at, cet, at.Add(time.Microsecond), at.Add(time.Hour), at}
	for k := range 100 {
		times = append(times, at.Add(time.Duration(k+2)*time.Millisecond))
	}
	times = append(times, cet, at)
	for _, dsnQuery := range []string{pragmas, pragmas + "&_time_format=sqlite"} {
		stored := map[string][]string{} // by cache setting
		for _, cs := range cacheSizes {
			db := sqlitedialect.OpenDB(tempPath(t)+dsnQuery, cs.size)
			t.Cleanup(func() { require.NoError(t, db.Close()) })
			conn := oneConn(t, db)
			mustExec(t, conn, "CREATE TABLE t (n integer, at datetime, at2 datetime)")
			for i, v := range times {
				mustExec(t, conn, "INSERT INTO t VALUES (?, ?, ?)", i, v, at)
			}
			rows := openRows(t, conn, "SELECT CAST(at AS text) || '|' || CAST(at2 AS text) FROM t ORDER BY n")
			for rows.Next() {
				var s string
				require.NoError(t, rows.Scan(&s))
				stored[cs.name] = append(stored[cs.name], s)
			}
			require.NoError(t, rows.Err())
		}
		driver := stored["off"]
		require.Len(t, driver, len(times), dsnQuery)
		require.NotEqual(t, driver[0], driver[2], "a time in another zone is written differently")
		for name, got := range stored {
			require.Equal(t, driver, got, "cache %s, DSN %s", name, dsnQuery)
		}
	}
}
