package demo_test

import (
	"bytes"
	"log/slog"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"
	"gorm.io/gorm"

	"github.com/goxpdl/goxpdl/console/diagram"
	"github.com/goxpdl/goxpdl/engine"
	"github.com/goxpdl/goxpdl/enginetest"
	"github.com/goxpdl/goxpdl/internal/demo"
	"github.com/goxpdl/goxpdl/store/dbtest"
	"github.com/goxpdl/goxpdl/wftype"
	"github.com/goxpdl/goxpdl/xpdl"
)

func TestMain(m *testing.M) {
	// ants starts a default pool of its own when its package is
	// initialised; the engine's pools are released by Stop and checked.
	goleak.VerifyTestMain(m, goleak.IgnoreCurrent())
}

// The demo package is valid, and every flow of it (both processes and
// the activity set) is drawn from the file's own coordinates, in its
// lanes, without two activities overlapping.
func TestPackageValidatesAndDraws(t *testing.T) {
	t.Parallel()
	pkg, err := xpdl.Read(bytes.NewReader(demo.Source), &xpdl.ReadOpts{Name: "sp-assessment.xpdl"})
	require.NoError(t, err)
	require.Empty(t, xpdl.Validate(pkg, nil), "no problems, not even warnings")
	require.Equal(t, demo.PackageID, pkg.ID)

	flows := []struct {
		process, set string
		lanes        []string
	}{
		{demo.ProcessID, "", []string{"Provider", "Assessor", "Manager", "System"}},
		{demo.ProcessID, "reviews", []string{"Assessor"}},
		{demo.SubflowID, "", []string{"Provider", "System"}},
	}
	for _, f := range flows {
		l, err := diagram.NewLayout(t.Context(), pkg, f.process, diagram.Options{ActivitySet: f.set})
		require.NoError(t, err)
		what := f.process + " " + f.set
		require.Equal(t, diagram.SourceFile, l.Source, "%s is drawn where the file puts it", what)
		var lanes []string
		for _, ln := range l.Lanes {
			lanes = append(lanes, ln.Name)
		}
		require.Equal(t, f.lanes, lanes, what)
		for i := range l.Nodes {
			a := &l.Nodes[i]
			require.NotEmpty(t, a.Lane, "%s: %s has a lane", what, a.ID)
			for j := i + 1; j < len(l.Nodes); j++ {
				b := &l.Nodes[j]
				require.False(t, a.X < b.X+b.W && b.X < a.X+a.W && a.Y < b.Y+b.H && b.Y < a.Y+a.H,
					"%s: %s (%v,%v %vx%v) overlaps %s (%v,%v %vx%v)", what, a.ID, a.X, a.Y, a.W, a.H, b.ID, b.X, b.Y, b.W, b.H)
			}
		}
		require.NotEmpty(t, l.SVG(diagram.State{}))
	}
}

// bundle is a started engine on a fake clock (enginetest) with a demo
// driver.
type bundle struct {
	*enginetest.Harness
	t *testing.T
	d *demo.Driver

	mu      sync.Mutex
	records []engine.Record
}

func setup(t *testing.T, db *gorm.DB, cfg demo.Config) *bundle {
	t.Helper()
	b := &bundle{t: t, Harness: enginetest.New(t, enginetest.WithDB(db), enginetest.WithStart(time.Date(2026, 12, 21, 9, 0, 0, 0, time.UTC)))}
	t.Cleanup(b.Engine().Subscribe(func(r engine.Record) {
		b.mu.Lock()
		b.records = append(b.records, r)
		b.mu.Unlock()
	}))
	cfg.Engine, cfg.Clock, cfg.Seed = b.Engine(), b.Clock(), 7
	cfg.Logger = slog.New(slog.DiscardHandler)
	var err error
	b.d, err = demo.New(cfg)
	require.NoError(t, err)
	return b
}

// round lets a minute pass (a jump: the clock does not stop at the
// retries on the way), then does one step of the demo and waits until
// the engine has done what that caused.
func (b *bundle) round() {
	b.t.Helper()
	b.Clock().Advance(time.Minute)
	b.Settle()
	require.NoError(b.t, b.d.Step(b.Context()))
	b.Settle()
}

// count counts the records of type typ (and activity, when not empty).
func (b *bundle) count(typ, activity string) int {
	b.mu.Lock()
	defer b.mu.Unlock()
	n := 0
	for _, r := range b.records {
		if r.Type == typ && (activity == "" || r.Activity == activity) {
			n++
		}
	}
	return n
}

