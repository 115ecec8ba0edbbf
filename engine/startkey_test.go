package engine_test

import (
	"errors"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"
	"gorm.io/gorm"

	"github.com/goxpdl/goxpdl/engine"
	"github.com/goxpdl/goxpdl/store"
	"github.com/goxpdl/goxpdl/store/dbtest"
	"github.com/goxpdl/goxpdl/xpdl/xpdltest"
)

// A start with an idempotency key creates one instance however often it
// is repeated, also concurrently, which is how a host resolves a start
// whose commit it could not see.
func TestStartWithAnIdempotencyKey(t *testing.T) {
	t.Parallel()
	manual := xpdltest.Activity("M", `<Implementation><No/></Implementation><Performer>clerk</Performer>`, "", "")
	src := xpdltest.Package(xpdltest.Process("p", "", manual, "") + xpdltest.Process("q", "", manual, ""))
	dbtest.Each(t, func(t *testing.T, db *gorm.DB) {
		h := newHarness(t, db).start()
		h.deploy(src)
		opts := engine.StartOptions{Package: "pkg", Process: "p", IdempotencyKey: "order-42"}
		first, err := h.e.StartProcess(h.ctx, opts)
		require.NoError(t, err)
		again, err := h.e.StartProcess(h.ctx, opts)
		require.NoError(t, err)
		require.Equal(t, first, again)
		require.Equal(t, "order-42", h.instance(first).StartKey)

		// Concurrent starts with a fresh key agree on one instance.
		opts.IdempotencyKey = "order-43"
		ids := make([]int64, 8)
		var wg sync.WaitGroup
		for i := range ids {
			wg.Go(func() {
				id, err := h.e.StartProcess(h.ctx, opts)
				require.NoError(t, err)
				ids[i] = id
			})
		}
		wg.Wait()
		for _, id := range ids {
			require.Equal(t, ids[0], id)
		}

		_, err = h.e.StartProcess(h.ctx, engine.StartOptions{Package: "pkg", Process: "q", IdempotencyKey: "order-42"})
		require.ErrorIs(t, err, engine.ErrKeyReused)

		// A key whose host transaction rolled back was never taken.
		errRollback := errors.New("host rolls back")
		require.ErrorIs(t, db.Transaction(func(tx *gorm.DB) error {
			_, err := h.e.StartProcessTx(h.ctx, tx, engine.StartOptions{Package: "pkg", Process: "q", IdempotencyKey: "order-44"})
			require.NoError(t, err)
			return errRollback
		}), errRollback)
		fresh, err := h.e.StartProcess(h.ctx, engine.StartOptions{Package: "pkg", Process: "q", IdempotencyKey: "order-44"})
		require.NoError(t, err)

		all, err := h.e.Store().ListProcessInstances(h.ctx, store.ListProcessInstancesParams{})
		require.NoError(t, err)
		require.Len(t, all, 3, "order-42, order-43 and order-44 once each")
		require.ElementsMatch(t, []int64{first, ids[0], fresh}, []int64{all[0].ID, all[1].ID, all[2].ID})
	})
}
