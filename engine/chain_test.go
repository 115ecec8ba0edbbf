package engine_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/require"
	"gorm.io/gorm"

	"github.com/goxpdl/goxpdl/engine"
	"github.com/goxpdl/goxpdl/store/dbtest"
	"github.com/goxpdl/goxpdl/wftype"
	"github.com/goxpdl/goxpdl/xpdl/xpdltest"
)

// seqToolPackage is a sequence of n automatic activities S1 ... Sn, each a
// call of the application "risky".
func seqToolPackage(id string, n int) string {
	var acts, trans strings.Builder
	for i := 1; i <= n; i++ {
		acts.WriteString(tool(fmt.Sprintf("S%d", i), "risky"))
		if i > 1 {
			trans.WriteString(xpdltest.Transition(fmt.Sprintf("t%d", i), fmt.Sprintf("S%d>S%d", i-1, i)))
		}
	}
	return toolPackage(id, acts.String(), trans.String())
}

// chainRig runs seqToolPackage's sequence on an engine with chainSteps,
// with an application that writes a business row per call in the step's
// transaction and fails once at the activity named failAt (none when
// empty).
type chainRig struct {
	h     *harness
	mu    sync.Mutex
	calls []string // the activities called, in order
}

func newChainRig(t *testing.T, db *gorm.DB, table string, chainSteps int, failAt string) *chainRig {
	t.Helper()
	require.NoError(t, db.Exec("CREATE TABLE "+table+" (k VARCHAR(64) NOT NULL)").Error)
	rig := &chainRig{h: newHarness(t, db, func(c *engine.Config) { c.ChainSteps = chainSteps })}
	failed := false
	rig.h.e.RegisterApplication("risky", func(_ context.Context, c *engine.Call) (map[string]any, error) {
		rig.mu.Lock()
		rig.calls = append(rig.calls, c.ActivityID)
		fail := c.ActivityID == failAt && !failed
		failed = failed || fail
		rig.mu.Unlock()
		if err := c.Tx.Exec("INSERT INTO "+table+" (k) VALUES (?)", c.ActivityID).Error; err != nil {
			return nil, err
		}
		if fail {
			return nil, engine.Retryable(errors.New("not yet"))
		}
		return nil, nil
	})
	rig.h.start()
	return rig
}

// run starts the sequence and waits for it to complete; it returns the
// activities' history (activity, state) and the business rows committed.
func (rig *chainRig) run(t *testing.T, pkg, table string) (history, rows []string) {
	t.Helper()
	rig.h.deploy(seqToolPackage(pkg, 10))
	id := rig.h.startProcess(pkg, "", nil)
	rig.h.requireState(id, wftype.ProcessCompleted)
	for _, h := range rig.h.history(id) {
		if h.Activity != "" {
			history = append(history, h.Activity+" "+h.From+">"+h.To)
		}
	}
	require.NoError(t, rig.h.db.Raw("SELECT k FROM "+table+" ORDER BY k").Scan(&rows).Error)
	return history, rows
}

// eachDBTwice is dbtest.Each with two fresh databases of each kind: an
// engine with chains and one without must not share one (each would
// take the other's events, as two nodes do).
func eachDBTwice(t *testing.T, fn func(t *testing.T, on, off *gorm.DB)) {
	t.Helper()
	for _, d := range dbtest.Dialects {
		t.Run(d.Name, func(t *testing.T) {
			fn(t, d.Open(t), d.Open(t))
		})
	}
}

func TestChainRunsASequenceInFewerCommits(t *testing.T) {
	t.Parallel()
	eachDBTwice(t, func(t *testing.T, dbOn, dbOff *gorm.DB) {
		chained := newChainRig(t, dbOn, "chain_on", 0, "")
		history, rows := chained.run(t, "chainon", "chain_on")
		alone := newChainRig(t, dbOff, "chain_off", -1, "")
		wantHistory, wantRows := alone.run(t, "chainoff", "chain_off")

		require.Equal(t, wantHistory, history, "the same steps, in the same order, with or without chains")
		require.Equal(t, wantRows, rows)
		require.Equal(t, alone.calls, chained.calls)
		require.Len(t, rows, 10)

		on, off := chained.h.e.Stats(), alone.h.e.Stats()
		require.Zero(t, off.Chained)
		// The instance's first step (its process.schedule, critical)
		// sends S1's event and chains it, and S1 ... S9 chain the rest.
		require.Equal(t, uint64(10), on.Chained, "S1 ... S10 ran in the transaction of the instance's schedule")
		require.Less(t, on.Commits.Transactions, off.Commits.Transactions)
	})
}

