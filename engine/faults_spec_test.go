package engine_test

import (
	"bytes"
	"context"
	"fmt"
	"hash/fnv"
	"log/slog"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/cockroachdb/datadriven"
	"github.com/stretchr/testify/require"
	"gorm.io/gorm"

	"github.com/goxpdl/goxpdl/engine"
	"github.com/goxpdl/goxpdl/engine/machine"
	"github.com/goxpdl/goxpdl/internal/faultdb"
	"github.com/goxpdl/goxpdl/store"
	"github.com/goxpdl/goxpdl/store/dbtest"
	"github.com/goxpdl/goxpdl/store/gormstore"
	"github.com/goxpdl/goxpdl/wftype"
	"github.com/goxpdl/goxpdl/workitem"
)

// FaultsEnv sizes the fault suite over the specification
// (TestSpecFaults): unset, each script gets defaultFaults faults of
// kinds and at places drawn at random, seeded by its name; a number N
// gives it N of each kind; "all" strikes every statement, BEGIN and
// COMMIT of the script, one run each (hours).
const FaultsEnv = "GOXPDL_FAULTS"

// FaultsDebugEnv, set to anything, makes every run of the fault suite log
// the engine's log and each command a fault failed.
const FaultsDebugEnv = "GOXPDL_FAULTS_DEBUG"

// defaultFaults is how many faults each script gets when FaultsEnv is
// not set, of kinds drawn at random: the suite's share of make test. A
// run on MySQL costs ten times one on SQLite (a database is created and
// migrated for each), so it gets one, and only every other script runs
// there by default.
func defaultFaults(dialect string) int {
	if dialect == store.DialectMySQL {
		return 1
	}
	return 2
}

// faultsPerKind reads FaultsEnv: how many faults of each kind a script
// gets, 0 meaning all, and -N a sample of N of any kind.
func faultsPerKind(t *testing.T, dialect string) int {
	v := os.Getenv(FaultsEnv)
	switch v {
	case "":
		return -defaultFaults(dialect)
	case "all":
		return 0
	}
	n, err := strconv.Atoi(v)
	require.NoError(t, err, "%s=%q: want a number or all", FaultsEnv, v)
	require.Positive(t, n, "%s", FaultsEnv)
	return n
}

// faultTally adds up what the suite did on one database, for the report
// at its end.
type faultTally struct {
	mu                                  sync.Mutex
	scripts, commands, runs, statements int64
	injected                            map[string]int64 // by kind and error
	// slow counts the runs whose recovery needed the clock moved on by
	// more than a retry's first backoffs (over a second), by kind.
	slow map[string]int64
}

func (ft *faultTally) add(key string) {
	ft.mu.Lock()
	defer ft.mu.Unlock()
	ft.injected[key]++
}

