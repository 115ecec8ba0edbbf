package eventbus_test

import (
	"bytes"
	"cmp"
	"context"
	"errors"
	"log/slog"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/goxpdl/goxpdl/eventbus"
	"github.com/goxpdl/goxpdl/store"
	"github.com/goxpdl/goxpdl/store/dbtest"
	"github.com/goxpdl/goxpdl/store/gormstore"
	"github.com/goxpdl/goxpdl/timer"
)

const (
	owner        = "node-1"
	lease        = 30 * time.Second
	pollInterval = 200 * time.Millisecond
)

var t0 = time.Date(2026, 3, 4, 5, 6, 7, 0, time.UTC)

// chanSink records deliveries on a channel.
type chanSink struct{ ch chan []store.Event }

func (s *chanSink) Deliver(events []store.Event) { s.ch <- events }

// next waits for the next delivery.
func (s *chanSink) next(t *testing.T) []store.Event {
	t.Helper()
	return <-s.ch
}

// requireNone fails when anything was delivered. Call it after a poll
// round is known to have finished (tick, nudge).
func (s *chanSink) requireNone(t *testing.T) {
	t.Helper()
	select {
	case events := <-s.ch:
		require.Failf(t, "unexpected delivery", "%d events: %v", len(events), eventIDs(events))
	default:
	}
}

// lockedBuffer is a bytes.Buffer the poller may log into while a test
// reads it.
type lockedBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *lockedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *lockedBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

type bundle struct {
	ctx   context.Context
	store store.Store
	clock *timer.Fake
	sink  *chanSink
	logs  *lockedBuffer
	bus   *eventbus.Bus
	// lastID is the last event ID nextID made.
	lastID atomic.Int64
}

// setup opens a migrated in-memory SQLite store and a Bus over it on a
// fake clock. wrap, when given, wraps the store the Bus sees.
func setup(t *testing.T, cfg eventbus.Config, wrap ...func(store.Store) store.Store) *bundle {
	t.Helper()
	return setupSink(t, cfg, nil, wrap...)
}

// setupSink is setup with the Bus delivering to sink (b.sink, wrapped),
// when it is not nil.
func setupSink(t *testing.T, cfg eventbus.Config, sink func(*chanSink) eventbus.Sink, wrap ...func(store.Store) store.Store) *bundle {
	t.Helper()
	gs, err := gormstore.New(dbtest.OpenSQLiteMemory(t))
	require.NoError(t, err)
	require.NoError(t, gs.Migrate(t.Context()))

	b := &bundle{
		ctx:   t.Context(),
		store: gs,
		clock: timer.NewFake(t0),
		sink:  &chanSink{ch: make(chan []store.Event, 100)},
		logs:  &lockedBuffer{},
	}
	cfg.Store = gs
	for _, w := range wrap {
		cfg.Store = w(cfg.Store)
	}
	cfg.Clock, cfg.Owner = b.clock, owner
	if cfg.IDs == nil {
		cfg.IDs = b.nextID
	}
	cfg.Lease = cmp.Or(cfg.Lease, lease)
	cfg.PollInterval = cmp.Or(cfg.PollInterval, pollInterval)
	cfg.Logger = slog.New(slog.NewTextHandler(b.logs, nil))
	var to eventbus.Sink = b.sink
	if sink != nil {
		to = sink(b.sink)
	}
	b.bus, err = eventbus.New(cfg, to)
	require.NoError(t, err)
	return b
}

// start starts the bus and waits until the poller has made its first poll
// and waits for its tick.
func (b *bundle) start(t *testing.T) {
	t.Helper()
	armed := b.clock.TimerAdded()
	require.NoError(t, b.bus.Start(b.ctx))
	t.Cleanup(func() { require.NoError(t, b.bus.Stop(context.WithoutCancel(b.ctx))) })
	<-armed
}

// tick moves the fake clock by d, which must reach the poller's timer,
// and waits until the poll round it causes has finished.
func (b *bundle) tick(d time.Duration) {
	armed := b.clock.TimerAdded()
	b.clock.Advance(d)
	<-armed
}

