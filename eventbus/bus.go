package eventbus

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/goxpdl/goxpdl/internal/startstop"
	"github.com/goxpdl/goxpdl/store"
	"github.com/goxpdl/goxpdl/timer"
)

// Defaults of Config.
const (
	// DefaultLease is the default Config.Lease.
	DefaultLease = 30 * time.Second
	// DefaultPollInterval is the default Config.PollInterval.
	DefaultPollInterval = 200 * time.Millisecond
	// DefaultBatchSize is the default Config.BatchSize.
	DefaultBatchSize = 256
	// DefaultMaxBacklog is the default Config.MaxBacklog.
	DefaultMaxBacklog = 16384
)

// ErrStarted is returned by Start when the Bus has been started before.
// It is the error of every background service of goxpdl (timer.ErrStarted
// is the same value).
var ErrStarted = startstop.ErrStarted

// ErrStopped is returned by Start when the Bus has been stopped; a Bus is
// not restarted.
var ErrStopped = startstop.ErrStopped

// Sink receives the events of the bus, from Dispatch and from the poller.
// Deliver must not block for long: the poller waits for it before it
// claims the next batch. It may be called from several goroutines at once
// (the poller's and those calling Dispatch).
type Sink interface {
	// Deliver hands events over; the slice is the Sink's to keep.
	Deliver(events []store.Event)
}

// BacklogSink is a Sink that says how many of the events it was handed
// it has not handled yet. The bus then holds back (Config.MaxBacklog):
// while the backlog is at the bound, Publish leaves the normal events it
// stores unclaimed and the poller claims only critical ones; at twice
// the bound, critical ones too. A burst of work (a hundred thousand
// instances started faster than they are processed) then waits in the
// outbox rather than in memory, where the claims of what waits longer
// than the lease would run out and be claimed again, over and over.
type BacklogSink interface {
	Sink
	// Backlog returns how many delivered events wait or run.
	Backlog() int
}

// Config is the long-lived configuration of a Bus.
type Config struct {
	// Store holds the outbox; required.
	Store store.Store
	// Clock gives the time of claims and new events and drives the poll
	// ticks; required (timer.Real() in production, a timer.Fake in tests).
	Clock timer.Clock
	// Owner is this node's id, the ClaimedBy of its claims; required.
	// Every engine process sharing a database needs its own.
	Owner string
	// Lease is how long a claim lasts before the poller may hand the event
	// out again; default DefaultLease.
	Lease time.Duration
	// PollInterval is the time between two polls; default
	// DefaultPollInterval.
	PollInterval time.Duration
	// BatchSize is the most events claimed at a time; default
	// DefaultBatchSize.
	BatchSize int
	// MaxBacklog bounds the events a BacklogSink holds before the bus
	// holds back normal events in the outbox (critical ones at twice
	// it); default DefaultMaxBacklog. It does not apply to a Sink that is
	// not a BacklogSink.
	MaxBacklog int
	// IDs makes the IDs of the events Publish is given without one
	// (idgen.Allocator.Next, the engine's allocator); required.
	IDs func(ctx context.Context) (int64, error)
	// Logger receives the poller's store errors; default slog.Default().
	Logger *slog.Logger
}

// ConfigError reports a Config (or Sink) that New refuses.
type ConfigError struct {
	// Field names the offending field of Config, or "sink".
	Field string
	// Msg says what is wrong with it.
	Msg string
}

func (e *ConfigError) Error() string {
	return fmt.Sprintf("eventbus: config: %s %s", e.Field, e.Msg)
}

// Stats are counters of a Bus since New.
type Stats struct {
	// Published counts the events Publish inserted into callers'
	// transactions, including those of transactions later rolled back.
	Published uint64
	// Dispatched counts the events Dispatch handed to the Sink.
	Dispatched uint64
	// Polled counts the events the poller claimed and handed to the Sink.
	Polled uint64
	// Polls counts the poll rounds (a round claims until a batch comes
	// back short).
	Polls uint64
	// PollErrors counts the poll rounds that ended in a store error.
	PollErrors uint64
	// Redelivered counts the events handed over again from memory
	// (Redeliver).
	Redelivered uint64
	// Busy says a poll round is in progress: from the first claim to the
	// hand-over of what it claimed to the Sink.
	Busy bool
}

