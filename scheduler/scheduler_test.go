package scheduler_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"runtime"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/goxpdl/goxpdl/scheduler"
	"github.com/goxpdl/goxpdl/store"
	"github.com/goxpdl/goxpdl/timer"
)

// lockedBuffer is a bytes.Buffer that handlers may log into while a test
// reads it.
type lockedBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *lockedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *lockedBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

type bundle struct {
	ctx   context.Context
	sched *scheduler.Scheduler
	logs  *lockedBuffer
}

// setup returns a Scheduler that is not started yet, logging into
// bundle.logs. Without cfg.Clock it gets a fake clock that nobody
// advances, so that the normal pool keeps its size unless a test moves
// the clock.
func setup(t *testing.T, cfg scheduler.Config) *bundle {
	t.Helper()
	b := &bundle{ctx: t.Context(), logs: &lockedBuffer{}}
	cfg.Logger = slog.New(slog.NewTextHandler(b.logs, nil))
	if cfg.Clock == nil {
		cfg.Clock = timer.NewFake(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	}
	var err error
	b.sched, err = scheduler.New(cfg)
	require.NoError(t, err)
	return b
}

// start starts the Scheduler and stops it when the test ends.
func (b *bundle) start(t *testing.T) {
	t.Helper()
	require.NoError(t, b.sched.Start(b.ctx))
	t.Cleanup(func() { require.NoError(t, b.sched.Stop(context.WithoutCancel(b.ctx))) })
}

func (b *bundle) waitIdle(t *testing.T) {
	t.Helper()
	require.NoError(t, b.sched.WaitIdle(b.ctx))
}

// counters returns stats without the pools' sizes, for tests that compare
// the counters and queues whole.
func counters(stats scheduler.Stats) scheduler.Stats {
	stats.CriticalWorkers, stats.NormalWorkers, stats.NormalWorkersMin, stats.NormalWorkersMax = 0, 0, 0, 0
	return stats
}

func ev(id, instance int64, critical bool) store.Event {
	return store.Event{ID: id, EventID: fmt.Sprintf("ev-%d", id), ProcessInstanceID: instance, Kind: "test", Critical: critical}
}

// recorder counts how often each event ID was handled.
type recorder struct {
	mu     sync.Mutex
	counts map[int64]int
}

func (r *recorder) record(id int64) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.counts == nil {
		r.counts = make(map[int64]int)
	}
	r.counts[id]++
}

func (r *recorder) count(id int64) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.counts[id]
}

func TestNew(t *testing.T) {
	t.Parallel()
	ok := func(context.Context, store.Event) error { return nil }
	tests := []struct {
		name  string
		cfg   scheduler.Config
		field string
	}{
		{"no handler", scheduler.Config{}, "Handler"},
		{"negative critical workers", scheduler.Config{Handler: ok, CriticalWorkers: -1}, "CriticalWorkers"},
		{"negative normal workers", scheduler.Config{Handler: ok, NormalWorkers: -1}, "NormalWorkers"},
		{"negative normal min", scheduler.Config{Handler: ok, NormalWorkersMin: -1}, "NormalWorkersMin"},
		{"negative normal max", scheduler.Config{Handler: ok, NormalWorkersMax: -1}, "NormalWorkersMax"},
		{"min above max", scheduler.Config{Handler: ok, NormalWorkersMin: 9, NormalWorkersMax: 8}, "NormalWorkersMin"},
		{"start below min", scheduler.Config{Handler: ok, NormalWorkers: 4, NormalWorkersMin: 8}, "NormalWorkers"},
		{"start above max", scheduler.Config{Handler: ok, NormalWorkers: 20, NormalWorkersMax: 8}, "NormalWorkers"},
		{"negative adapt interval", scheduler.Config{Handler: ok, AdaptInterval: -time.Second}, "AdaptInterval"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			s, err := scheduler.New(tt.cfg)
			require.Nil(t, s)
			var cfgErr *scheduler.ConfigError
			require.ErrorAs(t, err, &cfgErr)
			require.Equal(t, tt.field, cfgErr.Field)
		})
	}
}