// nudge nudges the poller and waits until the poll round has finished.
func (b *bundle) nudge() {
	armed := b.clock.TimerAdded()
	b.bus.Nudge()
	<-armed
}

// nextID makes event IDs as the engine's allocator would: unique and
// increasing.
func (b *bundle) nextID(context.Context) (int64, error) { return b.lastID.Add(1), nil }

// insertUnclaimed writes events straight into the outbox, as another node
// or a host transaction would, without a claim.
func (b *bundle) insertUnclaimed(t *testing.T, eventIDs ...string) []store.Event {
	t.Helper()
	events := make([]store.Event, len(eventIDs))
	for i, id := range eventIDs {
		n, _ := b.nextID(b.ctx)
		events[i] = store.Event{ID: n, EventID: id, ProcessInstanceID: 7, Kind: "test", CreatedAt: b.clock.Now(), AvailableAt: b.clock.Now()}
	}
	stored, err := b.store.InsertEvents(b.ctx, events)
	require.NoError(t, err)
	return stored
}

// publish publishes events in a transaction of their own and returns the
// stored events once it has committed.
func (b *bundle) publish(t *testing.T, events ...store.Event) []store.Event {
	t.Helper()
	var published []store.Event
	err := b.store.InTx(b.ctx, func(ctx context.Context, tx store.Tx) error {
		var err error
		published, err = b.bus.Publish(ctx, tx, events)
		return err
	})
	require.NoError(t, err)
	return published
}

func eventIDs(events []store.Event) []string {
	ids := make([]string, len(events))
	for i, e := range events {
		ids[i] = e.EventID
	}
	return ids
}

func TestNew(t *testing.T) {
	t.Parallel()
	valid := func() eventbus.Config {
		return eventbus.Config{Store: storeOnly{}, Clock: timer.NewFake(t0), Owner: owner,
			IDs: func(context.Context) (int64, error) { return 1, nil }}
	}
	sink := &chanSink{}
	tests := []struct {
		name   string
		change func(*eventbus.Config)
		sink   eventbus.Sink
		field  string
	}{
		{"no store", func(c *eventbus.Config) { c.Store = nil }, sink, "Store"},
		{"no clock", func(c *eventbus.Config) { c.Clock = nil }, sink, "Clock"},
		{"no owner", func(c *eventbus.Config) { c.Owner = "" }, sink, "Owner"},
		{"no ids", func(c *eventbus.Config) { c.IDs = nil }, sink, "IDs"},
		{"no sink", func(*eventbus.Config) {}, nil, "sink"},
		{"negative lease", func(c *eventbus.Config) { c.Lease = -time.Second }, sink, "Lease"},
		{"negative poll interval", func(c *eventbus.Config) { c.PollInterval = -time.Second }, sink, "PollInterval"},
		{"negative batch size", func(c *eventbus.Config) { c.BatchSize = -1 }, sink, "BatchSize"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			cfg := valid()
			tt.change(&cfg)
			bus, err := eventbus.New(cfg, tt.sink)
			require.Nil(t, bus)
			var cfgErr *eventbus.ConfigError
			require.ErrorAs(t, err, &cfgErr)
			require.Equal(t, tt.field, cfgErr.Field)
		})
	}

	t.Run("defaults", func(t *testing.T) {
		t.Parallel()
		bus, err := eventbus.New(valid(), sink)
		require.NoError(t, err)
		require.NotNil(t, bus)
		require.NoError(t, bus.Stop(t.Context()), "Stop before Start")
	})
}

// storeOnly is a store.Store for tests that never reach it.
type storeOnly struct{ store.Store }

