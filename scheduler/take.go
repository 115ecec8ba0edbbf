package scheduler

import (
	"log/slog"

	"github.com/goxpdl/goxpdl/store"
)

// Take hands the Handler that is handling event running of a process
// instance the next event of that instance's mailbox, when want accepts
// it, for the Handler to process in running's own step: the engine's
// chains process an instance's queued steps in the transaction of the
// step before them. Take takes nothing when the mailbox is empty, its
// head is not wanted, or running is not the event being handled there
// (a caller that is not that Handler cannot take the instance's events
// out of turn); left then says how many events of the instance wait, as
// Queued would.
//
// want runs with the Scheduler's lock held: it must be quick and must not
// call the Scheduler, or anything that might wait for it.
//
// A taken event leaves the mailbox's queue but stays held: a duplicate
// delivery of it is dropped until the Handler settles it with Settle,
// which it must do before it returns.
func (s *Scheduler) Take(instance, running int64, want func(store.Event) bool) (ev store.Event, taken bool, left int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	mb := s.mailboxes[instance]
	if mb == nil {
		return store.Event{}, false, 0
	}
	if running == 0 || mb.current != running || len(mb.events) == 0 || !want(mb.events[0]) {
		return store.Event{}, false, len(mb.events)
	}
	ev = mb.pop()
	if len(mb.events) == 0 {
		s.nonEmpty--
	}
	s.queued--
	mb.taken = append(mb.taken, ev.ID)
	s.updateIdleLocked()
	return ev, true, len(mb.events)
}

// Settlement is what came of an event Take handed out.
type Settlement int

const (
	// Handled: the event was processed. It is remembered as handled
	// events are, so that a later delivery of it is dropped.
	Handled Settlement = iota
	// Failed: the event was not processed and its Handler saw to its
	// retry, as when a Handler returns an error: it is forgotten.
	Failed
	// GivenBack: the event was not processed and is queued in its
	// mailbox again, in ID order (ahead of the events that were queued
	// behind it), to be handed out in turn: after the running event, or
	// to the next Take.
	GivenBack
)

// Settle reports what came of events that Take handed out. Events given
// back during a graceful Stop are queued again and drained with the
// rest; after a hard stop began they are dropped, as queued events are:
// the bus delivers them again after their lease.
func (s *Scheduler) Settle(how Settlement, events ...store.Event) {
	if len(events) == 0 {
		return
	}
	dropped := 0
	s.mu.Lock()
	for _, ev := range events {
		mb := s.mailboxes[ev.ProcessInstanceID]
		if mb == nil || !mb.settleTaken(ev.ID) {
			continue // not taken (settled already): nothing to do
		}
		switch how {
		case Handled:
			mb.recent.add(ev.ID)
		case Failed:
		case GivenBack:
			if s.dropping || (s.ctx != nil && s.ctx.Err() != nil) {
				dropped++
				continue
			}
			s.deliverLocked(ev) // queued again, in ID order
		}
	}
	s.updateIdleLocked()
	s.mu.Unlock()
	if dropped > 0 {
		s.dropped.Add(uint64(dropped))
		s.logger.Warn("scheduler: hard stop; events given back dropped, the bus delivers them again after their lease",
			slog.Int("events", dropped))
	}
}
