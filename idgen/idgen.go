// Package idgen makes the ids of the rows the engine writes: 64-bit
// integers, positive and below 2^53 (exact in JavaScript, so the
// console's JSON API hands them out unchanged), ordered by time, unique
// across every engine process sharing a database, and known the moment
// a row is decided rather than when the database inserts it.
//
// An id is, from the most significant bit:
//
//	41 bits  milliseconds since Epoch (2020-01-01 UTC), to the year 2089
//	 6 bits  the node number of the allocator that made it (64 numbers)
//	 6 bits  a sequence within the millisecond (64 ids)
//
// One Allocator serves one engine. Its node number is leased from the
// database (store.Tx.AcquireIDNode, table goxpdl_id_nodes), so two
// allocators on one database never share a number while both hold it,
// and a number whose holder died is taken again once its lease ran out.
// Uniqueness does not rest on the lease's timing, though: a holder
// reserves a stretch of time ahead of its ids (IDNode.ReservedUntil, one
// lease ahead, renewed with the lease) and never makes an id at or past
// it, and the next holder of the number starts where the reservation
// ends. A holder that stalls past its lease (a long pause) finds its
// reservation spent and stops making ids until it renewed it.
//
// The ids of one allocator strictly increase. When its clock goes back,
// it goes on from its last id (the millisecond advances each 64 ids)
// instead of following the clock; the same happens when more than 64 ids
// are asked for within a millisecond, so the ids run a little ahead of
// the clock under a burst and catch up after. Ids of different
// allocators are ordered by their clocks: keep the nodes' clocks
// synchronised (NTP) and ids follow the order in which they were made,
// up to the clocks' skew.
package idgen

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/goxpdl/goxpdl/internal/startstop"
	"github.com/goxpdl/goxpdl/store"
	"github.com/goxpdl/goxpdl/timer"
)

// The layout of an id.
const (
	// TimeBits, NodeBits and SeqBits are the widths of an id's fields.
	TimeBits = 41
	NodeBits = 6
	SeqBits  = 6
	// Nodes is how many node numbers there are: at most this many
	// allocators make ids on one database at a time.
	Nodes = 1 << NodeBits
	// MaxID is the largest id: 2^53 - 1.
	MaxID = 1<<(TimeBits+NodeBits+SeqBits) - 1

	maxSeq = 1<<SeqBits - 1
)

// Epoch is the time of an id's millisecond 0.
var Epoch = time.Date(2020, 1, 1, 0, 0, 0, 0, time.UTC)

// DefaultLease is the default Config.Lease.
const DefaultLease = 30 * time.Second

// exclusiveRunAhead is how far ahead of the clock an Exclusive
// allocator's ids may run once the clock has moved past its reservation
// and the renewer has not caught the reservation up yet (its statement
// failed, or a fake clock jumped): its 64 ids a millisecond then borrow
// the next milliseconds, as they do inside the reservation. Without it a
// clock that stands still there (a test's) allowed 64 ids in all, and a
// busy step then failed with ErrNoID.
const exclusiveRunAhead = time.Second

// ErrNoID means the allocator cannot make an id now: it holds no node
// number (not acquired, released, or lost and not taken again yet), its
// reservation is spent and cannot be renewed, or the clock is outside
// the ids' range. The transaction that wanted the id fails; a later one
// may succeed.
var ErrNoID = errors.New("idgen: no id available")

// Compose returns the id of millisecond ms since Epoch, node number node
// and sequence seq. Tests and tools use it; the Allocator makes ids.
func Compose(ms int64, node, seq int) int64 {
	return ms<<(NodeBits+SeqBits) | int64(node)<<SeqBits | int64(seq)
}

// Time returns the millisecond an id was made in.
func Time(id int64) time.Time {
	return Epoch.Add(time.Duration(id>>(NodeBits+SeqBits)) * time.Millisecond)
}

// Node returns the node number of the allocator that made an id.
func Node(id int64) int { return int(id>>SeqBits) & (Nodes - 1) }

