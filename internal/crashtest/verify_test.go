package main

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"
	"gorm.io/gorm"

	"github.com/goxpdl/goxpdl/store/gormstore"
)

func TestMain(m *testing.M) {
	// ants starts a default pool of its own when its package is
	// initialised; the engine's pools are released by Stop and checked.
	goleak.VerifyTestMain(m, goleak.IgnoreCurrent())
}

// testDefs is the crash test's load, seen from this package's folder.
const testDefs = "../../testdata/crash"

func TestReadLoad(t *testing.T) {
	t.Parallel()
	l, err := readLoad(testDefs)
	require.NoError(t, err)
	require.Equal(t, []rootProcess{{"crash_claim", "claim"}, {"crash_order", "order"}}, l.roots)

	order := l.procs["order"]
	require.Equal(t, []string{"A1", "A2", "A3", "B1", "B2", "A4"}, order.tools)
	require.Equal(t, []string{"Join"}, order.joins)
	require.Equal(t, []string{"Check", "Approve"}, order.manual)
	require.Equal(t, []string{"Fulfil"}, order.subflows)
	require.Len(t, order.activities, 13)

	claim := l.procs["claim"]
	require.Equal(t, []string{"Join"}, claim.joins)
	require.Equal(t, []string{"Late"}, claim.optional, "the target of the deadline's exception transition need not run")
	require.Len(t, claim.tools, 6)
}

// fixture is a finished crash-test load: an engine database and a call
// journal, closed, to be copied by each test that doctors them.
type fixture struct {
	dir       string
	instances int
}

// runFixture runs a node (the code the orchestrator starts) on fresh
// SQLite files until every instance of a small load has finished.
func runFixture(t *testing.T) fixture {
	t.Helper()
	f := fixture{dir: t.TempDir(), instances: 4}
	cfg := nodeConfig{
		db: sqlitePrefix + filepath.Join(f.dir, "engine.db"), journal: sqlitePrefix + filepath.Join(f.dir, "journal.db"),
		id: "node-1", defs: testDefs, instances: f.instances, driverPause: 5 * time.Millisecond,
	}
	// The journal's table exists before the node calls the application,
	// as the orchestrator makes sure.
	jdb, err := openDB(cfg.journal)
	require.NoError(t, err)
	require.NoError(t, migrateJournal(jdb))
	closeDB(jdb)

	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	nodeCtx, stopNode := context.WithCancel(ctx)
	nodeErr := make(chan error, 1)
	go func() { nodeErr <- runNode(nodeCtx, cfg, slog.New(slog.NewTextHandler(io.Discard, nil))) }()

	db, err := gormstore.OpenSQLite(filepath.Join(f.dir, "engine.db"))
	require.NoError(t, err)
	p := probe{db: db}
	var done bool
	for !done && ctx.Err() == nil {
		s, err := p.status(ctx) // fails until the node has migrated
		done = err == nil && s.done(f.instances)
		if !done {
			_ = pause(ctx, 10*time.Millisecond)
		}
	}
	closeDB(db)
	stopNode()
	require.NoError(t, <-nodeErr)
	require.True(t, done, "the load did not finish: %v", ctx.Err())
	return f
}

// open copies the fixture's files into a new folder and opens them.
func (f fixture) open(t *testing.T) (db, jdb *gorm.DB) {
	t.Helper()
	dir := t.TempDir()
	for _, name := range []string{"engine.db", "journal.db"} {
		for _, suffix := range []string{"", "-wal"} {
			data, err := os.ReadFile(filepath.Join(f.dir, name+suffix))
			if suffix != "" && errors.Is(err, os.ErrNotExist) {
				continue
			}
			require.NoError(t, err)
			require.NoError(t, os.WriteFile(filepath.Join(dir, name+suffix), data, 0o600))
		}
	}
	db, err := gormstore.OpenSQLite(filepath.Join(dir, "engine.db"))
	require.NoError(t, err)
	t.Cleanup(func() { closeDB(db) })
	jdb, err = gormstore.OpenSQLite(filepath.Join(dir, "journal.db"))
	require.NoError(t, err)
	t.Cleanup(func() { closeDB(jdb) })
	return db, jdb
}

// doctorSQL runs a doctoring statement.
func doctorSQL(t *testing.T, db *gorm.DB, sql string, args ...any) {
	t.Helper()
	res := db.Exec(sql, args...)
	require.NoError(t, res.Error)
	require.Positive(t, res.RowsAffected, "the statement changed nothing: %s", sql)
}

// failed returns the names of the checks that failed.
func failed(v verification) []string {
	var out []string
	for _, c := range v.Checks {
		if !c.OK {
			out = append(out, c.Name)
		}
	}
	return out
}

