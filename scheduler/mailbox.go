package scheduler

import (
	"cmp"
	"container/list"
	"slices"

	"github.com/goxpdl/goxpdl/store"
)

// pool names one of the two goroutine pools.
type pool int

const (
	critical pool = iota
	normal
	numPools
)

func (p pool) String() string {
	if p == critical {
		return "critical"
	}
	return "normal"
}

// poolOf returns the pool an event runs on.
func poolOf(ev store.Event) pool {
	if ev.Critical {
		return critical
	}
	return normal
}

// Bounds of the duplicate memory.
const (
	// recentPerMailbox is how many successfully handled IDs a mailbox
	// remembers.
	recentPerMailbox = 64
	// idleMailboxesKept is how many idle mailboxes (nothing queued or
	// running) are kept for their memory, least recently used dropped
	// first.
	idleMailboxesKept = 4096
	// recentLoose is how many successfully handled IDs of events without
	// a process instance are remembered.
	recentLoose = 4096
)

// schedState says where a mailbox is in the scheduling cycle.
type schedState int

const (
	// schedNone: in no run queue and not running.
	schedNone schedState = iota
	// schedQueued: in the run queue of mailbox.pool, under mailbox.ticket.
	schedQueued
	// schedBusy: taken by a feeder (being submitted) or running its head.
	schedBusy
)

// mailbox holds the queued events of one process instance. All fields are
// guarded by Scheduler.mu.
type mailbox struct {
	instance int64
	events   []store.Event // queued, in ID order
	current  int64         // ID of the event being handled; 0 when none
	taken    []int64       // IDs Take handed to current's handler, not yet settled
	recent   recentIDs     // IDs handled successfully

	sched  schedState
	pool   pool   // the run queue it is in, when schedQueued
	ticket uint64 // matches the run queue entry that is live

	idle *list.Element // its place in Scheduler.idle while it is idle
}

// holds reports whether the mailbox has the event queued or running, or
// handled it successfully lately.
func (mb *mailbox) holds(id int64) bool {
	if id == mb.current || mb.recent.has(id) || slices.Contains(mb.taken, id) {
		return true
	}
	_, found := mb.find(id)
	return found
}

func (mb *mailbox) find(id int64) (int, bool) {
	return slices.BinarySearchFunc(mb.events, id, func(ev store.Event, id int64) int { return cmp.Compare(ev.ID, id) })
}

// insert queues ev in ID order; ev must not be held already.
func (mb *mailbox) insert(ev store.Event) {
	i, _ := mb.find(ev.ID)
	mb.events = slices.Insert(mb.events, i, ev)
}

// pop removes and returns the head.
func (mb *mailbox) pop() store.Event {
	ev := mb.events[0]
	mb.events[0] = store.Event{}
	mb.events = mb.events[1:]
	if len(mb.events) == 0 {
		mb.events = nil // let the backing array go
	}
	return ev
}

// settleTaken forgets id as taken and reports whether it was.
func (mb *mailbox) settleTaken(id int64) bool {
	i := slices.Index(mb.taken, id)
	if i < 0 {
		return false
	}
	mb.taken = slices.Delete(mb.taken, i, i+1)
	return true
}

// recentIDs is a bounded set of IDs that forgets the oldest first.
type recentIDs struct {
	size int
	ring []int64
	next int
	set  map[int64]struct{}
}

func newRecentIDs(size int) recentIDs { return recentIDs{size: size} }

func (r *recentIDs) has(id int64) bool {
	_, ok := r.set[id]
	return ok
}

func (r *recentIDs) add(id int64) {
	if r.has(id) {
		return
	}
	if r.set == nil {
		r.set = make(map[int64]struct{}, r.size)
	}
	if len(r.ring) < r.size {
		r.ring = append(r.ring, id)
	} else {
		delete(r.set, r.ring[r.next])
		r.ring[r.next] = id
		r.next = (r.next + 1) % r.size
	}
	r.set[id] = struct{}{}
}

// entry is an item of a run queue: a mailbox whose head is to run, or an
// event without a process instance.
type entry struct {
	mb     *mailbox
	ticket uint64      // with mb: stale unless it matches mb.ticket
	ev     store.Event // without mb
}

// runQueue is a FIFO of entries.
type runQueue struct {
	items []entry
	head  int
}

func (q *runQueue) push(e entry) { q.items = append(q.items, e) }

func (q *runQueue) pop() (entry, bool) {
	if q.head == len(q.items) {
		return entry{}, false
	}
	e := q.items[q.head]
	q.items[q.head] = entry{}
	q.head++
	switch {
	case q.head == len(q.items):
		q.items, q.head = q.items[:0], 0
	case q.head >= 1024 && q.head*2 >= len(q.items):
		n := copy(q.items, q.items[q.head:])
		clear(q.items[n:])
		q.items, q.head = q.items[:n], 0
	}
	return e, true
}

func (q *runQueue) clear() {
	clear(q.items)
	q.items, q.head = nil, 0
}
