package storetest

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/goxpdl/goxpdl/store"
)

func (h *harness) testMigrate(t *testing.T) {
	t.Run("RenamesEverythingOfTheInstance", func(t *testing.T) {
		b := h.setup(t)
		from := newDefinition(t, b)
		to := newDefinition(t, b)
		pi := newProcessInstance(t, b, from.ID)
		review := newActivityInstance(t, b, pi.ID, "Review")
		other := newActivityInstance(t, b, pi.ID, "Other")
		item := offered("main", "Review", 1)
		item.ProcessInstanceID, item.ActivityInstanceID = pi.ID, review.ID
		wi := insertItem(t, b, item, alice)
		_, err := b.s.InsertSubscriptions(b.ctx, []store.Subscription{subscription("go", pi.ID, review.ID)})
		require.NoError(t, err)
		_, err = b.s.InsertInboxMessage(b.ctx, store.InboxMessage{
			ID: nextID(), MessageID: "m1", Kind: "complete", ProcessInstanceID: pi.ID, ProcessDefID: "main", ActivityDefID: "Later",
			State: store.InboxPending, CreatedAt: t0,
		})
		require.NoError(t, err)

		v, err := b.s.MigrateProcessInstance(b.ctx, store.MigrateProcessInstanceParams{
			ID: pi.ID, ExpectedVersion: pi.Version, DefinitionID: to.ID, ProcessDefID: "main2", Tokens: []byte(`{"x":1}`),
			Activities: map[int64]string{review.ID: "Check"}, Renamed: map[string]string{"Review": "Check", "Later": "Afterwards"},
			UpdatedAt: at(time.Minute),
		})
		require.NoError(t, err)
		require.Equal(t, pi.Version+1, v)
		got, err := b.s.GetProcessInstance(b.ctx, pi.ID)
		require.NoError(t, err)
		require.Equal(t, to.ID, got.DefinitionID)
		require.Equal(t, "main2", got.ProcessDefID)
		require.JSONEq(t, `{"x":1}`, string(got.Tokens))
		ai, err := b.s.GetActivityInstance(b.ctx, review.ID)
		require.NoError(t, err)
		require.Equal(t, "Check", ai.ActivityDefID)
		ai, err = b.s.GetActivityInstance(b.ctx, other.ID)
		require.NoError(t, err)
		require.Equal(t, "Other", ai.ActivityDefID, "activities not named keep their id")
		gotItem, err := b.s.GetWorkItem(b.ctx, wi.ID)
		require.NoError(t, err)
		require.Equal(t, "Check", gotItem.ActivityDefID)
		require.Equal(t, "main2", gotItem.ProcessDefID)
		page, err := b.s.ListWorklist(b.ctx, store.ListWorklistParams{Principals: []store.Principal{alice}, Limit: 10, ProcessDefIDs: []string{"main2"}})
		require.NoError(t, err)
		require.Len(t, page, 1, "the worklist finds it under the new process")
		subs, err := b.s.ListSubscriptions(b.ctx, store.ListSubscriptionsParams{ProcessInstanceID: pi.ID})
		require.NoError(t, err)
		require.Equal(t, "Check", subs[0].ActivityDefID)
		msg, err := b.s.GetInboxMessage(b.ctx, "m1")
		require.NoError(t, err)
		require.Equal(t, "Afterwards", msg.ActivityDefID)
		require.Equal(t, "main2", msg.ProcessDefID)

		_, err = b.s.MigrateProcessInstance(b.ctx, store.MigrateProcessInstanceParams{
			ID: pi.ID, ExpectedVersion: pi.Version, DefinitionID: from.ID, ProcessDefID: "main", UpdatedAt: at(time.Hour),
		})
		require.ErrorIs(t, err, store.ErrConflict, "the version fences a stale plan")

		counts, err := b.s.CountProcessInstancesByDefinition(b.ctx)
		require.NoError(t, err)
		require.Equal(t, map[int64]map[string]int64{to.ID: {"Running": 1}}, counts)
	})
}