// TestPublish publishes events in a real transaction: they are stored
// claimed by this node, Dispatch hands them to the sink, and the poller
// leaves them alone until the lease expires.
func TestPublish(t *testing.T) {
	t.Parallel()
	b := setup(t, eventbus.Config{})
	b.start(t)

	published := b.publish(t,
		store.Event{EventID: "mine", ProcessInstanceID: 1, Kind: "a", Critical: true},
		store.Event{ProcessInstanceID: 1, Kind: "b", ClaimedBy: "someone else"},
	)
	require.Len(t, published, 2)
	require.Equal(t, "mine", published[0].EventID)
	require.NotEmpty(t, published[1].EventID, "a fresh EventID")
	require.NotEqual(t, published[0].ID, published[1].ID)
	for _, ev := range published {
		require.Equal(t, owner, ev.ClaimedBy)
		require.NotNil(t, ev.ClaimedUntil)
		require.True(t, t0.Add(lease).Equal(*ev.ClaimedUntil), "claimed until %v", ev.ClaimedUntil)
		require.True(t, t0.Equal(ev.CreatedAt))
		require.True(t, t0.Equal(ev.AvailableAt))
		stored, err := b.store.GetEvent(b.ctx, ev.ID)
		require.NoError(t, err)
		require.Equal(t, owner, stored.ClaimedBy)
		require.Equal(t, 1, stored.Attempts)
	}

	b.bus.Dispatch(published)
	require.Equal(t, published, b.sink.next(t))

	// A tick and a nudge before the lease ends find nothing to claim.
	b.tick(pollInterval)
	b.nudge()
	b.sink.requireNone(t)

	// Unprocessed when the lease has expired: the poller hands them out
	// again (at least once).
	b.tick(lease)
	again := b.sink.next(t)
	require.Equal(t, []string{"mine", published[1].EventID}, eventIDs(again))
	for _, ev := range again {
		require.Equal(t, 2, ev.Attempts)
	}

	stats := b.bus.Stats()
	require.Equal(t, uint64(2), stats.Published)
	require.Equal(t, uint64(2), stats.Dispatched)
	require.Equal(t, uint64(2), stats.Polled)
	require.Equal(t, uint64(4), stats.Polls, "first poll, tick, nudge, tick")
	require.Zero(t, stats.PollErrors)
}

// TestPublishProcessedNotPolled: an event marked processed before its
// lease expires is never delivered again.
func TestPublishProcessedNotPolled(t *testing.T) {
	t.Parallel()
	b := setup(t, eventbus.Config{})
	b.start(t)

	published := b.publish(t, store.Event{ProcessInstanceID: 1, Kind: "a"})
	b.bus.Dispatch(published)
	handled := b.sink.next(t)
	require.NoError(t, b.store.MarkEventsProcessed(b.ctx, store.MarkEventsProcessedParams{
		IDs: []int64{handled[0].ID}, ProcessedAt: b.clock.Now(),
	}))

	b.tick(lease)
	b.sink.requireNone(t)
}

func TestPublishDuplicate(t *testing.T) {
	t.Parallel()
	b := setup(t, eventbus.Config{})
	b.publish(t, store.Event{EventID: "once", Kind: "a"})

	err := b.store.InTx(b.ctx, func(ctx context.Context, tx store.Tx) error {
		_, err := b.bus.Publish(ctx, tx, []store.Event{{EventID: "twice", Kind: "a"}, {EventID: "once", Kind: "a"}})
		return err
	})
	require.ErrorIs(t, err, store.ErrDuplicate)
	_, err = b.bus.Publish(b.ctx, nil, []store.Event{{Kind: "a"}})
	require.Error(t, err, "nil tx")
	none, err := b.bus.Publish(b.ctx, b.store, nil)
	require.NoError(t, err)
	require.Empty(t, none)
	require.Equal(t, uint64(1), b.bus.Stats().Published)
}

// TestPublishDelayed: an event due later is stored unclaimed, Dispatch
// skips it, and the poller delivers it once it is due.
func TestPublishDelayed(t *testing.T) {
	t.Parallel()
	b := setup(t, eventbus.Config{})
	b.start(t)

	due := t0.Add(lease / 3) // before "now"'s lease ends, so only "later" is due
	published := b.publish(t,
		store.Event{EventID: "now", Kind: "a"},
		store.Event{EventID: "later", Kind: "a", AvailableAt: due},
	)
	require.Empty(t, published[1].ClaimedBy)
	require.Nil(t, published[1].ClaimedUntil)

	b.bus.Dispatch(published)
	require.Equal(t, []string{"now"}, eventIDs(b.sink.next(t)))
	b.sink.requireNone(t)

	b.tick(pollInterval)
	b.sink.requireNone(t)

	b.tick(lease / 3)
	later := b.sink.next(t)
	require.Equal(t, []string{"later"}, eventIDs(later))
	require.Equal(t, owner, later[0].ClaimedBy)
}

