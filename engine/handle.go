package engine

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"gorm.io/gorm"

	"github.com/goxpdl/goxpdl/engine/machine"
	"github.com/goxpdl/goxpdl/store"
	"github.com/goxpdl/goxpdl/wftype"
)

// maxConflictRetries bounds how often one event or command is tried again
// when the instance changed underneath it.
const maxConflictRetries = 20

// handle is the scheduler's Handler: it processes one event of one
// process instance in one transaction, then hands the events that
// transaction produced to the scheduler and the records to observers.
// The Observer sees how long the event waited and how long it took.
func (e *Engine) handle(ctx context.Context, ev store.Event) error {
	if e.observer == nil && e.tracer == nil {
		_, err := e.process(ctx, ev)
		return err
	}
	ctx, span := e.startStep(ctx, ev)
	began := e.clock.Now()
	result, err := e.process(ctx, ev)
	if err != nil && result == EventDone {
		result = EventRetried
	}
	endStep(span, result, err)
	if e.observer == nil {
		return err
	}
	ready := ev.CreatedAt
	if ev.AvailableAt.After(ready) {
		ready = ev.AvailableAt
	}
	o := EventProcessed{Kind: ev.Kind, Critical: ev.Critical, Instance: ev.ProcessInstanceID, Attempt: max(ev.Attempts, 1),
		Duration: e.clock.Now().Sub(began), Result: result}
	if !ready.IsZero() {
		o.Lag = max(began.Sub(ready), 0) // another node's clock may be ahead
	}
	e.observe(func(obs Observer) { obs.EventProcessed(o) })
	return err
}

// process is handle without the observation: it says what came of the
// event.
func (e *Engine) process(ctx context.Context, ev store.Event) (EventResult, error) {
	var p payload
	if len(ev.Payload) > 0 {
		if err := json.Unmarshal(ev.Payload, &p); err != nil {
			e.log.Error("dropping an event with a malformed payload", "event", ev.ID, "kind", ev.Kind, "err", err)
			return EventDropped, e.store.MarkEventsProcessed(ctx, store.MarkEventsProcessedParams{IDs: []int64{ev.ID}, ProcessedAt: e.now()})
		}
	}
	if ev.Kind == evNotify {
		return EventDone, e.notify(ctx, ev, p)
	}
	// The rows this step writes sort after the event that caused it, even
	// when the node that published it runs its clock ahead of this one's.
	e.ids.Observe(ev.ID)
	// A critical event's steps do not chain, but for an instance's
	// process.schedule: the steps after it start the instance's work.
	var chainAfter int64
	if !ev.Critical || ev.Kind == evSchedule {
		chainAfter = ev.ID
	}
	err := e.transactChain(ctx, nil, "engine", ev.Critical, chainAfter, e.eventBody(ev, p))
	if errors.Is(err, store.ErrLeaseLost) {
		// Another node has the event now, or processed it already (a
		// second delivery): it is theirs.
		e.log.Debug("dropping an event this node no longer holds", "event", ev.ID, "kind", ev.Kind)
		return EventDropped, nil
	}
	if err != nil {
		// Try again after a backoff, on this node or another; the
		// transaction rolled back, so the retry starts from the same
		// state (an application call is repeated with the same key).
		return EventRetried, e.retryLater(ctx, ev, err)
	}
	return EventDone, nil
}

// eventBody is the work of processing ev, whose payload is p: on its
// own (process) or in the transaction of the step that sent it (chain).
func (e *Engine) eventBody(ev store.Event, p payload) body {
	return func(r *run) (*run, error) {
		r.redelivered = ev.Attempts > 1
		// The engine's own step starts the control-path activities it
		// makes ready (scheduleStart), but a critical one (process
		// control) stays short: they get events, for the normal pool.
		r.inlineStarts = !ev.Critical
		if e.maybeCalled.take(ev.ID) {
			// A chained step of ev failed after calling an application.
			r.rerun = true
		}
		r.attempt = ev.CallFailures + 1 // the calls that failed before, and this one
		// The mark is the fence of this node's claim on the event
		// (flushProcessed): it is written first at flush, whatever else
		// the run writes or refuses.
		r.processed = ev.ID
		// An event for no instance, or for one that is gone (purged): the
		// mark is all there is to write.
		if ev.ProcessInstanceID == 0 {
			return nil, nil
		}
		if err := r.loadCached(ev.ProcessInstanceID); err != nil {
			if errors.Is(err, ErrNotFound) {
				return nil, nil
			}
			return nil, err
		}
		switch ev.Kind {
		case evSchedule:
			return r, r.schedule(p)
		case evActivityStart:
			if a := r.activity(p.Activity); a != nil {
				return r, r.startActivity(a)
			}
			return r, nil
		case evSubprocess:
			return r, r.subprocessEnded(p.Activity, p.Child, p.End)
		case evTimer:
			return r, r.timerFired(p.Timer)
		case evSignal:
			return r, r.signalDelivered(p)
		case evTerminate:
			if r.state().IsFinal() {
				return r, nil
			}
			return r, r.terminate()
		default:
			e.log.Warn("ignoring an event of unknown kind", "event", ev.ID, "kind", ev.Kind)
			return r, nil
		}
	}
}