func TestChainedStepThatFailsIsRetriedAlone(t *testing.T) {
	t.Parallel()
	eachDBTwice(t, func(t *testing.T, dbOn, dbOff *gorm.DB) {
		chained := newChainRig(t, dbOn, "chainfail_on", 0, "S5")
		history, rows := chained.run(t, "chainfailon", "chainfail_on")
		alone := newChainRig(t, dbOff, "chainfail_off", -1, "S5")
		wantHistory, wantRows := alone.run(t, "chainfailoff", "chainfail_off")

		// S5 is called twice either way (the failure, then the retry
		// after the policy's backoff); the steps before it once: they
		// committed, the failure rolled back S5's step alone.
		want := []string{"S1", "S2", "S3", "S4", "S5", "S5", "S6", "S7", "S8", "S9", "S10"}
		require.Equal(t, want, alone.calls)
		require.Equal(t, want, chained.calls)
		require.Equal(t, wantHistory, history)
		require.Equal(t, wantRows, rows, "the failed call's business row rolled back with its step")
		require.Len(t, rows, 10)
		require.Positive(t, chained.h.e.Stats().Chained)
	})
}

// stepsAlone counts, per instance, the activity.start events processed
// in a transaction of their own (not chained).
type stepsAlone struct {
	engine.NopObserver
	mu sync.Mutex
	n  map[int64]int
}

func (o *stepsAlone) EventProcessed(ev engine.EventProcessed) {
	if ev.Kind != engine.EventKindActivityStart || ev.Chained || ev.Result != engine.EventDone {
		return
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	o.n[ev.Instance]++
}

func (o *stepsAlone) of(id int64) int {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.n[id]
}

// A chain after an instance's process.schedule runs in the critical
// pool's worker: it stops when process control waits for that worker.
// With one critical worker, instance A's S1 holds it (its application
// waits) while B's schedule, critical, waits for it: A's chain stops
// after S1, and S2 runs in a transaction of its own. Without anything
// waiting, an instance's steps all chain after its schedule. (Not on
// SQLite, whose one writer would keep B from starting while A's
// transaction is open.)
func TestChainAfterScheduleGivesWayToProcessControl(t *testing.T) {
	t.Parallel()
	for _, d := range dbtest.Dialects {
		if d.Name == "SQLite" {
			continue
		}
		t.Run(d.Name, func(t *testing.T) {
			t.Parallel()
			chainGivesWay(t, d.Open(t))
		})
	}
}

func chainGivesWay(t *testing.T, db *gorm.DB) {
	alone := &stepsAlone{n: map[int64]int{}}
	h := newHarness(t, db, func(c *engine.Config) {
		c.CriticalWorkers = 1
		c.Observer = alone
	})
	var gating atomic.Bool
	entered, release := make(chan struct{}), make(chan struct{})
	h.e.RegisterApplication("risky", func(_ context.Context, c *engine.Call) (map[string]any, error) {
		if c.ActivityID == "S1" && gating.CompareAndSwap(true, false) {
			close(entered)
			<-release
		}
		return nil, nil
	})
	h.start()
	h.deploy(seqToolPackage("giveway", 3))

	free := h.startProcess("giveway", "", nil)
	h.requireState(free, wftype.ProcessCompleted)
	require.Zero(t, alone.of(free), "with nothing waiting, S1 ... S3 chain after the schedule")

	gating.Store(true)
	a := h.startProcess("giveway", "", nil)
	<-entered // A's S1 holds the critical worker, in its schedule's chain
	b := h.startProcess("giveway", "", nil)
	waitFor(t, "B's schedule waiting for the critical worker", func() bool {
		return h.e.Stats().Scheduler.CriticalWaiting > 0
	})
	close(release)
	h.requireState(a, wftype.ProcessCompleted)
	h.requireState(b, wftype.ProcessCompleted)
	require.Positive(t, alone.of(a), "A's chain stopped after S1: S2 ran on its own")
}

// fanToolPackage is a parallel split into n automatic activities B1 ...
// Bn, each a call of the application "risky", and their join.
func fanToolPackage(id string, n int) string {
	acts := xpdltest.Activity("Split", "<Route/>", "", "and") + xpdltest.Activity("Join", "<Route/>", "and", "")
	var trans strings.Builder
	for i := 1; i <= n; i++ {
		acts += tool(fmt.Sprintf("B%d", i), "risky")
		trans.WriteString(xpdltest.Transition(fmt.Sprintf("s%d", i), fmt.Sprintf("Split>B%d", i)))
		trans.WriteString(xpdltest.Transition(fmt.Sprintf("j%d", i), fmt.Sprintf("B%d>Join", i)))
	}
	return toolPackage(id, acts, trans.String())
}

// A chain takes the events waiting in its instance's mailbox too: with
// two steps a chain, the schedule after the split chains B1 and B2 and
// leaves B3 ... B6 to the mailbox, where B3's step takes B4 and B5 into
// its chain; only B3 and B6 run in transactions of their own (without
// taking, B3 ... B6 would each run alone).
func TestChainTakesTheStepsQueuedInTheMailbox(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, db *gorm.DB) {
		alone := &stepsAlone{n: map[int64]int{}}
		h := newHarness(t, db, func(c *engine.Config) {
			c.ChainSteps = 2
			c.Observer = alone
		})
		var mu sync.Mutex
		var calls []string
		h.e.RegisterApplication("risky", func(_ context.Context, c *engine.Call) (map[string]any, error) {
			mu.Lock()
			defer mu.Unlock()
			calls = append(calls, c.ActivityID)
			return nil, nil
		})
		h.start()
		h.deploy(fanToolPackage("fantake", 6))
		id := h.startProcess("fantake", "", nil)
		h.requireState(id, wftype.ProcessCompleted)

		require.Equal(t, []string{"B1", "B2", "B3", "B4", "B5", "B6"}, calls, "each branch once, in the order of their events")
		require.Equal(t, 2, alone.of(id), "B3 and B6 ran on their own")
		require.Equal(t, uint64(4), h.e.Stats().Chained, "B1, B2 after the schedule; B4, B5 after B3")
		completed := 0
		for _, e := range h.history(id) {
			if strings.HasPrefix(e.Activity, "B") && e.To == string(wftype.ActivityCompleted) {
				completed++
			}
		}
		require.Equal(t, 6, completed)
	})
}

