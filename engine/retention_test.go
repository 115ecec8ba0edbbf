package engine_test

import (
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"gorm.io/gorm"

	"github.com/goxpdl/goxpdl/engine"
	"github.com/goxpdl/goxpdl/store"
	"github.com/goxpdl/goxpdl/store/dbtest"
	"github.com/goxpdl/goxpdl/timer"
	"github.com/goxpdl/goxpdl/wftype"
	"github.com/goxpdl/goxpdl/xpdl/xpdltest"
)

// retentionXPDL is package "pkg": "auto" completes at once, "keep" too,
// "manual" waits for a clerk, and "parent" runs "auto" as a SYNCHR
// subflow.
var retentionXPDL = xpdltest.Package(
	xpdltest.Process("auto", "", xpdltest.Activity("A", "<Route/>", "", ""), "") +
		xpdltest.Process("keep", "", xpdltest.Activity("A", "<Route/>", "", ""), "") +
		xpdltest.Process("manual", "", xpdltest.Activity("Wait", `<Implementation><No/></Implementation><Performer>clerk</Performer>`, "", ""), "") +
		xpdltest.Process("parent", "", xpdltest.Activity("Call", `<Implementation><SubFlow Id="auto" Execution="SYNCHR"/></Implementation>`, "", ""), ""))

// retentionHarness is an engine on a fake clock at epoch with cfg as its
// retention, and the reports of its scheduled runs.
func retentionHarness(t *testing.T, db *gorm.DB, cfg engine.Retention) (*harness, *timer.Fake, <-chan engine.PurgeReport) {
	t.Helper()
	clock := timer.NewFake(epoch)
	h := newHarness(t, db, func(c *engine.Config) {
		c.Clock, c.Location, c.Retention = clock, time.UTC, cfg
	})
	runs := make(chan engine.PurgeReport, 10)
	engine.SetRetentionRanFunc(h.e, func(rep engine.PurgeReport, err error) {
		if err != nil {
			t.Errorf("retention run: %v", err)
		}
		runs <- rep
	})
	h.start()
	h.deploy(retentionXPDL)
	h.deploy(strings.Replace(retentionXPDL, `Id="pkg"`, `Id="other"`, 1))
	return h, clock, runs
}

// finished starts an instance of pkg's process and waits for it to end.
func (h *harness) finished(pkg, proc string) int64 {
	h.t.Helper()
	id := h.startProcess(pkg, proc, nil)
	h.requireState(id, wftype.ProcessCompleted)
	return id
}

// exists reports whether the instance is still stored.
func (h *harness) exists(id int64) bool {
	h.t.Helper()
	_, err := h.e.Instance(h.ctx, id)
	if err != nil {
		require.ErrorIs(h.t, err, engine.ErrNotFound)
		return false
	}
	return true
}

// nextRun advances the clock by d, which must reach the schedule's next
// time, and returns the report of the run that follows.
func nextRun(t *testing.T, clock *timer.Fake, runs <-chan engine.PurgeReport, d time.Duration) engine.PurgeReport {
	t.Helper()
	clock.Advance(d)
	select {
	case rep := <-runs:
		return rep
	case <-t.Context().Done():
		t.Fatal("the retention schedule never fired")
		return engine.PurgeReport{}
	}
}

func TestRetentionDeletesOldFinishedInstancesOnSchedule(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, db *gorm.DB) {
		h, clock, runs := retentionHarness(t, db, engine.Retention{MaxAge: 24 * time.Hour}) // hourly
		old := h.finished("pkg", "auto")
		parent := h.finished("pkg", "parent")
		kids, err := h.e.Store().ListProcessInstances(h.ctx, store.ListProcessInstancesParams{ParentInstanceID: parent})
		require.NoError(t, err)
		require.Len(t, kids, 1)
		running := h.startProcess("pkg", "manual", nil)
		h.idle()

		// 10:00 is the first run (the clock reads 05:00 the next day when
		// it runs): nothing is a day old yet.
		require.Equal(t, engine.PurgeReport{}, nextRun(t, clock, runs, 20*time.Hour))
		young := h.finished("pkg", "auto")

		// 10:00 the next day: the instances that ended at 09:00 the day
		// before go, the subflow instance with its parent.
		rep := nextRun(t, clock, runs, 5*time.Hour)
		require.EqualValues(t, 3, rep.Instances)
		require.Equal(t, 1, rep.Batches)
		require.False(t, h.exists(old))
		require.False(t, h.exists(parent))
		require.False(t, h.exists(kids[0].ID))
		require.True(t, h.exists(young), "ended 5h ago")
		require.True(t, h.exists(running), "never finished")
		hist, err := h.e.Store().ListHistory(h.ctx, store.ListHistoryParams{ProcessInstanceID: old})
		require.NoError(t, err)
		require.Empty(t, hist, "the history goes with the instance")
		require.NotEmpty(t, h.history(running))
		require.EqualValues(t, 3, h.e.Stats().Purged)

		// The running instance stays however old it gets; the young one
		// goes when its day is over.
		rep = nextRun(t, clock, runs, 48*time.Hour)
		require.EqualValues(t, 1, rep.Instances)
		require.False(t, h.exists(young))
		require.True(t, h.exists(running))
	})
}