// TestSpecFaults replays every script of the specification
// (testdata/spec) on a database whose connections fail: for each script
// a run without faults counts its statements, BEGINs and COMMITs and
// records its outcome; then each faulted run arms one fault (a
// statement failing with the database's lock conflict or a lost
// connection, a BEGIN failing, a COMMIT failing and rolling back, a
// COMMIT that went through followed by a lost connection) at a place
// drawn from those counts, seeded by the script's name, and replays the
// script. A command the fault failed is tried again, as a host would
// (a start with its idempotency key); after every command the engine is
// let recover (its retries' backoff passes on the fake clock), the state
// of every instance is checked to be legal, and at the end the outcome
// must be the run without faults'. See docs/testing.md.
func TestSpecFaults(t *testing.T) {
	t.Parallel()
	var scripts []string
	require.NoError(t, filepath.WalkDir(specDir, func(path string, d os.DirEntry, err error) error {
		if err == nil && !d.IsDir() && strings.HasSuffix(path, ".txt") {
			scripts = append(scripts, path)
		}
		return err
	}))
	for _, d := range faultDialects {
		t.Run(d.name, func(t *testing.T) {
			t.Parallel()
			if d.name == "MySQL" {
				dbtest.MySQLDSN(t)
			}
			per := faultsPerKind(t, d.dialect)
			tally := &faultTally{injected: map[string]int64{}, slow: map[string]int64{}}
			t.Cleanup(func() { t.Log(tally.report(d.name)) })
			for n, path := range scripts {
				if per < 0 && d.dialect == store.DialectMySQL && n%2 == 1 {
					continue // the default's share of MySQL: every other script (see defaultFaults)
				}
				name, _ := filepath.Rel(specDir, path)
				//nolint:paralleltest // one script at a time: each run has a database and an engine of its own, and the faulted runs need the reference run first
				t.Run(name, func(t *testing.T) {
					ref := runSpecFaulted(t, d.open, path, nil, nil)
					require.Empty(t, ref.problems, "illegal states without a fault")
					tally.mu.Lock()
					tally.scripts++
					tally.runs++
					tally.commands += int64(len(ref.waiting))
					tally.statements += ref.stats.Statements
					tally.mu.Unlock()
					plan := planFaults(ref.stats, d.dialect, name, per)
					t.Logf("the run without faults: %d statements, %d BEGINs, %d COMMITs; %d faulted runs", ref.stats.Statements, ref.stats.Begins, ref.stats.Commits, len(plan))
					for _, f := range plan {
						//nolint:paralleltest // see above
						t.Run(f.name, func(t *testing.T) {
							got := runSpecFaulted(t, d.open, path, &f.fault, ref)
							tally.mu.Lock()
							tally.runs++
							tally.statements += got.stats.Statements
							tally.mu.Unlock()
							if got.stats.Total() > 0 {
								tally.add(f.key)
							}
							if got.slowest > time.Second {
								tally.mu.Lock()
								tally.slow[f.key]++
								tally.mu.Unlock()
								t.Logf("recovery moved the clock on by %s", got.slowest)
							}
							require.Empty(t, got.problems, "illegal states after the fault")
							require.Equal(t, ref.outcome, got.outcome, "the outcome differs from the run without faults")
						})
					}
				})
			}
		})
	}
}

func (ft *faultTally) report(db string) string {
	ft.mu.Lock()
	defer ft.mu.Unlock()
	var b strings.Builder
	var total int64
	keys := make([]string, 0, len(ft.injected))
	for k, v := range ft.injected {
		keys = append(keys, k)
		total += v
	}
	sort.Strings(keys)
	fmt.Fprintf(&b, "%s: %d scripts, %d commands, %d runs, %d statements, %d faults injected:", db, ft.scripts, ft.commands, ft.runs, ft.statements, total)
	for _, k := range keys {
		fmt.Fprintf(&b, " %s=%d", k, ft.injected[k])
	}
	if len(ft.slow) > 0 {
		fmt.Fprintf(&b, "; recovered only after the clock moved on by more than a second: %v", ft.slow)
	}
	return b.String()
}

// plannedFault is one faulted run of a script.
type plannedFault struct {
	name  string // the subtest's
	key   string // kind and error, for the tally
	fault faultdb.Fault
}

// planFaults draws the faults of a script from the counts of its run
// without faults: per of each kind (kind and error), or every place when
// per is 0. The draw is seeded by the script's name, so a failure names
// a fault that strikes the same place again, as far as the engine's
// background work (the poller, the lease renewal) leaves the order of
// statements alone.
func planFaults(st faultdb.Stats, dialect, script string, per int) []plannedFault {
	h := fnv.New64a()
	_, _ = h.Write([]byte(script))
	rng := rand.New(rand.NewPCG(h.Sum64(), 1)) //nolint:gosec // a test's reproducible draw
	type kind struct {
		key   string
		kind  faultdb.Kind
		count int64
		err   error
	}
	var kinds []kind
	errs := statementErrors(dialect)
	names := make([]string, 0, len(errs))
	for name := range errs {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		kinds = append(kinds, kind{"statement/" + name, faultdb.Statement, st.Statements, errs[name]})
	}
	conflict := faultdb.Deadlock(dialect)
	kinds = append(kinds,
		kind{"begin/" + conflictName(dialect), faultdb.Begin, st.Begins, conflict},
		kind{"commit/" + conflictName(dialect), faultdb.Commit, st.Commits, conflict},
		kind{"commit/connection-lost", faultdb.Commit, st.Commits, faultdb.ConnectionLost(dialect)},
		kind{"after-commit/connection-lost", faultdb.AfterCommit, st.Commits, faultdb.ConnectionLost(dialect)},
		kind{"outage/connection-lost", outage, st.Statements, faultdb.ConnectionLost(dialect)},
	)
	var out []plannedFault
	for _, k := range kinds {
		if k.count == 0 {
			continue
		}
		var at []int64
		if per == 0 {
			for n := int64(1); n <= k.count; n++ {
				at = append(at, n)
			}
		} else {
			for range max(per, 1) {
				at = append(at, 1+rng.Int64N(k.count))
			}
		}
		for _, n := range at {
			f := faultdb.Fault{Kind: k.kind, At: n, Err: k.err}
			if k.kind == outage {
				f.Kind, f.Outage = faultdb.Statement, true
			}
			out = append(out, plannedFault{name: fmt.Sprintf("%s@%d", k.key, n), key: k.key, fault: f})
		}
	}
	if per < 0 {
		// The default: a sample of the plan with one fault of each kind.
		rng.Shuffle(len(out), func(i, j int) { out[i], out[j] = out[j], out[i] })
		out = out[:min(-per, len(out))]
	}
	return out
}

