package engine

import (
	"context"
	"errors"
	"strings"

	"github.com/goxpdl/goxpdl/store"
	"github.com/goxpdl/goxpdl/wftype"
)

// RecordProcessRecovered is the record of recovery's second phase: an
// instance that could move but had no event to move it got one (Detail
// says which).
const RecordProcessRecovered = "process.recovered"

// rescueBatch is how many instances one look of the sweep reads.
const rescueBatch = 200

// rescue is recovery's second phase (paper §2.4.1: after the pending
// events, "the instances to recover that no event triggers are recovered
// automatically: the events they need are sent again"). Every step writes
// the events that move its instance on in the transaction that reaches
// the recoverable point, so this finds nothing unless an event was lost
// (deleted by hand, a bug, a restore from a backup): an instance that is
// Initiated, or Running with Initiated activities, and has no unprocessed
// event gets the event it needs (process.schedule, activity.start), with
// a history entry and a process.recovered record saying so. An instance
// that waits for something else (a work item, a timer, a child, a
// message, a signal) has what it waits for and is left alone. It returns
// how many instances it moved on.
func (e *Engine) rescue(ctx context.Context) (int, error) {
	rescued := 0
	// Only the instances that could be stalled are read: an Initiated
	// one, or a Running one with an Initiated activity, without an
	// unprocessed event. The many that wait on a work item, a timer or a
	// message are not (one transaction each would make a sweep cost as
	// much as all the parked instances there are).
	for _, look := range []store.ListProcessInstancesParams{
		{States: []string{string(wftype.ProcessInitiated)}},
		{States: []string{string(wftype.ProcessRunning)}, ActivityState: string(wftype.ActivityInitiated)},
	} {
		look.NoPendingEvents, look.Limit = true, rescueBatch
		for {
			stuck, err := e.store.ListProcessInstances(ctx, look)
			if err != nil {
				return rescued, err
			}
			for _, pi := range stuck {
				moved, err := e.rescueOne(ctx, pi.ID)
				if err != nil && !errors.Is(err, ErrNotFound) {
					return rescued, err
				}
				if moved {
					rescued++
				}
			}
			if len(stuck) < rescueBatch {
				break
			}
			look.AfterID = stuck[len(stuck)-1].ID
		}
	}
	return rescued, nil
}

// rescueOne sends an instance the events it lacks, in a transaction of
// its own; the events are idempotent (a second activity.start of a
// started activity does nothing), so racing the instance's own progress
// is harmless.
func (e *Engine) rescueOne(ctx context.Context, id int64) (bool, error) {
	moved := false
	err := e.transactAs(ctx, nil, "recovery", true, func(r *run) (*run, error) {
		if err := r.load(id); err != nil {
			return nil, err
		}
		// Looked at again in this transaction: the list may be stale (the
		// instance moved on since, and has an event now). A step that
		// commits between this look and the commit changes the
		// instance's version, which fences this write: it is retried
		// and looks again.
		stalled, err := r.snap.stalled(id)
		if err != nil {
			return nil, err
		}
		if !stalled {
			return nil, nil // it moved on meanwhile: leave it as it is
		}
		var sent []string
		switch r.state() {
		case wftype.ProcessInitiated:
			r.emit(r.pi.ID, evSchedule, payload{}, true)
			sent = append(sent, evSchedule)
		case wftype.ProcessRunning:
			for _, a := range r.initiated() {
				r.emitStart(a)
				sent = append(sent, evActivityStart+" "+a.def.ID)
			}
		}
		if len(sent) == 0 {
			return nil, nil // nothing to re-send: leave it as it is
		}
		detail := "re-sent " + strings.Join(sent, ", ")
		r.history = append(r.history, store.HistoryEntry{
			ProcessInstanceID: r.pi.ID, Subject: store.SubjectProcess, FromState: r.pi.State, ToState: r.pi.State,
			Actor: r.actor, At: r.now, Data: mustJSON(map[string]string{"recovered": detail}),
		})
		r.record(Record{Type: RecordProcessRecovered, State: r.pi.State, Detail: detail})
		moved = true
		return r, nil
	})
	return moved, err
}
