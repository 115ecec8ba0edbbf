package sqlitedialect

import (
	"context"
	"database/sql"
	"path/filepath"
	"reflect"
	"testing"

	"github.com/stretchr/testify/require"
)

// These tests look inside cachingConn: which statements it keeps, which
// it reuses, and that it finalizes every statement it drops. The black-box
// tests (conn_test.go) check the results the statements give.

// cacheTest is one connection of a pool over a new database file.
type cacheTest struct {
	t    *testing.T
	db   *sql.DB
	conn *sql.Conn
}

func newCacheTest(t *testing.T, size int) *cacheTest {
	t.Helper()
	db := OpenDB(filepath.Join(t.TempDir(), "test.db"), size)
	t.Cleanup(func() { require.NoError(t, db.Close()) })
	conn, err := db.Conn(context.Background())
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, conn.Close()) })
	ct := &cacheTest{t: t, db: db, conn: conn}
	ct.exec("CREATE TABLE t (n integer)")
	ct.exec("INSERT INTO t (n) VALUES (1), (2), (3)")
	return ct
}

func (ct *cacheTest) exec(query string, args ...any) {
	ct.t.Helper()
	_, err := ct.conn.ExecContext(context.Background(), query, args...)
	require.NoError(ct.t, err)
}

func (ct *cacheTest) query(query string, args ...any) *sql.Rows {
	ct.t.Helper()
	rows, err := ct.conn.QueryContext(context.Background(), query, args...)
	require.NoError(ct.t, err)
	// Closed before the connection should the test fail first.
	ct.t.Cleanup(func() { _ = rows.Close() })
	return rows
}

// cache calls fn with the connection's driver connection, while
// database/sql holds it for the test alone. fn must not fail the test:
// the connection stays locked if it exits.
func (ct *cacheTest) cache(fn func(c *cachingConn)) {
	ct.t.Helper()
	var c *cachingConn
	require.NoError(ct.t, ct.conn.Raw(func(dc any) error {
		var ok bool
		if c, ok = dc.(*cachingConn); ok {
			fn(c)
		}
		return nil
	}))
	require.NotNil(ct.t, c, "the driver connection is not a *cachingConn")
}

// cached returns the queries in the cache, most recently used first, and
// checks that the list and the map agree.
func (ct *cacheTest) cached() []string {
	ct.t.Helper()
	var (
		queries       []string
		size, mapSize int
		consistent    = true
	)
	ct.cache(func(c *cachingConn) {
		size, mapSize = c.size, len(c.bySQL)
		for el := c.lru.Front(); el != nil; el = el.Next() {
			cs := el.Value.(*cachedStmt)
			consistent = consistent && c.bySQL[cs.query] == el
			queries = append(queries, cs.query)
		}
	})
	require.True(ct.t, consistent, "the map and the list disagree")
	require.Len(ct.t, queries, mapSize)
	require.LessOrEqual(ct.t, len(queries), size)
	return queries
}

// entry returns the cache's entry for query, or nil.
func (ct *cacheTest) entry(query string) *cachedStmt {
	ct.t.Helper()
	var cs *cachedStmt
	ct.cache(func(c *cachingConn) {
		if el, ok := c.bySQL[query]; ok {
			cs = el.Value.(*cachedStmt)
		}
	})
	return cs
}

// finalized reports whether s, a statement of modernc.org/sqlite, was
// closed: its Close zeroes the handles it frees.
func finalized(t *testing.T, s stmt) bool {
	t.Helper()
	v := reflect.ValueOf(s).Elem()
	psql, pstmt := v.FieldByName("psql"), v.FieldByName("pstmt")
	require.True(t, psql.IsValid() && pstmt.IsValid(), "modernc.org/sqlite's stmt has changed; update finalized")
	return psql.Uint() == 0 && pstmt.Uint() == 0
}

// TestCachingConnReuses runs a statement again and gets the statement
// prepared the first time.
func TestCachingConnReuses(t *testing.T) {
	t.Parallel()
	ct := newCacheTest(t, 0)
	const insert = "INSERT INTO t (n) VALUES (?)"
	ct.exec(insert, 4)
	first := ct.entry(insert)
	require.NotNil(t, first)
	for i := range 10 {
		ct.exec(insert, 5+i)
	}
	require.Same(t, first, ct.entry(insert))
	require.False(t, finalized(t, first.stmt))

	const list = "SELECT n FROM t ORDER BY n"
	rows := ct.query(list)
	cs := ct.entry(list)
	require.NotNil(t, cs)
	require.True(t, cs.busy)
	n := 0
	for rows.Next() {
		n++
	}
	require.NoError(t, rows.Err())
	require.Equal(t, 14, n) // 3 rows, and 11 inserted above
	require.NoError(t, rows.Close())
	require.False(t, cs.busy)
	rows = ct.query(list)
	require.NoError(t, rows.Close())
	require.Same(t, cs, ct.entry(list))
	require.Equal(t, []string{list, insert, "INSERT INTO t (n) VALUES (1), (2), (3)", "CREATE TABLE t (n integer)"}, ct.cached())
}