// TestPollTick: events written without a claim (by another node, or a
// host transaction) are delivered on the next tick.
func TestPollTick(t *testing.T) {
	t.Parallel()
	b := setup(t, eventbus.Config{})
	b.start(t)

	b.insertUnclaimed(t, "x1", "x2")
	b.sink.requireNone(t)
	b.tick(pollInterval)

	got := b.sink.next(t)
	require.Equal(t, []string{"x1", "x2"}, eventIDs(got))
	for _, ev := range got {
		require.Equal(t, owner, ev.ClaimedBy)
		// A poll's claim ends a microsecond after a lease from now (it is
		// told apart from Publish's, see TestPollUnsureClaimReleased).
		require.True(t, b.clock.Now().Add(lease+time.Microsecond).Equal(*ev.ClaimedUntil), "claimed until %v", ev.ClaimedUntil)
	}
	require.Equal(t, uint64(2), b.bus.Stats().Polled)
}

// TestPollNudge: a nudge polls without waiting for the tick.
func TestPollNudge(t *testing.T) {
	t.Parallel()
	b := setup(t, eventbus.Config{})
	b.start(t)

	b.insertUnclaimed(t, "y1")
	b.bus.Nudge()
	require.Equal(t, []string{"y1"}, eventIDs(b.sink.next(t)))
}

// TestPollStartsWithAPoll: events left over from before the start (a
// restart) are delivered by the first poll, without a tick.
func TestPollStartsWithAPoll(t *testing.T) {
	t.Parallel()
	b := setup(t, eventbus.Config{})
	b.insertUnclaimed(t, "leftover")
	b.start(t)
	require.Equal(t, []string{"leftover"}, eventIDs(b.sink.next(t)))
}

// TestPollBatches: a round claims batch after batch until one comes back
// short.
func TestPollBatches(t *testing.T) {
	t.Parallel()
	b := setup(t, eventbus.Config{BatchSize: 2})
	b.start(t)

	b.insertUnclaimed(t, "b1", "b2", "b3", "b4", "b5")
	b.tick(pollInterval)
	require.Equal(t, []string{"b1", "b2"}, eventIDs(b.sink.next(t)))
	require.Equal(t, []string{"b3", "b4"}, eventIDs(b.sink.next(t)))
	require.Equal(t, []string{"b5"}, eventIDs(b.sink.next(t)))
	b.sink.requireNone(t)
	require.Equal(t, uint64(2), b.bus.Stats().Polls, "first poll and one tick")
}

// TestRolledBack: the events of a rolled-back transaction do not exist;
// the poller never delivers them.
func TestRolledBack(t *testing.T) {
	t.Parallel()
	b := setup(t, eventbus.Config{})
	b.start(t)

	errRollback := errors.New("roll back")
	err := b.store.InTx(b.ctx, func(ctx context.Context, tx store.Tx) error {
		_, err := b.bus.Publish(ctx, tx, []store.Event{{EventID: "ghost", Kind: "a"}, {Kind: "a"}})
		require.NoError(t, err)
		return errRollback
	})
	require.ErrorIs(t, err, errRollback)

	b.insertUnclaimed(t, "real")
	b.tick(pollInterval)
	require.Equal(t, []string{"real"}, eventIDs(b.sink.next(t)))

	b.tick(2 * lease) // well past the ghosts' lease, and "real"'s
	require.Equal(t, []string{"real"}, eventIDs(b.sink.next(t)), "the unprocessed real event again")
	b.sink.requireNone(t)
}

// flakyStore fails the next n claims.
type flakyStore struct {
	store.Store
	failures atomic.Int32
}

var errFlaky = errors.New("database went away")