// Config configures an Allocator.
type Config struct {
	// Store is the database the ids are for; required.
	Store store.Store
	// Clock gives the ids' times and paces the renewals; required.
	Clock timer.Clock
	// Owner identifies the allocator in the node numbers' table; required
	// (the engine uses its node's owner).
	Owner string
	// Lease is how long a node number stays leased after a renewal, and
	// how far ahead of its ids it is reserved; the allocator renews it
	// every third of it (Start). Default DefaultLease.
	Lease time.Duration
	// Exclusive says that no other process writes to the database (a
	// SQLite file this process locked), so the allocator never has to
	// stop for a spent reservation: when the clock has moved past it
	// (a fake clock advanced by hours, a machine suspended), ids follow
	// the clock, and the renewer catches the reservation up. Without it
	// the allocator renews the reservation itself, in a statement of its
	// own, which on SQLite would wait for the transaction asking for the
	// id. Past the reservation, ids run at most a second ahead of the
	// clock; a process that crashes before the renewer records them, and
	// restarts within that second of the clock, may make one of them
	// again, which its insert refuses (store.ErrDuplicate): that
	// transaction fails and the next one gets later ids.
	Exclusive bool
	// Logger; default slog.Default().
	Logger *slog.Logger
}

// Allocator makes ids. Next is safe for concurrent use. It owns one
// goroutine, the renewer, between Start and Stop.
type Allocator struct {
	cfg Config
	log *slog.Logger

	mu       sync.Mutex
	node     int   // the leased number; -1 for none
	last     int64 // the millisecond of the last id
	seq      int   // the sequence of the last id
	limit    int64 // the first millisecond past the reservation
	released bool

	renewer startstop.Service
}

// New checks cfg and returns an Allocator that holds no number yet.
func New(cfg Config) (*Allocator, error) {
	switch {
	case cfg.Store == nil:
		return nil, errors.New("idgen: Config.Store is required")
	case cfg.Clock == nil:
		return nil, errors.New("idgen: Config.Clock is required")
	case cfg.Owner == "":
		return nil, errors.New("idgen: Config.Owner is required")
	case cfg.Lease < 0:
		return nil, fmt.Errorf("idgen: Config.Lease is %v, want >= 0", cfg.Lease)
	}
	cfg.Lease = cmp.Or(cfg.Lease, DefaultLease)
	if cfg.Lease < 3*time.Millisecond {
		return nil, fmt.Errorf("idgen: Config.Lease is %v, want at least 3ms", cfg.Lease)
	}
	return &Allocator{cfg: cfg, log: cmp.Or(cfg.Logger, slog.Default()), node: -1}, nil
}

// Acquire leases a node number, in a transaction of its own: call it
// before the first Next, outside any transaction of the database. It is
// idempotent while the allocator holds its number.
func (a *Allocator) Acquire(ctx context.Context) error {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.released {
		return fmt.Errorf("%w: the allocator was stopped", ErrNoID)
	}
	if a.node >= 0 {
		return nil
	}
	return a.acquireLocked(ctx)
}

// maxAcquireTries bounds the attempts of one acquisition that lost a race
// for a number to another allocator.
const maxAcquireTries = 10

func (a *Allocator) acquireLocked(ctx context.Context) error {
	n, from, err := a.acquire(ctx)
	if err != nil {
		return err
	}
	a.take(n, from)
	return nil
}

// acquire leases a node number, trying again when it lost a race for one.
func (a *Allocator) acquire(ctx context.Context) (store.IDNode, time.Time, error) {
	for try := 1; ; try++ {
		now := a.cfg.Clock.Now()
		n, from, err := a.cfg.Store.AcquireIDNode(ctx, store.AcquireIDNodeParams{
			Owner: a.cfg.Owner, Now: now, LeaseUntil: now.Add(a.cfg.Lease), Numbers: Nodes, Reserve: a.cfg.Lease,
		})
		if (errors.Is(err, store.ErrConflict) || errors.Is(err, store.ErrDuplicate)) && try < maxAcquireTries && ctx.Err() == nil {
			continue
		}
		if err != nil {
			return store.IDNode{}, time.Time{}, fmt.Errorf("idgen: acquire a node number: %w", err)
		}
		if millis(from) < 0 {
			// Give the number back: this allocator cannot use it.
			_ = a.cfg.Store.ReleaseIDNode(ctx, store.ReleaseIDNodeParams{Number: n.Number, Owner: a.cfg.Owner, Now: now, ReservedUntil: from})
			return store.IDNode{}, time.Time{}, fmt.Errorf("%w: the clock reads %v, before the ids' epoch %v", ErrNoID, from, Epoch)
		}
		return n, from, nil
	}
}