// TestNormalPoolSizes: the normal pool's starting size and bounds, from
// defaults and from what is set; Stats reports them before Start.
func TestNormalPoolSizes(t *testing.T) {
	t.Parallel()
	ok := func(context.Context, store.Event) error { return nil }
	tests := []struct {
		name            string
		cfg             scheduler.Config
		start, min, max int
	}{
		{"defaults", scheduler.Config{}, 16, 16, 128},
		{"a start", scheduler.Config{NormalWorkers: 8}, 8, 8, 128},
		{"a start above the default max", scheduler.Config{NormalWorkers: 200}, 200, 200, 200},
		{"a min", scheduler.Config{NormalWorkersMin: 2}, 16, 2, 128},
		{"a min above the default start", scheduler.Config{NormalWorkersMin: 32}, 32, 32, 128},
		{"a max below the default start", scheduler.Config{NormalWorkersMax: 8}, 8, 8, 8},
		{"all three", scheduler.Config{NormalWorkers: 8, NormalWorkersMin: 4, NormalWorkersMax: 64}, 8, 4, 64},
		{"fixed", scheduler.Config{NormalWorkers: 8, NormalWorkersMin: 8, NormalWorkersMax: 8}, 8, 8, 8},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			tt.cfg.Handler = ok
			s, err := scheduler.New(tt.cfg)
			require.NoError(t, err)
			stats := s.Stats()
			require.Equal(t, []int{scheduler.DefaultCriticalWorkers, tt.start, tt.min, tt.max},
				[]int{stats.CriticalWorkers, stats.NormalWorkers, stats.NormalWorkersMin, stats.NormalWorkersMax})
			require.NoError(t, s.Stop(t.Context()))
		})
	}
}

// TestOrderPerInstance: many instances at once; one instance's handler
// never runs concurrently with itself and sees its events in ID order,
// whichever pool each event runs on.
func TestOrderPerInstance(t *testing.T) {
	t.Parallel()
	const (
		instances = 200
		perInst   = 50
	)
	type trace struct {
		busy atomic.Bool
		mu   sync.Mutex
		ids  []int64
	}
	traces := make([]trace, instances+1)
	var overlaps atomic.Int64
	b := setup(t, scheduler.Config{
		CriticalWorkers: 3,
		NormalWorkers:   8,
		Handler: func(_ context.Context, ev store.Event) error {
			tr := &traces[ev.ProcessInstanceID]
			if !tr.busy.CompareAndSwap(false, true) {
				overlaps.Add(1)
			}
			tr.mu.Lock()
			tr.ids = append(tr.ids, ev.ID)
			tr.mu.Unlock()
			runtime.Gosched()
			tr.busy.Store(false)
			return nil
		},
	})

	// Event j of instance i has ID j*instances+i: IDs of all instances
	// interleave, as in a shared outbox.
	rng := rand.New(rand.NewPCG(1, 2))
	eventsOf := func(i int) []store.Event {
		out := make([]store.Event, perInst)
		for j := range out {
			out[j] = ev(int64(j*instances+i), int64(i), rng.IntN(4) == 0)
		}
		return out
	}

	// The first half arrives before Start, in one shuffled batch: the
	// mailboxes put it in order.
	var early []store.Event
	later := make([][]store.Event, instances+1)
	for i := 1; i <= instances; i++ {
		if i <= instances/2 {
			early = append(early, eventsOf(i)...)
		} else {
			later[i] = eventsOf(i)
		}
	}
	rng.Shuffle(len(early), func(a, c int) { early[a], early[c] = early[c], early[a] })
	b.sched.Deliver(early)
	b.start(t)

	// The second half arrives while they run, from four goroutines in
	// small batches, each instance's events in order.
	var wg sync.WaitGroup
	for g := range 4 {
		wg.Go(func() {
			for j := 0; j < perInst; j += 5 {
				for i := instances/2 + 1 + g; i <= instances; i += 4 {
					b.sched.Deliver(later[i][j : j+5])
				}
			}
		})
	}
	wg.Wait()
	b.waitIdle(t)

	require.Zero(t, overlaps.Load(), "an instance's handler ran concurrently with itself")
	for i := 1; i <= instances; i++ {
		ids := traces[i].ids
		require.Len(t, ids, perInst, "instance %d", i)
		require.True(t, slices.IsSorted(ids), "instance %d saw %v", i, ids)
	}
	require.Equal(t, scheduler.Stats{EventsProcessed: instances * perInst}, counters(b.sched.Stats()))
}