// outage is the plan's kind for an outage: from a statement on, the
// database is gone until the script next waits.
const outage faultdb.Kind = "outage"

func conflictName(dialect string) string {
	if dialect == store.DialectMySQL {
		return "deadlock"
	}
	return "busy"
}

// specFaultRun is what one run of a script under the fault suite saw.
type specFaultRun struct {
	stats   faultdb.Stats
	waiting []int64 // events waiting for a backoff after each command
	// slowest is the longest the fake clock had to move on for the
	// engine to recover from the fault: a retry's backoff, or a claim's
	// lease when nothing let go of it sooner.
	slowest  time.Duration
	outcome  string   // where every instance ended up, canonically
	problems []string // illegal states seen
}

// runSpecFaulted runs the script at path on a fresh database with fault
// armed (none for the reference run); ref is the reference run's record.
func runSpecFaulted(t *testing.T, open func(testing.TB, gormstore.OpenOpts) *gorm.DB, path string, fault *faultdb.Fault, ref *specFaultRun) *specFaultRun {
	t.Helper()
	in := faultdb.New()
	db := open(t, in.OpenOpts())
	if fault != nil {
		in.Arm(*fault) // from here: a fault in opening the database is not the engine's
	}
	logs := &syncBuffer{}
	s := newSpecWith(t, db, func(s *spec) {
		s.faulty = true
		s.heal = func() {
			if in.Down() {
				in.Clear()
			}
		}
		s.look = faultdb.Exempt(s.ctx)
		s.cfg.Logger = slog.New(slog.NewTextHandler(logs, nil))
	})
	t.Cleanup(func() {
		if t.Failed() || os.Getenv(FaultsDebugEnv) != "" {
			t.Logf("the engine's log:\n%s", logs.String())
		}
	})
	run := &specFaultRun{}
	// What the run did, for its failure message: each command's own
	// output and error and the instances after it (the records are not
	// kept: under faults those of a commit whose outcome was unknown are
	// never published).
	var transcript strings.Builder
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("the run:\n%s", transcript.String())
		}
	})
	i := 0
	datadriven.RunTest(t, path, func(t *testing.T, d *datadriven.TestData) string {
		s.t = t
		var out strings.Builder
		s.takeRecords()
		before := in.Stats()
		err := s.do(d, &out)
		s.heal()
		if err != nil && os.Getenv(FaultsDebugEnv) != "" {
			t.Logf("%s: %s: %v (faults %v)", d.Pos, d.Cmd, err, struckKinds(before, in.Stats()))
		}
		if err != nil && !refused(d.Expected) {
			kinds := struckKinds(before, in.Stats())
			if len(kinds) == 0 {
				run.problems = append(run.problems, fmt.Sprintf("%s: %s failed with no fault: %v", d.Pos, d.Cmd, err))
			} else if !slices.Contains(kinds, faultdb.AfterCommit) || d.Cmd == "start" || d.Cmd == "deploy" {
				// Nothing of it committed (or it is idempotent): the
				// host tries again.
				in.Clear()
				err := s.do(d, &out)
				if os.Getenv(FaultsDebugEnv) != "" {
					t.Logf("%s: %s again: %v (current %d)", d.Pos, d.Cmd, err, s.current)
				}
				if err != nil {
					run.problems = append(run.problems, fmt.Sprintf("%s: %s failed again after the fault (%v): %v", d.Pos, d.Cmd, kinds, err))
				}
			}
		}
		var want int64
		if ref != nil && i < len(ref.waiting) {
			want = ref.waiting[i]
		}
		left, moved := s.recoverFaults(want, &run.problems, d.Pos)
		run.waiting = append(run.waiting, left)
		run.slowest = max(run.slowest, moved)
		run.problems = append(run.problems, s.legal(d.Pos)...)
		s.takeRecords()
		s.aliasInstances()
		fmt.Fprintf(&transcript, "%s: %s -> %v\n%s%s", d.Pos, d.Cmd, err, out.String(), s.instanceList())
		i++
		return d.Expected
	})
	in.Clear()
	run.outcome = s.outcome()
	run.stats = in.Stats()
	return run
}