// retryDelay is the backoff before the next attempt of an event that
// failed attempts times: 50ms, doubling, at most a minute.
func retryDelay(attempts int) time.Duration {
	d := 50 * time.Millisecond
	for i := 1; i < attempts && d < time.Minute; i++ {
		d *= 2
	}
	return min(d, time.Minute)
}

// body is the work of one engine transaction, done on the fresh run
// transact gives it. Besides an error, which rolls the transaction back,
// it returns the run transact is to finish and write (run.drain, then
// run.flush for its instance):
//
//   - r, the run it was given: the instance r loaded and changed, or,
//     when r has no instance (a message kept for later, a signal), what
//     it holds besides (run.flushDetached);
//   - the run of an instance it created: a start command, whose r has no
//     instance of its own;
//   - nil: there is nothing to write but the processed mark of the event
//     r handles, if any, and the audit entry r holds, if any, because the
//     body found nothing to change (a repeated command answered from what
//     is stored, an event whose instance is gone, an instance that
//     recovery finds moving again): run.flushUnchanged. An instance r
//     loaded is left as stored: not even its version moves.
type body func(r *run) (*run, error)

// transact runs fn on a fresh run in one transaction (the host's when
// hostTx is not nil, within a savepoint), drains the activity-set work of
// the run fn returns, writes it, and retries on an optimistic conflict.
// After the engine's own transaction commits, the produced events go to
// the scheduler and the records to observers.
func (e *Engine) transact(ctx context.Context, hostTx *gorm.DB, actor string, fn body) error {
	return e.transactAs(ctx, hostTx, actor, false, fn)
}

// transactAs is transact for a critical transaction (process control:
// suspend, resume, terminate, deadlines, recovery), which takes the group
// committer's critical lane, or a normal one.
func (e *Engine) transactAs(ctx context.Context, hostTx *gorm.DB, actor string, critical bool, fn body) error {
	return e.transactChain(ctx, hostTx, actor, critical, 0, fn)
}

// transactChain is transactAs, and when chainAfter is set (the event
// whose step fn is, in the engine's own transaction) the events that
// step sends its own instance, and those that wait in the instance's
// mailbox, are processed in the same transaction (chain.go).
func (e *Engine) transactChain(ctx context.Context, hostTx *gorm.DB, actor string, critical bool, chainAfter int64, fn body) error {
	chain := chainAfter != 0 && hostTx == nil && e.chainSteps > 0
	var links []*chainLink
	prior := map[string]*chainLink{} // the links of earlier attempts, by chainKey
	doomed := map[string]failure{}
	actIDs := map[string]int64{}
	bodies := 0 // runs of the body, across attempts and group-commit replays
	// The application calls of every attempt, observed once the
	// transaction is over whatever its outcome: they happened.
	var calls []ApplicationCalled
	if e.observer != nil {
		defer func() {
			for _, c := range calls {
				e.observe(func(obs Observer) { obs.ApplicationCalled(c) })
			}
		}()
	}
	for attempt := 0; ; attempt++ {
		var r *run
		body := func(ctx context.Context, tx store.Tx) error {
			bodies++
			for _, l := range links {
				prior[chainKey(l.ev)] = l
			}
			// The events the last attempt's chain took from the
			// mailbox go back to it: this attempt's chain takes them
			// again, or leaves them to be handled in turn.
			e.giveBack(links)
			links = nil
			r = e.newRun(ctx, tx, actor)
			r.calls = &calls
			r.doomed, r.actIDs = doomed, actIDs
			// A body run again (a conflict, a failure rolled back, a
			// group commit replayed after another member failed) may
			// have called applications before: as for a redelivered
			// event, those declared not retryable are not called again.
			r.rerun = bodies > 1
			w, err := fn(r)
			if err != nil {
				return err
			}
			// What follows the commit is about the run written.
			if r, err = r.write(w, hostTx != nil); err != nil || w == nil || r.pi.ID == 0 || !chain {
				return err
			}
			links, err = e.chain(ctx, tx, r, &calls, prior, chainMode{strict: bodies > 1, critical: critical, after: chainAfter})
			return err
		}
		var err error
		if hostTx != nil {
			st, serr := hostStore(hostTx)
			if serr != nil {
				return serr
			}
			err = st.InTx(ctx, body)
		} else {
			err = e.commits.do(ctx, body, critical)
		}
		if r != nil && (err != nil || hostTx != nil) {
			e.forget(r) // the database may hold something else
		}
		if errors.Is(err, store.ErrConflict) && hostTx == nil && attempt < maxConflictRetries {
			e.conflicts.Add(1)
			clear(doomed) // the instance moved on: its activities are to be looked at again
			clear(actIDs)
			continue
		}
		if rb, ok := errors.AsType[*rolledBack](err); ok && attempt < maxConflictRetries {
			if _, seen := doomed[rb.key]; !seen {
				doomed[rb.key] = rb.failure
				continue
			}
		}
		if err != nil {
			if hostTx == nil && r != nil {
				// The events this run published are claimed by this
				// node; if the error hides a commit that went through
				// (a connection lost during COMMIT), they are in the
				// outbox and must not wait out their lease.
				e.bus.Abandon(ctx, r.published)
				for _, l := range links {
					if l.r != nil {
						e.forget(l.r)
						e.bus.Abandon(ctx, l.r.published)
					}
				}
				e.giveBack(links)
			}
			return err
		}
		if !r.nextDue.IsZero() {
			e.timers.Armed(r.nextDue)
		}
		if hostTx == nil {
			e.remember(r)
			// Records first: the events dispatched next make records of
			// their own, which must come after these (a trace reads in
			// the order things happened to an instance).
			e.publish(r.records)
			e.deliver(r.observed)
			if len(links) == 0 {
				e.bus.Dispatch(r.published)
			} else {
				e.bus.Dispatch(unchained(r.published, links))
				e.chained(ctx, links, e.bus.Dispatch)
			}
		} else {
			e.bus.Nudge()
			e.publisher.nudge()
		}
		return nil
	}
}