func TestVerify(t *testing.T) {
	t.Parallel()
	l, err := readLoad(testDefs)
	require.NoError(t, err)
	f := runFixture(t)

	tests := []struct {
		name string
		// roots is the number of root instances to verify against
		// (default: the fixture's).
		roots  int
		doctor func(t *testing.T, db, jdb *gorm.DB)
		check  func(t *testing.T, v verification)
	}{
		{
			name: "a clean run passes",
			check: func(t *testing.T, v verification) {
				require.Empty(t, failed(v))
				require.True(t, v.passed())
				require.Equal(t, 4, v.Roots)
				require.Equal(t, 8, v.Instances, "each root has one subflow instance")
				require.EqualValues(t, 4*8, v.AppCalls, "eight tool activities per root with its subflow")
				require.Zero(t, v.DuplicateAppCalls)
			},
		},
		{
			name: "an activity completed twice is a duplicated transition",
			doctor: func(t *testing.T, db, _ *gorm.DB) {
				// The transition to Completed again, on its own (the
				// first one may be the end of a run: Initiated, via
				// Active, to Completed).
				doctorSQL(t, db, `INSERT INTO goxpdl_history (process_instance_id, activity_instance_id, work_item_id, subject, from_state, to_state, actor, data, at)
					SELECT process_instance_id, activity_instance_id, work_item_id, subject, 'Active', to_state, actor, data, at
					FROM goxpdl_history WHERE id = (SELECT MIN(id) FROM goxpdl_history WHERE subject = 'activity' AND to_state = 'Completed')`)
			},
			check: func(t *testing.T, v verification) {
				require.Equal(t, 1, v.DuplicatedHistory)
				require.Equal(t, 1, v.DuplicatedTransitions)
				require.Zero(t, v.Lost)
				require.ElementsMatch(t, []string{"completed once in the history", "no duplicated transitions"}, failed(v))
				require.False(t, v.passed())
			},
		},
		{
			name: "an AND-join instantiated twice",
			doctor: func(t *testing.T, db, _ *gorm.DB) {
				doctorSQL(t, db, `INSERT INTO goxpdl_activity_instances (process_instance_id, activity_def_id, activity_set_id, state, attempt, version, diagnosis, created_at, updated_at)
					SELECT process_instance_id, activity_def_id, activity_set_id, state, attempt, version, diagnosis, created_at, updated_at
					FROM goxpdl_activity_instances WHERE id = (SELECT MIN(id) FROM goxpdl_activity_instances WHERE activity_def_id = 'Join')`)
			},
			check: func(t *testing.T, v verification) {
				require.Equal(t, 1, v.DuplicatedActivities)
				require.Equal(t, 1, v.DuplicatedJoins)
				require.Contains(t, failed(v), "AND-joins once per instance")
				require.False(t, v.passed())
			},
		},
		{
			name:  "a root instance never created is lost",
			roots: 5,
			check: func(t *testing.T, v verification) {
				require.Equal(t, 1, v.LostInstances)
				require.Equal(t, 1, v.Lost)
				require.Equal(t, []string{"instances"}, failed(v))
				require.False(t, v.passed())
			},
		},
		{
			name: "an instance left unfinished is lost",
			doctor: func(t *testing.T, db, _ *gorm.DB) {
				doctorSQL(t, db, "UPDATE goxpdl_process_instances SET state = 'Running' WHERE id = (SELECT MAX(id) FROM goxpdl_process_instances)")
			},
			check: func(t *testing.T, v verification) {
				require.Equal(t, 1, v.LostInstances)
				require.Contains(t, failed(v), "instances")
				require.False(t, v.passed())
			},
		},
		{
			name: "an activity that never ran is lost",
			doctor: func(t *testing.T, db, _ *gorm.DB) {
				doctorSQL(t, db, "DELETE FROM goxpdl_activity_instances WHERE id = (SELECT MIN(id) FROM goxpdl_activity_instances WHERE activity_def_id = 'P2')")
			},
			check: func(t *testing.T, v verification) {
				require.Equal(t, 1, v.LostActivities)
				require.Contains(t, failed(v), "activities once per instance")
				require.False(t, v.passed())
			},
		},
		{
			name: "a lost update of the counter",
			doctor: func(t *testing.T, db, _ *gorm.DB) {
				doctorSQL(t, db, "UPDATE goxpdl_variables SET value = ? WHERE name = 'n' AND process_instance_id = (SELECT MIN(id) FROM goxpdl_process_instances)", []byte("1"))
			},
			check: func(t *testing.T, v verification) {
				require.Equal(t, 1, v.LostUpdates)
				require.Equal(t, []string{"counter"}, failed(v))
				require.False(t, v.passed())
			},
		},
		{
			name: "a repeated application call is counted and allowed",
			doctor: func(t *testing.T, _, jdb *gorm.DB) {
				doctorSQL(t, jdb, `INSERT INTO crash_calls (idempotency_key, process_instance_id, activity_instance_id, activity_def_id, node_id, at)
					SELECT idempotency_key, process_instance_id, activity_instance_id, activity_def_id, node_id, at FROM crash_calls WHERE id = 1`)
			},
			check: func(t *testing.T, v verification) {
				require.EqualValues(t, 1, v.DuplicateAppCalls)
				require.Empty(t, failed(v))
				require.True(t, v.passed())
			},
		},
		{
			name: "an open work item and a pending timer are left over",
			doctor: func(t *testing.T, db, _ *gorm.DB) {
				doctorSQL(t, db, "UPDATE goxpdl_work_items SET state = 'Offered' WHERE id = (SELECT MIN(id) FROM goxpdl_work_items)")
				doctorSQL(t, db, `INSERT INTO goxpdl_timers (process_instance_id, activity_instance_id, definition_id, kind, timer_key, state, due_at, fire_count, created_at)
					SELECT id, 0, definition_id, 'deadline', 'k', 'pending', created_at, 0, created_at FROM goxpdl_process_instances WHERE id = (SELECT MIN(id) FROM goxpdl_process_instances)`)
			},
			check: func(t *testing.T, v verification) {
				require.ElementsMatch(t, []string{"work items", "no open work items", "no timers of finished instances"}, failed(v))
				require.False(t, v.passed())
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			db, jdb := f.open(t)
			if tt.doctor != nil {
				tt.doctor(t, db, jdb)
			}
			roots := f.instances
			if tt.roots != 0 {
				roots = tt.roots
			}
			v, err := verify(t.Context(), db, jdb, l, roots)
			require.NoError(t, err)
			tt.check(t, v)
		})
	}
}