// syncBuffer is a bytes.Buffer safe for the engine's goroutines.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// aliasInstances names the instances the script has not met yet (p1,
// p2, ...) in the order the database numbered them: under faults the
// records that name them in the spec's own runs may be lost (a commit
// whose outcome was unknown publishes none).
func (s *spec) aliasInstances() {
	page, err := s.e.Instances(s.look, engine.InstanceFilter{Limit: 1000})
	require.NoError(s.t, err)
	ids := make([]int64, 0, len(page.Instances))
	for _, pi := range page.Instances {
		ids = append(ids, pi.ID)
	}
	slices.Sort(ids)
	for _, id := range ids {
		s.alias(id)
	}
}

// refused reports whether a command's expected output says the engine
// refused it (the spec prints "error: ..." on a line of its own).
func refused(expected string) bool {
	for line := range strings.Lines(expected) {
		if strings.HasPrefix(line, "error: ") {
			return true
		}
	}
	return false
}

// instanceList lists the instances: alias, id, process, state, parent.
func (s *spec) instanceList() string {
	page, err := s.e.Instances(s.look, engine.InstanceFilter{Limit: 1000})
	if err != nil {
		return "  (" + err.Error() + ")\n"
	}
	var b strings.Builder
	for _, pi := range page.Instances {
		fmt.Fprintf(&b, "  %s id=%d %s %s parent=%d\n", s.alias(pi.ID), pi.ID, pi.Process, pi.State, pi.Parent)
	}
	return b.String()
}

// struckKinds lists the kinds of the faults that struck between two
// looks at the injector's counts.
func struckKinds(before, after faultdb.Stats) []faultdb.Kind {
	var out []faultdb.Kind
	for _, k := range faultdb.Kinds {
		if after.Injected[k] > before.Injected[k] {
			out = append(out, k)
		}
	}
	return out
}

// recoverFaults lets the engine recover from a fault: while more events
// wait for a retry's backoff than in the run without faults, the fake
// clock moves on by the engine's backoff (50ms, doubling) so that the
// retries run. It returns the events left waiting.
func (s *spec) recoverFaults(want int64, problems *[]string, pos string) (int64, time.Duration) {
	step := 50 * time.Millisecond
	var moved time.Duration
	for range 14 {
		s.heal() // an outage that began after the command ends now
		// Quiet, or waiting on the clock: events held in memory for
		// a retry (the outage kept the database from recording it)
		// count as available until their backoff has passed.
		ctx, cancel := context.WithTimeout(s.look, 2*time.Second)
		err := s.e.WaitQuiet(ctx)
		cancel()
		if err == nil {
			b, err := s.e.Backlog(s.look)
			require.NoError(s.t, err)
			if b.EventsWaiting <= want {
				return b.EventsWaiting, moved
			}
		}
		s.clock.Advance(step)
		moved += step
		step *= 2
	}
	b, err := s.e.Backlog(s.look)
	*problems = append(*problems, fmt.Sprintf("%s: the engine did not recover: backlog %+v (%v)", pos, b, err))
	return -1, moved
}

