package engine_test

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"gorm.io/gorm"

	"github.com/goxpdl/goxpdl/engine"
	"github.com/goxpdl/goxpdl/store"
	"github.com/goxpdl/goxpdl/store/dbtest"
	"github.com/goxpdl/goxpdl/store/gormstore"
	"github.com/goxpdl/goxpdl/timer"
	"github.com/goxpdl/goxpdl/wftype"
	"github.com/goxpdl/goxpdl/xpdl/xpdltest"
)

// The console's reads at scale (issue #20): BenchmarkConsoleReads loads
// process instances straight through the store (multi-row inserts, no
// process runs) and measures p50 and p99 of each read the dashboard and
// the instance list make.
//
//	GOXPDL_BENCH_MILLION=1 go test -run '^$' -bench BenchmarkConsoleReads -benchtime 1x -timeout 2h ./engine/
//
// loads 1,000,000 instances (GOXPDL_BENCH_INSTANCES sets another number;
// without either it loads 5,000, so that `make bench-smoke` keeps it
// working in seconds). GOXPDL_BENCH_ITERS (default 200) is how often each
// read runs. GOXPDL_BENCH_SQLITE names a SQLite file and
// GOXPDL_BENCH_MYSQL_DB a MySQL database (on GOXPDL_MYSQL_DSN's server)
// to keep the data in: a later run that finds the instances there skips
// the loading.
//
// The data: 8 packages of 4 versions (32 deployments) of two processes;
// the instances started 2.5 s apart, the last now (a million span 29
// days), 70% completed, 8% terminated, 1% locked, 15% running, 4%
// suspended, 2% initiated; every second one has a business key, every
// 20th is a subflow of another; every open one has an activity and a
// pending deadline, every 10th completed one three activities; one
// running instance in 53 has an incident (four causes in turn), and
// every locked one a locking incident; 200 events wait in the outbox.
func BenchmarkConsoleReads(b *testing.B) {
	n := 5000
	if os.Getenv("GOXPDL_BENCH_MILLION") == "1" {
		n = 1_000_000
	}
	n = benchEnvInt(b, "GOXPDL_BENCH_INSTANCES", n)
	iters := benchEnvInt(b, "GOXPDL_BENCH_ITERS", 200)
	for _, d := range []struct {
		name string
		open func(testing.TB) *gorm.DB
	}{{"SQLite", benchSQLite}, {"MySQL", benchMySQL}} {
		b.Run(d.name, func(b *testing.B) {
			db := d.open(b)
			clock := timer.NewFake(consoleNow)
			e, err := engine.New(engine.Config{DB: db, Clock: clock, Logger: slog.New(slog.NewTextHandler(io.Discard, nil)), RescueInterval: -1})
			require.NoError(b, err)
			ctx := b.Context()
			loadConsoleData(ctx, b, e, n)
			benchConsoleReads(ctx, b, e, db, n, iters)
		})
	}
}

// consoleNow is the engine clock's time in BenchmarkConsoleReads.
var consoleNow = time.Date(2026, 11, 20, 12, 0, 30, 0, time.UTC)

func benchSQLite(tb testing.TB) *gorm.DB {
	path := os.Getenv("GOXPDL_BENCH_SQLITE")
	if path == "" {
		return dbtest.OpenSQLite(tb)
	}
	db, err := gormstore.OpenSQLite(path)
	require.NoError(tb, err)
	tb.Cleanup(func() {
		if sqlDB, err := db.DB(); err == nil {
			_ = sqlDB.Close()
		}
	})
	return db
}

func benchMySQL(tb testing.TB) *gorm.DB {
	name := os.Getenv("GOXPDL_BENCH_MYSQL_DB")
	if name == "" {
		return dbtest.OpenMySQL(tb)
	}
	cfg, err := gormstore.ParseMySQLDSN(dbtest.MySQLDSN(tb))
	require.NoError(tb, err)
	admin, err := gormstore.OpenMySQL(cfg.FormatDSN())
	require.NoError(tb, err)
	require.NoError(tb, admin.Exec("CREATE DATABASE IF NOT EXISTS `"+name+"` CHARACTER SET utf8mb4 COLLATE utf8mb4_bin").Error)
	if sqlDB, err := admin.DB(); err == nil {
		_ = sqlDB.Close()
	}
	cfg.DBName = name
	db, err := gormstore.OpenMySQL(cfg.FormatDSN())
	require.NoError(tb, err)
	tb.Cleanup(func() {
		if sqlDB, err := db.DB(); err == nil {
			_ = sqlDB.Close()
		}
	})
	return db
}

