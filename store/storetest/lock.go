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

func (h *harness) testLocks(t *testing.T) {
	t.Run("BusinessKeyFilter", func(t *testing.T) {
		b := h.setup(t)
		def := newDefinition(t, b)
		var want []int64
		for i, key := range []string{"order-1", "order-2", "order-1", "", "Order-1"} {
			pi, err := b.s.InsertProcessInstance(b.ctx, store.ProcessInstance{
				ID:           nextID(),
				DefinitionID: def.ID, ProcessDefID: "main", State: "Running", CreatedAt: t0, UpdatedAt: t0, BusinessKey: key,
			})
			require.NoError(t, err)
			require.Equal(t, key, pi.BusinessKey, "instance %d", i)
			if key == "order-1" {
				want = append(want, pi.ID)
			}
		}
		got, err := b.s.ListProcessInstances(b.ctx, store.ListProcessInstancesParams{BusinessKey: "order-1"})
		require.NoError(t, err)
		require.Equal(t, want, ids(got, func(p store.ProcessInstance) int64 { return p.ID }), "exact and case-sensitive")
		got, err = b.s.ListProcessInstances(b.ctx, store.ListProcessInstancesParams{BusinessKey: "order-1", AfterID: want[0]})
		require.NoError(t, err)
		require.Equal(t, want[1:], ids(got, func(p store.ProcessInstance) int64 { return p.ID }))
	})

	t.Run("OneHolderPerScope", func(t *testing.T) {
		b := h.setup(t)
		def := newDefinition(t, b)
		p1, p2, p3 := newProcessInstance(t, b, def.ID), newProcessInstance(t, b, def.ID), newProcessInstance(t, b, def.ID)

		held, err := b.s.InsertLock(b.ctx, store.Lock{ID: nextID(), ScopeKey: "local:pkg:main", BusinessKey: "k", ProcessInstanceID: p1.ID, Held: true, CreatedAt: t0})
		require.NoError(t, err)
		require.True(t, held.Held)
		require.Equal(t, normPtr(ptr(t0)), held.HeldSince)

		// A second holder of the same scope and key is refused; another
		// scope, another key and waiters are not.
		_, err = b.s.InsertLock(b.ctx, store.Lock{ID: nextID(), ScopeKey: "local:pkg:main", BusinessKey: "k", ProcessInstanceID: p2.ID, Held: true, CreatedAt: t0})
		require.ErrorIs(t, err, store.ErrDuplicate)
		w1, err := b.s.InsertLock(b.ctx, store.Lock{ID: nextID(), ScopeKey: "local:pkg:main", BusinessKey: "k", ProcessInstanceID: p2.ID, CreatedAt: at(time.Second)})
		require.NoError(t, err)
		require.False(t, w1.Held)
		require.Nil(t, w1.HeldSince)
		w2, err := b.s.InsertLock(b.ctx, store.Lock{ID: nextID(), ScopeKey: "local:pkg:main", BusinessKey: "k", ProcessInstanceID: p3.ID, CreatedAt: at(2 * time.Second)})
		require.NoError(t, err)
		global, err := b.s.InsertLock(b.ctx, store.Lock{ID: nextID(), ScopeKey: store.LockScopeGlobal, BusinessKey: "k", ProcessInstanceID: p3.ID, Held: true, CreatedAt: t0})
		require.NoError(t, err)
		other, err := b.s.InsertLock(b.ctx, store.Lock{ID: nextID(), ScopeKey: "local:pkg:main", BusinessKey: "K", ProcessInstanceID: p3.ID, Held: true, CreatedAt: t0})
		require.NoError(t, err, "keys are case-sensitive")

		locks, err := b.s.LocksForUpdate(b.ctx, "k")
		require.NoError(t, err)
		require.Equal(t, []int64{held.ID, w1.ID, w2.ID, global.ID}, ids(locks, func(l store.Lock) int64 { return l.ID }))

		// A waiter is granted only once the holder is gone.
		require.ErrorIs(t, b.s.GrantLock(b.ctx, w1.ID, at(3*time.Second)), store.ErrDuplicate)
		n, err := b.s.DeleteLocks(b.ctx, store.DeleteLocksParams{ProcessInstanceID: p1.ID})
		require.NoError(t, err)
		require.EqualValues(t, 1, n)
		require.NoError(t, b.s.GrantLock(b.ctx, w1.ID, at(3*time.Second)))
		require.ErrorIs(t, b.s.GrantLock(b.ctx, w1.ID, at(3*time.Second)), store.ErrNotFound, "already held")
		require.ErrorIs(t, b.s.GrantLock(b.ctx, 999999, at(3*time.Second)), store.ErrNotFound)

		got, err := b.s.ListLocks(b.ctx, store.ListLocksParams{ScopeKey: "local:pkg:main", BusinessKey: "k"})
		require.NoError(t, err)
		require.Len(t, got, 2)
		require.Equal(t, store.Lock{
			ID: w1.ID, ScopeKey: "local:pkg:main", BusinessKey: "k", ProcessInstanceID: p2.ID, Held: true,
			CreatedAt: norm(at(time.Second)), HeldSince: normPtr(ptr(at(3 * time.Second))),
		}, got[0])
		got, err = b.s.ListLocks(b.ctx, store.ListLocksParams{Held: ptr(false)})
		require.NoError(t, err)
		require.Equal(t, []int64{w2.ID}, ids(got, func(l store.Lock) int64 { return l.ID }))
		got, err = b.s.ListLocks(b.ctx, store.ListLocksParams{Held: ptr(true), Limit: 2})
		require.NoError(t, err)
		require.Equal(t, []int64{w1.ID, global.ID}, ids(got, func(l store.Lock) int64 { return l.ID }))
		got, err = b.s.ListLocks(b.ctx, store.ListLocksParams{Held: ptr(true), AfterID: global.ID})
		require.NoError(t, err)
		require.Equal(t, []int64{other.ID}, ids(got, func(l store.Lock) int64 { return l.ID }))
		got, err = b.s.ListLocks(b.ctx, store.ListLocksParams{ProcessInstanceID: p3.ID})
		require.NoError(t, err)
		require.Equal(t, []int64{w2.ID, global.ID, other.ID}, ids(got, func(l store.Lock) int64 { return l.ID }))

		_, err = b.s.DeleteLocks(b.ctx, store.DeleteLocksParams{})
		require.Error(t, err, "a filter is required")
		n, err = b.s.DeleteLocks(b.ctx, store.DeleteLocksParams{IDs: []int64{w2.ID, global.ID}, ProcessInstanceID: p3.ID})
		require.NoError(t, err)
		require.EqualValues(t, 2, n)
		locks, err = b.s.LocksForUpdate(b.ctx, "k")
		require.NoError(t, err)
		require.Equal(t, []int64{w1.ID}, ids(locks, func(l store.Lock) int64 { return l.ID }))
		locks, err = b.s.LocksForUpdate(b.ctx, "never-locked")
		require.NoError(t, err)
		require.Empty(t, locks)
	})

	// Transactions that change the locks of one key see each other's
	// writes: each takes the key with LocksForUpdate, holds the lock when
	// the key has none, and queues otherwise. Every one of them succeeds
	// and exactly one holds, whatever its scope: with the reads not
	// serialised, two would both see no lock and both hold (a second
	// holder of one scope would fail on the unique key; of two scopes it
	// would go unnoticed).
	t.Run("LocksForUpdateSerialises", func(t *testing.T) {
		b := h.setup(t)
		def := newDefinition(t, b)
		const n = 8
		insts := make([]store.ProcessInstance, n)
		for i := range insts {
			insts[i] = newProcessInstance(t, b, def.ID)
		}
		var wg sync.WaitGroup
		errs := make([]error, n)
		for i := range n {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for try := 0; ; try++ {
					errs[i] = b.s.InTx(b.ctx, func(ctx context.Context, tx store.Tx) error {
						locks, err := tx.LocksForUpdate(ctx, "shared")
						if err != nil {
							return err
						}
						_, err = tx.InsertLock(ctx, store.Lock{
							ID:       nextID(),
							ScopeKey: fmt.Sprintf("local:pkg:p%d", i%2), BusinessKey: "shared",
							ProcessInstanceID: insts[i].ID, Held: len(locks) == 0, CreatedAt: t0,
						})
						return err
					})
					// A database may abort one of two colliding
					// transactions (a deadlock, a stale snapshot): the
					// caller runs it again.
					if !errorIsConflict(errs[i]) || try == 5 {
						return
					}
				}
			}()
		}
		wg.Wait()
		for i, err := range errs {
			require.NoError(t, err, "transaction %d", i)
		}
		locks, err := b.s.ListLocks(b.ctx, store.ListLocksParams{BusinessKey: "shared"})
		require.NoError(t, err)
		require.Len(t, locks, n)
		holders := 0
		for _, l := range locks {
			if l.Held {
				holders++
			}
		}
		require.Equal(t, 1, holders)
	})
}

func errorIsConflict(err error) bool { return errors.Is(err, store.ErrConflict) }