// write finishes the work of the body that was given r and returned w
// (see body) and returns the run it wrote: for nil, r, of which only the
// mark of its event and its audit entry are written (flushUnchanged);
// otherwise w, with r's mark and audit entries, its activity-set work
// drained, and written (flush, or flushDetached for a run without an
// instance).
func (r *run) write(w *run, hosted bool) (*run, error) {
	if w == nil {
		return r, r.flushUnchanged()
	}
	if w != r {
		w.processed, r.processed = r.processed, 0
		w.audits, r.audits = append(r.audits, w.audits...), nil
	}
	if err := w.drain(); err != nil {
		return w, err
	}
	if w.pi.ID == 0 {
		return w, w.flushDetached(hosted)
	}
	return w, w.flush(hosted)
}

// deliver hands the observations of a committed run to the observer.
func (e *Engine) deliver(observed []func(Observer)) {
	for _, fn := range observed {
		e.observe(fn)
	}
}

// remember caches the committed state of the instances r wrote.
func (e *Engine) remember(r *run) {
	if r.flushed {
		e.instances.put(r.committed())
	}
	for _, c := range r.children {
		e.remember(c)
	}
}

// forget drops the instances r touched from the cache.
func (e *Engine) forget(r *run) {
	if r.pi.ID != 0 {
		e.instances.forget(r.pi.ID)
	}
	for _, c := range r.children {
		e.forget(c)
	}
}

// terminate ends the process by command: its work items are withdrawn and
// its running subflows terminated in turn.
func (r *run) terminate() error {
	if err := r.setProcess(machine.ProcessTerminate, ""); err != nil {
		return err
	}
	if err := r.withdrawWorkItems(); err != nil {
		return err
	}
	if err := r.expireInbox(); err != nil {
		return err
	}
	children, err := r.snap.children()
	if err != nil {
		return err
	}
	for _, c := range children {
		if c.ParentActivityID != nil {
			r.emit(c.ID, evTerminate, payload{}, true)
		}
	}
	if r.pi.ParentInstanceID != nil && r.pi.ParentActivityID != nil {
		r.tellParent()
	}
	return nil
}

// resumed starts what waited while the process was suspended.
func (r *run) resumed() error {
	if r.state() != wftype.ProcessRunning {
		return nil
	}
	for _, a := range r.initiated() {
		r.scheduleStart(a)
	}
	return r.catchPending()
}

func mustJSON(v any) []byte {
	data, err := json.Marshal(v)
	if err != nil {
		panic(fmt.Sprintf("engine: encode %T: %v", v, err)) // only our own plain structs
	}
	return data
}