// instances returns the demo's top-level instances.
func (b *bundle) instances() []engine.ProcessInstance {
	b.t.Helper()
	page, err := b.Engine().Instances(b.Context(), engine.InstanceFilter{Package: demo.PackageID, Process: demo.ProcessID, Limit: 1000})
	require.NoError(b.t, err)
	return page.Instances
}

// The demo as serve runs it: instances start at a steady pace, simulated
// people do the work, and everything the console should show happens:
// completed instances of every grade, the subflow, the activity set,
// reminders, a deadline, failing calls retried, and incidents.
//
// The simulated people decide by a hash of the work item's id, and ids
// are engine-made (time-ordered, with random bits), so which instance
// takes which path differs from run to run: the demo runs at least 40
// steps and then on until everything has shown (in 40 steps a deadline
// was missing about once in 30 runs), at most demoMaxRounds.
func TestDemoShowsLife(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, db *gorm.DB) {
		b := setup(t, db, demo.Config{MinWork: 20 * time.Second, MaxWork: 60 * time.Second, FailureRate: 0.15, SkipRate: 0.5, MaxOpen: 12})
		rounds, missing := 0, ""
		for ; rounds < demoMaxRounds && (rounds < 40 || missing != ""); rounds++ {
			b.round()
			if rounds >= 39 {
				missing = b.missingLife()
			}
		}
		require.Empty(t, missing, "after %d steps", rounds)
		require.Positive(t, b.d.Started())
		insts := b.instances()
		require.LessOrEqual(t, len(insts), rounds, "one start a step at most")
		byState := map[wftype.ProcessState]int{}
		for _, pi := range insts {
			byState[pi.State]++
			require.NotEmpty(t, pi.BusinessKey)
		}
		t.Logf("after %d steps, instances by state: %v", rounds, byState)
		require.GreaterOrEqual(t, byState[wftype.ProcessCompleted], 10)
		require.Zero(t, byState[wftype.ProcessLocking], "the demo never deadlocks")
	})
}

// demoMaxRounds bounds TestDemoShowsLife's steps.
const demoMaxRounds = 400

// missingLife says what the demo has not shown yet, or "" when it has
// shown everything TestDemoShowsLife asks for.
func (b *bundle) missingLife() string {
	b.t.Helper()
	grades := map[string]bool{}
	for _, pi := range b.instances() {
		if pi.State == wftype.ProcessCompleted {
			vars, err := b.Engine().Variables(b.Context(), pi.ID)
			require.NoError(b.t, err)
			grades[vars["grade"].(string)] = true
		}
	}
	for _, g := range []string{"A", "B", "C"} {
		if !grades[g] {
			return "a completed instance of grade " + g
		}
	}
	shown := []struct {
		typ, activity, what string
	}{
		{engine.RecordProcessStarted, "", "a started instance"},
		{"workitem.completed", "Submit", "the subflow's work"},
		{"workitem.completed", "ReviewQuality", "the activity set's work"},
		{"workitem.completed", "Decide", "a decision"},
		{"activity.reminder", "Decide", "a reminder"},
		{"deadline.fired", "Decide", "an undecided decision that ran past its deadline"},
	}
	for _, s := range shown {
		if b.count(s.typ, s.activity) == 0 {
			return s.what
		}
	}
	incidents, err := b.Engine().Incidents(b.Context(), engine.IncidentFilter{})
	require.NoError(b.t, err)
	for _, in := range incidents.Incidents {
		if in.Cause == engine.CauseApplication {
			return ""
		}
	}
	return "an incident of the failing scoring service"
}

