package timer

import (
	"context"
	"time"

	"github.com/goxpdl/goxpdl/internal/startstop"
)

// Periodic runs a function now and then every interval of a Clock, on a
// goroutine it owns between Start and Stop: the engine's low-rate
// background sweeps (recovery's rescuer) run on it. A run that is still
// going when the next is due delays it; runs never overlap.
type Periodic struct {
	clock    Clock
	interval time.Duration
	fn       func(ctx context.Context)

	life startstop.Service
	wake chan struct{}
}

// NewPeriodic returns a Periodic that calls fn every interval of clock.
func NewPeriodic(clock Clock, interval time.Duration, fn func(ctx context.Context)) *Periodic {
	return &Periodic{clock: clock, interval: interval, fn: fn, wake: make(chan struct{}, 1)}
}

// Start starts the goroutine; fn runs at once, then every interval.
// Cancelling ctx stops it as Stop does. A second Start, or a Start after
// Stop, does nothing.
func (p *Periodic) Start(ctx context.Context) {
	_ = p.life.Start(ctx, p.run) // started before: nothing to do
}

// Now asks for a run as soon as possible; it never blocks.
func (p *Periodic) Now() {
	select {
	case p.wake <- struct{}{}:
	default:
	}
}

// Stop stops the goroutine and waits for it (a run in progress has its
// ctx cancelled), or returns ctx.Err() when ctx ends first. It is
// idempotent and safe before Start (which then does nothing).
func (p *Periodic) Stop(ctx context.Context) error { return p.life.Stop(ctx) }

func (p *Periodic) run(ctx context.Context) {
	for ctx.Err() == nil {
		p.fn(ctx)
		t := p.clock.NewTimer(p.interval)
		select {
		case <-ctx.Done():
			t.Stop()
			return
		case <-p.wake:
			t.Stop()
		case <-t.C():
		}
	}
}