// Bus is the event bus of one engine node. Its methods are safe for
// concurrent use. It owns one goroutine, the poller, between Start and
// Stop.
type Bus struct {
	store        store.Store
	clock        timer.Clock
	owner        string
	lease        time.Duration
	pollInterval time.Duration
	batchSize    int
	maxBacklog   int
	backlog      BacklogSink // the sink, when it reports its backlog
	ids          func(ctx context.Context) (int64, error)
	logger       *slog.Logger
	sink         Sink

	nudge chan struct{} // a pending nudge; capacity 1

	published, dispatched, polled, polls, pollErrors, redelivered atomic.Uint64
	busy                                                          atomic.Int32

	mu   sync.Mutex
	held []heldEvent // events to hand over again, in memory (Redeliver)

	// The poller's own (no lock): the lease end of its last claim, and
	// those of claims whose outcome it could not know (see poll).
	lastUntil time.Time
	unsure    []time.Time

	// heldBack counts the Dispatch calls that left available events in
	// the outbox (the sink's backlog was at its bound); drained is the
	// value of heldBack when a poll round that began after them found no
	// more available events (HoldingBack).
	heldBack, drained atomic.Uint64

	poller startstop.Service
}

// New returns a Bus that delivers to sink. It returns a *ConfigError when
// a required field is missing or a value is out of range; zero durations
// and sizes take their defaults.
func New(cfg Config, sink Sink) (*Bus, error) {
	switch {
	case cfg.Store == nil:
		return nil, &ConfigError{Field: "Store", Msg: "is required"}
	case cfg.Clock == nil:
		return nil, &ConfigError{Field: "Clock", Msg: "is required"}
	case cfg.Owner == "":
		return nil, &ConfigError{Field: "Owner", Msg: "is required"}
	case cfg.IDs == nil:
		return nil, &ConfigError{Field: "IDs", Msg: "is required"}
	case sink == nil:
		return nil, &ConfigError{Field: "sink", Msg: "is required"}
	case cfg.Lease < 0:
		return nil, &ConfigError{Field: "Lease", Msg: fmt.Sprintf("is %v, want >= 0", cfg.Lease)}
	case cfg.PollInterval < 0:
		return nil, &ConfigError{Field: "PollInterval", Msg: fmt.Sprintf("is %v, want >= 0", cfg.PollInterval)}
	case cfg.BatchSize < 0:
		return nil, &ConfigError{Field: "BatchSize", Msg: fmt.Sprintf("is %d, want >= 0", cfg.BatchSize)}
	case cfg.MaxBacklog < 0:
		return nil, &ConfigError{Field: "MaxBacklog", Msg: fmt.Sprintf("is %d, want >= 0", cfg.MaxBacklog)}
	}
	b := &Bus{
		store:        cfg.Store,
		clock:        cfg.Clock,
		owner:        cfg.Owner,
		lease:        cmp.Or(cfg.Lease, DefaultLease),
		pollInterval: cmp.Or(cfg.PollInterval, DefaultPollInterval),
		batchSize:    cmp.Or(cfg.BatchSize, DefaultBatchSize),
		maxBacklog:   cmp.Or(cfg.MaxBacklog, DefaultMaxBacklog),
		ids:          cfg.IDs,
		logger:       cfg.Logger,
		sink:         sink,
		nudge:        make(chan struct{}, 1),
	}
	if b.logger == nil {
		b.logger = slog.Default()
	}
	b.backlog, _ = sink.(BacklogSink)
	return b, nil
}

// room returns how many more events the sink takes before its backlog
// reaches the bound (normal events); critical ones have MaxBacklog more.
// A Sink that is no BacklogSink always has room.
func (b *Bus) room() int {
	if b.backlog == nil {
		return math.MaxInt
	}
	return b.maxBacklog - b.backlog.Backlog()
}

// HoldingBack reports whether events were left in the outbox for the
// poller because the sink's backlog was at its bound (BacklogSink), and
// no poll round has found the outbox empty of available events since:
// they are due now, but not queued in memory. The engine's WaitIdle
// waits for them.
func (b *Bus) HoldingBack() bool {
	return b.heldBack.Load() != b.drained.Load()
}