func (s *flakyStore) ClaimEvents(ctx context.Context, params store.ClaimEventsParams) ([]store.Event, error) {
	if s.failures.Add(-1) >= 0 {
		return nil, errFlaky
	}
	return s.Store.ClaimEvents(ctx, params)
}

// TestPollStoreError: a store error is logged and the poller retries on
// the next tick.
func TestPollStoreError(t *testing.T) {
	t.Parallel()
	flaky := &flakyStore{}
	b := setup(t, eventbus.Config{}, func(s store.Store) store.Store {
		flaky.Store = s
		return flaky
	})
	b.start(t)

	b.insertUnclaimed(t, "z1")
	flaky.failures.Store(2)
	b.tick(pollInterval)
	b.nudge()
	b.sink.requireNone(t)
	require.Equal(t, uint64(2), b.bus.Stats().PollErrors)
	require.Contains(t, b.logs.String(), errFlaky.Error())

	b.tick(pollInterval)
	require.Equal(t, []string{"z1"}, eventIDs(b.sink.next(t)))
}

// ambiguousStore makes the next n claims commit and then fail, as a
// connection lost after COMMIT does.
type ambiguousStore struct {
	store.Store
	failures atomic.Int32
}

func (s *ambiguousStore) ClaimEvents(ctx context.Context, params store.ClaimEventsParams) ([]store.Event, error) {
	events, err := s.Store.ClaimEvents(ctx, params)
	if err == nil && s.failures.Add(-1) >= 0 {
		return nil, errFlaky
	}
	return events, err
}

// TestPollUnsureClaimReleased: a poll whose claim committed although the
// store said it failed does not leave its events claimed and undelivered
// until the lease ends: the next round gives the claim up and claims them
// again, and leaves the claims of the events Publish dispatched (claimed
// at the same instant) alone.
func TestPollUnsureClaimReleased(t *testing.T) {
	t.Parallel()
	amb := &ambiguousStore{}
	b := setup(t, eventbus.Config{}, func(s store.Store) store.Store {
		amb.Store = s
		return amb
	})
	b.start(t)

	published := b.publish(t, store.Event{EventID: "dispatched", ProcessInstanceID: 1, Kind: "a"})
	b.insertUnclaimed(t, "u1", "u2")
	amb.failures.Store(1)
	b.nudge() // claims u1 and u2, and hears it failed
	b.sink.requireNone(t)
	require.Equal(t, uint64(1), b.bus.Stats().PollErrors)

	b.nudge() // at the same instant, long before the lease ends
	select {  // the round has delivered what it claimed: no wait
	case got := <-b.sink.ch:
		require.Equal(t, []string{"u1", "u2"}, eventIDs(got))
	default:
		require.Fail(t, "the events of the unsure claim wait out their lease")
	}
	require.Contains(t, b.logs.String(), "released the claims of a poll whose outcome was unknown")
	got, err := b.store.GetEvent(b.ctx, published[0].ID)
	require.NoError(t, err)
	require.Equal(t, owner, got.ClaimedBy, "Publish's claim is left alone")
	b.nudge()
	b.sink.requireNone(t)
}