// TestCriticalOvertakesNormal: while every normal worker is held by a slow
// handler and more normal work is queued, critical events still run.
func TestCriticalOvertakesNormal(t *testing.T) {
	t.Parallel()
	started := make(chan int64, 32)
	criticalDone := make(chan int64, 32)
	release := make(chan struct{})
	b := setup(t, scheduler.Config{
		CriticalWorkers: 1,
		NormalWorkers:   2,
		Handler: func(_ context.Context, ev store.Event) error {
			if ev.Critical {
				criticalDone <- ev.ID
				return nil
			}
			started <- ev.ID
			<-release
			return nil
		},
	})
	b.start(t)

	var slow []store.Event
	for i := int64(1); i <= 10; i++ {
		slow = append(slow, ev(i, i, false))
	}
	b.sched.Deliver(slow)
	<-started
	<-started // both normal workers are held

	// A terminate for another instance runs at once.
	b.sched.Deliver([]store.Event{ev(99, 99, true)})
	require.Equal(t, int64(99), <-criticalDone)

	// A mailbox queued for the normal pool moves to the critical pool when
	// a critical event with a lower ID becomes its head.
	b.sched.Deliver([]store.Event{ev(200, 50, false)})
	b.sched.Deliver([]store.Event{ev(150, 50, true)})
	require.Equal(t, int64(150), <-criticalDone)

	stats := b.sched.Stats()
	require.Equal(t, 2, stats.NormalRunning)
	require.Equal(t, 9, stats.NormalWaiting, "instances 3-10 and 50")
	require.Zero(t, stats.CriticalRunning)
	require.Zero(t, stats.CriticalWaiting)
	require.Equal(t, 9, stats.QueueDepth)
	require.Equal(t, 9, stats.Mailboxes)

	close(release)
	b.waitIdle(t)
	require.Equal(t, uint64(13), b.sched.Stats().EventsProcessed)
	require.Len(t, started, 9, "instances 3-10 and event 200; 1 and 2 were received above")
}

// TestDuplicates: an event queued, running or lately handled is not
// handled again; a failed one is.
func TestDuplicates(t *testing.T) {
	t.Parallel()
	var rec recorder
	started := make(chan struct{})
	gate := make(chan struct{})
	var failOnce atomic.Bool
	failOnce.Store(true)
	b := setup(t, scheduler.Config{
		Handler: func(_ context.Context, ev store.Event) error {
			rec.record(ev.ID)
			switch ev.ID {
			case 1:
				close(started)
				<-gate
			case 3:
				if failOnce.Swap(false) {
					return errors.New("not yet")
				}
			}
			return nil
		},
	})
	b.start(t)

	e1, e2, e3 := ev(1, 5, false), ev(2, 5, true), ev(3, 5, false)
	b.sched.Deliver([]store.Event{e1, e2, e3})
	<-started
	b.sched.Deliver([]store.Event{e1, e2, e3}) // running, queued, queued
	require.Equal(t, uint64(3), b.sched.Stats().EventsDuplicate)
	close(gate)
	b.waitIdle(t)

	// Handled lately: dropped. Failed: handled again (the poller's
	// redelivery after the lease).
	b.sched.Deliver([]store.Event{e2, e1, e3})
	b.waitIdle(t)
	require.Equal(t, 1, rec.count(1))
	require.Equal(t, 1, rec.count(2))
	require.Equal(t, 2, rec.count(3))

	// Events without an instance are deduplicated too.
	loose := ev(100, 0, false)
	b.sched.Deliver([]store.Event{loose, loose})
	b.waitIdle(t)
	b.sched.Deliver([]store.Event{loose})
	b.waitIdle(t)
	require.Equal(t, 1, rec.count(100))

	stats := b.sched.Stats()
	require.Equal(t, uint64(7), stats.EventsDuplicate)
	require.Equal(t, uint64(4), stats.EventsProcessed)
	require.Equal(t, uint64(1), stats.EventsFailed)
}