func TestRetentionPerProcessAges(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, db *gorm.DB) {
		h, clock, runs := retentionHarness(t, db, engine.Retention{
			MaxAge: 24 * time.Hour,
			PerProcess: map[engine.RetentionScope]time.Duration{
				{Package: "pkg", Process: "keep"}: 72 * time.Hour, // longer than the package's
				{Package: "pkg"}:                  2 * time.Hour,  // shorter than MaxAge
				{Package: "other"}:                0,              // forever
			},
			Schedule: "0 * * * *",
		})
		auto := h.finished("pkg", "auto")
		keep := h.finished("pkg", "keep")
		other := h.finished("other", "auto")

		// The 10:00 run, with the clock at 11:01: auto ended more than 2h
		// ago, pkg's age.
		rep := nextRun(t, clock, runs, 2*time.Hour+time.Minute)
		require.EqualValues(t, 1, rep.Instances)
		require.False(t, h.exists(auto))
		require.True(t, h.exists(keep), "its own age, 72h, wins over the package's")
		require.True(t, h.exists(other))

		// A day later MaxAge would have taken them; keep's and other's own
		// ages still hold.
		require.Zero(t, nextRun(t, clock, runs, 24*time.Hour).Instances)
		require.True(t, h.exists(keep))
		require.True(t, h.exists(other))

		// After 72h keep goes; other never does.
		require.EqualValues(t, 1, nextRun(t, clock, runs, 48*time.Hour).Instances)
		require.False(t, h.exists(keep))
		require.Zero(t, nextRun(t, clock, runs, 365*24*time.Hour).Instances)
		require.True(t, h.exists(other))
	})
}

func TestRetentionOffByDefault(t *testing.T) {
	t.Parallel()
	h, clock, runs := retentionHarness(t, dbtest.OpenSQLite(t), engine.Retention{})
	id := h.finished("pkg", "auto")
	clock.Advance(10 * 365 * 24 * time.Hour)
	h.idle()
	require.True(t, h.exists(id))
	require.Empty(t, runs, "no schedule runs without an age")
	require.Zero(t, h.e.Stats().Purged)
}

func TestRetentionConfigRefused(t *testing.T) {
	t.Parallel()
	db := dbtest.OpenSQLite(t)
	for name, cfg := range map[string]engine.Retention{
		"negative MaxAge":       {MaxAge: -time.Hour},
		"bad schedule":          {MaxAge: time.Hour, Schedule: "every so often"},
		"batch too large":       {MaxAge: time.Hour, BatchSize: store.MaxPurgeLimit + 1},
		"negative batch":        {MaxAge: time.Hour, BatchSize: -1},
		"scope without package": {PerProcess: map[engine.RetentionScope]time.Duration{{Process: "auto"}: time.Hour}},
	} {
		_, err := engine.New(engine.Config{DB: db, Retention: cfg})
		require.ErrorIs(t, err, engine.ErrConfig, name)
	}
}