// Publish inserts events into the outbox inside tx, the caller's
// transaction, and returns the stored events in argument order. It gives
// an event without an ID one from Config.IDs, and one without an EventID
// its ID in decimal (ids are time-ordered and of one length for centuries,
// so the outbox's unique index on EventIDs grows at its end); it fills
// CreatedAt and AvailableAt with the clock's now when they are zero; and it
// pre-claims every event that is already available (AvailableAt not after
// now) for this node: ClaimedBy is Config.Owner and ClaimedUntil is now
// plus Config.Lease, whatever the caller set. Events due later are stored
// unclaimed for the poller, and so are available events that are not
// critical while the Sink's backlog is at Config.MaxBacklog (BacklogSink),
// and critical ones too at twice that.
//
// After tx commits, pass the returned events to Dispatch. An EventID that
// is already stored fails the whole batch with an error matching
// store.ErrDuplicate. When every EventID is its event's ID in decimal
// (the bus's own naming), a duplicate could only be an ID made twice, which
// the allocator rules out: the events are then appended
// (store.Tx.AppendEvents), and a store that holds writes back may send
// them later in the transaction, with the writes around them.
func (b *Bus) Publish(ctx context.Context, tx store.Tx, events []store.Event) ([]store.Event, error) {
	if tx == nil {
		return nil, errors.New("eventbus: publish: nil tx")
	}
	if len(events) == 0 {
		return nil, nil
	}
	now := b.clock.Now()
	until := now.Add(b.lease)
	room := b.room()
	rows := make([]store.Event, len(events))
	for i, ev := range events {
		if ev.ID == 0 {
			id, err := b.ids(ctx)
			if err != nil {
				return nil, fmt.Errorf("eventbus: publish: %w", err)
			}
			ev.ID = id
		}
		if ev.EventID == "" {
			ev.EventID = EventID(ev.ID)
		}
		if ev.CreatedAt.IsZero() {
			ev.CreatedAt = now
		}
		if ev.AvailableAt.IsZero() {
			ev.AvailableAt = now
		}
		ev.ClaimedBy, ev.ClaimedUntil = "", nil
		if !ev.AvailableAt.After(now) && (room > 0 || ev.Critical && room > -b.maxBacklog) {
			ev.ClaimedBy, ev.ClaimedUntil = b.owner, &until
		}
		rows[i] = ev
	}
	insert := tx.AppendEvents
	for _, ev := range rows {
		if ev.EventID != EventID(ev.ID) {
			insert = tx.InsertEvents // a name of the caller's: it may be stored already
			break
		}
	}
	stored, err := insert(ctx, rows)
	if err != nil {
		return nil, fmt.Errorf("eventbus: publish %d events: %w", len(rows), err)
	}
	b.published.Add(uint64(len(stored)))
	return stored, nil
}

// EventID is the EventID of an event its producer gave no other: its ID
// in decimal.
func EventID(id int64) string { return strconv.FormatInt(id, 10) }

// Dispatch hands events whose transaction has committed to the Sink, in
// memory. Only events pre-claimed by this node (those Publish claimed) are
// handed over; the others, due later, are left to the poller. Dispatch
// does not need the poller to run.
func (b *Bus) Dispatch(events []store.Event) {
	mine := make([]store.Event, 0, len(events))
	now := b.clock.Now()
	heldBack := false
	for _, ev := range events {
		switch {
		case ev.ClaimedBy == b.owner && ev.ClaimedUntil != nil:
			mine = append(mine, ev)
		case ev.ClaimedBy == "" && !ev.AvailableAt.After(now):
			heldBack = true // Publish held it back for the poller
		}
	}
	if heldBack {
		// Committed now: a poll round that begins after this sees them.
		b.heldBack.Add(1)
		b.Nudge()
	}
	if len(mine) == 0 {
		return
	}
	b.dispatched.Add(uint64(len(mine)))
	b.sink.Deliver(mine)
}

