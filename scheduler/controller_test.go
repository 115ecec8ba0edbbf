package scheduler_test

import (
	"context"
	"runtime"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/goxpdl/goxpdl/scheduler"
	"github.com/goxpdl/goxpdl/store"
	"github.com/goxpdl/goxpdl/timer"
)

// controllerBundle is a started Scheduler whose normal pool (2..8,
// sampled every second of a fake clock) runs handlers that block until
// released, as handlers blocked in I/O do.
type controllerBundle struct {
	*bundle
	clock   *timer.Fake
	started chan int64
	release chan struct{}
	samples chan [2]int // the normal pool's size before and after each sample
}

func setupController(t *testing.T, cpu func() (time.Duration, bool)) *controllerBundle {
	t.Helper()
	c := &controllerBundle{
		clock:   timer.NewFake(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)),
		started: make(chan int64, 64),
		release: make(chan struct{}),
		samples: make(chan [2]int, 1),
	}
	c.bundle = setup(t, scheduler.Config{
		CriticalWorkers:  1,
		NormalWorkers:    2,
		NormalWorkersMin: 2,
		NormalWorkersMax: 8,
		AdaptInterval:    time.Second,
		Clock:            c.clock,
		Handler: func(_ context.Context, ev store.Event) error {
			c.started <- ev.ID
			<-c.release
			return nil
		},
	})
	scheduler.SetCPUFunc(c.sched, cpu)
	scheduler.SetAdaptHook(c.sched, func(from, to int) { c.samples <- [2]int{from, to} })
	armed := c.clock.TimerAdded()
	c.start(t)
	<-armed // the controller waits for its first sample
	return c
}

// sample moves the clock to the next sample and returns the normal pool's
// size before and after it, once the controller waits for the one after.
func (c *controllerBundle) sample(t *testing.T) [2]int {
	t.Helper()
	armed := c.clock.TimerAdded()
	c.clock.Advance(time.Second)
	got := <-c.samples
	<-armed
	require.Equal(t, got[1], c.sched.Stats().NormalWorkers)
	return got
}

// deliver queues one normal event for each of n instances.
func (c *controllerBundle) deliver(n int) {
	var evs []store.Event
	for i := int64(1); i <= int64(n); i++ {
		evs = append(evs, ev(i, i, false))
	}
	c.sched.Deliver(evs)
}

// waitStarted waits until n more handlers have started.
func (c *controllerBundle) waitStarted(n int) {
	for range n {
		<-c.started
	}
}

// TestControllerIOBound: handlers that block without using the CPU and a
// backlog grow the normal pool to its max; once the backlog is gone the
// pool shrinks back to its min, a step per sample. The critical pool
// keeps its size throughout.
func TestControllerIOBound(t *testing.T) {
	t.Parallel()
	c := setupController(t, func() (time.Duration, bool) { return 0, true })
	c.deliver(20)
	c.waitStarted(2)

	require.Equal(t, [2]int{2, 4}, c.sample(t), "2 busy workers, 18 waiting, no CPU used")
	c.waitStarted(2) // the two new workers took work
	stats := c.sched.Stats()
	require.Equal(t, 4, stats.NormalRunning)
	require.Equal(t, 16, stats.NormalWaiting)

	require.Equal(t, [2]int{4, 8}, c.sample(t))
	c.waitStarted(4)
	require.Equal(t, [2]int{8, 8}, c.sample(t), "at max")
	require.Equal(t, 8, c.sched.Stats().NormalRunning)

	close(c.release)
	c.waitIdle(t)
	require.Equal(t, [2]int{8, 8}, c.sample(t), "all 8 were busy in this window")
	require.Equal(t, [2]int{8, 5}, c.sample(t), "idle: half the gap to the min")
	require.Equal(t, [2]int{5, 3}, c.sample(t))
	require.Equal(t, [2]int{3, 2}, c.sample(t))
	require.Equal(t, [2]int{2, 2}, c.sample(t), "at min")

	stats = c.sched.Stats()
	require.Equal(t, uint64(20), stats.EventsProcessed)
	require.Equal(t, 1, stats.CriticalWorkers)
	require.Equal(t, 2, stats.NormalWorkersMin)
	require.Equal(t, 8, stats.NormalWorkersMax)
}

// TestControllerCPUBound: the same backlog with handlers that keep every
// core busy does not grow the pool.
func TestControllerCPUBound(t *testing.T) {
	t.Parallel()
	var cpu atomic.Int64 // every read: as if all cores had been busy since the last
	c := setupController(t, func() (time.Duration, bool) {
		return time.Duration(cpu.Add(int64(runtime.GOMAXPROCS(0)) * int64(time.Second))), true
	})
	c.deliver(20)
	c.waitStarted(2)
	for range 3 {
		require.Equal(t, [2]int{2, 2}, c.sample(t))
	}
	require.Equal(t, 2, c.sched.Stats().NormalRunning)
	close(c.release)
	c.waitIdle(t)
}

// TestControllerStops: Stop ends the controller (goleak in TestMain
// checks that its goroutine is gone), and so does a hard stop by Start's
// ctx; a pool whose min and max are equal has no controller.
func TestControllerStops(t *testing.T) {
	t.Parallel()
	ok := func(context.Context, store.Event) error { return nil }

	t.Run("stop", func(t *testing.T) {
		t.Parallel()
		clock := timer.NewFake(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
		b := setup(t, scheduler.Config{Handler: ok, Clock: clock, NormalWorkersMax: 32})
		armed := clock.TimerAdded()
		require.NoError(t, b.sched.Start(b.ctx))
		<-armed
		require.NoError(t, b.sched.Stop(b.ctx))
		require.Zero(t, clock.Waiters(), "the controller's timer is stopped")
	})

	t.Run("hard stop", func(t *testing.T) {
		t.Parallel()
		clock := timer.NewFake(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
		b := setup(t, scheduler.Config{Handler: ok, Clock: clock, NormalWorkersMax: 32})
		ctx, cancel := context.WithCancel(b.ctx)
		armed := clock.TimerAdded()
		require.NoError(t, b.sched.Start(ctx))
		<-armed
		cancel()
		require.NoError(t, b.sched.Stop(b.ctx))
		require.Zero(t, clock.Waiters())
	})

	t.Run("fixed pool", func(t *testing.T) {
		t.Parallel()
		clock := timer.NewFake(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
		b := setup(t, scheduler.Config{Handler: ok, Clock: clock, NormalWorkers: 8, NormalWorkersMax: 8})
		b.start(t)
		b.sched.Deliver([]store.Event{ev(1, 1, false)})
		b.waitIdle(t)
		require.Zero(t, clock.Waiters(), "no controller")
		stats := b.sched.Stats()
		require.Equal(t, 8, stats.NormalWorkers)
		require.Equal(t, stats.NormalWorkersMin, stats.NormalWorkersMax)
	})
}