func TestStartStop(t *testing.T) {
	t.Parallel()

	t.Run("twice", func(t *testing.T) {
		t.Parallel()
		b := setup(t, eventbus.Config{})
		b.start(t)
		require.ErrorIs(t, b.bus.Start(b.ctx), eventbus.ErrStarted)
		require.NoError(t, b.bus.Stop(b.ctx))
		require.NoError(t, b.bus.Stop(b.ctx), "idempotent")
		require.ErrorIs(t, b.bus.Start(b.ctx), eventbus.ErrStopped)
	})

	t.Run("stop before start", func(t *testing.T) {
		t.Parallel()
		b := setup(t, eventbus.Config{})
		require.NoError(t, b.bus.Stop(b.ctx))
		require.ErrorIs(t, b.bus.Start(b.ctx), eventbus.ErrStopped)
	})

	t.Run("cancel start ctx", func(t *testing.T) {
		t.Parallel()
		b := setup(t, eventbus.Config{})
		ctx, cancel := context.WithCancel(b.ctx)
		armed := b.clock.TimerAdded()
		require.NoError(t, b.bus.Start(ctx))
		<-armed
		cancel()
		require.NoError(t, b.bus.Stop(b.ctx), "the poller has returned")
	})

	// Stop gives up when its ctx ends while the sink holds the poller, and
	// a later Stop waits for it.
	t.Run("stop ctx ends", func(t *testing.T) {
		t.Parallel()
		b := setup(t, eventbus.Config{})
		release := make(chan struct{})
		entered := make(chan struct{})
		blocking := &blockingSink{entered: entered, release: release}
		bus, err := eventbus.New(eventbus.Config{Store: b.store, Clock: b.clock, Owner: owner, IDs: b.nextID}, blocking)
		require.NoError(t, err)
		b.insertUnclaimed(t, "held")
		require.NoError(t, bus.Start(b.ctx))
		<-entered

		expired, cancel := context.WithCancel(b.ctx)
		cancel()
		require.ErrorIs(t, bus.Stop(expired), context.Canceled)
		close(release)
		require.NoError(t, bus.Stop(b.ctx))
	})
}

// blockingSink holds the deliverer until release is closed.
type blockingSink struct {
	once    sync.Once
	entered chan struct{}
	release chan struct{}
}

func (s *blockingSink) Deliver([]store.Event) {
	s.once.Do(func() { close(s.entered) })
	<-s.release
}

// TestRedeliver: an event held in memory goes back to the Sink at its
// time, long before its claim's lease would have brought it back, and
// only while the bus runs.
func TestRedeliver(t *testing.T) {
	t.Parallel()
	b := setup(t, eventbus.Config{})
	require.False(t, b.bus.Redeliver(store.Event{EventID: "early", ClaimedBy: owner}, t0), "not running yet")
	b.start(t)

	published := b.publish(t, store.Event{EventID: "failed", ProcessInstanceID: 1, Kind: "a"})
	require.False(t, b.bus.Redeliver(store.Event{EventID: "theirs", ClaimedBy: "other"}, t0), "not this node's claim")
	require.True(t, b.bus.Redeliver(published[0], t0.Add(2*pollInterval)))

	b.tick(pollInterval)
	b.sink.requireNone(t) // not yet due
	b.tick(pollInterval)
	require.Equal(t, []string{"failed"}, eventIDs(b.sink.next(t)))
	b.tick(pollInterval)
	b.sink.requireNone(t) // handed over once
	require.Equal(t, uint64(1), b.bus.Stats().Redelivered)

	require.NoError(t, b.bus.Stop(b.ctx))
	require.False(t, b.bus.Redeliver(published[0], t0), "stopped")
}

// TestAbandon: events published in a transaction that committed while
// its caller heard of a failure (an ambiguous COMMIT) are claimed by this
// node and never dispatched; Abandon releases them and the next poll,
// which it asks for, hands them over, long before their lease ends.
// Events that were never stored (the commit had failed) are nothing to
// release; events of other owners are not touched.
func TestAbandon(t *testing.T) {
	t.Parallel()
	b := setup(t, eventbus.Config{})
	b.start(t)
	published := b.publish(t, store.Event{EventID: "committed", ProcessInstanceID: 1, Kind: "a"})
	b.nudge()
	b.sink.requireNone(t) // claimed by this node until the lease ends

	armed := b.clock.TimerAdded()
	b.bus.Abandon(b.ctx, append(published,
		store.Event{ID: 999, EventID: "rolled-back", ClaimedBy: owner, ClaimedUntil: published[0].ClaimedUntil},
		store.Event{ID: published[0].ID, EventID: "theirs", ClaimedBy: "other", ClaimedUntil: published[0].ClaimedUntil}))
	<-armed
	require.Equal(t, []string{"committed"}, eventIDs(b.sink.next(t)))
	b.nudge()
	b.sink.requireNone(t)
}

// backlogSink is a chanSink that reports the backlog a test sets.
type backlogSink struct {
	*chanSink
	backlog atomic.Int64
}

