package gormstore_test

import (
	"cmp"
	"context"
	"database/sql"
	"fmt"
	"math/rand/v2"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"gorm.io/gorm"

	"github.com/goxpdl/goxpdl/store"
	"github.com/goxpdl/goxpdl/store/gormstore"
)

// worklistItemsEnv overrides how many open work items BenchmarkWorklist
// stores (default benchWorklistItems).
const worklistItemsEnv = "GOXPDL_WORKLIST_ITEMS"

// The benchmark's data: every item is offered to one of benchRoles roles
// (so each holds items/benchRoles, 10,000 of a million) and every
// benchUserEvery-th item also to the user directly. The user belongs to
// the first two roles. Four items in five have priority 0, the others 1
// to 9, so that a cursor deep into the list lies within one long run of
// equal priorities; there are benchProcesses processes.
const (
	benchWorklistItems = 1_000_000
	benchRoles         = 100
	benchProcesses     = 10
	benchUserEvery     = 1000
	benchPage          = 50
)

// BenchmarkWorklist measures ListWorklist pages over a large worklist
// table: benchWorklistItems open items (GOXPDL_WORKLIST_ITEMS overrides the
// count), stored once per database before the sub-benchmarks run, for a
// user who sees them directly and through two roles. Each operation is one
// page of 50: the first page, a page deep into the list (after a cursor
// 5,000 items in), and the first page of one process.
//
//	make bench-worklist
//	GOXPDL_MYSQL_DSN='root:@tcp(127.0.0.1:3306)/test' make bench-worklist
func BenchmarkWorklist(b *testing.B) {
	n := benchWorklistItems
	if v := os.Getenv(worklistItemsEnv); v != "" {
		var err error
		n, err = strconv.Atoi(v)
		require.NoError(b, err, worklistItemsEnv)
	}
	me := []store.Principal{
		{Kind: store.PrincipalUser, ID: "u1"},
		{Kind: store.PrincipalRole, ID: benchRole(0)},
		{Kind: store.PrincipalRole, ID: benchRole(1)},
	}
	for _, d := range []dialect{{"SQLite", openSQLiteFile}, {"MySQL", openMySQL}} {
		b.Run(d.name, func(b *testing.B) {
			db := d.open(b) // skips, with the reason, without GOXPDL_MYSQL_DSN
			s := newStore(b, db)
			ctx := b.Context()
			start := time.Now()
			sqlDB, err := db.DB()
			require.NoError(b, err)
			populateWorklist(ctx, b, sqlDB, n)
			b.Logf("%s: stored %d open work items in %v", d.name, n, time.Since(start).Round(time.Millisecond))

			// The cursor 5,000 items in (fewer when the worklist is
			// short: a full page before the end), found by walking.
			var walked []store.WorkItem
			for len(walked) < 5000 {
				var after *store.WorklistCursor
				if len(walked) > 0 {
					last := walked[len(walked)-1]
					after = &store.WorklistCursor{Priority: last.Priority, ID: last.ID}
				}
				page, err := s.ListWorklist(ctx, store.ListWorklistParams{Principals: me, Limit: store.MaxWorklistLimit, After: after})
				require.NoError(b, err)
				walked = append(walked, page...)
				if len(page) < store.MaxWorklistLimit {
					break
				}
			}
			require.Greater(b, len(walked), 2*benchPage, "the user's worklist is too short to measure")
			at := walked[min(5000, len(walked)-benchPage)-1]
			deep := &store.WorklistCursor{Priority: at.Priority, ID: at.ID}
			for _, bm := range []struct {
				name   string
				params store.ListWorklistParams
			}{
				{"FirstPage", store.ListWorklistParams{Principals: me, Limit: benchPage}},
				{"AfterCursor", store.ListWorklistParams{Principals: me, Limit: benchPage, After: deep}},
				{"ProcessFilter", store.ListWorklistParams{Principals: me, ProcessDefIDs: []string{benchProcess(3)}, Limit: benchPage}},
			} {
				b.Run(bm.name, func(b *testing.B) {
					page := explainWorklist(ctx, b, db, s, bm.params)
					require.NotEmpty(b, page)
					b.ReportAllocs()
					b.ResetTimer()
					for b.Loop() {
						if _, err := s.ListWorklist(ctx, bm.params); err != nil {
							b.Fatal(err)
						}
					}
				})
			}
		})
	}
}

func benchRole(i int) string    { return fmt.Sprintf("role-%03d", i) }
func benchProcess(i int) string { return fmt.Sprintf("proc-%d", i) }