// consolePackages and consoleVersions make the deployments.
const (
	consolePackages = 8
	consoleVersions = 4
)

func consoleXPDL(pkg int) string {
	wait := xpdltest.Activity("Review", `<Implementation><No/></Implementation><Performer>clerk</Performer>`, "", "")
	src := xpdltest.Package(xpdltest.Process("order", "", wait, "") + xpdltest.Process("refund", "", wait, ""))
	return strings.Replace(src, `Id="pkg"`, `Id="pkg`+strconv.Itoa(pkg)+`"`, 1)
}

// consoleState is the state of the i-th instance (the mix above).
func consoleState(i int) wftype.ProcessState {
	switch r := (i * 7919) % 100; {
	case r < 70:
		return wftype.ProcessCompleted
	case r < 78:
		return wftype.ProcessTerminated
	case r < 79:
		return wftype.ProcessLocking
	case r < 94:
		return wftype.ProcessRunning
	case r < 98:
		return wftype.ProcessSuspended
	default:
		return wftype.ProcessInitiated
	}
}

// consoleCreated is when the i-th of n instances started.
func consoleCreated(i, n int) time.Time {
	return consoleNow.Add(-time.Duration(n-1-i) * 2500 * time.Millisecond)
}

// loadConsoleData deploys the packages and loads n instances, unless the
// database has them already.
func loadConsoleData(ctx context.Context, b *testing.B, e *engine.Engine, n int) {
	b.Helper()
	st := e.Store()
	have, err := st.CountProcessInstancesByState(ctx)
	require.NoError(b, err)
	total := int64(0)
	for _, c := range have {
		total += c
	}
	if total >= int64(n) {
		b.Logf("%d instances found; not loading", total)
		return
	}
	require.Zero(b, total, "a partly loaded database: drop it")
	start := time.Now()
	var defs []store.Definition
	for p := range consolePackages {
		for range consoleVersions {
			d, err := e.Deploy(ctx, []byte(consoleXPDL(p)))
			require.NoError(b, err)
			def, err := st.GetDefinition(ctx, d.ID)
			require.NoError(b, err)
			defs = append(defs, def)
		}
	}
	causes := []engine.IncidentCause{engine.CauseApplication, engine.CauseFailing, engine.CauseCondition, engine.CauseSubflow}
	const chunk = 5000
	var lastID int64
	var acts, timers, incidents int
	for from := 0; from < n; from += chunk {
		to := min(from+chunk, n)
		rows := make([]store.ProcessInstance, 0, to-from)
		for i := from; i < to; i++ {
			state := consoleState(i)
			created := consoleCreated(i, n)
			def := defs[(i*31)%len(defs)]
			pi := store.ProcessInstance{
				ID: int64(i + 1), DefinitionID: def.ID, ProcessDefID: "order", State: string(state), Version: 1,
				CreatedAt: created, UpdatedAt: created,
			}
			if i%5 == 4 {
				pi.ProcessDefID = "refund"
			}
			if i%2 == 0 {
				pi.BusinessKey = "order-" + strconv.Itoa(i)
			}
			if i%20 == 19 && lastID > 0 {
				parent := lastID - int64(i%1000)
				pi.ParentInstanceID = &parent
			}
			if state.IsFinal() {
				ended := created.Add(time.Duration(1+(i*13)%600) * time.Second)
				if ended.After(consoleNow) {
					ended = consoleNow
				}
				pi.EndedAt, pi.UpdatedAt = &ended, ended
				if state == wftype.ProcessLocking {
					pi.Diagnosis = "no transition of activity Review fired"
				}
			} else {
				pi.Tokens = []byte(strings.Repeat("t", 200))
			}
			rows = append(rows, pi)
		}
		stored, err := st.InsertProcessInstances(ctx, rows)
		require.NoError(b, err)
		lastID = stored[len(stored)-1].ID
		var actRows []store.ActivityInstance
		var timerRows []store.Timer
		var incRows []store.Incident
		for k, pi := range stored {
			i := from + k
			state := wftype.ProcessState(pi.State)
			switch {
			case !state.IsFinal():
				actRows = append(actRows, store.ActivityInstance{
					ID: int64(acts + len(actRows) + 1), ProcessInstanceID: pi.ID, ActivityDefID: "Review", State: string(wftype.ActivityWaiting),
					Attempt: 1, CreatedAt: pi.CreatedAt, UpdatedAt: pi.CreatedAt,
				})
				timerRows = append(timerRows, store.Timer{
					ID: int64(timers + len(timerRows) + 1), ProcessInstanceID: pi.ID, DefinitionID: pi.DefinitionID, Kind: "deadline", Key: "0",
					State: store.TimerPending, DueAt: consoleNow.Add(time.Duration(i%1000-3) * time.Minute), CreatedAt: pi.CreatedAt,
				})
				if state == wftype.ProcessRunning && i%53 == 0 {
					incRows = append(incRows, consoleIncident(pi, string(causes[(i/53)%len(causes)])))
				}
			case state == wftype.ProcessCompleted && i%10 == 0:
				for _, a := range []string{"Receive", "Check", "Review"} {
					actRows = append(actRows, store.ActivityInstance{
						ID: int64(acts + len(actRows) + 1), ProcessInstanceID: pi.ID, ActivityDefID: a, State: string(wftype.ActivityCompleted),
						Attempt: 1, CreatedAt: pi.CreatedAt, UpdatedAt: *pi.EndedAt, EndedAt: pi.EndedAt,
					})
				}
			case state == wftype.ProcessLocking:
				incRows = append(incRows, consoleIncident(pi, string(engine.CauseLocking)))
			}
		}
		require.NoError(b, st.InTx(ctx, func(ctx context.Context, tx store.Tx) error {
			if _, err := tx.InsertActivityInstances(ctx, actRows); err != nil {
				return err
			}
			if _, err := tx.InsertTimers(ctx, timerRows); err != nil {
				return err
			}
			for k, inc := range incRows {
				inc.ID = int64(incidents + k + 1)
				if _, _, err := tx.RecordIncident(ctx, inc); err != nil {
					return err
				}
			}
			return nil
		}))
		acts, timers, incidents = acts+len(actRows), timers+len(timerRows), incidents+len(incRows)
	}
	events := make([]store.Event, 200)
	for i := range events {
		at := consoleNow.Add(-3*time.Second + time.Duration(i)*time.Millisecond)
		events[i] = store.Event{
			ID: int64(i + 1), EventID: fmt.Sprintf("bench-%d", i), ProcessInstanceID: lastID - int64(i), Kind: "activity.start",
			CreatedAt: at, AvailableAt: at,
		}
	}
	_, err = st.InsertEvents(ctx, events)
	require.NoError(b, err)
	loaded := time.Since(start)
	for {
		k, err := st.FoldInstanceCounts(ctx, 10_000)
		require.NoError(b, err)
		if k < 10_000 {
			break
		}
	}
	b.Logf("loaded %d instances, %d activities, %d timers, %d incidents, %d events in %v (folding the counts: %v more)",
		n, acts, timers, incidents, len(events), loaded.Round(time.Second), (time.Since(start) - loaded).Round(time.Millisecond))
}

