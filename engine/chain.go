package engine

import (
	"context"
	"encoding/json"
	"errors"
	"slices"
	"sync"
	"time"

	"github.com/goxpdl/goxpdl/scheduler"
	"github.com/goxpdl/goxpdl/store"
)

// DefaultChainSteps is Config.ChainSteps's default.
const DefaultChainSteps = 16

// A chain (Config.ChainSteps) processes the events a step sends its own
// instance, due at once, and those of the instance that wait in its
// mailbox behind the step's event (scheduler.Take), in the step's
// database transaction instead of after its commit: the next activity
// of a sequence starts in the same transaction as the one before it
// completed, and the branches of a parallel split run in one. The events are still
// written and marked processed, each step is still a run of its own with
// its own history, records and observations, and each runs in a
// savepoint, so a step that fails is rolled back alone and the steps
// before it commit: what a chain changes is how many commits (a disk
// flush each) and how many dispatches an instance's automatic steps cost,
// not what any step does. A commit that fails takes the whole chain with
// it, as it would take a group (groupcommit.go), and every step runs
// again.
//
// A chained step that fails leaves its event to be handled as if it had
// been processed on its own and failed: an application's failure is
// retried after the policy's backoff (retryLater), a conflict goes back
// to the scheduler. Either way the event's next run knows that an
// earlier attempt may have called applications (maybeCalled), so an
// application declared Retryable=false is not called twice.

// chainMode is how a chain runs.
type chainMode struct {
	// strict: in checked savepoints (Tx.Savepoint), for a transaction
	// run again, rather than deferred ones.
	strict bool
	// critical: the chain follows a critical step, in a worker of the
	// critical pool.
	critical bool
	// after is the event of the step the chain follows, the one the
	// scheduler is handling for the instance: the chain may take the
	// events queued behind it in the instance's mailbox
	// (scheduler.Take).
	after int64
}

// chainLink is one event a chain processed, or tried to.
type chainLink struct {
	ev store.Event
	// r is the run that processed ev; nil when ev was not processed.
	r *run
	// err is why ev's step failed: the event is retried after the
	// commit (retryLater) when it is not a conflict.
	err     error
	began   time.Time
	took    time.Duration
	doomed  map[string]failure
	actIDs  map[string]int64
	calling bool // the failed step called an application
	// taken: ev came from the instance's mailbox (scheduler.Take), not
	// from a step of the chain; it is settled with the scheduler.
	taken bool
}

// chainable reports whether ev, sent by a run of instance pi, may be
// processed in the sending run's transaction: a normal event of the same
// instance that this node claimed at once (due now) and that starts work
// rather than ending it.
func (e *Engine) chainable(pi int64, ev store.Event) bool {
	return ev.ProcessInstanceID == pi && !ev.Critical && ev.ClaimedBy == e.owner && ev.ClaimedUntil != nil &&
		(ev.Kind == evActivityStart || ev.Kind == evSchedule)
}

// takable reports whether ev, queued in the mailbox of instance pi, may
// be taken into a chain: it is chainable and a third of its claim's
// lease is left (Engine.takeMargin). A chained step's processed mark,
// the fence of the claim, may be sent only at the commit: a claim that
// ran out meanwhile would fail the whole transaction rather than that
// step.
func (e *Engine) takable(pi int64, now time.Time, ev store.Event) bool {
	return e.chainable(pi, ev) && ev.ClaimedUntil.Sub(now) > e.takeMargin
}

// giveBack returns to the scheduler the events a chain took from the
// mailbox, unprocessed: its transaction did not commit.
func (e *Engine) giveBack(links []*chainLink) {
	for _, l := range links {
		if l.taken {
			e.sched.Settle(scheduler.GivenBack, l.ev)
		}
	}
}

