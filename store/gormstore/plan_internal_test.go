package gormstore

import (
	"context"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"gorm.io/gorm"
	"gorm.io/gorm/logger"

	"github.com/goxpdl/goxpdl/store"
)

// sqlRecorder is a gorm logger that keeps the text of every statement.
type sqlRecorder struct {
	logger.Interface
	mu   sync.Mutex
	sqls []string
}

func (r *sqlRecorder) LogMode(logger.LogLevel) logger.Interface { return r }

func (r *sqlRecorder) Trace(_ context.Context, _ time.Time, fc func() (string, int64), _ error) {
	sql, _ := fc()
	r.mu.Lock()
	r.sqls = append(r.sqls, sql)
	r.mu.Unlock()
}

func (r *sqlRecorder) take() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := r.sqls
	r.sqls = nil
	return out
}

// The console's reads (the instance list, its counts, the dashboard's)
// must each walk an index: at a million instances a read that scans the
// table or sorts it takes seconds instead of a millisecond
// (BenchmarkConsoleReads in package engine). This test runs every such
// read on SQLite and fails when EXPLAIN QUERY PLAN shows one of them
// without the index it was written for, or sorting in a temporary
// B-tree rather than reading rows in index order. The outbox's claim,
// which every poll runs, is held to the same.
func TestConsoleQueriesUseTheirIndexes(t *testing.T) {
	t.Parallel()
	db, err := OpenSQLite(filepath.Join(t.TempDir(), "plan.db"))
	require.NoError(t, err)
	t.Cleanup(func() {
		if sqlDB, err := db.DB(); err == nil {
			_ = sqlDB.Close()
		}
	})
	rec := &sqlRecorder{Interface: logger.Discard}
	s, err := New(db.Session(&gorm.Session{Logger: rec}))
	require.NoError(t, err)
	ctx := t.Context()
	require.NoError(t, s.Migrate(ctx))
	rec.take()

	at := time.Date(2026, 11, 20, 12, 0, 0, 0, time.UTC)
	later := at.Add(time.Hour)
	list := func(p store.ListProcessInstancesParams) func() error {
		return func() error {
			p.Limit = 51
			_, err := s.ListProcessInstances(ctx, p)
			return err
		}
	}
	running := []string{"Running"}
	for _, tc := range []struct {
		name string
		read func() error
		// want are the plan's words, one per statement the read runs:
		// each must appear in that statement's plan (all of those
		// joined by " && ").
		want []string
		// sorted: the statement must not sort in a temporary B-tree.
		sorted bool
	}{
		{"page by id", list(store.ListProcessInstancesParams{}), []string{"SCAN goxpdl_process_instances"}, true},
		{"page by id desc after a cursor", list(store.ListProcessInstancesParams{Order: store.OrderIDDesc, AfterID: 500}),
			[]string{"SEARCH goxpdl_process_instances USING INTEGER PRIMARY KEY (rowid<?)"}, true},
		{"page by start", list(store.ListProcessInstancesParams{Order: store.OrderCreated}),
			[]string{"USING INDEX goxpdl_process_instances_created"}, true},
		{"page by start desc after a cursor", list(store.ListProcessInstancesParams{Order: store.OrderCreatedDesc, AfterID: 5, AfterCreatedAt: &at}),
			[]string{"USING INDEX goxpdl_process_instances_created (created_at<?)"}, true},
		{"state by id", list(store.ListProcessInstancesParams{States: running, Order: store.OrderIDDesc}),
			[]string{"USING INDEX goxpdl_process_instances_state (state=?)"}, true},
		{"state by start", list(store.ListProcessInstancesParams{States: running, Order: store.OrderCreatedDesc, AfterID: 5, AfterCreatedAt: &at}),
			[]string{"USING INDEX goxpdl_process_instances_state_created (state=? AND created_at<?)"}, true},
		{"definition by id", list(store.ListProcessInstancesParams{DefinitionID: 3, Order: store.OrderIDDesc}),
			[]string{"USING INDEX goxpdl_process_instances_definition (definition_id=?)"}, true},
		{"definition by start", list(store.ListProcessInstancesParams{DefinitionID: 3, Order: store.OrderCreated}),
			[]string{"USING INDEX goxpdl_process_instances_definition_created (definition_id=?)"}, true},
		{"definition and state by id", list(store.ListProcessInstancesParams{DefinitionID: 3, States: running, Order: store.OrderIDDesc}),
			[]string{"USING INDEX goxpdl_process_instances_definition_state (definition_id=? AND state=?)"}, true},
		{"package", func() error {
			for i := range 2 {
				if _, err := s.InsertDefinition(ctx, store.InsertDefinitionParams{ID: int64(i + 1), PackageID: "p", Source: []byte("<Package/>"), CreatedAt: at}); err != nil {
					return err
				}
			}
			rec.take()
			return list(store.ListProcessInstancesParams{PackageID: "p", Order: store.OrderIDDesc})()
		}, []string{
			"USING COVERING INDEX goxpdl_definitions_package_version (package_id=?)",
			"MERGE (UNION ALL) && SCAN u0 && SCAN u1 && SEARCH goxpdl_process_instances USING INDEX goxpdl_process_instances_definition (definition_id=?)",
		}, false},
		{"states and version", list(store.ListProcessInstancesParams{PackageID: "p", PackageVersion: 2, States: []string{"Running", "Suspended"}, Order: store.OrderCreatedDesc}),
			[]string{
				"USING COVERING INDEX goxpdl_definitions_package_version (package_id=? AND version=?)",
				"MERGE (UNION ALL) && SCAN u0 && SCAN u1 && USING INDEX goxpdl_process_instances_definition_created (definition_id=?)",
			}, false},
		{"business key", list(store.ListProcessInstancesParams{BusinessKey: "k", Order: store.OrderCreatedDesc}),
			[]string{"USING INDEX goxpdl_process_instances_business_key (business_key=?)"}, false},
		{"started between by start", list(store.ListProcessInstancesParams{CreatedFrom: &at, CreatedBefore: &later, Order: store.OrderCreatedDesc}),
			[]string{"USING INDEX goxpdl_process_instances_created (created_at>? AND created_at<?)"}, true},
		{"started between by id", list(store.ListProcessInstancesParams{CreatedFrom: &at, CreatedBefore: &later, Order: store.OrderIDDesc}),
			[]string{"USING COVERING INDEX goxpdl_process_instances_created (created_at>? AND created_at<?) && SEARCH goxpdl_process_instances USING INTEGER PRIMARY KEY (rowid=?)"}, false},
		{"incident cause", list(store.ListProcessInstancesParams{OpenIncidentCause: "application", Order: store.OrderIDDesc}),
			[]string{"USING COVERING INDEX goxpdl_incidents_cause (state=? AND cause=?)"}, false},
		{"parent", list(store.ListProcessInstancesParams{ParentInstanceID: 7}),
			[]string{"USING INDEX goxpdl_process_instances_parent (parent_instance_id=?)"}, true},
		{"capped count by start", func() error {
			_, err := s.CountProcessInstances(ctx, store.ListProcessInstancesParams{CreatedFrom: &at, CreatedBefore: &later, Limit: 10_001})
			return err
		}, []string{"USING COVERING INDEX goxpdl_process_instances_created (created_at>? AND created_at<?)"}, false},
		{"per minute", func() error {
			_, err := s.CountProcessInstancesPerMinute(ctx, store.CountPerMinuteParams{From: at, To: later})
			return err
		}, []string{
			"USING COVERING INDEX goxpdl_process_instances_created (created_at>? AND created_at<?) && " +
				"USING COVERING INDEX goxpdl_process_instances_ended (state=? AND ended_at>? AND ended_at<?)",
		}, false},
		{"event backlog", func() error {
			_, err := s.InsertEvents(ctx, []store.Event{{ID: 1, EventID: "e", ProcessInstanceID: 1, Kind: "k", CreatedAt: at, AvailableAt: at}})
			if err == nil {
				rec.take()
				_, err = s.EventBacklog(ctx, 100)
			}
			return err
		}, []string{
			"USING COVERING INDEX goxpdl_events_unclaimed (processed_at=?)",
			"USING COVERING INDEX goxpdl_events_unclaimed (processed_at=? AND claimed_until=?)",
			"USING COVERING INDEX goxpdl_events_unclaimed (processed_at=? AND claimed_until>?)",
			"USING INTEGER PRIMARY KEY (rowid=?)",
		}, true},
		{"event claim", func() error {
			_, err := s.ClaimEvents(ctx, store.ClaimEventsParams{Owner: "o", Now: at, LeaseUntil: later, Limit: 10, Pool: store.CriticalPool})
			return err
		}, []string{
			"USING INDEX goxpdl_events_unclaimed (processed_at=? AND claimed_until<?)",
			"USING INDEX goxpdl_events_unclaimed (processed_at=? AND claimed_until=?)",
		}, true},
		{"pending timers", func() error {
			_, err := s.CountPendingTimers(ctx, store.CountTimersParams{DueBy: at, Limit: 100})
			return err
		}, []string{
			"USING COVERING INDEX goxpdl_timers_due (state=? AND due_at<?) && USING COVERING INDEX goxpdl_timers_due (state=?)",
		}, false},
		{"open incidents by cause", func() error {
			_, err := s.CountIncidents(ctx, []string{store.IncidentOpen})
			return err
		}, []string{"USING COVERING INDEX goxpdl_incidents_cause (state=?)"}, true},
	} {
		rec.take()
		require.NoError(t, tc.read(), tc.name)
		sqls := rec.take()
		require.Len(t, sqls, len(tc.want), "%s: statements %q", tc.name, sqls)
		for i, sql := range sqls {
			plan := queryPlan(t, db, sql)
			for _, want := range strings.Split(tc.want[i], " && ") {
				require.Contains(t, plan, want, "%s: %s", tc.name, sql)
			}
			if tc.sorted {
				require.NotContains(t, plan, "TEMP B-TREE", "%s sorts: %s", tc.name, sql)
			}
		}
	}
}

// queryPlan is SQLite's EXPLAIN QUERY PLAN of sql, one step a line.
func queryPlan(t *testing.T, db *gorm.DB, sql string) string {
	t.Helper()
	rows, err := db.Raw("EXPLAIN QUERY PLAN " + sql).Rows()
	require.NoError(t, err)
	defer func() { require.NoError(t, rows.Close()) }()
	var lines []string
	for rows.Next() {
		var id, parent, unused int
		var detail string
		require.NoError(t, rows.Scan(&id, &parent, &unused, &detail))
		lines = append(lines, detail)
	}
	require.NoError(t, rows.Err())
	return strings.Join(lines, "\n")
}
