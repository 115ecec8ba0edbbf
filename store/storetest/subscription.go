package storetest

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/goxpdl/goxpdl/store"
)

// subscription returns an unstored signal subscription of activity
// instance aiID of process instance piID.
func subscription(name string, piID, aiID int64) store.Subscription {
	return store.Subscription{
		ID: nextID(), Kind: "signal", Name: name, ProcessInstanceID: piID, ActivityInstanceID: aiID, ActivityDefID: "Wait", CreatedAt: t0,
	}
}

func subscriptionIDs(subs []store.Subscription) []int64 {
	return ids(subs, func(s store.Subscription) int64 { return s.ID })
}

func (h *harness) testSubscriptions(t *testing.T) {
	insert := func(t *testing.T, b bundle, subs ...store.Subscription) []store.Subscription {
		t.Helper()
		got, err := b.s.InsertSubscriptions(b.ctx, subs)
		require.NoError(t, err)
		require.Len(t, got, len(subs))
		return got
	}
	list := func(t *testing.T, b bundle, params store.ListSubscriptionsParams) []store.Subscription {
		t.Helper()
		got, err := b.s.ListSubscriptions(b.ctx, params)
		require.NoError(t, err)
		return got
	}

	t.Run("RoundTrip", func(t *testing.T) {
		b := h.setup(t)
		zone := time.FixedZone("UTC+5", 5*3600)
		in := subscription("go", 7, 8)
		in.CreatedAt = t0.In(zone)
		stop := subscription("stop", 7, 9)
		got := insert(t, b, in, stop)
		require.Equal(t, []int64{in.ID, stop.ID}, subscriptionIDs(got), "the caller's ids, in argument order")
		want := in
		want.CreatedAt = norm(t0)
		require.Equal(t, want, got[0])
		require.Equal(t, []store.Subscription{want, got[1]}, list(t, b, store.ListSubscriptionsParams{}))

		none, err := b.s.InsertSubscriptions(b.ctx, nil)
		require.NoError(t, err)
		require.Empty(t, none)
		_, err = b.s.InsertSubscriptions(b.ctx, []store.Subscription{{ID: nextID(), Kind: "signal", Name: "go", ProcessInstanceID: 1}})
		require.Error(t, err, "the zero time is refused")
		_, err = b.s.InsertSubscriptions(b.ctx, []store.Subscription{subscription("go", 1, 2), {Kind: "signal", Name: "go", ProcessInstanceID: 1, CreatedAt: t0}})
		require.Error(t, err, "an id of 0 is refused")
		require.Len(t, list(t, b, store.ListSubscriptionsParams{}), 2, "nothing of a refused batch is stored")
	})

	t.Run("ListFilters", func(t *testing.T) {
		b := h.setup(t)
		subs := []store.Subscription{
			subscription("go", 1, 10),   // 0
			subscription("Go", 1, 11),   // 1: names are case-sensitive
			subscription("go", 2, 12),   // 2
			subscription("go", 2, 20),   // 3
			subscription("stop", 3, 13), // 4
		}
		subs[3].Kind = "other"
		subs = insert(t, b, subs...)
		pick := func(is ...int) []int64 {
			out := make([]int64, len(is))
			for i, n := range is {
				out[i] = subs[n].ID
			}
			return out
		}
		for name, tc := range map[string]struct {
			params store.ListSubscriptionsParams
			want   []int64
		}{
			"all":              {store.ListSubscriptionsParams{}, pick(0, 1, 2, 3, 4)},
			"kind":             {store.ListSubscriptionsParams{Kind: "signal"}, pick(0, 1, 2, 4)},
			"kind and name":    {store.ListSubscriptionsParams{Kind: "signal", Name: "go"}, pick(0, 2)},
			"name other case":  {store.ListSubscriptionsParams{Kind: "signal", Name: "Go"}, pick(1)},
			"instance":         {store.ListSubscriptionsParams{ProcessInstanceID: 2}, pick(2, 3)},
			"name in instance": {store.ListSubscriptionsParams{Kind: "signal", Name: "go", ProcessInstanceID: 2}, pick(2)},
			"unknown name":     {store.ListSubscriptionsParams{Name: "gone"}, pick()},
			"page":             {store.ListSubscriptionsParams{Kind: "signal", AfterID: subs[0].ID, Limit: 2}, pick(1, 2)},
		} {
			require.Equal(t, tc.want, subscriptionIDs(list(t, b, tc.params)), name)
		}
	})

	t.Run("Delete", func(t *testing.T) {
		b := h.setup(t)
		subs := insert(t, b,
			subscription("go", 1, 10), // 0
			subscription("go", 1, 11), // 1
			subscription("go", 1, 12), // 2
			subscription("go", 2, 20), // 3
			subscription("go", 2, 21), // 4
		)
		left := func(is ...int) {
			t.Helper()
			want := make([]int64, len(is))
			for i, n := range is {
				want[i] = subs[n].ID
			}
			require.Equal(t, want, subscriptionIDs(list(t, b, store.ListSubscriptionsParams{})))
		}
		del := func(params store.DeleteSubscriptionsParams) int64 {
			t.Helper()
			n, err := b.s.DeleteSubscriptions(b.ctx, params)
			require.NoError(t, err)
			return n
		}
		for name, p := range map[string]store.DeleteSubscriptionsParams{
			"empty":           {},
			"activities only": {ActivityInstanceIDs: []int64{10, 20}},
			"empty IDs":       {IDs: []int64{}},
		} {
			_, err := b.s.DeleteSubscriptions(b.ctx, p)
			require.Error(t, err, name)
		}
		left(0, 1, 2, 3, 4)

		require.Equal(t, int64(1), del(store.DeleteSubscriptionsParams{ProcessInstanceID: 1, ActivityInstanceIDs: []int64{10, 20}}),
			"activities of the process only")
		left(1, 2, 3, 4)
		require.Equal(t, int64(2), del(store.DeleteSubscriptionsParams{IDs: []int64{subs[1].ID, subs[3].ID, subs[4].ID + 1000}}))
		left(2, 4)
		require.Zero(t, del(store.DeleteSubscriptionsParams{ProcessInstanceID: 1, IDs: []int64{subs[4].ID}}), "IDs within the process")
		require.Equal(t, int64(1), del(store.DeleteSubscriptionsParams{ProcessInstanceID: 2}))
		left(2)
		require.Zero(t, del(store.DeleteSubscriptionsParams{ProcessInstanceID: 2}), "nothing left to delete")
	})
}
