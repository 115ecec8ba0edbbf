package storetest

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/goxpdl/goxpdl/store"
)

func (h *harness) testAudit(t *testing.T) {
	auditIDs := func(es []store.AuditEntry) []int64 {
		return ids(es, func(e store.AuditEntry) int64 { return e.ID })
	}

	t.Run("RoundTripNewestFirst", func(t *testing.T) {
		b := h.setup(t)
		entries := []store.AuditEntry{
			{ID: nextID(), At: t0, Actor: "alice", Action: "instance.suspend", TargetKind: "instance", TargetID: "7",
				InstanceID: ptr(int64(7)), Reason: "customer called", Data: []byte(`{"ticket":42}`), Result: "ok"},
			{ID: nextID(), At: at(time.Second), Actor: "bob", Action: "batch.start", TargetKind: "batch", Result: "refused",
				Error: "invalid batch request: unknown action", Detail: "3 instances"},
		}
		for _, e := range entries {
			require.NoError(t, b.s.InsertAudit(b.ctx, e))
		}
		got, err := b.s.ListAudit(b.ctx, store.ListAuditParams{})
		require.NoError(t, err)
		require.Len(t, got, 2)
		require.Greater(t, got[0].ID, got[1].ID, "newest first")
		want := []store.AuditEntry{entries[1], entries[0]}
		for i := range want {
			want[i].At = norm(want[i].At)
		}
		require.Equal(t, want, got)
		require.Nil(t, got[0].InstanceID)
		require.Nil(t, got[0].Data)
	})

	t.Run("Filters", func(t *testing.T) {
		b := h.setup(t)
		add := func(d time.Duration, actor, action, kind, target string, instance int64, result string) {
			t.Helper()
			e := store.AuditEntry{ID: nextID(), At: at(d), Actor: actor, Action: action, TargetKind: kind, TargetID: target, Result: result}
			if instance != 0 {
				e.InstanceID = &instance
			}
			require.NoError(t, b.s.InsertAudit(b.ctx, e))
		}
		add(0, "alice", "instance.suspend", "instance", "1", 1, "ok")
		add(time.Second, "Alice", "instance.resume", "instance", "1", 1, "refused")
		add(2*time.Second, "alice", "activity.retry", "activity", "10", 1, "ok")
		add(3*time.Second, "bob", "instance.suspend", "instance", "2", 2, "failed")
		add(4*time.Second, "bob", "lock.release", "lock", "order-1", 2, "ok")
		add(5*time.Second, "alice", "batch.start", "batch", "1", 0, "ok")
		all, err := b.s.ListAudit(b.ctx, store.ListAuditParams{})
		require.NoError(t, err)
		require.Len(t, all, 6)
		id := func(i int) int64 { return all[len(all)-1-i].ID } // the i-th written
		list := func(p store.ListAuditParams) []int64 {
			t.Helper()
			got, err := b.s.ListAudit(b.ctx, p)
			require.NoError(t, err)
			return auditIDs(got)
		}
		require.Equal(t, []int64{id(5), id(2), id(0)}, list(store.ListAuditParams{Actor: "alice"}), "actors are case-sensitive")
		require.Equal(t, []int64{id(3), id(0)}, list(store.ListAuditParams{Actions: []string{"instance.suspend"}}))
		require.Equal(t, []int64{id(4), id(3), id(1), id(0)}, list(store.ListAuditParams{Actions: []string{"instance.suspend", "instance.resume", "lock.release"}}))
		require.Equal(t, []int64{id(3), id(1)}, list(store.ListAuditParams{Results: []string{"refused", "failed"}}))
		require.Equal(t, []int64{id(1), id(0)}, list(store.ListAuditParams{TargetKind: "instance", TargetID: "1"}))
		require.Equal(t, []int64{id(5), id(1), id(0)}, list(store.ListAuditParams{TargetID: "1"}), "a target id alone matches every kind")
		require.Equal(t, []int64{id(2)}, list(store.ListAuditParams{TargetKind: "activity"}))
		require.Equal(t, []int64{id(2), id(1), id(0)}, list(store.ListAuditParams{InstanceID: 1}))
		require.Equal(t, []int64{id(3), id(2)}, list(store.ListAuditParams{From: ptr(at(2 * time.Second)), Before: ptr(at(4 * time.Second))}))
		require.Equal(t, []int64{id(4), id(3)}, list(store.ListAuditParams{Actor: "bob", From: ptr(at(time.Second))}))
		require.Empty(t, list(store.ListAuditParams{Actor: "alice", Results: []string{"failed"}}))

		// Pages walk back by the last id of the previous one.
		page1 := list(store.ListAuditParams{Limit: 4})
		require.Equal(t, []int64{id(5), id(4), id(3), id(2)}, page1)
		page2 := list(store.ListAuditParams{BeforeID: page1[3], Limit: 4})
		require.Equal(t, []int64{id(1), id(0)}, page2)
		require.Equal(t, []int64{id(2), id(0)}, list(store.ListAuditParams{Actor: "alice", BeforeID: id(5)}))
	})

	t.Run("RolledBackWithItsTransaction", func(t *testing.T) {
		b := h.setup(t)
		errAbort := errors.New("abort")
		err := b.s.InTx(b.ctx, func(ctx context.Context, tx store.Tx) error {
			require.NoError(t, tx.InsertAudit(ctx, store.AuditEntry{ID: nextID(), At: t0, Actor: "alice", Action: "instance.terminate", TargetKind: "instance", TargetID: "1", Result: "ok"}))
			return errAbort
		})
		require.ErrorIs(t, err, errAbort)
		err = b.s.InTx(b.ctx, func(ctx context.Context, tx store.Tx) error {
			return tx.InsertAudit(ctx, store.AuditEntry{ID: nextID(), At: t0, Actor: "alice", Action: "instance.suspend", TargetKind: "instance", TargetID: "1", Result: "ok"})
		})
		require.NoError(t, err)
		got, err := b.s.ListAudit(b.ctx, store.ListAuditParams{})
		require.NoError(t, err)
		require.Len(t, got, 1)
		require.Equal(t, "instance.suspend", got[0].Action)
	})

	t.Run("RefusesIncompleteEntries", func(t *testing.T) {
		b := h.setup(t)
		require.Error(t, b.s.InsertAudit(b.ctx, store.AuditEntry{ID: nextID(), Actor: "alice", Action: "instance.suspend", Result: "ok"}), "no time")
		require.Error(t, b.s.InsertAudit(b.ctx, store.AuditEntry{ID: nextID(), At: t0, Actor: "alice", Result: "ok"}), "no action")
		require.Error(t, b.s.InsertAudit(b.ctx, store.AuditEntry{ID: nextID(), At: t0, Actor: "alice", Action: "instance.suspend"}), "no result")
		got, err := b.s.ListAudit(b.ctx, store.ListAuditParams{})
		require.NoError(t, err)
		require.Empty(t, got)
	})

	t.Run("KeptWhenTheInstanceIsPurged", func(t *testing.T) {
		b := h.setup(t)
		def := newDefinition(t, b)
		old := at(-48 * time.Hour)
		done := purgeFill(t, b, def, "main", nil, "Completed", &old, true)
		require.NoError(t, b.s.InsertAudit(b.ctx, store.AuditEntry{ID: nextID(), At: t0, Actor: "alice", Action: "instance.terminate",
			TargetKind: "instance", TargetID: "x", InstanceID: &done.pi.ID, Result: "ok"}))
		res, err := b.s.PurgeProcessInstances(b.ctx, store.PurgeProcessInstancesParams{States: finalStates, EndedBefore: purgeCutoff, Limit: 10})
		require.NoError(t, err)
		require.Equal(t, int64(1), res.Instances)
		got, err := b.s.ListAudit(b.ctx, store.ListAuditParams{InstanceID: done.pi.ID})
		require.NoError(t, err)
		require.Len(t, got, 1, "the audit log outlives the instances it names")
	})
}
