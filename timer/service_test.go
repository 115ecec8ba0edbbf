package timer_test

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"gorm.io/gorm"

	"github.com/goxpdl/goxpdl/store"
	"github.com/goxpdl/goxpdl/store/dbtest"
	"github.com/goxpdl/goxpdl/store/gormstore"
	"github.com/goxpdl/goxpdl/timer"
)

// firings collects what a Service fires, batch by batch.
type firings struct {
	mu     sync.Mutex
	fired  []store.Timer
	failed int // batches to refuse before accepting
	after  chan []store.Timer
}

func (f *firings) fire(_ context.Context, _ store.Tx, batch []store.Timer) (func(), error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.failed > 0 {
		f.failed--
		return nil, errors.New("outbox unavailable")
	}
	f.fired = append(f.fired, batch...)
	return func() { f.after <- batch }, nil
}

func newService(t *testing.T, db *gorm.DB, clock timer.Clock, f *firings) (*timer.Service, store.Store) {
	t.Helper()
	st, err := gormstore.New(db)
	require.NoError(t, err)
	require.NoError(t, st.Migrate(t.Context()))
	s, err := timer.NewService(timer.ServiceConfig{Store: st, Clock: clock, Fire: f.fire, BatchSize: 2, MaxWait: time.Minute})
	require.NoError(t, err)
	return s, st
}

// timerIDs gives the timers the tests arm their ids (the engine's would
// come from package idgen).
var timerIDs atomic.Int64

func armAt(t *testing.T, st store.Store, now time.Time, dues ...time.Duration) {
	t.Helper()
	timers := make([]store.Timer, len(dues))
	for i, d := range dues {
		timers[i] = store.Timer{ID: timerIDs.Add(1), ProcessInstanceID: 1, Kind: "deadline", DueAt: now.Add(d), CreatedAt: now}
	}
	_, err := st.InsertTimers(t.Context(), timers)
	require.NoError(t, err)
}

func TestServiceFiresOnTimeAndOnce(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, db *gorm.DB) {
		start := time.Date(2026, 11, 23, 9, 0, 0, 0, time.UTC)
		clock := timer.NewFake(start)
		f := &firings{after: make(chan []store.Timer, 16)}
		s, st := newService(t, db, clock, f)
		armAt(t, st, start, time.Second, time.Second, time.Second, time.Hour)

		// Never early: nothing is due a moment before.
		clock.Advance(time.Second - time.Microsecond)
		require.NoError(t, s.FireDue(t.Context()))
		require.Empty(t, f.fired)

		added := clock.TimerAdded()
		require.NoError(t, s.Start(t.Context()))
		t.Cleanup(func() { require.NoError(t, s.Stop(context.Background())) })
		<-added // the service sleeps until the first timer is due
		clock.Advance(time.Microsecond)
		got := append(<-f.after, <-f.after...) // three due timers, batches of two
		require.Len(t, got, 3)
		for _, tm := range got {
			require.Equal(t, store.TimerFired, tm.State)
			require.Equal(t, start.Add(time.Second), *tm.FiredAt)
		}
		require.NoError(t, s.FireDue(t.Context()))
		f.mu.Lock()
		require.Len(t, f.fired, 3, "a fired timer does not fire again")
		f.mu.Unlock()

		stats := s.Stats()
		require.Equal(t, uint64(3), stats.Fired)
		require.Zero(t, stats.MaxLateness)
		require.Equal(t, uint64(3), stats.Lateness[0], "all on time")
		q, ok := stats.LatenessQuantile(0.99)
		require.True(t, ok)
		require.Equal(t, timer.LatenessBounds[0], q)
	})
}

func TestServiceRetriesAFailedFiring(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, db *gorm.DB) {
		start := time.Date(2026, 11, 23, 9, 0, 0, 0, time.UTC)
		clock := timer.NewFake(start)
		f := &firings{after: make(chan []store.Timer, 16), failed: 1}
		s, st := newService(t, db, clock, f)
		armAt(t, st, start, time.Second)
		clock.Advance(time.Second)

		require.Error(t, s.FireDue(t.Context()))
		pending, err := st.ListTimers(t.Context(), store.ListTimersParams{States: []store.TimerState{store.TimerPending}})
		require.NoError(t, err)
		require.Len(t, pending, 1, "the failed firing rolled back")

		require.NoError(t, s.FireDue(t.Context()))
		require.Len(t, <-f.after, 1)
	})
}

func TestServiceWakesForAnEarlierTimer(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, db *gorm.DB) {
		start := time.Date(2026, 11, 23, 9, 0, 0, 0, time.UTC)
		clock := timer.NewFake(start)
		f := &firings{after: make(chan []store.Timer, 16)}
		s, st := newService(t, db, clock, f)
		added := clock.TimerAdded()
		require.NoError(t, s.Start(t.Context()))
		t.Cleanup(func() { require.NoError(t, s.Stop(context.Background())) })
		<-added // asleep for MaxWait: there are no timers

		armAt(t, st, start, 5*time.Second)
		added = clock.TimerAdded()
		s.Armed(start.Add(5 * time.Second))
		<-added // asleep again, now until the new timer
		clock.Advance(5 * time.Second)
		require.Len(t, <-f.after, 1)
	})
}

func TestServiceFiresABurstBeforeHandingItOn(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, db *gorm.DB) {
		start := time.Date(2026, 11, 23, 9, 0, 0, 0, time.UTC)
		clock := timer.NewFake(start)
		f := &firings{after: make(chan []store.Timer, 16)}
		firedWhenHandedOn := []int{}
		fire := func(ctx context.Context, tx store.Tx, batch []store.Timer) (func(), error) {
			after, err := f.fire(ctx, tx, batch)
			return func() {
				f.mu.Lock()
				firedWhenHandedOn = append(firedWhenHandedOn, len(f.fired))
				f.mu.Unlock()
				after()
			}, err
		}
		st, err := gormstore.New(db)
		require.NoError(t, err)
		require.NoError(t, st.Migrate(t.Context()))
		s, err := timer.NewService(timer.ServiceConfig{Store: st, Clock: clock, Fire: fire, BatchSize: 2})
		require.NoError(t, err)
		armAt(t, st, start, time.Second, time.Second, time.Second, time.Second, time.Second)

		clock.Advance(time.Second)
		require.NoError(t, s.FireDue(t.Context()))
		require.Len(t, f.after, 3, "three batches were handed on by the time FireDue returned")
		require.Equal(t, []int{5, 5, 5}, firedWhenHandedOn, "each batch was handed on after all five timers fired")
	})
}