// take starts using node number n from time from on. The first id is at
// from or later: a sequence past the last one makes Next move on to the
// next millisecond.
func (a *Allocator) take(n store.IDNode, from time.Time) {
	a.node, a.last, a.seq, a.limit = n.Number, max(a.last, millis(from)-1), maxSeq, millis(n.ReservedUntil)
}

// Node returns the allocator's node number, and false when it holds none.
func (a *Allocator) Node() (int, bool) {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.node, a.node >= 0
}

// Next returns a new id, greater than every id the allocator returned
// before. It fails with ErrNoID when it cannot make one (see ErrNoID).
// ctx bounds the renewal Next may have to make (not Exclusive).
func (a *Allocator) Next(ctx context.Context) (int64, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.node < 0 {
		return 0, fmt.Errorf("%w: no node number held", ErrNoID)
	}
	now := millis(a.cfg.Clock.Now())
	ms, seq := a.last, a.seq+1
	switch {
	case now > ms:
		ms, seq = now, 0
	case seq > maxSeq:
		ms, seq = ms+1, 0
	}
	if ms >= a.limit && !(a.cfg.Exclusive && ms-now <= exclusiveRunAhead.Milliseconds()) {
		if a.cfg.Exclusive {
			return 0, fmt.Errorf("%w: ids ran %v ahead of the clock, past the reservation", ErrNoID, time.Duration(ms-now)*time.Millisecond)
		}
		if err := a.renewLocked(ctx, ms); err != nil {
			return 0, err
		}
	}
	if ms < 0 || ms >= 1<<TimeBits {
		return 0, fmt.Errorf("%w: the clock reads %v, outside the ids' range from %v", ErrNoID, a.cfg.Clock.Now(), Epoch)
	}
	a.last, a.seq = ms, seq
	return Compose(ms, a.node, seq), nil
}

// Observe makes every later id of the allocator greater than id, an id
// it read from the database (another allocator's, perhaps): the ids of
// a step then follow those of the steps it depends on even when the
// node that made those runs its clock ahead of this one's. It is the
// logical half of a hybrid logical clock: the allocator runs ahead of
// its own clock, by at most the skew, and catches up when its clock
// does. Ids in or past the last millisecond of the allocator's
// reservation (a skew larger than the lease: following them would leave
// Next without an id to make), and ids that are no ids (0 or less, or
// past MaxID), are ignored, as is everything while the allocator holds
// no number.
func (a *Allocator) Observe(id int64) {
	if id <= 0 || id > MaxID {
		return
	}
	ms := id >> (NodeBits + SeqBits)
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.node < 0 || ms+1 >= a.limit || id <= Compose(a.last, a.node, a.seq) {
		return
	}
	// The next id moves to the millisecond after id's (or to the
	// clock's, when that is later).
	a.last, a.seq = ms, maxSeq
}

// renewLocked renews the lease and the reservation, which must reach past
// millisecond ms. On a lost lease the allocator holds no number any more.
func (a *Allocator) renewLocked(ctx context.Context, ms int64) error {
	now := a.cfg.Clock.Now()
	reserved := max(a.limit, max(millis(now), ms)+a.cfg.Lease.Milliseconds())
	err := a.cfg.Store.RenewIDNode(ctx, store.RenewIDNodeParams{
		Number: a.node, Owner: a.cfg.Owner, LeaseUntil: now.Add(a.cfg.Lease), ReservedUntil: timeOf(reserved),
	})
	if errors.Is(err, store.ErrLeaseLost) {
		a.log.Error("the id allocator's node number was taken by another allocator; taking another", "node", a.node, "owner", a.cfg.Owner)
		a.node = -1
	}
	if err != nil {
		return fmt.Errorf("%w: renew node number: %w", ErrNoID, err)
	}
	a.limit = reserved
	return nil
}