// A step taken from the mailbox that fails is retried alone, as a
// chained step that fails is: B4's first call fails, the steps before it
// in B3's chain commit, B5 and B6 run after it, and B4 runs again after
// the policy's backoff.
func TestTakenStepThatFailsIsRetriedAlone(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, db *gorm.DB) {
		require.NoError(t, db.Exec("CREATE TABLE fan_rows (k VARCHAR(64) NOT NULL)").Error)
		h := newHarness(t, db, func(c *engine.Config) { c.ChainSteps = 2 })
		var mu sync.Mutex
		var calls []string
		failed := false
		h.e.RegisterApplication("risky", func(_ context.Context, c *engine.Call) (map[string]any, error) {
			mu.Lock()
			calls = append(calls, c.ActivityID)
			fail := c.ActivityID == "B4" && !failed
			failed = failed || fail
			mu.Unlock()
			if err := c.Tx.Exec("INSERT INTO fan_rows (k) VALUES (?)", c.ActivityID).Error; err != nil {
				return nil, err
			}
			if fail {
				return nil, engine.Retryable(errors.New("not yet"))
			}
			return nil, nil
		})
		h.start()
		h.deploy(fanToolPackage("fanfail", 6))
		id := h.startProcess("fanfail", "", nil)
		h.requireState(id, wftype.ProcessCompleted)

		mu.Lock()
		defer mu.Unlock()
		require.Equal(t, []string{"B1", "B2", "B3", "B4", "B5", "B6", "B4"}, calls)
		var rows []string
		require.NoError(t, db.Raw("SELECT k FROM fan_rows ORDER BY k").Scan(&rows).Error)
		require.Equal(t, []string{"B1", "B2", "B3", "B4", "B5", "B6"}, rows, "the failed call's row rolled back with its step alone")
	})
}