// Abandon gives up this node's pre-claims of events that Publish stored
// in a transaction whose COMMIT failed: the caller cannot tell whether it
// committed (a connection lost during COMMIT commits or not, unseen). If
// it did, the events are in the outbox, claimed by this node, and nobody
// (this node's poller included) would take them before their lease ends;
// Abandon makes those that exist claimable at once and wakes the poller.
// If it did not, there is nothing to release. Releasing is fenced by the
// owner, and the handler's own fence (MarkEventsProcessedParams.Owner)
// keeps an event from being processed twice whatever happens meanwhile.
// A release the database refuses (still unreachable) is logged: the
// events then wait out their lease, as they would have without Abandon.
func (b *Bus) Abandon(ctx context.Context, events []store.Event) {
	released := 0
	for _, ev := range events {
		if ev.ClaimedBy != b.owner || ev.ClaimedUntil == nil || ev.ID == 0 {
			continue
		}
		err := b.store.RetryEvent(ctx, store.RetryEventParams{ID: ev.ID, AvailableAt: ev.AvailableAt, Owner: b.owner})
		if err != nil {
			b.logger.Warn("eventbus: could not release the claims of a transaction whose commit failed; they wait out their lease",
				"events", len(events), "err", err)
			break
		}
		released++
	}
	if released > 0 {
		b.Nudge()
	}
}

// MaxHeld bounds how many events Redeliver keeps in memory at once.
const MaxHeld = 10000

// heldEvent is an event Redeliver keeps until at.
type heldEvent struct {
	ev store.Event
	at time.Time
}

// Redeliver hands ev, which this node holds the claim of, to the Sink
// again once the clock reaches at, from memory: the poller delivers it on
// its first round from then. It is for an event whose processing failed
// while the database could not even record the retry (an outage): the
// claim then stays with this node until its lease ends, and without
// Redeliver the event would wait out the whole lease. Redeliver reports
// false, keeping nothing, when the bus is not running or already holds
// MaxHeld events; the lease brings the event back then. A redelivered
// event may find that its claim was lost meanwhile; the handler's fence
// (store.MarkEventsProcessedParams.Owner) sees to that.
func (b *Bus) Redeliver(ev store.Event, at time.Time) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	if !b.poller.Running() || len(b.held) >= MaxHeld || ev.ClaimedBy != b.owner {
		return false
	}
	b.held = append(b.held, heldEvent{ev: ev, at: at})
	return true
}

// HoldsDue reports whether events held for redelivery (Redeliver) are
// due at now: the next poll hands them over.
func (b *Bus) HoldsDue(now time.Time) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	for _, h := range b.held {
		if !h.at.After(now) {
			return true
		}
	}
	return false
}

// takeDue removes and returns the held events due at now.
func (b *Bus) takeDue(now time.Time) []store.Event {
	b.mu.Lock()
	defer b.mu.Unlock()
	var due []store.Event
	kept := b.held[:0]
	for _, h := range b.held {
		if h.at.After(now) {
			kept = append(kept, h)
		} else {
			due = append(due, h.ev)
		}
	}
	clear(b.held[len(kept):])
	b.held = kept
	return due
}

// Nudge makes the poller poll soon instead of at its next tick: call it
// when events were committed that Dispatch does not cover, such as those
// of a host transaction whose commit the engine does not see. Nudges
// while a poll is pending are merged into one. It never blocks.
func (b *Bus) Nudge() {
	select {
	case b.nudge <- struct{}{}:
	default:
	}
}

// Start starts the poller, which polls at once and then on every tick
// and nudge. Cancelling ctx stops the poller as Stop does (Stop must
// still be called to wait for it). Start returns ErrStarted when called
// twice and ErrStopped after Stop.
func (b *Bus) Start(ctx context.Context) error {
	if err := b.poller.Start(ctx, b.run); err != nil {
		return fmt.Errorf("eventbus: %w", err)
	}
	return nil
}

// Stop stops the poller and waits for it to return, including a Sink
// delivery in progress. It returns ctx.Err() when ctx ends first (the
// poller is told to stop all the same). Stop is idempotent, and safe
// before Start; a stopped Bus cannot be started again. The events held
// for redelivery are dropped: their claims are released by the node's
// Leave, or run out.
func (b *Bus) Stop(ctx context.Context) error {
	err := b.poller.Stop(ctx)
	// After the poller counts as stopped, so that no Redeliver adds to
	// what is dropped here.
	b.mu.Lock()
	b.held = nil
	b.mu.Unlock()
	return err
}

// Stats returns the bus's counters.
func (b *Bus) Stats() Stats {
	return Stats{
		Published:   b.published.Load(),
		Dispatched:  b.dispatched.Load(),
		Polled:      b.polled.Load(),
		Polls:       b.polls.Load(),
		PollErrors:  b.pollErrors.Load(),
		Redelivered: b.redelivered.Load(),
		Busy:        b.busy.Load() > 0,
	}
}