func TestPurge(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, db *gorm.DB) {
		h, _, _ := retentionHarness(t, db, engine.Retention{}) // retention off: Purge works anyway
		var pkg []int64
		for range 3 {
			pkg = append(pkg, h.finished("pkg", "auto"))
		}
		keep := h.finished("pkg", "keep")
		other := h.finished("other", "auto")
		running := h.startProcess("pkg", "manual", nil)
		h.idle()

		for name, opts := range map[string]engine.PurgeOptions{
			"no cutoff":       {Package: "pkg"},
			"batch too large": {Before: epoch, BatchSize: store.MaxPurgeLimit + 1},
		} {
			_, err := h.e.Purge(h.ctx, opts, engine.Op{Actor: "ops"})
			require.ErrorIs(t, err, engine.ErrInvalidPurge, name)
		}
		_, err := h.e.Purge(h.ctx, engine.PurgeOptions{Before: epoch.Add(time.Second)}, engine.Op{Data: map[string]any{"f": func() {}}})
		require.ErrorIs(t, err, engine.ErrBadArgument, "Op.Data must encode")

		rep, err := h.e.Purge(h.ctx, engine.PurgeOptions{Before: epoch}, engine.Op{})
		require.NoError(t, err)
		require.Equal(t, engine.PurgeReport{}, rep, "nothing ended before 09:00")

		rep, err = h.e.Purge(h.ctx, engine.PurgeOptions{Before: epoch.Add(time.Second), Package: "pkg", Process: "auto", BatchSize: 1},
			engine.Op{Actor: "ops", Reason: "disk full"})
		require.NoError(t, err)
		require.EqualValues(t, 3, rep.Instances)
		require.Equal(t, 3, rep.Batches, "one instance per transaction")
		require.Positive(t, rep.Rows)
		for _, id := range pkg {
			require.False(t, h.exists(id))
		}
		require.True(t, h.exists(keep))
		require.True(t, h.exists(other))

		// Cancelled: nothing more is deleted.
		ctx, cancel := context.WithCancel(h.ctx)
		cancel()
		_, err = h.e.Purge(ctx, engine.PurgeOptions{Before: epoch.Add(time.Second)}, engine.Op{})
		require.ErrorIs(t, err, context.Canceled)
		require.True(t, h.exists(keep))

		// In the host's transaction: nothing goes unless it commits.
		err = h.e.Transaction(h.ctx, h.db, func(tx *gorm.DB) error {
			rep, err := h.e.PurgeTx(h.ctx, tx, engine.PurgeOptions{Before: epoch.Add(time.Second)}, engine.Op{})
			require.NoError(t, err)
			require.EqualValues(t, 2, rep.Instances)
			return context.Canceled // roll back
		})
		require.ErrorIs(t, err, context.Canceled)
		require.True(t, h.exists(keep))
		require.True(t, h.exists(other))

		rep, err = h.e.Purge(h.ctx, engine.PurgeOptions{Before: epoch.Add(time.Second)}, engine.Op{})
		require.NoError(t, err)
		require.EqualValues(t, 2, rep.Instances)
		require.True(t, h.exists(running))
		require.EqualValues(t, 5, h.e.Stats().Purged)
	})
}

// Two engines (nodes) purging one database at once delete every finished
// instance once between them, and neither fails.
func TestPurgeTwoNodes(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, db *gorm.DB) {
		h, _, _ := retentionHarness(t, db, engine.Retention{})
		const n = 30
		for range n {
			h.startProcess("pkg", "parent", nil)
		}
		h.idle()
		running := h.startProcess("pkg", "manual", nil)
		h.idle()
		finished, err := h.e.Store().ListProcessInstances(h.ctx, store.ListProcessInstancesParams{States: []string{string(wftype.ProcessCompleted)}})
		require.NoError(t, err)
		require.Len(t, finished, 2*n, "each parent and its subflow instance")

		// The second node needs no Start to purge.
		second := newHarness(t, db, func(c *engine.Config) { c.NodeID, c.SkipMigrate = "node-2", true })
		var (
			wg      sync.WaitGroup
			reports [2]engine.PurgeReport
			errs    [2]error
		)
		for i, e := range []*engine.Engine{h.e, second.e} {
			wg.Go(func() {
				reports[i], errs[i] = e.Purge(h.ctx, engine.PurgeOptions{Before: epoch.Add(time.Second), BatchSize: 3}, engine.Op{Actor: "ops"})
			})
		}
		wg.Wait()
		require.NoError(t, errs[0])
		require.NoError(t, errs[1])
		// A node that found every candidate locked by the other stops;
		// one more pass finds what is left, if anything.
		rest, err := h.e.Purge(h.ctx, engine.PurgeOptions{Before: epoch.Add(time.Second)}, engine.Op{})
		require.NoError(t, err)
		require.EqualValues(t, 2*n, reports[0].Instances+reports[1].Instances+rest.Instances, "each instance deleted and counted once")
		for _, pi := range finished {
			require.False(t, h.exists(pi.ID))
		}
		require.True(t, h.exists(running))
	})
}