// chain processes, after first's flush in the same transaction, the
// events of its instance that come next: those queued in the instance's
// mailbox behind the event first handles (mode.after), then those first
// sent its instance and those the chained steps send in turn, oldest
// first, at most Config.ChainSteps, each in a savepoint. It stops at a
// step that fails, at a queued event it may not take (not chainable: it
// is handled in turn after the commit), and when process control waits
// for the transaction's lane (commitLane.mayChain). It returns the links
// it made; an error only when a savepoint itself failed, which fails the
// transaction. The events it took from the mailbox are settled with the
// scheduler by chained after the commit, or given back (giveBack) when
// the transaction does not commit.
//
// The savepoints are deferred (store.Tx.DeferredSavepoint): a step that
// succeeds leaves its writes held, to be sent with the next step's or at
// the commit, and one that fails before any of its writes were sent is
// undone without a statement. A step's held write that fails later fails
// the transaction, as a commit that fails does: every step runs again,
// then in checked savepoints (strict, for a transaction run again), so
// that such a failure is the failing step's alone.
//
// A chain may follow a critical step (an instance's process.schedule,
// processed by the critical pool): its steps then run in that pool's
// worker, so it stops as soon as a critical event waits for one.
func (e *Engine) chain(ctx context.Context, tx store.Tx, first *run, calls *[]ApplicationCalled, prior map[string]*chainLink, mode chainMode) ([]*chainLink, error) {
	if e.chainSteps <= 0 || first.pi.ID == 0 || first.state().IsFinal() {
		return nil, nil
	}
	lane, _ := ctx.Value(laneKey{}).(*commitLane)
	// An earlier attempt of the transaction may have called applications
	// in any of its chained steps; the events it chained had other IDs,
	// and after a conflict other activities, so which step called what
	// cannot always be told: as the first run of a transaction run again
	// (run.rerun), every step of this chain is then a rerun.
	calledBefore := false
	for _, p := range prior {
		calledBefore = calledBefore || p.calling || p.r != nil && p.r.calledApps
	}
	// queue holds the events the chain may process; unchained counts the
	// events of the instance its steps sent that it will not (they wait
	// for the commit, as in a mailbox).
	var queue []store.Event
	unchained := 0
	take := func(r *run) {
		for _, ev := range r.published {
			switch {
			case e.chainable(r.pi.ID, ev):
				queue = append(queue, ev)
			case ev.ProcessInstanceID == r.pi.ID:
				unchained++
			}
		}
	}
	take(first)
	cur := first.committed()
	var links []*chainLink
	for len(links) < e.chainSteps {
		if lane != nil && !lane.mayChain(e.chainsInGroups) {
			break // process control waits for the lane, or others share it
		}
		if mode.critical && e.sched.CriticalWaiting() > 0 {
			break // process control waits for this worker
		}
		// The events waiting in the instance's mailbox come first, as
		// the mailbox would hand them out before those of this chain.
		// Now is read before Take, which calls takable under the
		// scheduler's lock: a clock is not called with that lock held.
		now := e.clock.Now()
		ev, taken, left := e.sched.Take(first.pi.ID, mode.after, func(ev store.Event) bool { return e.takable(first.pi.ID, now, ev) })
		if !taken {
			if len(queue) == 0 || left > 0 {
				break // nothing to chain, or a queued event to be handled in turn
			}
			ev, queue = queue[0], queue[1:]
		}
		link := &chainLink{ev: ev, taken: taken, doomed: map[string]failure{}, actIDs: map[string]int64{}}
		if p := prior[chainKey(ev)]; p != nil {
			// The transaction runs again (a group replayed, a failed
			// commit) and this step with it: it keeps what it learnt,
			// and the IDs it gave.
			link.doomed, link.actIDs = p.doomed, p.actIDs
		}
		links = append(links, link)
		var p payload
		if err := json.Unmarshal(ev.Payload, &p); err != nil {
			link.err = err // process drops it
			break
		}
		link.began = e.clock.Now()
		for attempt := 0; ; attempt++ {
			var r *run
			savepoint := tx.DeferredSavepoint
			if mode.strict {
				savepoint = tx.Savepoint
			}
			failed, err := savepoint(ctx, func(ctx context.Context, tx store.Tx) error {
				r = e.newRun(ctx, tx, "engine")
				r.calls = calls
				r.doomed, r.actIDs = link.doomed, link.actIDs
				r.rerun = attempt > 0 || calledBefore
				// The events of the instance still to come before what
				// this step makes ready (run.scheduleStart).
				r.chainPending = len(queue) + unchained
				r.preloaded = &cur
				w, err := e.eventBody(ev, p)(r)
				if err != nil {
					return err
				}
				r, err = r.write(w, false)
				return err
			})
			if err != nil {
				return links, err
			}
			if failed == nil {
				link.r, link.took = r, e.clock.Now().Sub(link.began)
				break
			}
			if rb, ok := errors.AsType[*rolledBack](failed); ok && attempt < maxConflictRetries {
				if _, seen := link.doomed[rb.key]; !seen {
					link.doomed[rb.key] = rb.failure
					continue
				}
			}
			link.err, link.calling = failed, r.calledApps || attempt > 0
			break
		}
		if link.r == nil {
			break
		}
		e.ids.Observe(ev.ID)
		if link.r.pi.ID != cur.pi.ID {
			break // the step wrote no instance (nothing to do): stop here
		}
		cur = link.r.committed()
		if link.r.state().IsFinal() {
			break
		}
		take(link.r)
	}
	return links, nil
}

