package storetest

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/goxpdl/goxpdl/store"
)

func (h *harness) testNodes(t *testing.T) {
	register := func(id, owner string, now time.Time) store.RegisterNodeParams {
		return store.RegisterNodeParams{ID: id, Owner: owner, Host: "h", PID: 7, Now: now, LeaseUntil: now.Add(5 * time.Second)}
	}

	t.Run("RegisterTakeOverRenewRemove", func(t *testing.T) {
		b := h.setup(t)
		n, replaced, err := b.s.RegisterNode(b.ctx, register("n1", "n1#a", t0))
		require.NoError(t, err)
		require.Empty(t, replaced)
		require.Equal(t, store.Node{ID: "n1", Owner: "n1#a", Epoch: 1, Host: "h", PID: 7,
			StartedAt: norm(t0), HeartbeatAt: norm(t0), LeaseUntil: norm(at(5 * time.Second))}, n)

		require.NoError(t, b.s.RenewNode(b.ctx, store.RenewNodeParams{ID: "n1", Owner: "n1#a", Now: at(time.Second), LeaseUntil: at(6 * time.Second)}))
		require.NoError(t, b.s.RenewNode(b.ctx, store.RenewNodeParams{ID: "n1", Owner: "n1#a", Now: at(time.Second), LeaseUntil: at(6 * time.Second)}),
			"a renewal that changes nothing still holds the lease")

		// The node restarts: its new run takes the row over and fences the old one.
		n, replaced, err = b.s.RegisterNode(b.ctx, register("n1", "n1#b", at(2*time.Second)))
		require.NoError(t, err)
		require.Equal(t, "n1#a", replaced)
		require.Equal(t, int64(2), n.Epoch)
		err = b.s.RenewNode(b.ctx, store.RenewNodeParams{ID: "n1", Owner: "n1#a", Now: at(3 * time.Second), LeaseUntil: at(8 * time.Second)})
		require.ErrorIs(t, err, store.ErrLeaseLost)

		_, _, err = b.s.RegisterNode(b.ctx, register("n2", "n2#a", t0))
		require.NoError(t, err)
		nodes, err := b.s.ListNodes(b.ctx)
		require.NoError(t, err)
		require.Len(t, nodes, 2)
		require.Equal(t, "n1#b", nodes[0].Owner)
		require.Equal(t, "n2", nodes[1].ID)

		gone, err := b.s.RemoveNode(b.ctx, store.RemoveNodeParams{ID: "n2", Owner: "n2#a", ExpiredBy: at(time.Second)})
		require.NoError(t, err)
		require.False(t, gone, "its lease runs until 5s")
		gone, err = b.s.RemoveNode(b.ctx, store.RemoveNodeParams{ID: "n2", Owner: "other", ExpiredBy: at(time.Hour)})
		require.NoError(t, err)
		require.False(t, gone, "another owner's row")
		gone, err = b.s.RemoveNode(b.ctx, store.RemoveNodeParams{ID: "n2", Owner: "n2#a", ExpiredBy: at(time.Hour)})
		require.NoError(t, err)
		require.True(t, gone)
		err = b.s.RenewNode(b.ctx, store.RenewNodeParams{ID: "n2", Owner: "n2#a", Now: at(time.Hour), LeaseUntil: at(2 * time.Hour)})
		require.ErrorIs(t, err, store.ErrLeaseLost, "a removed node has lost its lease")
	})

	t.Run("ReleasedClaimsFenceTheirOwner", func(t *testing.T) {
		b := h.setup(t)
		_, err := b.s.InsertEvents(b.ctx, []store.Event{event("e1", 1), event("e2", 2), event("e3", 3)})
		require.NoError(t, err)
		claimed, err := b.s.ClaimEvents(b.ctx, store.ClaimEventsParams{Owner: "A", Now: t0, LeaseUntil: at(time.Minute), Limit: 2})
		require.NoError(t, err)
		require.Len(t, claimed, 2)

		// A marks its first event: it holds the claim.
		require.NoError(t, b.s.MarkEventsProcessed(b.ctx, store.MarkEventsProcessedParams{IDs: []int64{claimed[0].ID}, ProcessedAt: t0, Owner: "A"}))
		// A is declared dead: its other claim goes back to the pool.
		n, err := b.s.ReleaseClaims(b.ctx, "A")
		require.NoError(t, err)
		require.Equal(t, int64(1), n, "the processed event is not released")
		err = b.s.MarkEventsProcessed(b.ctx, store.MarkEventsProcessedParams{IDs: []int64{claimed[1].ID}, ProcessedAt: t0, Owner: "A"})
		require.ErrorIs(t, err, store.ErrLeaseLost, "A can no longer commit the event")
		// B claims it at once, not after A's lease.
		taken, err := b.s.ClaimEvents(b.ctx, store.ClaimEventsParams{Owner: "B", Now: at(time.Second), LeaseUntil: at(time.Minute), Limit: 10})
		require.NoError(t, err)
		require.Equal(t, []string{"e2", "e3"}, eventIDs(taken))
		// A late retry of A's leaves B's claim alone.
		require.NoError(t, b.s.RetryEvent(b.ctx, store.RetryEventParams{ID: claimed[1].ID, AvailableAt: at(time.Hour), Owner: "A"}))
		require.NoError(t, b.s.MarkEventsProcessed(b.ctx, store.MarkEventsProcessedParams{IDs: []int64{claimed[1].ID}, ProcessedAt: at(time.Second), Owner: "B"}))
		available, later, err := b.s.CountUnprocessedEvents(b.ctx, at(time.Second))
		require.NoError(t, err)
		require.Equal(t, [2]int64{1, 0}, [2]int64{available, later}, "e3 is left")
		require.NoError(t, b.s.RetryEvent(b.ctx, store.RetryEventParams{ID: taken[1].ID, AvailableAt: at(time.Hour), Owner: "B"}))
		available, later, err = b.s.CountUnprocessedEvents(b.ctx, at(time.Second))
		require.NoError(t, err)
		require.Equal(t, [2]int64{0, 1}, [2]int64{available, later}, "e3 waits for its retry")
		next, ok, err := b.s.NextEventAvailable(b.ctx, at(time.Second))
		require.NoError(t, err)
		require.True(t, ok)
		require.True(t, next.Equal(at(time.Hour).Truncate(time.Microsecond)), "e3 is available again at its retry (to the store's microsecond): %v", next)
		_, ok, err = b.s.NextEventAvailable(b.ctx, at(time.Hour))
		require.NoError(t, err)
		require.False(t, ok, "nothing waits beyond the last retry")
		// Marking an event already processed, with an owner, is lost too.
		err = b.s.MarkEventsProcessed(b.ctx, store.MarkEventsProcessedParams{IDs: []int64{claimed[1].ID}, ProcessedAt: at(time.Second), Owner: "B"})
		require.ErrorIs(t, err, store.ErrLeaseLost)
	})

	t.Run("ReleaseClaimReleasesOneClaimCall", func(t *testing.T) {
		b := h.setup(t)
		_, err := b.s.InsertEvents(b.ctx, []store.Event{event("e1", 1), event("e2", 2), event("e3", 3), event("e4", 4)})
		require.NoError(t, err)
		first, err := b.s.ClaimEvents(b.ctx, store.ClaimEventsParams{Owner: "A", Now: t0, LeaseUntil: at(time.Minute), Limit: 2})
		require.NoError(t, err)
		require.Len(t, first, 2)
		// A second call of A's, whose outcome A could not know.
		unsure := at(time.Minute + time.Microsecond)
		second, err := b.s.ClaimEvents(b.ctx, store.ClaimEventsParams{Owner: "A", Now: t0, LeaseUntil: unsure, Limit: 1})
		require.NoError(t, err)
		require.Equal(t, []string{"e3"}, eventIDs(second))
		_, err = b.s.ClaimEvents(b.ctx, store.ClaimEventsParams{Owner: "B", Now: t0, LeaseUntil: unsure, Limit: 1})
		require.NoError(t, err)
		require.NoError(t, b.s.MarkEventsProcessed(b.ctx, store.MarkEventsProcessedParams{IDs: []int64{first[0].ID}, ProcessedAt: t0, Owner: "A"}))

		n, err := b.s.ReleaseClaim(b.ctx, "A", unsure)
		require.NoError(t, err)
		require.Equal(t, int64(1), n, "only the claims of that call: not A's other claims, not B's with the same lease")
		err = b.s.MarkEventsProcessed(b.ctx, store.MarkEventsProcessedParams{IDs: []int64{second[0].ID}, ProcessedAt: t0, Owner: "A"})
		require.ErrorIs(t, err, store.ErrLeaseLost, "A no longer holds it")
		again, err := b.s.ClaimEvents(b.ctx, store.ClaimEventsParams{Owner: "A", Now: t0, LeaseUntil: at(2 * time.Minute), Limit: 10})
		require.NoError(t, err)
		require.Equal(t, []string{"e3"}, eventIDs(again), "claimable at once")
		n, err = b.s.ReleaseClaim(b.ctx, "A", at(time.Minute))
		require.NoError(t, err)
		require.Equal(t, int64(1), n, "e2: e1 is processed")
		_, err = b.s.ReleaseClaim(b.ctx, "", unsure)
		require.Error(t, err, "an empty owner")
	})
}
