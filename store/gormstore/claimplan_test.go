package gormstore_test

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"gorm.io/gorm"
	"gorm.io/gorm/logger"

	"github.com/goxpdl/goxpdl/store"
	"github.com/goxpdl/goxpdl/store/dbtest"
	"github.com/goxpdl/goxpdl/store/gormstore"
)

// The claim runs on every poll, and a node's pre-claimed backlog can
// hold tens of thousands of rows: each of its reads must walk
// goxpdl_events_unclaimed in the index's own order, stopping after the
// rows it needs, on every database. A sort would read (and on MySQL,
// lock) every claimable event. This asks each database for its plan of
// the statements ClaimEvents and EventBacklog send.
func TestClaimWalksTheIndexInOrder(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, db *gorm.DB) {
		ctx := t.Context()
		rec := &gormstore.SQLRecorder{Interface: logger.Discard}
		s := newStore(t, db.Session(&gorm.Session{Logger: rec}))

		// Processed, pre-claimed and unclaimed events, enough of them
		// for the planners to prefer an index to a scan.
		t0 := time.Date(2026, 11, 27, 12, 0, 0, 0, time.UTC)
		var events []store.Event
		for i := range 600 {
			ev := store.Event{ID: int64(i + 1), EventID: fmt.Sprint("e", i), ProcessInstanceID: int64(i % 50), Kind: "k", Critical: i%2 == 0, CreatedAt: t0, AvailableAt: t0}
			if i >= 200 && i < 500 {
				ev.ClaimedBy, ev.ClaimedUntil = "node", ptrTime(t0.Add(time.Hour))
			}
			events = append(events, ev)
		}
		_, err := s.InsertEvents(ctx, events)
		require.NoError(t, err)
		var done []int64
		for i := range 200 {
			done = append(done, int64(i+1))
		}
		require.NoError(t, s.MarkEventsProcessed(ctx, store.MarkEventsProcessedParams{IDs: done, ProcessedAt: t0}))
		analyze(t, db)
		rec.Take()

		claimed, err := s.ClaimEvents(ctx, store.ClaimEventsParams{Owner: "o", Now: t0, LeaseUntil: t0.Add(time.Minute), Limit: 10, Pool: store.CriticalPool})
		require.NoError(t, err)
		require.Len(t, claimed, 10)
		require.Equal(t, int64(501), claimed[0].ID, "the first unclaimed, after the pre-claimed ones")
		backlog, err := s.EventBacklog(ctx, 1000)
		require.NoError(t, err)
		require.Equal(t, int64(400), backlog.Events)

		var selects []string
		for _, sql := range rec.Take() {
			if strings.HasPrefix(sql, "SELECT") {
				selects = append(selects, sql)
			}
		}
		require.Len(t, selects, 6, "two walks of the claim, four of the backlog: %q", selects)
		for _, sql := range selects[:5] { // the last reads one event by its ID
			plan := explain(t, db, sql)
			require.Contains(t, plan, "goxpdl_events_unclaimed", "%s\n%s", sql, plan)
			for _, sorts := range []string{"filesort", "TEMP B-TREE", "Sort"} {
				require.NotContains(t, plan, sorts, "%s\n%s", sql, plan)
			}
		}
	})
}

func ptrTime(t time.Time) *time.Time { return &t }

// analyze refreshes the planner's statistics of the outbox.
func analyze(t *testing.T, db *gorm.DB) {
	t.Helper()
	stmt := "ANALYZE goxpdl_events"
	if db.Name() == "mysql" {
		stmt = "ANALYZE TABLE goxpdl_events"
	}
	rows, err := db.Raw(stmt).Rows()
	require.NoError(t, err)
	require.NoError(t, rows.Close())
}

// explain returns the database's plan of sql, one line per row of its
// EXPLAIN, the columns joined by spaces. PostgreSQL is told to leave
// sequential and bitmap scans aside, which it would prefer on a table
// this small: the question is whether it has an ordered index path.
func explain(t *testing.T, db *gorm.DB, sql string) string {
	t.Helper()
	prefix := "EXPLAIN "
	if db.Name() == "sqlite" {
		prefix = "EXPLAIN QUERY PLAN "
	}
	var lines []string
	err := db.Transaction(func(tx *gorm.DB) error {
		if db.Name() == "postgres" {
			if err := tx.Exec("SET LOCAL enable_seqscan = off; SET LOCAL enable_bitmapscan = off").Error; err != nil {
				return err
			}
		}
		rows, err := tx.Raw(prefix + sql).Rows()
		if err != nil {
			return err
		}
		defer func() { _ = rows.Close() }()
		cols, err := rows.Columns()
		if err != nil {
			return err
		}
		for rows.Next() {
			vals := make([]any, len(cols))
			ptrs := make([]any, len(cols))
			for i := range vals {
				ptrs[i] = &vals[i]
			}
			if err := rows.Scan(ptrs...); err != nil {
				return err
			}
			var words []string
			for _, v := range vals {
				if b, ok := v.([]byte); ok {
					v = string(b)
				}
				words = append(words, fmt.Sprint(v))
			}
			lines = append(lines, strings.Join(words, " "))
		}
		return rows.Err()
	})
	require.NoError(t, err)
	return strings.Join(lines, "\n")
}