// TestCachingConnEvicts keeps the most recently used statements and
// finalizes the one it drops.
func TestCachingConnEvicts(t *testing.T) {
	t.Parallel()
	ct := newCacheTest(t, 2)
	const a, b, c = "SELECT 1", "SELECT 2", "SELECT 3"
	ct.exec(a)
	ct.exec(b)
	require.Equal(t, []string{b, a}, ct.cached())
	ea := ct.entry(a)
	ct.exec(a) // a is now the most recently used
	require.Equal(t, []string{a, b}, ct.cached())
	eb := ct.entry(b)
	ct.exec(c)
	require.Equal(t, []string{c, a}, ct.cached())
	require.True(t, finalized(t, eb.stmt))
	require.False(t, finalized(t, ea.stmt))
	require.Same(t, ea, ct.entry(a))
}

// TestCachingConnBusy runs a query again while its rows are open: the
// second run gets a statement of its own, finalized when its rows close,
// and the cached one stays.
func TestCachingConnBusy(t *testing.T) {
	t.Parallel()
	ct := newCacheTest(t, 0)
	const q = "SELECT n FROM t WHERE n >= ? ORDER BY n"
	outer := ct.query(q, 1)
	cs := ct.entry(q)
	require.True(t, cs.busy)
	inner := ct.query(q, 2)
	require.Same(t, cs, ct.entry(q))
	require.True(t, cs.busy)
	require.NoError(t, inner.Close())
	require.True(t, cs.busy, "closing the second run's rows freed the cached statement")
	require.NoError(t, outer.Close())
	require.False(t, cs.busy)
	require.False(t, finalized(t, cs.stmt))
}

// TestCachingConnEvictBusy evicts a statement whose rows are open: it
// leaves the cache at once and is finalized when its rows close, while a
// new statement for the same SQL stays cached.
func TestCachingConnEvictBusy(t *testing.T) {
	t.Parallel()
	ct := newCacheTest(t, 1)
	const q = "SELECT n FROM t ORDER BY n"
	rows := ct.query(q)
	old := ct.entry(q)
	require.NotNil(t, old)
	ct.exec("SELECT 1")
	require.Nil(t, ct.entry(q))
	require.False(t, finalized(t, old.stmt), "finalized while its rows are open")

	again := ct.query(q)
	require.NoError(t, again.Close())
	fresh := ct.entry(q)
	require.NotNil(t, fresh)
	require.NotSame(t, old, fresh)

	var got []int64
	for rows.Next() {
		var n int64
		require.NoError(t, rows.Scan(&n))
		got = append(got, n)
	}
	require.NoError(t, rows.Err())
	require.NoError(t, rows.Close())
	require.Equal(t, []int64{1, 2, 3}, got)
	require.True(t, finalized(t, old.stmt))
	require.False(t, finalized(t, fresh.stmt))
	require.Same(t, fresh, ct.entry(q))
}

// TestCachingConnClose finalizes the cached statements when the
// connection closes.
func TestCachingConnClose(t *testing.T) {
	t.Parallel()
	db := OpenDB(filepath.Join(t.TempDir(), "test.db"), 0)
	t.Cleanup(func() { require.NoError(t, db.Close()) })
	conn, err := db.Conn(context.Background())
	require.NoError(t, err)
	_, err = conn.ExecContext(context.Background(), "SELECT 1")
	require.NoError(t, err)
	var (
		stmts    []stmt
		cc       *cachingConn
		closeErr error
	)
	require.NoError(t, conn.Raw(func(dc any) error {
		var ok bool
		if cc, ok = dc.(*cachingConn); !ok {
			return nil
		}
		for el := cc.lru.Front(); el != nil; el = el.Next() {
			stmts = append(stmts, el.Value.(*cachedStmt).stmt)
		}
		// Close the driver connection as database/sql does when it drops
		// it from the pool; database/sql then finds it invalid.
		closeErr = cc.Close()
		return nil
	}))
	require.NoError(t, conn.Close())
	require.NotNil(t, cc)
	require.NoError(t, closeErr)
	require.Len(t, stmts, 1)
	require.True(t, finalized(t, stmts[0]))
	require.Zero(t, cc.lru.Len())
	require.Empty(t, cc.bySQL)
}

// TestCachingConnOff returns the driver's own connection when the cache
// is off.
func TestCachingConnOff(t *testing.T) {
	t.Parallel()
	db := OpenDB(filepath.Join(t.TempDir(), "test.db"), -1)
	t.Cleanup(func() { require.NoError(t, db.Close()) })
	sc, err := db.Conn(context.Background())
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, sc.Close()) })
	var caching, full bool
	require.NoError(t, sc.Raw(func(dc any) error {
		_, caching = dc.(*cachingConn)
		_, full = dc.(conn)
		return nil
	}))
	require.False(t, caching)
	require.True(t, full)
}