// Start starts renewing the lease and the reservation every third of the
// lease, until Stop. A lost number (this process was silent for longer
// than the lease, and another allocator took it) is replaced by another.
// The allocator must hold a number (Acquire).
func (a *Allocator) Start(ctx context.Context) error {
	a.mu.Lock()
	held := a.node >= 0
	a.mu.Unlock()
	if !held {
		return fmt.Errorf("%w: Start before Acquire", ErrNoID)
	}
	// Like the node membership's renewer, it runs until Stop whatever
	// becomes of ctx, and a statement under way is not cancelled.
	return a.renewer.Start(context.WithoutCancel(ctx), func(ctx context.Context) {
		a.renew(context.WithoutCancel(ctx), ctx.Done())
	})
}

func (a *Allocator) renew(ctx context.Context, stop <-chan struct{}) {
	every := a.cfg.Lease / 3
	for {
		t := a.cfg.Clock.NewTimer(every)
		select {
		case <-stop:
			t.Stop()
			return
		case <-t.C():
		}
		if err := a.renewOnce(ctx); err != nil {
			a.log.Warn("could not renew the id allocator's node number; trying again", "owner", a.cfg.Owner, "err", err)
		}
	}
}

// renewOnce is one turn of the renewer. It holds the allocator's lock
// only to read and to apply, never during a statement: a transaction that
// asks for an id may hold the database's write lock (SQLite) meanwhile.
func (a *Allocator) renewOnce(ctx context.Context) error {
	a.mu.Lock()
	node, last, limit, released := a.node, a.last, a.limit, a.released
	a.mu.Unlock()
	if released {
		return nil
	}
	if node < 0 {
		return a.reacquire(ctx)
	}
	now := a.cfg.Clock.Now()
	reserved := max(limit, max(millis(now), last)+a.cfg.Lease.Milliseconds())
	err := a.cfg.Store.RenewIDNode(ctx, store.RenewIDNodeParams{
		Number: node, Owner: a.cfg.Owner, LeaseUntil: now.Add(a.cfg.Lease), ReservedUntil: timeOf(reserved),
	})
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.node != node {
		return nil // lost, or stopped, meanwhile
	}
	if errors.Is(err, store.ErrLeaseLost) {
		a.log.Error("the id allocator's node number was taken by another allocator; taking another", "node", node, "owner", a.cfg.Owner)
		a.node = -1
	}
	if err != nil {
		return err
	}
	a.limit = max(a.limit, reserved)
	return nil
}

// reacquire takes a new node number after the last one was lost.
func (a *Allocator) reacquire(ctx context.Context) error {
	n, from, err := a.acquire(ctx)
	if err != nil {
		return err
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.released || a.node >= 0 {
		// Stopped, or another acquisition won meanwhile: give it back.
		a.mu.Unlock()
		err := a.cfg.Store.ReleaseIDNode(ctx, store.ReleaseIDNodeParams{Number: n.Number, Owner: a.cfg.Owner, Now: a.cfg.Clock.Now(), ReservedUntil: from})
		a.mu.Lock()
		return err
	}
	a.take(n, from)
	return nil
}

// Stop stops the renewer and releases the node number, recording how far
// its ids went so that its next holder starts after them. Next fails
// afterwards. It is idempotent and safe without Acquire or Start.
func (a *Allocator) Stop(ctx context.Context) error {
	if err := a.renewer.Stop(ctx); err != nil {
		return err
	}
	// The statement runs without the lock: a transaction asking for an
	// id meanwhile may hold the database's write lock (SQLite).
	a.mu.Lock()
	if a.released || a.node < 0 {
		a.released = true
		a.mu.Unlock()
		return nil
	}
	a.released = true
	node, last := a.node, a.last
	a.node = -1
	a.mu.Unlock()
	err := a.cfg.Store.ReleaseIDNode(ctx, store.ReleaseIDNodeParams{
		Number: node, Owner: a.cfg.Owner, Now: a.cfg.Clock.Now(), ReservedUntil: timeOf(last + 1),
	})
	if err != nil {
		return fmt.Errorf("idgen: release node number %d: %w", node, err)
	}
	return nil
}

// millis is t in milliseconds since Epoch, rounded down.
func millis(t time.Time) int64 {
	d := t.Sub(Epoch)
	ms := d.Milliseconds()
	if d < 0 && d%time.Millisecond != 0 {
		ms--
	}
	return ms
}

// timeOf is the start of millisecond ms since Epoch.
func timeOf(ms int64) time.Time { return Epoch.Add(time.Duration(ms) * time.Millisecond) }
