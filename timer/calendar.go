package timer

import (
	"context"
	"sync"
	"time"
)

// Calendar runs a function at the times of a Schedule (a cron
// expression, ParseCron) by a Clock, on a goroutine it owns between
// Start and Stop: the engine's retention runs on it. Unlike Periodic it
// does not run at Start. The next time is set as a run begins (the
// schedule's first time after the clock's reading then), so that how
// long runs take does not shift the schedule. Runs never overlap: a run
// that outlasts the time to the next one is followed at once by that
// next one, and times that passed while the clock jumped or a run went
// on are skipped, not caught up one by one.
type Calendar struct {
	clock Clock
	sched Schedule
	fn    func(ctx context.Context)

	mu     sync.Mutex
	cancel context.CancelFunc
	done   chan struct{}
}

// NewCalendar returns a Calendar that calls fn at the times of sched by
// clock.
func NewCalendar(clock Clock, sched Schedule, fn func(ctx context.Context)) *Calendar {
	return &Calendar{clock: clock, sched: sched, fn: fn}
}

// Start arms the first time, the schedule's first after now, and starts
// the goroutine that waits for it. Cancelling ctx stops it as Stop does.
// A second Start does nothing.
func (c *Calendar) Start(ctx context.Context) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.done != nil {
		return
	}
	ctx, c.cancel = context.WithCancel(ctx)
	c.done = make(chan struct{})
	go c.run(ctx, c.done, c.arm(c.clock.Now()))
}

// Stop stops the goroutine and waits for it (a run in progress has its
// ctx cancelled), or returns ctx.Err() when ctx ends first. It is
// idempotent and safe before Start.
func (c *Calendar) Stop(ctx context.Context) error {
	c.mu.Lock()
	cancel, done := c.cancel, c.done
	c.mu.Unlock()
	if done == nil {
		return nil
	}
	cancel()
	select {
	case <-done:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// arm returns a timer for the schedule's first time after now; nil when
// the schedule has no time left.
func (c *Calendar) arm(now time.Time) Timer {
	next := c.sched.Next(now)
	if next.IsZero() {
		return nil
	}
	return c.clock.NewTimer(next.Sub(now))
}

func (c *Calendar) run(ctx context.Context, done chan struct{}, t Timer) {
	defer close(done)
	for t != nil {
		select {
		case <-ctx.Done():
			t.Stop()
			return
		case <-t.C():
		}
		t = c.arm(c.clock.Now())
		c.fn(ctx)
	}
	<-ctx.Done() // the schedule has no time left
}
