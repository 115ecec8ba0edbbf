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

// publication returns an unstored publication of instance pi at version
// v, seq n, with a fresh ID.
func publication(pi, v int64, n int) store.Publication {
	return store.Publication{
		ID: nextID(), ProcessInstanceID: pi, Version: v, Seq: n, Type: "activity.completed", ProcessDefID: "main",
		Payload: fmt.Appendf(nil, `{"instance":%d,"v":%d,"n":%d}`, pi, v, n), CreatedAt: at(time.Duration(v) * time.Second),
	}
}

// order lists publications as instance/version/seq.
func order(pubs []store.Publication) []string {
	out := make([]string, len(pubs))
	for i, p := range pubs {
		out[i] = fmt.Sprintf("%d/%d/%d", p.ProcessInstanceID, p.Version, p.Seq)
	}
	return out
}

func pubIDs(pubs []store.Publication) []int64 {
	out := make([]int64, len(pubs))
	for i, p := range pubs {
		out[i] = p.ID
	}
	return out
}

func (h *harness) testPublications(t *testing.T) {
	const lease = "publisher"
	acquire := func(owner string, now time.Time) store.AcquireLeaseParams {
		return store.AcquireLeaseParams{Name: lease, Owner: owner, Now: now, Until: now.Add(30 * time.Second)}
	}

	t.Run("InOrderPerInstance", func(t *testing.T) {
		b := h.setup(t)
		// Instance 7's second step got the smaller IDs (another node's
		// clock behind): its version still puts it second.
		late := []store.Publication{publication(7, 3, 0), publication(7, 3, 1)}
		first := []store.Publication{publication(7, 2, 0), publication(9, 1, 0), publication(7, 2, 1), publication(9, 2, 0)}
		require.NoError(t, b.s.InsertPublications(b.ctx, late))
		require.NoError(t, b.s.InsertPublications(b.ctx, first))
		require.NoError(t, b.s.InsertPublications(b.ctx, nil))

		got, err := b.s.ListPublications(b.ctx, store.ListPublicationsParams{Limit: 100})
		require.NoError(t, err)
		require.Equal(t, []string{"7/2/0", "7/2/1", "7/3/0", "7/3/1", "9/1/0", "9/2/0"}, order(got))
		want := first[0]
		want.CreatedAt = norm(want.CreatedAt)
		require.Equal(t, want, got[0], "stored as given")

		// A limit cuts the batch at a prefix of each instance.
		got, err = b.s.ListPublications(b.ctx, store.ListPublicationsParams{Limit: 3})
		require.NoError(t, err)
		require.Equal(t, []string{"7/2/0", "7/2/1", "7/3/0"}, order(got))

		backlog, err := b.s.CountPublications(b.ctx, 0)
		require.NoError(t, err)
		require.Equal(t, store.PublicationBacklog{Count: 6, Oldest: norm(late[0].CreatedAt)}, backlog, "oldest by ID")
		backlog, err = b.s.CountPublications(b.ctx, 4)
		require.NoError(t, err)
		require.EqualValues(t, 4, backlog.Count, "stops at the limit")

		_, err = b.s.AcquireLease(b.ctx, acquire("A", t0))
		require.NoError(t, err)
		require.NoError(t, b.s.DeletePublications(b.ctx, store.DeletePublicationsParams{
			IDs: append(pubIDs(got), 424242), Lease: lease, Owner: "A", Now: at(time.Second),
		}), "an ID that is gone is left out")
		got, err = b.s.ListPublications(b.ctx, store.ListPublicationsParams{Limit: 100})
		require.NoError(t, err)
		require.Equal(t, []string{"7/3/1", "9/1/0", "9/2/0"}, order(got))
	})

	t.Run("OldestInstancesFirst", func(t *testing.T) {
		b := h.setup(t)
		for pi := int64(1); pi <= 5; pi++ {
			require.NoError(t, b.s.InsertPublications(b.ctx, []store.Publication{publication(10-pi, 1, 0)}))
		}
		got, err := b.s.ListPublications(b.ctx, store.ListPublicationsParams{Limit: 2})
		require.NoError(t, err)
		require.Equal(t, []string{"8/1/0", "9/1/0"}, order(got), "the two oldest, in instance order")
	})

	t.Run("Duplicates", func(t *testing.T) {
		b := h.setup(t)
		p := publication(1, 1, 0)
		require.NoError(t, b.s.InsertPublications(b.ctx, []store.Publication{p}))
		again := publication(1, 2, 0)
		again.ID = p.ID
		require.ErrorIs(t, b.s.InsertPublications(b.ctx, []store.Publication{publication(1, 3, 0), again}), store.ErrDuplicate, "an ID stored before")
		require.ErrorIs(t, b.s.InsertPublications(b.ctx, []store.Publication{publication(1, 1, 0)}), store.ErrDuplicate,
			"two records in one place of an instance's order")
		for _, id := range []int64{0, -1} {
			bad := publication(1, 4, 0)
			bad.ID = id
			require.Error(t, b.s.InsertPublications(b.ctx, []store.Publication{bad}), "a publication needs its caller's ID")
		}
		noTime := publication(1, 5, 0)
		noTime.CreatedAt = time.Time{}
		require.Error(t, b.s.InsertPublications(b.ctx, []store.Publication{noTime}))

		// In a transaction that rolls back, nothing stays.
		boom := errors.New("boom")
		err := b.s.InTx(b.ctx, func(ctx context.Context, tx store.Tx) error {
			require.NoError(t, tx.InsertPublications(ctx, []store.Publication{publication(2, 1, 0), publication(2, 1, 1)}))
			return boom
		})
		require.ErrorIs(t, err, boom)
		got, err := b.s.ListPublications(b.ctx, store.ListPublicationsParams{Limit: 10})
		require.NoError(t, err)
		require.Equal(t, []string{"1/1/0"}, order(got))
		_, err = b.s.ListPublications(b.ctx, store.ListPublicationsParams{})
		require.Error(t, err, "a limit is required")
	})

	t.Run("DeleteIsFencedByTheLease", func(t *testing.T) {
		b := h.setup(t)
		p := publication(1, 1, 0)
		require.NoError(t, b.s.InsertPublications(b.ctx, []store.Publication{p}))
		del := func(owner string, now time.Time) error {
			return b.s.DeletePublications(b.ctx, store.DeletePublicationsParams{IDs: []int64{p.ID}, Lease: lease, Owner: owner, Now: now})
		}
		require.ErrorIs(t, del("A", t0), store.ErrLeaseLost, "nobody holds the lease yet")
		_, err := b.s.AcquireLease(b.ctx, acquire("A", t0))
		require.NoError(t, err)
		require.ErrorIs(t, del("B", t0), store.ErrLeaseLost, "A holds it")
		require.ErrorIs(t, del("A", at(30*time.Second)), store.ErrLeaseLost, "A's lease ran out")
		n, err := b.s.CountPublications(b.ctx, 0)
		require.NoError(t, err)
		require.EqualValues(t, 1, n.Count, "nothing was deleted")
		require.NoError(t, del("A", at(29*time.Second)))
		n, err = b.s.CountPublications(b.ctx, 0)
		require.NoError(t, err)
		require.Equal(t, store.PublicationBacklog{}, n)
		require.Error(t, b.s.DeletePublications(b.ctx, store.DeletePublicationsParams{IDs: []int64{1}, Lease: lease, Now: t0}), "an owner is required")
	})

	t.Run("Leases", func(t *testing.T) {
		b := h.setup(t)
		l, err := b.s.AcquireLease(b.ctx, acquire("A", t0))
		require.NoError(t, err)
		require.Equal(t, store.Lease{Name: lease, Owner: "A", Until: norm(at(30 * time.Second))}, l)
		l, err = b.s.AcquireLease(b.ctx, acquire("B", at(10*time.Second)))
		require.ErrorIs(t, err, store.ErrLeaseLost)
		require.Equal(t, "A", l.Owner, "the holder is returned")
		l, err = b.s.AcquireLease(b.ctx, acquire("A", at(10*time.Second)))
		require.NoError(t, err, "a renewal")
		require.Equal(t, norm(at(40*time.Second)), l.Until)

		// A's lease runs out: B takes it over, and A cannot renew it.
		_, err = b.s.AcquireLease(b.ctx, acquire("B", at(40*time.Second)))
		require.NoError(t, err)
		_, err = b.s.AcquireLease(b.ctx, acquire("A", at(41*time.Second)))
		require.ErrorIs(t, err, store.ErrLeaseLost)

		// Released, it is free at once.
		require.NoError(t, b.s.ReleaseLease(b.ctx, lease, "A"), "A does not hold it: nothing happens")
		require.NoError(t, b.s.ReleaseLease(b.ctx, lease, "B"))
		_, err = b.s.AcquireLease(b.ctx, acquire("C", at(42*time.Second)))
		require.NoError(t, err)

		// ReleaseClaims lets go of the leases of the owner it names.
		_, err = b.s.ReleaseClaims(b.ctx, "C")
		require.NoError(t, err)
		_, err = b.s.AcquireLease(b.ctx, acquire("D", at(43*time.Second)))
		require.NoError(t, err)

		_, err = b.s.AcquireLease(b.ctx, store.AcquireLeaseParams{Name: lease, Owner: "D", Now: t0, Until: t0})
		require.Error(t, err, "a lease must end after now")
		_, err = b.s.AcquireLease(b.ctx, store.AcquireLeaseParams{Name: lease, Now: t0, Until: at(time.Second)})
		require.Error(t, err, "an owner is required")
	})

	t.Run("OneOfConcurrentAcquirersWins", func(t *testing.T) {
		b := h.setup(t)
		const n = 4
		var wg sync.WaitGroup
		results := make([]error, n)
		for i := range n {
			wg.Go(func() {
				owner := fmt.Sprintf("node%d", i)
				for {
					_, err := b.s.AcquireLease(b.ctx, acquire(owner, t0))
					if errors.Is(err, store.ErrDuplicate) || errors.Is(err, store.ErrConflict) {
						continue // lost a race for the row: look again
					}
					results[i] = err
					return
				}
			})
		}
		wg.Wait()
		won := 0
		for _, err := range results {
			if err == nil {
				won++
			} else {
				require.ErrorIs(t, err, store.ErrLeaseLost)
			}
		}
		require.Equal(t, 1, won)
	})
}
