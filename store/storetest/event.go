package storetest

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/goxpdl/goxpdl/store"
)

func (h *harness) testEvents(t *testing.T) {
	lease := func(owner string, now time.Time, limit int) store.ClaimEventsParams {
		return store.ClaimEventsParams{Owner: owner, Now: now, LeaseUntil: now.Add(time.Minute), Limit: limit}
	}

	t.Run("InsertRoundTrip", func(t *testing.T) {
		b := h.setup(t)
		in := []store.Event{
			{
				ID: 99, EventID: "e1", ProcessInstanceID: 7, Kind: "workitem.completed", Payload: []byte(`{"wi":3}`), Critical: true,
				CreatedAt: t0, AvailableAt: at(time.Second),
				// Processing fields of the argument are ignored, and so is
				// a claim without an expiry.
				ProcessedAt: ptr(t0), Attempts: 5, ClaimedBy: "x",
			},
			{ID: 100, EventID: "e2", Kind: "tick", CreatedAt: t0, AvailableAt: t0},
		}
		got, err := b.s.InsertEvents(b.ctx, in)
		require.NoError(t, err)
		require.Len(t, got, 2)
		require.Equal(t, []int64{99, 100}, []int64{got[0].ID, got[1].ID}, "the caller's IDs")
		want := []store.Event{
			{ID: got[0].ID, EventID: "e1", ProcessInstanceID: 7, Kind: "workitem.completed", Payload: []byte(`{"wi":3}`), Critical: true,
				CreatedAt: norm(t0), AvailableAt: norm(at(time.Second))},
			{ID: got[1].ID, EventID: "e2", Kind: "tick", CreatedAt: norm(t0), AvailableAt: norm(t0)},
		}
		require.Equal(t, want, got)
		for i := range want {
			read, err := b.s.GetEvent(b.ctx, got[i].ID)
			require.NoError(t, err)
			require.Equal(t, want[i], read)
		}
		_, err = b.s.GetEvent(b.ctx, 12345)
		require.ErrorIs(t, err, store.ErrNotFound)
	})

	t.Run("InsertPreClaimed", func(t *testing.T) {
		b := h.setup(t)
		pre := event("mine", 1)
		pre.ClaimedBy, pre.ClaimedUntil = "A", ptr(at(time.Minute))
		got, err := b.s.InsertEvents(b.ctx, []store.Event{pre, event("free", 1)})
		require.NoError(t, err)
		require.Equal(t, "A", got[0].ClaimedBy)
		require.Equal(t, 1, got[0].Attempts)
		read, err := b.s.GetEvent(b.ctx, got[0].ID)
		require.NoError(t, err)
		require.Equal(t, normPtr(ptr(at(time.Minute))), read.ClaimedUntil)

		claimed, err := b.s.ClaimEvents(b.ctx, lease("B", t0, 10))
		require.NoError(t, err)
		require.Equal(t, []string{"free"}, eventIDs(claimed), "a pre-claimed event is not claimable before its claim expires")
		claimed, err = b.s.ClaimEvents(b.ctx, lease("B", at(time.Minute), 10))
		require.NoError(t, err)
		require.Equal(t, []string{"mine", "free"}, eventIDs(claimed), "both claims expired")
		require.Equal(t, 2, claimed[0].Attempts)
	})

	t.Run("RetryReleasesTheClaimUntilLater", func(t *testing.T) {
		b := h.setup(t)
		_, err := b.s.InsertEvents(b.ctx, []store.Event{event("e1", 1)})
		require.NoError(t, err)
		got, err := b.s.ClaimEvents(b.ctx, lease("A", t0, 10))
		require.NoError(t, err)
		require.Len(t, got, 1)
		require.NoError(t, b.s.RetryEvent(b.ctx, store.RetryEventParams{ID: got[0].ID, AvailableAt: at(time.Second)}))
		again, err := b.s.ClaimEvents(b.ctx, lease("B", at(time.Millisecond), 10))
		require.NoError(t, err)
		require.Empty(t, again, "not before its new time")
		again, err = b.s.ClaimEvents(b.ctx, lease("B", at(time.Second), 10))
		require.NoError(t, err)
		require.Equal(t, []string{"e1"}, eventIDs(again), "then claimable although A's lease has not expired")
		require.Equal(t, 2, again[0].Attempts)
		require.Zero(t, again[0].CallFailures, "a retry that says no call failed")
		require.NoError(t, b.s.RetryEvent(b.ctx, store.RetryEventParams{ID: got[0].ID, AvailableAt: at(time.Second), Owner: "B", CallFailed: true}))
		again, err = b.s.ClaimEvents(b.ctx, lease("B", at(2*time.Second), 10))
		require.NoError(t, err)
		require.Len(t, again, 1)
		require.Equal(t, 3, again[0].Attempts)
		require.Equal(t, 1, again[0].CallFailures, "a retry after a failed call counts it")

		require.NoError(t, b.s.MarkEventsProcessed(b.ctx, store.MarkEventsProcessedParams{IDs: []int64{got[0].ID}, ProcessedAt: at(2 * time.Second)}))
		require.NoError(t, b.s.RetryEvent(b.ctx, store.RetryEventParams{ID: got[0].ID, AvailableAt: at(3 * time.Second)}))
		read, err := b.s.GetEvent(b.ctx, got[0].ID)
		require.NoError(t, err)
		require.Equal(t, norm(at(time.Second)), read.AvailableAt, "a processed event is left alone")
		require.NoError(t, b.s.RetryEvent(b.ctx, store.RetryEventParams{ID: 987654, AvailableAt: at(time.Second)}))
	})

	t.Run("DuplicateEventIDInsertsNothing", func(t *testing.T) {
		b := h.setup(t)
		first, err := b.s.InsertEvents(b.ctx, []store.Event{event("e1", 1)})
		require.NoError(t, err)

		_, err = b.s.InsertEvents(b.ctx, []store.Event{event("e2", 1), event("e1", 1), event("e3", 1)})
		require.ErrorIs(t, err, store.ErrDuplicate)
		_, err = b.s.InsertEvents(b.ctx, []store.Event{event("e4", 1), event("e4", 1)})
		require.ErrorIs(t, err, store.ErrDuplicate, "duplicate within one batch")
		sameID := event("e5", 1)
		sameID.ID = first[0].ID
		_, err = b.s.InsertEvents(b.ctx, []store.Event{event("e6", 1), sameID})
		require.ErrorIs(t, err, store.ErrDuplicate, "an ID stored before")
		for _, id := range []int64{0, -3} {
			noID := event("e7", 1)
			noID.ID = id
			_, err = b.s.InsertEvents(b.ctx, []store.Event{event("e8", 1), noID})
			require.Error(t, err, "an event needs its producer's ID")
		}

		got, err := b.s.ClaimEvents(b.ctx, lease("o", t0, 100))
		require.NoError(t, err)
		require.Equal(t, []string{"e1"}, eventIDs(got))
	})

	t.Run("DuplicateLargeBatchInsertsNothing", func(t *testing.T) {
		b := h.setup(t)
		batch := make([]store.Event, 1200)
		for i := range batch {
			batch[i] = event(fmt.Sprintf("e%d", i), 1)
		}
		batch[len(batch)-1].EventID = "e0"
		_, err := b.s.InsertEvents(b.ctx, batch)
		require.ErrorIs(t, err, store.ErrDuplicate)
		got, err := b.s.ClaimEvents(b.ctx, lease("o", t0, 10))
		require.NoError(t, err)
		require.Empty(t, got)
	})

	t.Run("DuplicateInsideTxLeavesTxUsable", func(t *testing.T) {
		// A producer inside a transaction may treat ErrDuplicate as "already
		// written" and carry on; the failed batch leaves nothing behind.
		b := h.setup(t)
		_, err := b.s.InsertEvents(b.ctx, []store.Event{event("e1", 1)})
		require.NoError(t, err)
		err = b.s.InTx(b.ctx, func(ctx context.Context, tx store.Tx) error {
			_, err := tx.InsertEvents(ctx, []store.Event{event("e2", 1), event("e1", 1)})
			require.ErrorIs(t, err, store.ErrDuplicate)
			_, err = tx.InsertEvents(ctx, []store.Event{event("e3", 1)})
			return err
		})
		require.NoError(t, err)
		got, err := b.s.ClaimEvents(b.ctx, lease("o", t0, 100))
		require.NoError(t, err)
		require.Equal(t, []string{"e1", "e3"}, eventIDs(got))
	})

	t.Run("ClaimLeaseAndProcessing", func(t *testing.T) {
		b := h.setup(t)
		in := []store.Event{event("e1", 1), event("e2", 1), event("e3", 2), event("e4", 2), event("e5", 3), event("later", 3)}
		in[5].AvailableAt = at(time.Hour)
		_, err := b.s.InsertEvents(b.ctx, in)
		require.NoError(t, err)

		// A claims the first three, in ID order, with the claim recorded.
		a, err := b.s.ClaimEvents(b.ctx, store.ClaimEventsParams{Owner: "A", Now: t0, LeaseUntil: at(time.Minute), Limit: 3})
		require.NoError(t, err)
		require.Equal(t, []string{"e1", "e2", "e3"}, eventIDs(a))
		for _, e := range a {
			require.Equal(t, "A", e.ClaimedBy)
			require.Equal(t, normPtr(ptr(at(time.Minute))), e.ClaimedUntil)
			require.Equal(t, 1, e.Attempts)
			require.Nil(t, e.ProcessedAt)
			read, err := b.s.GetEvent(b.ctx, e.ID)
			require.NoError(t, err)
			require.Equal(t, e, read, "the returned claim is what is stored")
		}

		// B gets the rest that is available, not A's nor the later one.
		bb, err := b.s.ClaimEvents(b.ctx, store.ClaimEventsParams{Owner: "B", Now: at(time.Second), LeaseUntil: at(time.Minute), Limit: 10})
		require.NoError(t, err)
		require.Equal(t, []string{"e4", "e5"}, eventIDs(bb))

		// Nothing is left while the leases run, not even for their owner.
		for _, owner := range []string{"A", "B", "C"} {
			got, err := b.s.ClaimEvents(b.ctx, lease(owner, at(59*time.Second), 10))
			require.NoError(t, err)
			require.Empty(t, got, owner)
		}

		// A processes e1 and e2; e3's lease expires (ClaimedUntil == Now
		// is expired) and C takes it over together with B's.
		require.NoError(t, b.s.MarkEventsProcessed(b.ctx, store.MarkEventsProcessedParams{IDs: []int64{a[0].ID, a[1].ID}, ProcessedAt: at(30 * time.Second)}))
		c, err := b.s.ClaimEvents(b.ctx, lease("C", at(time.Minute), 10))
		require.NoError(t, err)
		require.Equal(t, []string{"e3", "e4", "e5"}, eventIDs(c))
		for _, e := range c {
			require.Equal(t, 2, e.Attempts)
			require.Equal(t, "C", e.ClaimedBy)
		}

		// Processed events are never claimed again; the later one is due.
		got, err := b.s.ClaimEvents(b.ctx, lease("D", at(2*time.Hour), 10))
		require.NoError(t, err)
		require.Equal(t, []string{"e3", "e4", "e5", "later"}, eventIDs(got))
		processed, err := b.s.GetEvent(b.ctx, a[0].ID)
		require.NoError(t, err)
		require.Equal(t, normPtr(ptr(at(30*time.Second))), processed.ProcessedAt)
		require.Equal(t, "A", processed.ClaimedBy, "the claim stays on record")
	})

	t.Run("ClaimAvailableAtBoundary", func(t *testing.T) {
		// Microsecond steps and whole seconds must order correctly on every
		// dialect (SQLite compares timestamps as text).
		b := h.setup(t)
		whole := time.Date(2026, 3, 14, 15, 9, 26, 0, time.UTC)
		in := []store.Event{event("whole", 1), event("plus1us", 1), event("plus1500ns", 1)}
		in[0].AvailableAt = whole
		in[1].AvailableAt = whole.Add(time.Microsecond)
		in[2].AvailableAt = whole.Add(1500 * time.Nanosecond) // stored as whole + 1µs
		_, err := b.s.InsertEvents(b.ctx, in)
		require.NoError(t, err)

		got, err := b.s.ClaimEvents(b.ctx, lease("o", whole.Add(-time.Microsecond), 10))
		require.NoError(t, err)
		require.Empty(t, got)
		got, err = b.s.ClaimEvents(b.ctx, lease("o", whole, 10))
		require.NoError(t, err)
		require.Equal(t, []string{"whole"}, eventIDs(got), "AvailableAt == Now is available")
		got, err = b.s.ClaimEvents(b.ctx, lease("o", whole.Add(time.Microsecond), 10))
		require.NoError(t, err)
		require.Equal(t, []string{"plus1us", "plus1500ns"}, eventIDs(got))
	})

	t.Run("ClaimLimitAndOrder", func(t *testing.T) {
		b := h.setup(t)
		in := make([]store.Event, 10)
		for i := range in {
			in[i] = event(fmt.Sprintf("e%02d", i), int64(i%3))
			// Availability order differs from ID order; claims follow IDs.
			in[i].AvailableAt = at(-time.Duration(i) * time.Second)
		}
		inserted, err := b.s.InsertEvents(b.ctx, in)
		require.NoError(t, err)
		var claimed []int64
		for _, want := range []int{4, 4, 2, 0} {
			got, err := b.s.ClaimEvents(b.ctx, lease("o", t0, 4))
			require.NoError(t, err)
			require.Len(t, got, want)
			claimed = append(claimed, ids(got, func(e store.Event) int64 { return e.ID })...)
		}
		require.Equal(t, ids(inserted, func(e store.Event) int64 { return e.ID }), claimed)
	})

	t.Run("ClaimPools", func(t *testing.T) {
		b := h.setup(t)
		in := []store.Event{event("n1", 1), event("c1", 1), event("n2", 1), event("c2", 1)}
		in[1].Critical, in[3].Critical = true, true
		_, err := b.s.InsertEvents(b.ctx, in)
		require.NoError(t, err)

		claim := func(owner string, pool store.EventPool, now time.Time) []string {
			t.Helper()
			p := lease(owner, now, 10)
			p.Pool = pool
			got, err := b.s.ClaimEvents(b.ctx, p)
			require.NoError(t, err)
			return eventIDs(got)
		}
		require.Equal(t, []string{"c1", "c2"}, claim("critical", store.CriticalPool, t0))
		require.Equal(t, []string{"n1", "n2"}, claim("normal", store.NormalPool, t0))
		require.Empty(t, claim("any", store.AnyPool, t0))
		require.Equal(t, []string{"n1", "c1", "n2", "c2"}, claim("any", store.AnyPool, at(time.Hour)))
	})

	t.Run("ClaimInvalidParams", func(t *testing.T) {
		b := h.setup(t)
		_, err := b.s.InsertEvents(b.ctx, []store.Event{event("e1", 1)})
		require.NoError(t, err)
		for name, p := range map[string]store.ClaimEventsParams{
			"no owner":      {Now: t0, LeaseUntil: at(time.Minute), Limit: 1},
			"zero limit":    {Owner: "o", Now: t0, LeaseUntil: at(time.Minute)},
			"lease not>now": {Owner: "o", Now: t0, LeaseUntil: t0, Limit: 1},
			"zero now":      {Owner: "o", LeaseUntil: t0, Limit: 1},
		} {
			_, err := b.s.ClaimEvents(b.ctx, p)
			require.Error(t, err, name)
		}
		got, err := b.s.ClaimEvents(b.ctx, lease("o", t0, 1))
		require.NoError(t, err)
		require.Len(t, got, 1, "the invalid calls claimed nothing")
		require.Equal(t, 1, got[0].Attempts)
	})

	t.Run("MarkProcessedIdempotent", func(t *testing.T) {
		b := h.setup(t)
		evs, err := b.s.InsertEvents(b.ctx, []store.Event{event("e1", 1), event("e2", 1)})
		require.NoError(t, err)
		mark := func(when time.Time, ids ...int64) {
			t.Helper()
			require.NoError(t, b.s.MarkEventsProcessed(b.ctx, store.MarkEventsProcessedParams{IDs: ids, ProcessedAt: when}))
		}
		// Unclaimed events can be marked too (an event handled inline).
		mark(at(time.Second), evs[0].ID, 12345)
		mark(at(time.Hour), evs[0].ID)
		mark(at(time.Hour))
		got, err := b.s.GetEvent(b.ctx, evs[0].ID)
		require.NoError(t, err)
		require.Equal(t, normPtr(ptr(at(time.Second))), got.ProcessedAt, "the first marking stands")
		got, err = b.s.GetEvent(b.ctx, evs[1].ID)
		require.NoError(t, err)
		require.Nil(t, got.ProcessedAt)
	})

	t.Run("ConcurrentClaimsExactlyOnce", func(t *testing.T) {
		// Several claimants drain one outbox in parallel: every event is
		// claimed exactly once. On MySQL this exercises SKIP LOCKED; on
		// SQLite the claims are serialised by the database's write lock.
		b := h.setup(t)
		const total, workers, limit = 200, 4, 7
		in := make([]store.Event, total)
		for i := range in {
			in[i] = event(fmt.Sprintf("e%03d", i), int64(i%10))
			in[i].Critical = i%5 == 0
		}
		_, err := b.s.InsertEvents(b.ctx, in)
		require.NoError(t, err)

		claimed := make([][]string, workers)
		errs := make([]error, workers)
		var wg sync.WaitGroup
		for w := range workers {
			wg.Go(func() {
				// Stop at the first empty claim: with SKIP LOCKED an empty
				// answer can also mean "all locked by the others", but the
				// claimant that holds them goes on until it finds none.
				for range total {
					got, err := b.s.ClaimEvents(b.ctx, store.ClaimEventsParams{
						Owner: fmt.Sprintf("w%d", w), Now: t0, LeaseUntil: at(time.Hour), Limit: limit,
					})
					if err != nil {
						errs[w] = err
						return
					}
					if len(got) == 0 {
						return
					}
					claimed[w] = append(claimed[w], eventIDs(got)...)
				}
			})
		}
		wg.Wait()
		require.NoError(t, errors.Join(errs...))
		var all []string
		for _, c := range claimed {
			all = append(all, c...)
		}
		require.ElementsMatch(t, eventIDs(in), all, "every event exactly once")

		left, err := b.s.ClaimEvents(b.ctx, lease("late", t0, total))
		require.NoError(t, err)
		require.Empty(t, left)
	})

	t.Run("SkipLocked", func(t *testing.T) {
		// With SKIP LOCKED a claimant does not wait for another's open
		// claim transaction: it gets the events that transaction has not
		// locked. Without it (SQLite) the second claim would queue behind
		// the first transaction, which is what a single writer means.
		b := h.setup(t)
		if !b.s.Capabilities().SupportsSkipLocked {
			t.Skipf("%s serialises claims; nothing to skip", b.s.Capabilities().Dialect)
		}
		_, err := b.s.InsertEvents(b.ctx, []store.Event{event("e1", 1), event("e2", 1), event("e3", 1), event("e4", 1)})
		require.NoError(t, err)

		ctx, cancel := context.WithTimeout(b.ctx, 20*time.Second)
		defer cancel()
		var outer, inner []store.Event
		err = b.s.InTx(ctx, func(ctx context.Context, tx store.Tx) error {
			var err error
			if outer, err = tx.ClaimEvents(ctx, lease("outer", t0, 2)); err != nil {
				return err
			}
			// The outer claim is not committed yet; its rows are locked.
			inner, err = b.s.ClaimEvents(ctx, lease("inner", t0, 10))
			return err
		})
		require.NoError(t, err)
		require.Equal(t, []string{"e1", "e2"}, eventIDs(outer))
		require.Equal(t, []string{"e3", "e4"}, eventIDs(inner))
	})
}
