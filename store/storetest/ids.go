package storetest

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/goxpdl/goxpdl/store"
)

// testCallerIDs checks, for every table whose rows carry their caller's
// ID (the engine's, package idgen) and that has no test of it of its own
// (process instances, activity instances, work items, events, history,
// inbox, timers and subscriptions have theirs): the row keeps the ID it
// was given, one as large as the ids get (below 2^53) included; an ID
// already stored is ErrDuplicate; 0 and negative IDs are refused, and
// nothing is written.
func (h *harness) testCallerIDs(t *testing.T) {
	type kind struct {
		name string
		// insert stores a row of id, with what else it needs from pi,
		// and returns the ID it read back.
		insert func(ctx context.Context, s store.Tx, pi store.ProcessInstance, id int64) (int64, error)
	}
	kinds := []kind{
		{"Definition", func(ctx context.Context, s store.Tx, _ store.ProcessInstance, id int64) (int64, error) {
			if _, err := s.InsertDefinition(ctx, store.InsertDefinitionParams{ID: id, PackageID: "ids", CreatedAt: t0}); err != nil {
				return 0, err
			}
			d, err := s.GetDefinition(ctx, id)
			return d.ID, err
		}},
		{"Incident", func(ctx context.Context, s store.Tx, pi store.ProcessInstance, id int64) (int64, error) {
			// A subject of its own per call, so that each opens one.
			ai := nextID()
			if _, _, err := s.RecordIncident(ctx, store.Incident{ID: id, ProcessInstanceID: pi.ID, ActivityInstanceID: &ai, Cause: "application", LastFailureAt: t0}); err != nil {
				return 0, err
			}
			got, err := s.GetIncident(ctx, id)
			return got.ID, err
		}},
		{"Lock", func(ctx context.Context, s store.Tx, pi store.ProcessInstance, id int64) (int64, error) {
			if _, err := s.InsertLock(ctx, store.Lock{ID: id, ScopeKey: "local:pkg:main", BusinessKey: "ids", ProcessInstanceID: pi.ID, CreatedAt: t0}); err != nil {
				return 0, err
			}
			locks, err := s.ListLocks(ctx, store.ListLocksParams{AfterID: id - 1, Limit: 1})
			if err != nil || len(locks) == 0 {
				return 0, err
			}
			return locks[0].ID, nil
		}},
		{"Batch", func(ctx context.Context, s store.Tx, _ store.ProcessInstance, id int64) (int64, error) {
			if _, err := s.InsertBatch(ctx, store.Batch{ID: id, Action: "suspend", State: store.BatchRunning, CreatedAt: t0}); err != nil {
				return 0, err
			}
			got, err := s.GetBatch(ctx, id)
			return got.ID, err
		}},
		{"Audit", func(ctx context.Context, s store.Tx, _ store.ProcessInstance, id int64) (int64, error) {
			if err := s.InsertAudit(ctx, store.AuditEntry{ID: id, At: t0, Actor: "alice", Action: "instance.suspend", Result: "ok"}); err != nil {
				return 0, err
			}
			got, err := s.ListAudit(ctx, store.ListAuditParams{BeforeID: id + 1, Limit: 1})
			if err != nil || len(got) == 0 {
				return 0, err
			}
			return got[0].ID, nil
		}},
	}
	for _, k := range kinds {
		t.Run(k.name, func(t *testing.T) {
			b := h.setup(t)
			pi := newProcessInstance(t, b, newDefinition(t, b).ID)
			ctx := b.ctx
			for _, id := range []int64{nextID(), 1<<53 - 1} {
				got, err := k.insert(ctx, b.s, pi, id)
				require.NoError(t, err, "id %d", id)
				require.Equal(t, id, got, "the caller's id")
				_, err = k.insert(ctx, b.s, pi, id)
				require.ErrorIs(t, err, store.ErrDuplicate, "id %d again", id)
			}
			err := b.s.InTx(ctx, func(ctx context.Context, tx store.Tx) error {
				_, err := k.insert(ctx, tx, pi, 1<<53-1)
				return err
			})
			require.ErrorIs(t, err, store.ErrDuplicate, "again in a transaction (possibly reported at commit)")
			for _, id := range []int64{0, -1} {
				_, err := k.insert(ctx, b.s, pi, id)
				require.Error(t, err, "id %d", id)
				require.NotErrorIs(t, err, store.ErrDuplicate, "id %d", id)
			}
		})
	}
}