// TestHandlerErrorAndPanic: errors and panics are logged and counted; the
// mailbox goes on with its next event and the workers survive.
func TestHandlerErrorAndPanic(t *testing.T) {
	t.Parallel()
	var (
		mu    sync.Mutex
		order []int64
	)
	b := setup(t, scheduler.Config{
		CriticalWorkers: 1,
		NormalWorkers:   1,
		Handler: func(_ context.Context, ev store.Event) error {
			mu.Lock()
			order = append(order, ev.ID)
			mu.Unlock()
			switch ev.ID {
			case 1:
				return errors.New("application unreachable")
			case 2, 10:
				panic("boom")
			}
			return nil
		},
	})
	b.start(t)

	b.sched.Deliver([]store.Event{ev(1, 7, false), ev(2, 7, true), ev(3, 7, false), ev(10, 0, false)})
	b.waitIdle(t)

	stats := b.sched.Stats()
	require.Equal(t, uint64(3), stats.EventsFailed)
	require.Equal(t, uint64(1), stats.EventsProcessed)
	logs := b.logs.String()
	require.Contains(t, logs, "application unreachable")
	require.Contains(t, logs, "panic=boom")
	require.Contains(t, logs, "runtime/debug.Stack", "the panic is logged with its stack")

	// The workers are alive, and failed events are not remembered: their
	// redelivery runs.
	b.sched.Deliver([]store.Event{ev(1, 7, false), ev(4, 7, false)})
	b.waitIdle(t)
	mu.Lock()
	defer mu.Unlock()
	instance7 := slices.DeleteFunc(slices.Clone(order), func(id int64) bool { return id == 10 })
	require.Equal(t, []int64{1, 2, 3, 1, 4}, instance7)
}

// TestInstanceZeroIsNotSerialised: events without a process instance run
// in parallel; serialised, this test would never finish.
func TestInstanceZeroIsNotSerialised(t *testing.T) {
	t.Parallel()
	started := make(chan struct{}, 3)
	all := make(chan struct{})
	b := setup(t, scheduler.Config{
		NormalWorkers: 3,
		Handler: func(context.Context, store.Event) error {
			started <- struct{}{}
			<-all
			return nil
		},
	})
	b.start(t)
	b.sched.Deliver([]store.Event{ev(1, 0, false), ev(2, 0, false), ev(3, 0, false)})
	for range 3 {
		<-started
	}
	require.Equal(t, 3, b.sched.Stats().NormalRunning)
	close(all)
	b.waitIdle(t)
	require.Equal(t, uint64(3), b.sched.Stats().EventsProcessed)
}

// TestWaitIdleSeesDeliveriesFromHandlers: events a handler delivers keep
// the Scheduler busy, so WaitIdle returns only after the whole chain.
func TestWaitIdleSeesDeliveriesFromHandlers(t *testing.T) {
	t.Parallel()
	const chain = 100
	var s *scheduler.Scheduler
	b := setup(t, scheduler.Config{
		Handler: func(_ context.Context, e store.Event) error {
			if e.ID < chain {
				s.Deliver([]store.Event{ev(e.ID+1, (e.ID+1)%3, e.ID%2 == 0)})
			}
			return nil
		},
	})
	s = b.sched
	b.start(t)
	s.Deliver([]store.Event{ev(1, 1, false)})
	b.waitIdle(t)
	require.Equal(t, uint64(chain), s.Stats().EventsProcessed)
}