// maxUnsure bounds how many claims of unknown outcome the poller keeps
// to give up (a long outage fails every poll; the oldest are dropped and
// wait out their lease).
const maxUnsure = 16

// pollUntil is the lease end of a poll's claim at now: now plus the
// lease, truncated to the microsecond the databases keep, and one
// microsecond more, and after every earlier poll's. Publish's claims end
// at now plus the lease, so a poll's claims are told apart from those of
// every other claim of this node by their end (ReleaseClaim), whatever
// the clock.
func (b *Bus) pollUntil(now time.Time) time.Time {
	until := now.Add(b.lease).Truncate(time.Microsecond).Add(time.Microsecond)
	if !until.After(b.lastUntil) {
		until = b.lastUntil.Add(time.Microsecond)
	}
	b.lastUntil = until
	return until
}

// releaseUnsure gives up the claims of the polls that failed, whose
// commit may have gone through, so that this round claims their events
// at once rather than after their lease. A claim whose lease has ended
// needs nothing; one that cannot be released now is tried again next
// round.
func (b *Bus) releaseUnsure(ctx context.Context) {
	if len(b.unsure) == 0 {
		return
	}
	now := b.clock.Now()
	kept := b.unsure[:0]
	for _, until := range b.unsure {
		if !until.After(now) {
			continue
		}
		n, err := b.store.ReleaseClaim(ctx, b.owner, until)
		if err != nil {
			kept = append(kept, until)
			continue
		}
		if n > 0 {
			b.logger.InfoContext(ctx, "eventbus: released the claims of a poll whose outcome was unknown",
				slog.String("owner", b.owner), slog.Int64("events", n))
		}
	}
	clear(b.unsure[len(kept):])
	b.unsure = kept
}

// run is the poller's loop.
func (b *Bus) run(ctx context.Context) {
	for {
		b.poll(ctx)
		t := b.clock.NewTimer(b.pollInterval)
		select {
		case <-ctx.Done():
			t.Stop()
			return
		case <-b.nudge:
			t.Stop()
		case <-t.C():
		}
	}
}

// poll claims and delivers batches until one comes back short. A store
// error ends the round; the next tick retries. It claims no more than
// the sink's backlog has room for (BacklogSink): normal events below the
// bound, critical ones below twice the bound.
func (b *Bus) poll(ctx context.Context) {
	b.busy.Add(1)
	defer b.busy.Add(-1)
	defer b.polls.Add(1)
	heldBack := b.heldBack.Load()
	if due := b.takeDue(b.clock.Now()); len(due) > 0 {
		b.redelivered.Add(uint64(len(due)))
		b.sink.Deliver(due)
	}
	b.releaseUnsure(ctx)
	for ctx.Err() == nil {
		now := b.clock.Now()
		limit, pool := b.batchSize, store.AnyPool
		switch room := b.room(); {
		case room > 0:
			limit = min(limit, room)
		case room > -b.maxBacklog:
			limit, pool = min(limit, room+b.maxBacklog), store.CriticalPool
		default:
			return // the next tick looks again
		}
		until := b.pollUntil(now)
		events, err := b.store.ClaimEvents(ctx, store.ClaimEventsParams{
			Owner:      b.owner,
			Now:        now,
			LeaseUntil: until,
			Limit:      limit,
			Pool:       pool,
		})
		if err != nil {
			// The claim may have committed all the same (a connection
			// lost after COMMIT): its events would be this node's,
			// undelivered, until the lease ends. The next round gives
			// them up first (releaseUnsure), and claims them again.
			if len(b.unsure) == maxUnsure {
				b.unsure = b.unsure[1:] // the oldest waits out its lease
			}
			b.unsure = append(b.unsure, until)
			if ctx.Err() == nil {
				b.pollErrors.Add(1)
				b.logger.WarnContext(ctx, "eventbus: poll failed; retrying on the next tick",
					slog.String("owner", b.owner), slog.Any("error", err))
			}
			return
		}
		if len(events) > 0 {
			b.polled.Add(uint64(len(events)))
			b.sink.Deliver(events)
		}
		if len(events) < limit {
			if pool == store.AnyPool {
				// Nothing available is left in the outbox.
				b.drained.Store(heldBack)
			}
			return
		}
	}
}