// legal checks that every instance is in a state the engine's rules
// allow, at a moment when the engine has nothing left to do now:
//
//   - no activity is Active (every instance rests at a recoverable point,
//     DESIGN.md §5);
//   - an open work item belongs to an InActive activity of a live
//     instance; a finished instance has no open work item and no armed
//     timer;
//   - every state change in the history is a transition of the state
//     machines (engine/machine, workitem), and no work item completed
//     twice.
func (s *spec) legal(pos string) []string {
	var problems []string
	bad := func(format string, args ...any) {
		problems = append(problems, pos+": "+fmt.Sprintf(format, args...))
	}
	page, err := s.e.Instances(s.look, engine.InstanceFilter{Limit: 1000})
	require.NoError(s.t, err)
	for _, pi := range page.Instances {
		name := fmt.Sprintf("instance %d (%s %s)", pi.ID, pi.Process, pi.State)
		if !slices.Contains(wftype.ProcessStates, pi.State) {
			bad("%s: unknown state", name)
		}
		acts, err := activitiesOf(s.look, s.e, pi.ID)
		require.NoError(s.t, err)
		state := map[int64]wftype.ActivityState{}
		for _, a := range acts {
			state[a.ID] = a.State
			if a.State == wftype.ActivityActive {
				bad("%s: activity %s is Active with nothing left to do", name, a.Activity)
			}
		}
		items, err := workItemsOf(s.look, s.e, openItemsOf(pi.ID))
		require.NoError(s.t, err)
		for _, wi := range items {
			if pi.State.IsFinal() {
				bad("%s: work item %d of %s is %s", name, wi.ID, wi.Activity, wi.State)
			} else if st := state[wi.ActivityInstance]; st != wftype.ActivityInActive {
				bad("%s: work item %d of %s is %s but its activity is %s", name, wi.ID, wi.Activity, wi.State, st)
			}
		}
		if pi.State.IsFinal() {
			timers, err := timersOf(s.look, s.e, pi.ID)
			require.NoError(s.t, err)
			for _, tm := range timers {
				if tm.State == engine.TimerPending {
					bad("%s: timer %s %s is still armed", name, tm.Kind, tm.Key)
				}
			}
		}
		completed := map[int64]int{}
		f := engine.HistoryFilter{Instance: pi.ID, Limit: 1000}
		for {
			hp, err := s.e.History(s.look, f)
			require.NoError(s.t, err)
			for _, h := range hp.Entries {
				if h.From == "" || h.From == h.To {
					continue
				}
				switch h.Subject {
				case engine.SubjectProcess:
					if !legalMoves.process[[2]string{h.From, h.To}] {
						bad("%s: process went from %s to %s", name, h.From, h.To)
					}
				case engine.SubjectActivity:
					if !legalMoves.activity[[2]string{h.From, h.To}] {
						bad("%s: activity %s went from %s to %s", name, h.Activity, h.From, h.To)
					}
				case engine.SubjectWorkItem:
					if !legalMoves.workItem[[2]string{h.From, h.To}] {
						bad("%s: work item %d went from %s to %s", name, h.WorkItem, h.From, h.To)
					}
					if h.To == string(workitem.Completed) {
						completed[h.WorkItem]++
					}
				}
			}
			if hp.Next == 0 {
				break
			}
			f.After = hp.Next
		}
		for id, n := range completed {
			if n > 1 {
				bad("%s: work item %d completed %d times", name, id, n)
			}
		}
	}
	return problems
}

// legalMoves are the state changes the state machines allow, worked out
// from their tables: every (from, to) some command makes.
var legalMoves = func() (m struct{ process, activity, workItem map[[2]string]bool }) {
	m.process, m.activity, m.workItem = map[[2]string]bool{}, map[[2]string]bool{}, map[[2]string]bool{}
	for _, from := range wftype.ProcessStates {
		for _, cmd := range machine.ProcessCommands {
			if to, err := machine.NextProcessState(from, cmd); err == nil {
				m.process[[2]string{string(from), string(to)}] = true
			}
		}
	}
	for _, from := range wftype.ActivityStates {
		for _, cmd := range machine.ActivityCommands {
			if to, err := machine.NextActivityState(wftype.ProcessRunning, from, cmd); err == nil {
				m.activity[[2]string{string(from), string(to)}] = true
			}
		}
	}
	for _, from := range workitem.States {
		for _, cmd := range workitem.Commands {
			for _, susp := range workitem.States {
				if to, err := workitem.Next(from, cmd, susp); err == nil {
					m.workItem[[2]string{string(from), string(to)}] = true
				}
			}
		}
	}
	return m
}()