func consoleIncident(pi store.ProcessInstance, cause string) store.Incident {
	return store.Incident{
		ProcessInstanceID: pi.ID, ActivityDefID: "Review", Cause: cause, Error: "bench", Attempts: 1,
		LastFailureAt: pi.UpdatedAt,
	}
}

// benchConsoleReads runs each read iters times and reports its p50 and
// p99 in milliseconds.
func benchConsoleReads(ctx context.Context, b *testing.B, e *engine.Engine, db *gorm.DB, n, iters int) {
	b.Helper()
	mid, err := e.Instance(ctx, int64(n/2))
	require.NoError(b, err)
	midStarted := strconv.FormatInt(mid.StartedAt.UnixMicro(), 10) + "." + strconv.FormatInt(mid.ID, 10)
	dayFrom := consoleCreated(n/3, n)
	defs, err := e.Store().ListDefinitions(ctx, store.ListDefinitionsParams{PackageID: "pkg3"})
	require.NoError(b, err)
	running := []wftype.ProcessState{wftype.ProcessRunning}
	page := func(f engine.InstanceFilter, want int) func() error {
		f.Limit = 50
		return func() error {
			p, err := e.Instances(ctx, f)
			if err == nil && len(p.Instances) < want {
				err = fmt.Errorf("%d instances, want %d", len(p.Instances), want)
			}
			return err
		}
	}
	count := func(f engine.InstanceFilter, upTo int64) func() error {
		return func() error {
			_, err := e.CountInstances(ctx, f, upTo)
			return err
		}
	}
	full := min(50, n/100) // the filtered pages hold at least this many
	reads := []struct {
		name string
		fn   func() error
	}{
		{"overview", func() error { _, err := e.Overview(ctx); return err }},
		{"page/id", page(engine.InstanceFilter{}, full)},
		{"page/-id", page(engine.InstanceFilter{Sort: engine.SortIDDesc}, full)},
		{"page/started", page(engine.InstanceFilter{Sort: engine.SortStarted}, full)},
		{"page/-started", page(engine.InstanceFilter{Sort: engine.SortStartedDesc}, full)},
		{"deep/id", page(engine.InstanceFilter{After: mid.ID}, full)},
		{"deep/-started", page(engine.InstanceFilter{Sort: engine.SortStartedDesc, Cursor: midStarted}, full)},
		{"state/-id", page(engine.InstanceFilter{States: running, Sort: engine.SortIDDesc}, full)},
		{"state/-started", page(engine.InstanceFilter{States: running, Sort: engine.SortStartedDesc}, full)},
		{"definition/-id", page(engine.InstanceFilter{DefinitionID: defs[0].ID, Sort: engine.SortIDDesc}, full)},
		{"definition/-started", page(engine.InstanceFilter{DefinitionID: defs[0].ID, Sort: engine.SortStartedDesc}, full)},
		{"package/-id", page(engine.InstanceFilter{Package: "pkg3", Sort: engine.SortIDDesc}, full)},
		{"package+state/-id", page(engine.InstanceFilter{Package: "pkg3", States: running, Sort: engine.SortIDDesc}, full)},
		{"businesskey", page(engine.InstanceFilter{BusinessKey: "order-" + strconv.Itoa(n/2)}, 1)},
		{"started-day/-started", page(engine.InstanceFilter{StartedAfter: dayFrom, StartedBefore: dayFrom.Add(24 * time.Hour), Sort: engine.SortStartedDesc}, full)},
		{"started-day/id", page(engine.InstanceFilter{StartedAfter: dayFrom, StartedBefore: dayFrom.Add(24 * time.Hour)}, full)},
		{"incident/-id", page(engine.InstanceFilter{IncidentCause: engine.CauseApplication, Sort: engine.SortIDDesc}, 1)},
		{"count/all", count(engine.InstanceFilter{}, 0)},
		{"count/state", count(engine.InstanceFilter{States: running}, 0)},
		{"count/package+state", count(engine.InstanceFilter{Package: "pkg3", States: running}, 0)},
		{"count/started-day<=10000", count(engine.InstanceFilter{StartedAfter: dayFrom, StartedBefore: dayFrom.Add(24 * time.Hour)}, 10_000)},
		{"count/incident<=10000", count(engine.InstanceFilter{IncidentCause: engine.CauseApplication}, 10_000)},
		// What the counts cost without the store's counts per state.
		{"naive/count-group-by-state", func() error {
			var rows []struct{ N int64 }
			return db.WithContext(ctx).Raw("SELECT state, COUNT(*) AS n FROM goxpdl_process_instances GROUP BY state").Scan(&rows).Error
		}},
		{"naive/count-group-by-definition", func() error {
			var rows []struct{ N int64 }
			return db.WithContext(ctx).Raw("SELECT definition_id, process_def_id, state, COUNT(*) AS n FROM goxpdl_process_instances GROUP BY definition_id, process_def_id, state").Scan(&rows).Error
		}},
	}
	var table strings.Builder
	for _, r := range reads {
		b.Run(r.name, func(b *testing.B) {
			runs := iters
			if strings.HasPrefix(r.name, "naive/") {
				runs = max(10, iters/10) // seconds each at a million
			}
			for range b.N {
				took := make([]time.Duration, runs)
				for i := range took {
					start := time.Now()
					require.NoError(b, r.fn(), r.name)
					took[i] = time.Since(start)
				}
				slices.Sort(took)
				p50, p99 := took[len(took)/2], took[(len(took)*99+99)/100-1]
				b.ReportMetric(float64(p50.Microseconds())/1000, "p50-ms")
				b.ReportMetric(float64(p99.Microseconds())/1000, "p99-ms")
				fmt.Fprintf(&table, "%-34s p50 %8.2f ms   p99 %8.2f ms\n", r.name, float64(p50.Microseconds())/1000, float64(p99.Microseconds())/1000)
			}
		})
	}
	b.Logf("%d instances, %d reads each (naive: a tenth):\n%s", n, iters, table.String())
}