// TestStopDrains: Stop refuses new events but finishes the queued and
// running ones.
func TestStopDrains(t *testing.T) {
	t.Parallel()
	gate := make(chan struct{})
	var rec recorder
	b := setup(t, scheduler.Config{
		NormalWorkers: 2,
		Handler: func(ctx context.Context, ev store.Event) error {
			<-gate
			rec.record(ev.ID)
			return ctx.Err() // nil: a graceful stop does not cancel
		},
	})
	b.start(t)
	var events []store.Event
	for i := int64(1); i <= 20; i++ {
		events = append(events, ev(i, i%5+1, i%3 == 0))
	}
	b.sched.Deliver(events)

	draining := make(chan struct{})
	scheduler.SetStopHook(b.sched, func() { close(draining) })
	stopped := make(chan error, 1)
	go func() { stopped <- b.sched.Stop(b.ctx) }()
	<-draining
	b.sched.Deliver([]store.Event{ev(21, 1, false)}) // refused
	close(gate)
	require.NoError(t, <-stopped)

	stats := b.sched.Stats()
	require.Equal(t, uint64(20), stats.EventsProcessed)
	require.Equal(t, uint64(1), stats.EventsDropped)
	require.Zero(t, stats.QueueDepth)
	require.Zero(t, rec.count(21))
	require.ErrorIs(t, b.sched.Start(b.ctx), scheduler.ErrStopped)
	require.NoError(t, b.sched.Stop(b.ctx), "idempotent")
}

// TestStopCtxEnds: when Stop's ctx ends during the drain, the queued
// events are dropped, the running handler's ctx is cancelled, Stop
// returns ctx.Err() and no goroutine is left behind. It runs alone (not in
// parallel) so that goleak sees only its goroutines.
func TestStopCtxEnds(t *testing.T) { //nolint:paralleltest // goleak.VerifyNone needs the process to itself
	before := goleak.IgnoreCurrent()
	started := make(chan struct{}, 2)
	sawCancel := make(chan error, 2)
	b := setup(t, scheduler.Config{
		CriticalWorkers: 1,
		NormalWorkers:   1,
		Handler: func(ctx context.Context, _ store.Event) error {
			started <- struct{}{}
			<-ctx.Done()
			sawCancel <- ctx.Err()
			return ctx.Err()
		},
	})
	require.NoError(t, b.sched.Start(b.ctx))
	b.sched.Deliver([]store.Event{ev(1, 1, false), ev(2, 2, false), ev(3, 3, false), ev(4, 0, false), ev(5, 4, true)})
	<-started
	<-started // the critical event 5 and one normal event run; three are queued

	ctx, cancel := context.WithCancel(b.ctx)
	draining := make(chan struct{})
	scheduler.SetStopHook(b.sched, func() { close(draining) })
	stopped := make(chan error, 1)
	go func() { stopped <- b.sched.Stop(ctx) }()
	<-draining
	cancel()
	require.ErrorIs(t, <-stopped, context.Canceled)
	require.ErrorIs(t, <-sawCancel, context.Canceled)
	require.ErrorIs(t, <-sawCancel, context.Canceled)

	stats := b.sched.Stats()
	require.Equal(t, scheduler.Stats{EventsFailed: 2, EventsDropped: 3}, counters(stats))
	require.NoError(t, b.sched.WaitIdle(b.ctx))
	require.NoError(t, b.sched.Stop(b.ctx), "idempotent")
	goleak.VerifyNone(t, before)
}