// outcome describes where every instance ended up, in words that do not
// depend on ids or on when things happened: each instance's process,
// state and parent's process, its activities', work items' and timers'
// states, its variables; the business writes that committed; the open
// incidents; the batches' actions and states.
func (s *spec) outcome() string {
	s.settle()
	page, err := s.e.Instances(s.look, engine.InstanceFilter{Limit: 1000})
	require.NoError(s.t, err)
	process := map[int64]string{}
	for _, pi := range page.Instances {
		process[pi.ID] = pi.Process
	}
	var lines []string
	for _, pi := range page.Instances {
		var parts []string
		parts = append(parts, fmt.Sprintf("%s %s parent=%s diagnosis=%q", pi.Process, pi.State, process[pi.Parent], firstLine(pi.Diagnosis)))
		acts, err := activitiesOf(s.look, s.e, pi.ID)
		require.NoError(s.t, err)
		var as []string
		for _, a := range acts {
			as = append(as, a.Activity+":"+string(a.State))
		}
		sort.Strings(as)
		parts = append(parts, "activities "+strings.Join(as, " "))
		items, err := workItemsOf(s.look, s.e, engine.WorkItemFilter{Instance: pi.ID})
		require.NoError(s.t, err)
		var ws []string
		for _, wi := range items {
			ws = append(ws, wi.Activity+":"+string(wi.State))
		}
		sort.Strings(ws)
		parts = append(parts, "workitems "+strings.Join(ws, " "))
		timers, err := timersOf(s.look, s.e, pi.ID)
		require.NoError(s.t, err)
		var ts []string
		for _, tm := range timers {
			ts = append(ts, string(tm.Kind)+" "+tm.Key+":"+string(tm.State))
		}
		sort.Strings(ts)
		parts = append(parts, "timers "+strings.Join(ts, " "))
		vars, err := s.e.Variables(s.look, pi.ID)
		require.NoError(s.t, err)
		var vs []string
		for k, v := range vars {
			vs = append(vs, k+"="+formatValue(v))
		}
		sort.Strings(vs)
		parts = append(parts, "vars "+strings.Join(vs, " "))
		lines = append(lines, strings.Join(parts, "\n  "))
	}
	sort.Strings(lines)
	var calls []string
	var rows []struct{ App, Activity string }
	require.NoError(s.t, s.db.WithContext(s.look).Raw("SELECT app, activity FROM spec_calls").Scan(&rows).Error)
	for _, r := range rows {
		calls = append(calls, "committed "+r.App+" by "+r.Activity)
	}
	sort.Strings(calls)
	inc, err := s.e.Incidents(s.look, engine.IncidentFilter{})
	require.NoError(s.t, err)
	var incs []string
	for _, i := range inc.Incidents {
		incs = append(incs, fmt.Sprintf("incident %s %s %s", process[i.Instance], i.Cause, i.Activity))
	}
	sort.Strings(incs)
	// The batches, in the order they started, by action and state (their
	// counts depend on where a fault struck: an instance whose command
	// committed before its chunk's progress did not is skipped when the
	// chunk is done again).
	var bs []string
	for f := (engine.BatchFilter{}); ; {
		page, err := s.e.Batches(s.look, f)
		require.NoError(s.t, err)
		for _, b := range page.Batches {
			bs = append(bs, fmt.Sprintf("batch %s %s owner=%t", b.Action, b.State, b.Owner != ""))
		}
		if page.Next == 0 {
			break
		}
		f.After = page.Next
	}
	return strings.Join(slices.Concat(lines, calls, incs, bs), "\n") + "\n"
}
