package scheduler_test

import (
	"context"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/goxpdl/goxpdl/scheduler"
	"github.com/goxpdl/goxpdl/store"
)

// kindEv is ev with a kind, for Take's want.
func kindEv(id, instance int64, kind string) store.Event {
	e := ev(id, instance, false)
	e.Kind = kind
	return e
}

// handledOrder records the IDs the Handler was given, in order.
type handledOrder struct {
	mu  sync.Mutex
	ids []int64
}

func (h *handledOrder) add(id int64) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.ids = append(h.ids, id)
}

func (h *handledOrder) get() []int64 {
	h.mu.Lock()
	defer h.mu.Unlock()
	return append([]int64(nil), h.ids...)
}

func TestTakeHandsTheRunningHandlerItsQueue(t *testing.T) {
	t.Parallel()
	var order handledOrder
	chainable := func(ev store.Event) bool { return ev.Kind == "step" }
	var b *bundle
	b = setup(t, scheduler.Config{
		Handler: func(_ context.Context, ev store.Event) error {
			order.add(ev.ID)
			if ev.ID != 1 {
				return nil
			}
			s := b.sched
			_, ok, left := s.Take(5, 99, chainable)
			assert.False(t, ok, "only the handler of the running event takes")
			assert.Equal(t, 3, left)
			_, ok, _ = s.Take(6, 1, chainable)
			assert.False(t, ok, "nor from another instance's mailbox")

			got, ok, left := s.Take(5, 1, chainable)
			assert.True(t, ok)
			assert.Equal(t, int64(2), got.ID, "the head of the mailbox")
			assert.Equal(t, 2, left)
			assert.Equal(t, 2, s.Queued(5))
			s.Deliver([]store.Event{got}) // a duplicate while it is taken
			assert.Equal(t, uint64(1), s.Stats().EventsDuplicate)
			_, ok, left = s.Take(5, 1, chainable)
			assert.False(t, ok, "the head (3) is not wanted: it waits its turn")
			assert.Equal(t, 2, left)
			s.Settle(scheduler.Handled, got)
			return nil
		},
	})
	b.start(t)
	b.sched.Deliver([]store.Event{kindEv(1, 5, "step"), kindEv(2, 5, "step"), kindEv(3, 5, "end"), kindEv(4, 5, "step"), kindEv(7, 6, "step")})
	b.waitIdle(t)
	got := order.get()
	require.NotContains(t, got, int64(2), "the taken event is not handed to the Handler")
	require.ElementsMatch(t, []int64{1, 3, 4, 7}, got)

	b.sched.Deliver([]store.Event{kindEv(2, 5, "step")})
	b.waitIdle(t)
	require.NotContains(t, order.get(), int64(2), "a taken event settled as handled is remembered")
	stats := b.sched.Stats()
	require.Equal(t, uint64(2), stats.EventsDuplicate)
	require.Equal(t, uint64(4), stats.EventsProcessed, "the taken event is its taker's to count")
	require.Zero(t, stats.QueueDepth)
}

func TestEventsGivenBackAreHandledInTurn(t *testing.T) {
	t.Parallel()
	var order handledOrder
	all := func(store.Event) bool { return true }
	var b *bundle
	b = setup(t, scheduler.Config{
		Handler: func(_ context.Context, ev store.Event) error {
			order.add(ev.ID)
			if ev.ID != 1 {
				return nil
			}
			two, ok, _ := b.sched.Take(5, 1, all)
			assert.True(t, ok)
			three, ok, _ := b.sched.Take(5, 1, all)
			assert.True(t, ok)
			b.sched.Settle(scheduler.Failed, three)
			b.sched.Settle(scheduler.GivenBack, two)
			b.sched.Settle(scheduler.GivenBack, two) // settled already: nothing
			return nil
		},
	})
	b.start(t)
	b.sched.Deliver([]store.Event{ev(1, 5, false), ev(2, 5, false), ev(3, 5, false), ev(4, 5, false)})
	b.waitIdle(t)
	require.Equal(t, []int64{1, 2, 4}, order.get(), "2 went back to the head of its mailbox; 3 failed, its taker retries it")

	b.sched.Deliver([]store.Event{ev(3, 5, false)})
	b.waitIdle(t)
	require.Equal(t, []int64{1, 2, 4, 3}, order.get(), "a failed event is not remembered: its redelivery is handled")
	require.Zero(t, b.sched.Stats().QueueDepth)
}

func TestEventsGivenBackDuringAGracefulStopAreDrained(t *testing.T) {
	t.Parallel()
	var order handledOrder
	all := func(store.Event) bool { return true }
	draining := make(chan struct{})
	var b *bundle
	b = setup(t, scheduler.Config{
		Handler: func(_ context.Context, ev store.Event) error {
			order.add(ev.ID)
			if ev.ID != 1 {
				return nil
			}
			two, ok, _ := b.sched.Take(5, 1, all)
			assert.True(t, ok)
			<-draining
			b.sched.Settle(scheduler.GivenBack, two)
			return nil
		},
	})
	require.NoError(t, b.sched.Start(b.ctx))
	scheduler.SetStopHook(b.sched, func() { close(draining) })
	b.sched.Deliver([]store.Event{ev(1, 5, false), ev(2, 5, false)})
	require.NoError(t, b.sched.Stop(b.ctx))
	require.Equal(t, []int64{1, 2}, order.get())
	require.Zero(t, b.sched.Stats().EventsDropped)
}
