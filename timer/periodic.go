package timer

import (
	"context"
	"sync"
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

	// What Busy reports, under mu: a run is going (running), asked for
	// by Now and not begun (wanted), or due on the clock at due (armed,
	// between runs).
	mu      sync.Mutex
	alive   bool
	running bool
	wanted  bool
	armed   bool
	due     time.Time
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
	p.mu.Lock()
	p.wanted = true
	p.mu.Unlock()
	select {
	case p.wake <- struct{}{}:
	default:
	}
}

// Stop stops the goroutine and waits for it (a run in progress has its
// ctx cancelled), or returns ctx.Err() when ctx ends first. It is
// idempotent and safe before Start (which then does nothing).
func (p *Periodic) Stop(ctx context.Context) error { return p.life.Stop(ctx) }

// Busy reports whether the Periodic has a run to make now: one is going,
// one was asked for (Now) and has not begun, or the interval has passed
// on the clock and the next run has not begun. It is false before Start
// and after Stop. A caller that wants to know when the background work
// is done (Engine.WaitQuiet) looks at it: unlike the goroutine's own
// state, it holds no gap between a wake-up and the run it starts.
func (p *Periodic) Busy() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if !p.alive {
		return false
	}
	return p.running || p.wanted || p.armed && !p.clock.Now().Before(p.due)
}

func (p *Periodic) run(ctx context.Context) {
	p.begin(true)
	defer p.begin(false)
	for ctx.Err() == nil {
		p.fn(ctx)
		p.mu.Lock()
		t := p.clock.NewTimer(p.interval) // armed before running ends: Busy never misses the tick
		p.running, p.armed, p.due = false, true, p.clock.Now().Add(p.interval)
		p.mu.Unlock()
		select {
		case <-ctx.Done():
			t.Stop()
			return
		case <-p.wake:
			t.Stop()
		case <-t.C():
		}
		p.begin(true)
	}
}

// begin marks a run begun (alive) or the goroutine gone (not alive). A
// run that begins answers every Now before it: a wake-up still buffered
// is dropped.
func (p *Periodic) begin(alive bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.alive, p.running, p.wanted, p.armed = alive, alive, false, false
	select {
	case <-p.wake:
	default:
	}
}