// TestStopExpiredCtx: Stop with a ctx that has already ended gives up at
// once and still releases everything.
func TestStopExpiredCtx(t *testing.T) {
	t.Parallel()
	started := make(chan struct{}, 1)
	b := setup(t, scheduler.Config{
		NormalWorkers: 1,
		Handler: func(ctx context.Context, _ store.Event) error {
			started <- struct{}{}
			<-ctx.Done()
			return ctx.Err()
		},
	})
	require.NoError(t, b.sched.Start(b.ctx))
	b.sched.Deliver([]store.Event{ev(1, 1, false), ev(2, 2, false)})
	<-started

	expired, cancel := context.WithCancel(b.ctx)
	cancel()
	require.ErrorIs(t, b.sched.Stop(expired), context.Canceled)
	require.Equal(t, scheduler.Stats{EventsFailed: 1, EventsDropped: 1}, counters(b.sched.Stats()))
}

func TestStartStop(t *testing.T) {
	t.Parallel()
	ok := func(context.Context, store.Event) error { return nil }

	t.Run("deliver before start", func(t *testing.T) {
		t.Parallel()
		b := setup(t, scheduler.Config{Handler: ok})
		b.sched.Deliver([]store.Event{ev(1, 1, true), ev(2, 0, false)})
		require.Equal(t, 2, b.sched.Stats().QueueDepth)
		b.start(t)
		require.ErrorIs(t, b.sched.Start(b.ctx), scheduler.ErrStarted)
		b.waitIdle(t)
		require.Equal(t, uint64(2), b.sched.Stats().EventsProcessed)
	})

	t.Run("stop before start", func(t *testing.T) {
		t.Parallel()
		b := setup(t, scheduler.Config{Handler: ok})
		b.sched.Deliver([]store.Event{ev(1, 1, false)})
		require.NoError(t, b.sched.Stop(b.ctx))
		require.NoError(t, b.sched.Stop(b.ctx))
		require.ErrorIs(t, b.sched.Start(b.ctx), scheduler.ErrStopped)
		require.Equal(t, scheduler.Stats{EventsDropped: 1}, counters(b.sched.Stats()))
		b.waitIdle(t)
	})

	// Cancelling Start's ctx is a hard stop: the handlers' ctx is
	// cancelled, new events are refused, and Stop returns nil.
	t.Run("cancel start ctx", func(t *testing.T) {
		t.Parallel()
		started := make(chan struct{}, 1)
		b := setup(t, scheduler.Config{
			NormalWorkers: 1,
			Handler: func(ctx context.Context, _ store.Event) error {
				started <- struct{}{}
				<-ctx.Done()
				return ctx.Err()
			},
		})
		ctx, cancel := context.WithCancel(b.ctx)
		require.NoError(t, b.sched.Start(ctx))
		b.sched.Deliver([]store.Event{ev(1, 1, false), ev(2, 2, false)})
		<-started
		cancel()
		require.NoError(t, b.sched.Stop(b.ctx))
		b.sched.Deliver([]store.Event{ev(3, 3, false)})
		stats := b.sched.Stats()
		require.Equal(t, uint64(1), stats.EventsFailed)
		require.Equal(t, uint64(2), stats.EventsDropped, "event 2 queued at the stop, event 3 after")
	})

	t.Run("event without ID", func(t *testing.T) {
		t.Parallel()
		b := setup(t, scheduler.Config{Handler: ok})
		b.sched.Deliver([]store.Event{{ProcessInstanceID: 1, Kind: "unsaved"}})
		require.Equal(t, scheduler.Stats{EventsDropped: 1}, counters(b.sched.Stats()))
		require.Contains(t, b.logs.String(), "without an ID")
	})

	t.Run("wait idle ctx ends", func(t *testing.T) {
		t.Parallel()
		b := setup(t, scheduler.Config{Handler: ok})
		b.sched.Deliver([]store.Event{ev(1, 1, false)}) // not started: stays queued
		ctx, cancel := context.WithCancel(b.ctx)
		cancel()
		require.ErrorIs(t, b.sched.WaitIdle(ctx), context.Canceled)
		require.NoError(t, b.sched.Stop(b.ctx))
	})
}