// A call of the notification application during the mail gateway's
// outage fails and is retried until the gateway is back: a "failing"
// incident shows meanwhile and resolves itself.
func TestOutageIsRetried(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, db *gorm.DB) {
		// The gateway is down for the first 10 minutes of every 30 (the
		// clock starts at 9:00); the work is done at once, so the first
		// instance reaches Notify within the outage, and the next ones
		// (one open at a time) after it.
		b := setup(t, db, demo.Config{MinWork: time.Second, MaxWork: time.Second, FailureRate: -1, SkipRate: -1, OutageEvery: 30 * time.Minute, Outage: 10 * time.Minute, MaxOpen: 1})
		for range 15 {
			b.round()
		}
		insts := b.instances()
		require.Equal(t, wftype.ProcessCompleted, insts[0].State)
		require.Equal(t, time.Date(2026, 12, 21, 9, 10, 0, 0, time.UTC), insts[0].EndedAt.UTC(), "Notify succeeded when the gateway was back")
		page, err := b.Engine().Incidents(b.Context(), engine.IncidentFilter{States: []engine.IncidentState{engine.IncidentOpen, engine.IncidentResolved}})
		require.NoError(t, err)
		require.Len(t, page.Incidents, 1)
		in := page.Incidents[0]
		require.Equal(t, engine.CauseFailing, in.Cause)
		require.Equal(t, "Notify", in.Activity)
		require.Contains(t, in.Error, "mail gateway unavailable")
		require.Equal(t, engine.IncidentResolved, in.State)
		require.Equal(t, "succeeded", in.Resolution)
		require.GreaterOrEqual(t, in.Attempts, 3)
	})
}

// A scoring service that always fails leaves every instance with an
// incident at Score, for an operator to retry.
func TestScoringFailuresAreIncidents(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, db *gorm.DB) {
		b := setup(t, db, demo.Config{MinWork: time.Second, MaxWork: time.Second, FailureRate: 1, MaxOpen: 2})
		for range 8 {
			b.round()
		}
		insts := b.instances()
		require.Len(t, insts, 2)
		page, err := b.Engine().Incidents(b.Context(), engine.IncidentFilter{})
		require.NoError(t, err)
		require.Len(t, page.Incidents, 2)
		for _, in := range page.Incidents {
			require.Equal(t, engine.CauseApplication, in.Cause)
			require.Equal(t, "Score", in.Activity)
			require.Contains(t, in.Error, "scoring service")
		}
	})
}

// Deploy stores the demo once: a restart on the same database reuses the
// version, and a changed package is a new one.
func TestDeployReusesAnUnchangedVersion(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, db *gorm.DB) {
		b := setup(t, db, demo.Config{})
		first, deployed, err := demo.Deploy(b.Context(), b.Engine())
		require.NoError(t, err)
		require.True(t, deployed)
		again, deployed, err := demo.Deploy(b.Context(), b.Engine())
		require.NoError(t, err)
		require.False(t, deployed)
		require.Equal(t, first.ID, again.ID)

		changed := bytes.Replace(demo.Source, []byte("PT2M"), []byte("PT3M"), 1)
		_, err = b.Engine().Deploy(b.Context(), changed)
		require.NoError(t, err)
		third, deployed, err := demo.Deploy(b.Context(), b.Engine())
		require.NoError(t, err)
		require.True(t, deployed)
		require.Equal(t, 3, third.Version)
	})
}

// Start runs the steps on the clock until Stop; Stop waits for them.
func TestStartAndStop(t *testing.T) {
	t.Parallel()
	db := dbtest.OpenSQLite(t)
	b := setup(t, db, demo.Config{StartEvery: time.Minute})
	started := make(chan struct{}, 1)
	defer b.Engine().Subscribe(func(r engine.Record) {
		if r.Type == engine.RecordProcessStarted && r.Process == demo.ProcessID {
			select {
			case started <- struct{}{}:
			default:
			}
		}
	})()
	require.NoError(t, b.d.Stop(b.Context()), "Stop before Start does nothing")
	require.NoError(t, b.d.Start(b.Context()))
	<-started // the first step runs at once
	// The next comes when a minute has passed on the clock (the loop
	// advances again if the step's timer was armed after the advance).
	for b.d.Started() < 2 {
		b.Clock().Advance(time.Minute)
		b.Settle()
	}
	require.NoError(t, b.d.Stop(b.Context()))
	require.NoError(t, b.d.Stop(b.Context()), "idempotent")
	require.GreaterOrEqual(t, b.d.Started(), 2)
}

func TestNewRefusesBadConfig(t *testing.T) {
	t.Parallel()
	_, err := demo.New(demo.Config{})
	require.ErrorIs(t, err, demo.ErrNoEngine)
}

// The file goxpdl run and the docs name is the one the demo embeds.
func TestSourceFile(t *testing.T) {
	t.Parallel()
	data, err := os.ReadFile("sp-assessment.xpdl")
	require.NoError(t, err)
	require.Equal(t, demo.Source, data)
}