// chained is what transactAs does once a transaction with a chain
// committed: each step's run is remembered, its records published, its
// observations delivered, its events dispatched (but those the chain
// processed), and a step that failed has its event handled as process
// would have.
func (e *Engine) chained(ctx context.Context, links []*chainLink, dispatch func([]store.Event)) {
	for _, l := range links {
		switch {
		case l.r != nil:
			e.chainedSteps.Add(1)
			if l.taken {
				e.sched.Settle(scheduler.Handled, l.ev)
			}
			r := l.r
			if !r.nextDue.IsZero() {
				e.timers.Armed(r.nextDue)
			}
			e.remember(r)
			e.publish(r.records)
			e.deliver(r.observed)
			e.observeChained(ctx, l, EventDone, nil)
			dispatch(unchained(r.published, links))
		case errors.Is(l.err, store.ErrConflict):
			if l.calling {
				e.maybeCalled.Store(l.ev.ID, true)
			}
			if l.taken {
				e.sched.Settle(scheduler.GivenBack, l.ev)
			} else {
				dispatch([]store.Event{l.ev})
			}
		default:
			if l.taken {
				e.sched.Settle(scheduler.Failed, l.ev)
			}
			e.observeChained(ctx, l, EventRetried, l.err)
			if err := e.retryLater(ctx, l.ev, l.err); err != nil {
				e.log.Debug("a chained step failed; its event is retried", "event", l.ev.ID, "kind", l.ev.Kind, "err", err)
			}
		}
	}
}

// observeChained reports a chained step to the observer and the tracer,
// as handle reports a step of its own.
func (e *Engine) observeChained(ctx context.Context, l *chainLink, result EventResult, err error) {
	if e.tracer != nil {
		_, span := e.startStep(ctx, l.ev)
		endStep(span, result, err)
	}
	if e.observer == nil {
		return
	}
	o := EventProcessed{Kind: l.ev.Kind, Instance: l.ev.ProcessInstanceID, Attempt: 1, Duration: l.took, Result: result, Chained: true}
	ready := l.ev.CreatedAt
	if l.ev.AvailableAt.After(ready) {
		ready = l.ev.AvailableAt
	}
	if !ready.IsZero() && !l.began.IsZero() {
		o.Lag = max(l.began.Sub(ready), 0)
	}
	e.observe(func(obs Observer) { obs.EventProcessed(o) })
}

// chainKey names a chained event by what it asks for rather than by its
// ID, which an attempt of the transaction run again gives it anew: the
// kind and the payload (the activity, whose ID a rerun keeps).
func chainKey(ev store.Event) string {
	return ev.Kind + " " + string(ev.Payload)
}

// calledSet remembers the events whose chained step failed after calling
// an application, for the run that handles them next (run.rerun).
type calledSet struct{ sync.Map }

// take reports whether id is in the set and removes it.
func (c *calledSet) take(id int64) bool {
	_, ok := c.LoadAndDelete(id)
	return ok
}

// unchained returns the events of evs that no link of a chain processed
// (those it tried and failed are handled by chained).
func unchained(evs []store.Event, links []*chainLink) []store.Event {
	out := evs[:0:0]
	for _, ev := range evs {
		if !slices.ContainsFunc(links, func(l *chainLink) bool { return l.ev.ID == ev.ID }) {
			out = append(out, ev)
		}
	}
	return out
}
