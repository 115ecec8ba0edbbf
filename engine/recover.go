package engine

import (
	"context"
	"fmt"
	"time"

	"github.com/goxpdl/goxpdl/timer"
)

// RecoveryReport says what Recover found and did.
type RecoveryReport struct {
	// ReapedNodes are the nodes whose lease had run out and whose work
	// this node took over.
	ReapedNodes []string `json:"reaped_nodes,omitempty"`
	// ReleasedClaims counts their event claims given back to the pool.
	ReleasedClaims int64 `json:"released_claims"`
	// PendingEvents counts the unprocessed events available now: the
	// work the engine resumes with.
	PendingEvents int64 `json:"pending_events"`
	// WaitingEvents counts unprocessed events due later (retries after a
	// backoff).
	WaitingEvents int64 `json:"waiting_events"`
	// OverdueTimers says whether timers had fallen due and not fired yet
	// when the report was made. The timer service fires overdue timers as
	// soon as the engine starts, so a resume may find them already fired.
	OverdueTimers bool `json:"overdue_timers"`
	// Rescued counts the instances recovery's second phase moved on: they
	// could move but had no event to move them, and got one.
	Rescued int `json:"rescued"`
}

// Recover is the explicit recovery command (the console's and `goxpdl
// resume`'s): it takes over the nodes whose lease ran out, without
// waiting for the next renewal, and wakes the outbox poller and the timer
// service, so that the events written but not processed and the timers
// that fell due are processed now. Start does the same for the node's own
// previous run.
//
// Then it runs recovery's second phase (rescue): every step writes the
// events that move its instance on in the transaction that reaches the
// recoverable point (the outbox), so an instance at a recoverable point
// that can move on has an unprocessed event, unless one was lost; such an
// instance gets the event it needs. The engine must be started.
func (e *Engine) Recover(ctx context.Context) (RecoveryReport, error) {
	if e.state.Load() != 1 {
		return RecoveryReport{}, fmt.Errorf("%w: Recover needs a started engine", ErrNotRunning)
	}
	var rep RecoveryReport
	var err error
	if e.membership != nil { // nil on a private in-memory database
		if rep.ReapedNodes, rep.ReleasedClaims, err = e.membership.Reap(ctx); err != nil {
			return rep, err
		}
	}
	now := e.now()
	if rep.PendingEvents, rep.WaitingEvents, err = e.store.CountUnprocessedEvents(ctx, now); err != nil {
		return rep, err
	}
	due, ok, err := e.store.NextTimerDue(ctx)
	if err != nil {
		return rep, err
	}
	rep.OverdueTimers = ok && !due.After(now)
	e.bus.Nudge()
	e.timers.Armed(now)
	// The second phase (paper §2.4.1): instances no event moves get one.
	if rep.Rescued, err = e.rescue(ctx); err != nil {
		return rep, err
	}
	return rep, nil
}

// WaitQuiet returns when nothing is left to do now: no unprocessed event
// is available, no timer is due, and the scheduler, the outbox poller,
// the timer service and this node's batch runner are idle (or ctx ends);
// the batch runner is busy while it runs, when it was told of a batch
// (StartBatch, ResumeBatch) and has not begun, and when its poll
// interval has passed on the clock and it has not looked again. Unlike
// WaitIdle it looks at the database, so it also waits for events of
// other nodes and host transactions. Work waiting for people, for a
// later timer, for a retry's backoff or for the batch runner's next poll
// (a batch it let go of after a failure) does not count. It works with a fake clock too: between
// looks it waits on the real clock, briefly.
func (e *Engine) WaitQuiet(ctx context.Context) error {
	for {
		quiet, err := e.Quiet(ctx)
		if err != nil || quiet {
			return err
		}
		t := timer.Real().NewTimer(time.Millisecond) // a look, not a schedule: the components run on their own
		select {
		case <-ctx.Done():
			t.Stop()
			return ctx.Err()
		case <-t.C():
		}
	}
}

// Quiet reports whether the engine has nothing to do now (see WaitQuiet),
// waking the poller and the timer service when the database says they
// have. It waits for the scheduler to go idle first.
func (e *Engine) Quiet(ctx context.Context) (bool, error) {
	if err := e.sched.WaitIdle(ctx); err != nil {
		return false, err
	}
	// The poller and the timer service hand what they take to the
	// scheduler: busy is checked before the database, and the scheduler
	// last, so that work in hand-over is seen by one of the looks.
	if e.bus.Stats().Busy || e.timers.Stats().Busy || e.batches != nil && e.batches.Busy() {
		return false, nil
	}
	now := e.now()
	available, _, err := e.store.CountUnprocessedEvents(ctx, now)
	if err != nil {
		return false, err
	}
	due, ok, err := e.store.NextTimerDue(ctx)
	if err != nil {
		return false, err
	}
	if available > 0 || ok && !due.After(now) || e.bus.HoldsDue(e.clock.Now()) {
		e.bus.Nudge()
		e.timers.Armed(now)
		return false, nil
	}
	st := e.sched.Stats()
	return !e.bus.Stats().Busy && !e.timers.Stats().Busy && (e.batches == nil || !e.batches.Busy()) &&
		st.QueueDepth == 0 && st.CriticalRunning == 0 && st.NormalRunning == 0, nil
}

// Backlog is the work the database holds for the engines sharing it
// (Engine.Backlog).
type Backlog struct {
	// EventsAvailable counts the unprocessed events that may be
	// processed now; EventsWaiting those due later (a retry's backoff).
	EventsAvailable int64 `json:"events_available"`
	EventsWaiting   int64 `json:"events_waiting"`
	// TimersPending counts the timers armed and not fired; TimersDue
	// those of them already due (the timer service is behind when this
	// stays above 0).
	TimersPending int64 `json:"timers_pending"`
	TimersDue     int64 `json:"timers_due"`
	// TimersPaused counts the timers of suspended instances.
	TimersPaused int64 `json:"timers_paused"`
	// TimersFired counts the timers fired whose event has not been
	// processed yet.
	TimersFired int64 `json:"timers_fired"`
}

// Backlog counts the unprocessed events and the timers in the database,
// of every node: two counting queries over indexes, cheap enough for a
// metrics scrape or a dashboard's refresh.
func (e *Engine) Backlog(ctx context.Context) (Backlog, error) {
	now := e.now()
	var b Backlog
	var err error
	if b.EventsAvailable, b.EventsWaiting, err = e.store.CountUnprocessedEvents(ctx, now); err != nil {
		return Backlog{}, err
	}
	tc, err := e.store.CountTimers(ctx, now)
	if err != nil {
		return Backlog{}, err
	}
	b.TimersPending, b.TimersDue, b.TimersPaused, b.TimersFired = tc.Pending, tc.Due, tc.Paused, tc.Fired
	return b, nil
}
