package timer

import (
	"context"
	"time"

	"github.com/goxpdl/goxpdl/internal/startstop"
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

	life startstop.Service
}

// NewCalendar returns a Calendar that calls fn at the times of sched by
// clock.
func NewCalendar(clock Clock, sched Schedule, fn func(ctx context.Context)) *Calendar {
	return &Calendar{clock: clock, sched: sched, fn: fn}
}

// Start arms the first time, the schedule's first after now, and starts
// the goroutine that waits for it. Cancelling ctx stops it as Stop does.
// A second Start, or a Start after Stop, does nothing.
func (c *Calendar) Start(ctx context.Context) {
	first := c.arm(c.clock.Now())
	if err := c.life.Start(ctx, func(ctx context.Context) { c.run(ctx, first) }); err != nil && first != nil {
		first.Stop() // started before: nothing to do
	}
}

// Stop stops the goroutine and waits for it (a run in progress has its
// ctx cancelled), or returns ctx.Err() when ctx ends first. It is
// idempotent and safe before Start (which then does nothing).
func (c *Calendar) Stop(ctx context.Context) error { return c.life.Stop(ctx) }

// arm returns a timer for the schedule's first time after now; nil when
// the schedule has no time left.
func (c *Calendar) arm(now time.Time) Timer {
	next := c.sched.Next(now)
	if next.IsZero() {
		return nil
	}
	return c.clock.NewTimer(next.Sub(now))
}

func (c *Calendar) run(ctx context.Context, t Timer) {
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
