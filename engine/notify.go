package engine

import (
	"context"
	"errors"
	"fmt"
	"slices"

	"github.com/goxpdl/goxpdl/store"
)

// NotifyFunc receives the engine's notifications (Config.Notify).
type NotifyFunc func(ctx context.Context, n Notification) error

// Notification tells the host about a step the engine took: a work item
// offered, claimed, completed or withdrawn, a message applied. Unlike a
// Subscribe record, it is durable: it is written to the event outbox in
// the transaction that made the step and delivered after that commits,
// at least once, until Config.Notify returns nil, even across a crash.
type Notification struct {
	// EventID identifies the notification: a redelivery (after an error
	// or a crash) carries the same one, so the host can drop repeats.
	EventID string
	// Record is the step, as Subscribe reports it; Seq is 0 (it numbers
	// one engine's live records only).
	Record
}

// DefaultNotifyTypes are the record types Config.Notify receives when
// Config.NotifyTypes is empty: every change of a work item, the messages
// of the correlation inbox, and the chasing of late work (deadlines,
// limits, reminders, escalations).
var DefaultNotifyTypes = []string{
	RecordWorkItemCreated, RecordWorkItemOffered, RecordWorkItemAllocated, RecordWorkItemStarted,
	RecordWorkItemSuspended, RecordWorkItemResumed, RecordWorkItemCompleted, RecordWorkItemWithdrawn,
	RecordMessageApplied, RecordMessageExpired,
	RecordDeadlineFired, RecordActivityOverdue, RecordProcessOverdue, RecordActivityReminder, RecordActivityEscalated,
}

// evNotify is the outbox event that carries a notification.
const evNotify = "host.notify"

// notifies reports whether records of type typ become notifications.
func (e *Engine) notifies(typ string) bool {
	return e.cfg.Notify != nil && slices.Contains(e.notifyTypes, typ)
}

// emitNotifications queues a notification event for each of the run's
// own records (children flush theirs) that the host asked for.
func (r *run) emitNotifications(records []Record) {
	if r.e.cfg.Notify == nil {
		return
	}
	for i := range records {
		if r.e.notifies(records[i].Type) {
			r.emit(records[i].Instance, evNotify, payload{Record: &records[i]}, false)
		}
	}
}

// notify delivers one notification event to the host and marks it
// processed; when the host fails, the event is tried again after a
// backoff. It runs outside any engine transaction: the host's callback
// may be slow or call out, and holds no engine lock.
func (e *Engine) notify(ctx context.Context, ev store.Event, p payload) error {
	if e.cfg.Notify != nil && p.Record != nil {
		n := Notification{EventID: ev.EventID, Record: *p.Record}
		if err := callNotify(ctx, e.cfg.Notify, n); err != nil {
			return e.retryLater(ctx, ev, err)
		}
	}
	return e.store.MarkEventsProcessed(ctx, store.MarkEventsProcessedParams{IDs: []int64{ev.ID}, ProcessedAt: e.now()})
}

// callNotify calls fn, turning a panic into an error.
func callNotify(ctx context.Context, fn NotifyFunc, n Notification) (err error) {
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("notification handler panicked: %v", p)
		}
	}()
	if err := fn(ctx, n); err != nil {
		return fmt.Errorf("notification handler: %w", err)
	}
	return nil
}

// retryLater schedules another attempt of ev after a backoff, on this
// node or another, and returns err with any failure to do so.
func (e *Engine) retryLater(ctx context.Context, ev store.Event, err error) error {
	if ctx.Err() != nil {
		return err
	}
	delay := retryDelay(ev.Attempts)
	ce, ok := asCallError(err)
	// A call whose error is the database's (its own statement in the
	// step's transaction met a conflict) did not fail as the policy
	// means: the step is rolled back and tried again.
	callFailed := ok && !isStoreError(err)
	if callFailed {
		// An application failed: its policy sets the wait, and a call
		// that keeps failing shows as an incident. Its calls are counted
		// by the deliveries that failed in a call, not by every delivery:
		// one that failed before the call (a database conflict) is not
		// one of the policy's attempts.
		call := ev.CallFailures + 1
		delay = ce.policy.backoff(call)
		e.recordFailing(ctx, ev.ProcessInstanceID, call, err)
	}
	at := e.now().Add(delay)
	rerr := e.store.RetryEvent(ctx, store.RetryEventParams{ID: ev.ID, AvailableAt: at, Owner: e.owner, CallFailed: callFailed})
	if rerr != nil && !errors.Is(rerr, store.ErrLeaseLost) {
		// The database could not even record the retry (an outage): the
		// claim stays this node's until its lease ends, so try again from
		// memory rather than wait that long. The attempt counts, as a
		// redelivery from the database would.
		next := ev
		next.Attempts++
		if callFailed {
			next.CallFailures++
		}
		next.AvailableAt = at // as the database would have it
		if e.bus.Redeliver(next, at) {
			e.log.Warn("event processing failed and the retry could not be recorded; retrying from memory",
				"event", ev.ID, "kind", ev.Kind, "attempt", ev.Attempts, "in", delay, "err", err, "retry_err", rerr)
			return errors.Join(err, rerr)
		}
	}
	if rerr != nil {
		err = errors.Join(err, rerr)
	}
	e.log.Info("event processing failed; retrying", "event", ev.ID, "kind", ev.Kind, "attempt", ev.Attempts, "in", delay, "err", err)
	return err
}
