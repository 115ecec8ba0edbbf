package storetest

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/goxpdl/goxpdl/store"
)

func (h *harness) testWorkItems(t *testing.T) {
	t.Run("RoundTrip", func(t *testing.T) {
		b := h.setup(t)
		in := store.WorkItem{
			ID: 55, ProcessInstanceID: 3, ActivityInstanceID: 4, State: "Completed", Performer: "alice",
			CreatedAt: t0, UpdatedAt: at(time.Second), EndedAt: ptr(at(time.Minute)),
		}
		wi, err := b.s.InsertWorkItem(b.ctx, in)
		require.NoError(t, err)
		require.NotZero(t, wi.ID)
		want := in
		want.ID = wi.ID
		want.CreatedAt, want.UpdatedAt, want.EndedAt = norm(in.CreatedAt), norm(in.UpdatedAt), normPtr(in.EndedAt)
		require.Equal(t, want, wi)
		got, err := b.s.GetWorkItem(b.ctx, wi.ID)
		require.NoError(t, err)
		require.Equal(t, want, got)

		open, err := b.s.InsertWorkItem(b.ctx, store.WorkItem{ProcessInstanceID: 3, ActivityInstanceID: 5, State: "Offered", CreatedAt: t0, UpdatedAt: t0})
		require.NoError(t, err)
		got, err = b.s.GetWorkItem(b.ctx, open.ID)
		require.NoError(t, err)
		require.Nil(t, got.EndedAt)
		require.Empty(t, got.Performer)
	})

	t.Run("Update", func(t *testing.T) {
		b := h.setup(t)
		wi, err := b.s.InsertWorkItem(b.ctx, store.WorkItem{ProcessInstanceID: 1, ActivityInstanceID: 2, State: "Offered", CreatedAt: t0, UpdatedAt: t0})
		require.NoError(t, err)

		require.NoError(t, b.s.UpdateWorkItem(b.ctx, store.UpdateWorkItemParams{
			ID: wi.ID, ExpectedState: "Offered", State: "Assigned", Performer: "bob", UpdatedAt: at(time.Second),
		}))
		// Setting the same values again is no error (MySQL reports no
		// changed row for it).
		require.NoError(t, b.s.UpdateWorkItem(b.ctx, store.UpdateWorkItemParams{
			ID: wi.ID, ExpectedState: "Assigned", State: "Assigned", Performer: "bob", UpdatedAt: at(time.Second),
		}))
		// Someone else completed it meanwhile: the stale withdrawal loses.
		require.NoError(t, b.s.UpdateWorkItem(b.ctx, store.UpdateWorkItemParams{
			ID: wi.ID, ExpectedState: "Assigned", State: "Completed", Performer: "bob",
			UpdatedAt: at(2 * time.Second), EndedAt: ptr(at(2 * time.Second)),
		}))
		err = b.s.UpdateWorkItem(b.ctx, store.UpdateWorkItemParams{
			ID: wi.ID, ExpectedState: "Assigned", State: "Withdrawn", UpdatedAt: at(3 * time.Second), EndedAt: ptr(at(3 * time.Second)),
		})
		require.ErrorIs(t, err, store.ErrConflict)

		got, err := b.s.GetWorkItem(b.ctx, wi.ID)
		require.NoError(t, err)
		want := wi
		want.State, want.Performer = "Completed", "bob"
		want.UpdatedAt, want.EndedAt = norm(at(2*time.Second)), normPtr(ptr(at(2*time.Second)))
		require.Equal(t, want, got)

		// Without ExpectedState the update is unconditional.
		require.NoError(t, b.s.UpdateWorkItem(b.ctx, store.UpdateWorkItemParams{
			ID: wi.ID, State: "Offered", UpdatedAt: at(4 * time.Second),
		}))
		got, err = b.s.GetWorkItem(b.ctx, wi.ID)
		require.NoError(t, err)
		require.Equal(t, "Offered", got.State)
		require.Empty(t, got.Performer)
		require.Nil(t, got.EndedAt)
	})

	t.Run("NotFound", func(t *testing.T) {
		b := h.setup(t)
		_, err := b.s.GetWorkItem(b.ctx, 12345)
		require.ErrorIs(t, err, store.ErrNotFound)
		err = b.s.UpdateWorkItem(b.ctx, store.UpdateWorkItemParams{ID: 12345, State: "Completed", UpdatedAt: t0})
		require.ErrorIs(t, err, store.ErrNotFound)
		err = b.s.UpdateWorkItem(b.ctx, store.UpdateWorkItemParams{ID: 12345, ExpectedState: "Offered", State: "Completed", UpdatedAt: t0})
		require.ErrorIs(t, err, store.ErrNotFound)
	})

	t.Run("ListFiltersAndPages", func(t *testing.T) {
		b := h.setup(t)
		insert := func(pi int64, state string) store.WorkItem {
			wi, err := b.s.InsertWorkItem(b.ctx, store.WorkItem{ProcessInstanceID: pi, ActivityInstanceID: 1, State: state, CreatedAt: t0, UpdatedAt: t0})
			require.NoError(t, err)
			return wi
		}
		w1, w2, w3, w4 := insert(1, "Offered"), insert(2, "Offered"), insert(1, "Completed"), insert(1, "Offered")
		list := func(params store.ListWorkItemsParams) []store.WorkItem {
			t.Helper()
			l, err := b.s.ListWorkItems(b.ctx, params)
			require.NoError(t, err)
			return l
		}
		require.Equal(t, []store.WorkItem{w1, w2, w3, w4}, list(store.ListWorkItemsParams{}))
		require.Equal(t, []store.WorkItem{w1, w3, w4}, list(store.ListWorkItemsParams{ProcessInstanceID: 1}))
		require.Equal(t, []store.WorkItem{w1, w4}, list(store.ListWorkItemsParams{ProcessInstanceID: 1, States: []string{"Offered"}}))
		require.Equal(t, []store.WorkItem{w1, w2, w4}, list(store.ListWorkItemsParams{States: []string{"Offered"}}))
		require.Equal(t, []store.WorkItem{w2, w3}, list(store.ListWorkItemsParams{AfterID: w1.ID, Limit: 2}))
		require.Equal(t, []store.WorkItem{w4}, list(store.ListWorkItemsParams{AfterID: w3.ID, Limit: 2}))
		require.Empty(t, list(store.ListWorkItemsParams{AfterID: w4.ID}))
	})
}
