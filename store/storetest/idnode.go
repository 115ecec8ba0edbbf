package storetest

import (
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/goxpdl/goxpdl/store"
)

func (h *harness) testIDNodes(t *testing.T) {
	acquire := func(owner string, now time.Time, numbers int) store.AcquireIDNodeParams {
		return store.AcquireIDNodeParams{Owner: owner, Now: now, LeaseUntil: now.Add(30 * time.Second), Numbers: numbers, Reserve: time.Minute}
	}

	t.Run("AcquireRenewRelease", func(t *testing.T) {
		b := h.setup(t)
		n, from, err := b.s.AcquireIDNode(b.ctx, acquire("A", t0, 4))
		require.NoError(t, err)
		require.Equal(t, store.IDNode{Number: 0, Owner: "A", LeaseUntil: norm(at(30 * time.Second)), ReservedUntil: norm(at(time.Minute))}, n)
		require.Equal(t, norm(t0), from)
		m, _, err := b.s.AcquireIDNode(b.ctx, acquire("B", t0, 4))
		require.NoError(t, err)
		require.Equal(t, 1, m.Number, "A holds 0")

		require.NoError(t, b.s.RenewIDNode(b.ctx, store.RenewIDNodeParams{Number: 0, Owner: "A", LeaseUntil: at(40 * time.Second), ReservedUntil: at(2 * time.Minute)}))
		require.NoError(t, b.s.RenewIDNode(b.ctx, store.RenewIDNodeParams{Number: 0, Owner: "A", LeaseUntil: at(40 * time.Second), ReservedUntil: at(time.Second)}),
			"a renewal that changes nothing, or moves the reservation back, still holds the lease")
		err = b.s.RenewIDNode(b.ctx, store.RenewIDNodeParams{Number: 0, Owner: "B", LeaseUntil: at(time.Hour), ReservedUntil: at(time.Hour)})
		require.ErrorIs(t, err, store.ErrLeaseLost, "B does not hold 0")
		err = b.s.RenewIDNode(b.ctx, store.RenewIDNodeParams{Number: 3, Owner: "A", LeaseUntil: at(time.Hour), ReservedUntil: at(time.Hour)})
		require.ErrorIs(t, err, store.ErrLeaseLost, "no one ever held 3")

		// A releases 0 at 10s; its reservation, kept at 2 min (not moved
		// back to 5s), is where the next holder's ids start.
		require.NoError(t, b.s.ReleaseIDNode(b.ctx, store.ReleaseIDNodeParams{Number: 0, Owner: "A", Now: at(10 * time.Second), ReservedUntil: at(5 * time.Second)}))
		require.NoError(t, b.s.ReleaseIDNode(b.ctx, store.ReleaseIDNodeParams{Number: 0, Owner: "A", Now: at(11 * time.Second)}), "releasing twice does nothing")
		err = b.s.RenewIDNode(b.ctx, store.RenewIDNodeParams{Number: 0, Owner: "A", LeaseUntil: at(time.Hour), ReservedUntil: at(time.Hour)})
		require.ErrorIs(t, err, store.ErrLeaseLost, "released")

		// At 20s: 0 is free but reserved until 2 min, 2 and 3 were never
		// used: C gets 2 and starts now.
		c, from, err := b.s.AcquireIDNode(b.ctx, acquire("C", at(20*time.Second), 4))
		require.NoError(t, err)
		require.Equal(t, 2, c.Number)
		require.Equal(t, norm(at(20*time.Second)), from)
		d, _, err := b.s.AcquireIDNode(b.ctx, acquire("D", at(20*time.Second), 4))
		require.NoError(t, err)
		require.Equal(t, 3, d.Number)
		// Only 0 is free now: E takes it and starts where A's
		// reservation ends.
		e, from, err := b.s.AcquireIDNode(b.ctx, acquire("E", at(20*time.Second), 4))
		require.NoError(t, err)
		require.Equal(t, store.IDNode{Number: 0, Owner: "E", LeaseUntil: norm(at(50 * time.Second)), ReservedUntil: norm(at(3 * time.Minute))}, e)
		require.Equal(t, norm(at(2*time.Minute)), from)

		_, _, err = b.s.AcquireIDNode(b.ctx, acquire("F", at(20*time.Second), 4))
		require.ErrorIs(t, err, store.ErrExhausted)
	})

	t.Run("ExpiredLeaseIsTakenOver", func(t *testing.T) {
		b := h.setup(t)
		_, _, err := b.s.AcquireIDNode(b.ctx, acquire("A", t0, 1))
		require.NoError(t, err)
		_, _, err = b.s.AcquireIDNode(b.ctx, acquire("B", at(29*time.Second), 1))
		require.ErrorIs(t, err, store.ErrExhausted, "A's lease runs until 30s")
		// A died: at 30s its number is free; B starts past A's
		// reservation (1 min), not at now.
		n, from, err := b.s.AcquireIDNode(b.ctx, acquire("B", at(30*time.Second), 1))
		require.NoError(t, err)
		require.Equal(t, "B", n.Owner)
		require.Equal(t, norm(at(time.Minute)), from)
		require.Equal(t, norm(at(2*time.Minute)), n.ReservedUntil)
		err = b.s.RenewIDNode(b.ctx, store.RenewIDNodeParams{Number: 0, Owner: "A", LeaseUntil: at(time.Hour), ReservedUntil: at(time.Hour)})
		require.ErrorIs(t, err, store.ErrLeaseLost, "A, back from a pause, learns it lost its number")
		require.NoError(t, b.s.ReleaseIDNode(b.ctx, store.ReleaseIDNodeParams{Number: 0, Owner: "A", Now: at(time.Hour), ReservedUntil: at(time.Hour)}),
			"A's release leaves B's lease alone")
		require.NoError(t, b.s.RenewIDNode(b.ctx, store.RenewIDNodeParams{Number: 0, Owner: "B", LeaseUntil: at(time.Minute), ReservedUntil: at(time.Minute)}))
	})

	t.Run("ConcurrentAcquirersGetDistinctNumbers", func(t *testing.T) {
		b := h.setup(t)
		const n = 8
		got := make([]int, n)
		var wg sync.WaitGroup
		for i := range n {
			wg.Go(func() {
				owner := string(rune('a' + i))
				for {
					node, _, err := b.s.AcquireIDNode(b.ctx, acquire(owner, t0, n))
					if isRace(err) {
						continue // lost a race for a number: try again, as idgen does
					}
					require.NoError(t, err)
					got[i] = node.Number
					return
				}
			})
		}
		wg.Wait()
		seen := map[int]bool{}
		for _, g := range got {
			require.False(t, seen[g], "number %d handed out twice: %v", g, got)
			seen[g] = true
		}
	})

	t.Run("BadParams", func(t *testing.T) {
		b := h.setup(t)
		for name, p := range map[string]store.AcquireIDNodeParams{
			"no owner":   {Now: t0, LeaseUntil: at(time.Second), Numbers: 1, Reserve: time.Second},
			"no numbers": {Owner: "A", Now: t0, LeaseUntil: at(time.Second), Reserve: time.Second},
			"no reserve": {Owner: "A", Now: t0, LeaseUntil: at(time.Second), Numbers: 1},
			"no lease":   {Owner: "A", Now: t0, LeaseUntil: t0, Numbers: 1, Reserve: time.Second},
		} {
			_, _, err := b.s.AcquireIDNode(b.ctx, p)
			require.Error(t, err, name)
		}
		n, _, err := b.s.AcquireIDNode(b.ctx, acquire("A", t0, 1))
		require.NoError(t, err, "the refused calls took nothing")
		require.Equal(t, 0, n.Number)
	})
}

// isRace reports an error that means another caller won a race for the
// same row: the caller tries again.
func isRace(err error) bool {
	return errors.Is(err, store.ErrConflict) || errors.Is(err, store.ErrDuplicate)
}