func (s *backlogSink) Backlog() int { return int(s.backlog.Load()) }

// setupBacklog starts a bus with MaxBacklog max over a backlogSink.
func setupBacklog(t *testing.T, maxBacklog int) (*bundle, *backlogSink) {
	t.Helper()
	var sink *backlogSink
	b := setupSink(t, eventbus.Config{MaxBacklog: maxBacklog, BatchSize: 10}, func(c *chanSink) eventbus.Sink {
		sink = &backlogSink{chanSink: c}
		return sink
	})
	b.start(t)
	return b, sink
}

// TestBacklogHoldsBack: while the sink's backlog is at MaxBacklog,
// Publish leaves normal events unclaimed in the outbox (critical ones are
// claimed and dispatched as ever) and the poller claims only critical
// events; once there is room it claims no more than the room, and
// HoldingBack says whether events wait in the outbox meanwhile.
func TestBacklogHoldsBack(t *testing.T) {
	t.Parallel()
	b, sink := setupBacklog(t, 3)
	require.False(t, b.bus.HoldingBack())

	sink.backlog.Store(3)
	published := b.publish(t,
		store.Event{EventID: "n1", ProcessInstanceID: 7, Kind: "test"},
		store.Event{EventID: "c1", ProcessInstanceID: 8, Kind: "test", Critical: true},
		store.Event{EventID: "n2", ProcessInstanceID: 9, Kind: "test"})
	require.Empty(t, published[0].ClaimedBy, "a normal event is left to the poller")
	require.Equal(t, owner, published[1].ClaimedBy, "a critical event is claimed")
	require.Empty(t, published[2].ClaimedBy)

	armed := b.clock.TimerAdded()
	b.bus.Dispatch(published) // nudges the poller: it finds no room
	require.Equal(t, []string{"c1"}, eventIDs(b.sink.next(t)))
	<-armed
	b.sink.requireNone(t)
	require.True(t, b.bus.HoldingBack())

	// A critical event stored meanwhile (another node's) is claimed
	// without room.
	_, err := b.store.InsertEvents(b.ctx, []store.Event{{ID: 100, EventID: "c2", ProcessInstanceID: 10, Kind: "test", Critical: true,
		CreatedAt: b.clock.Now(), AvailableAt: b.clock.Now()}})
	require.NoError(t, err)
	b.tick(pollInterval)
	require.Equal(t, []string{"c2"}, eventIDs(b.sink.next(t)))
	b.sink.requireNone(t)
	require.True(t, b.bus.HoldingBack())

	// Room for one: the round claims one event per batch while the
	// (unchanged) backlog leaves room for one.
	sink.backlog.Store(2)
	b.tick(pollInterval)
	require.Equal(t, []string{"n1"}, eventIDs(b.sink.next(t)))
	require.Equal(t, []string{"n2"}, eventIDs(b.sink.next(t)))
	b.sink.requireNone(t)
	require.False(t, b.bus.HoldingBack(), "the round found the outbox drained")
}

// TestBacklogHoldsBackCritical: at twice MaxBacklog critical events are
// held back in the outbox too, and claimed once there is room for them.
func TestBacklogHoldsBackCritical(t *testing.T) {
	t.Parallel()
	b, sink := setupBacklog(t, 2)

	sink.backlog.Store(4)
	published := b.publish(t, store.Event{EventID: "c1", ProcessInstanceID: 8, Kind: "test", Critical: true})
	require.Empty(t, published[0].ClaimedBy)
	armed := b.clock.TimerAdded()
	b.bus.Dispatch(published)
	<-armed
	b.sink.requireNone(t)
	require.True(t, b.bus.HoldingBack())

	sink.backlog.Store(3) // room for one critical event
	b.tick(pollInterval)
	require.Equal(t, []string{"c1"}, eventIDs(b.sink.next(t)))
	b.sink.requireNone(t)
	require.True(t, b.bus.HoldingBack(), "normal events are not looked for yet")

	sink.backlog.Store(0)
	b.tick(pollInterval)
	b.sink.requireNone(t)
	require.False(t, b.bus.HoldingBack())
}