// populateWorklist stores n open work items with ids 1 to n and their
// visibility rows, in multi-row INSERTs (50 items a statement) and
// transactions of 50,000 items. It writes the tables directly, as
// gormstore's models lay them out, because a million InsertWorkItem calls
// would take minutes; the sub-benchmarks check that ListWorklist reads
// the result.
func populateWorklist(ctx context.Context, b *testing.B, db *sql.DB, n int) {
	b.Helper()
	const (
		// The SQLite driver binds arguments in time quadratic in their
		// number per statement, so statements stay short.
		perStatement = 50
		perTx        = 50_000
	)
	itemCols := []string{
		"id", "process_instance_id", "activity_instance_id", "process_def_id", "activity_def_id", "name", "state",
		"performer", "assignees", "owner", "priority", "due_at", "version", "completed_by", "completion_key", "suspended_from", "result",
		"created_at", "updated_at", "ended_at",
	}
	visCols := []string{"principal_kind", "principal_id", "neg_priority", "work_item_id", "process_def_id", "activity_def_id", "state", "due_at"}
	rng := rand.New(rand.NewPCG(7, 11))
	created := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	for txStart := 1; txStart <= n; txStart += perTx {
		tx, err := db.BeginTx(ctx, nil)
		require.NoError(b, err)
		for stStart := txStart; stStart < txStart+perTx && stStart <= n; stStart += perStatement {
			var items, vis []any
			rows, visRows := 0, 0
			for id := stStart; id < stStart+perStatement && id < txStart+perTx && id <= n; id++ {
				role := benchRole(rng.IntN(benchRoles))
				process, activity := benchProcess(rng.IntN(benchProcesses)), fmt.Sprintf("act-%d", rng.IntN(5))
				priority := 0 // most items keep the default priority
				if rng.IntN(5) == 0 {
					priority = 1 + rng.IntN(9)
				}
				var due any
				if rng.IntN(4) == 0 {
					due = created.Add(time.Duration(rng.IntN(30*24)) * time.Hour)
				}
				items = append(items, id, id, id, process, activity, "Check order "+strconv.Itoa(id), "Offered",
					"clerk", []byte(`[{"kind":"role","id":"`+role+`"}]`), "", priority, due, 1, "", "", "", nil,
					created, created, nil)
				rows++
				vis = append(vis, string(store.PrincipalRole), role, -priority, id, process, activity, "Offered", due)
				visRows++
				if id%benchUserEvery == 0 {
					vis = append(vis, string(store.PrincipalUser), "u1", -priority, id, process, activity, "Offered", due)
					visRows++
				}
			}
			benchInsert(ctx, b, tx, "goxpdl_work_items", itemCols, rows, items)
			benchInsert(ctx, b, tx, "goxpdl_work_item_visibility", visCols, visRows, vis)
		}
		require.NoError(b, tx.Commit())
	}
}

// benchInsert inserts rows rows of cols, whose values are args in order,
// as one statement.
func benchInsert(ctx context.Context, b *testing.B, tx *sql.Tx, table string, cols []string, rows int, args []any) {
	b.Helper()
	row := "(" + strings.TrimSuffix(strings.Repeat("?,", len(cols)), ",") + ")"
	q := "INSERT INTO " + table + " (" + strings.Join(cols, ",") + ") VALUES " + strings.TrimSuffix(strings.Repeat(row+",", rows), ",")
	_, err := tx.ExecContext(ctx, q, args...)
	require.NoError(b, err, table)
}

// explainWorklist runs ListWorklist once, catching the statement it sends,
// and logs the database's plan for it (EXPLAIN on MySQL, EXPLAIN QUERY PLAN
// on SQLite), so that a run shows which indexes a page reads.
func explainWorklist(ctx context.Context, b *testing.B, db *gorm.DB, s *gormstore.Store, params store.ListWorklistParams) []store.WorkItem {
	b.Helper()
	var stmts []string
	var vars [][]any
	const name = "bench:explain"
	require.NoError(b, db.Callback().Row().Before("gorm:row").Register(name, func(tx *gorm.DB) {
		stmts = append(stmts, tx.Statement.SQL.String())
		vars = append(vars, slices.Clone(tx.Statement.Vars))
	}))
	page, err := s.ListWorklist(ctx, params)
	require.NoError(b, db.Callback().Row().Remove(name))
	require.NoError(b, err)

	explain := "EXPLAIN "
	if s.Capabilities().Dialect == store.DialectSQLite {
		explain = "EXPLAIN QUERY PLAN "
	}
	for i, stmt := range stmts {
		rows, err := db.WithContext(ctx).Raw(explain+stmt, vars[i]...).Rows()
		require.NoError(b, err)
		cols, err := rows.Columns()
		require.NoError(b, err)
		plan := []string{strings.Join(cols, " | ")}
		for rows.Next() {
			vals := make([]sql.NullString, len(cols))
			ptrs := make([]any, len(cols))
			for j := range vals {
				ptrs[j] = &vals[j]
			}
			require.NoError(b, rows.Scan(ptrs...))
			line := make([]string, len(vals))
			for j, v := range vals {
				line[j] = cmp.Or(v.String, "-")
			}
			plan = append(plan, strings.Join(line, " | "))
		}
		require.NoError(b, rows.Err())
		require.NoError(b, rows.Close())
		b.Logf("%s\n%s", stmt, strings.Join(plan, "\n"))
	}
	return page
}
