package gormstore_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/goxpdl/goxpdl/store"
	"github.com/goxpdl/goxpdl/store/gormstore"
)

// A database made by a version whose surrogate ids were the database's
// (AUTO_INCREMENT, bigserial, AUTOINCREMENT) still opens: Migrate leaves
// its id columns as they are (it never redefines a primary key), every
// insert names its id, so the old default is never used, and the
// engine's ids (about 2^52) sort after the rows the database numbered.
func TestMigrateKeepsDatabaseNumberedTables(t *testing.T) {
	t.Parallel()
	for _, d := range dialects {
		t.Run(d.name, func(t *testing.T) {
			t.Parallel()
			ctx := t.Context()
			db := d.open(t)
			tables, err := gormstore.CreateAutoIncrementTables(db)
			require.NoError(t, err)
			require.Subset(t, tables, []string{"goxpdl_definitions", "goxpdl_process_instances", "goxpdl_incidents",
				"goxpdl_batches", "goxpdl_batch_failures", "goxpdl_locks", "goxpdl_audit"})

			// Rows the old version wrote: the database numbers them.
			t0 := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
			require.NoError(t, db.Exec("INSERT INTO goxpdl_definitions (package_id, version, name, created_at) VALUES (?, ?, ?, ?)", "p", 1, "p", t0).Error)
			require.NoError(t, db.Exec("INSERT INTO goxpdl_process_instances (definition_id, process_def_id, depth, state, version, diagnosis, created_at, updated_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
				1, "main", 0, "Running", 1, "", t0, t0).Error)
			require.NoError(t, db.Exec("INSERT INTO goxpdl_audit (at, actor, action, target_kind, target_id, reason, result, error, detail) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
				t0, "ops", "instance.suspend", "instance", "1", "", "ok", "", "").Error)

			s := newStore(t, db)
			require.NoError(t, s.Migrate(ctx), "again")
			old, err := s.ListProcessInstances(ctx, store.ListProcessInstancesParams{})
			require.NoError(t, err)
			require.Len(t, old, 1)
			counts, err := s.CountProcessInstancesByState(ctx)
			require.NoError(t, err)
			require.Equal(t, map[string]int64{"Running": 1}, counts, "the counts were seeded from the old rows")

			const id = int64(1) << 52
			def, err := s.InsertDefinition(ctx, store.InsertDefinitionParams{ID: id, PackageID: "p", CreatedAt: t0})
			require.NoError(t, err)
			require.Equal(t, [2]int64{id, 2}, [2]int64{def.ID, int64(def.Version)})
			pi, err := s.InsertProcessInstance(ctx, store.ProcessInstance{ID: id, DefinitionID: def.ID, ProcessDefID: "main", State: "Running", CreatedAt: t0, UpdatedAt: t0})
			require.NoError(t, err)
			require.Equal(t, id, pi.ID)
			_, err = s.InsertProcessInstance(ctx, store.ProcessInstance{ID: old[0].ID, DefinitionID: def.ID, ProcessDefID: "main", State: "Running", CreatedAt: t0, UpdatedAt: t0})
			require.ErrorIs(t, err, store.ErrDuplicate, "an id the database gave")
			all, err := s.ListProcessInstances(ctx, store.ListProcessInstancesParams{})
			require.NoError(t, err)
			require.Equal(t, []int64{old[0].ID, id}, []int64{all[0].ID, all[1].ID}, "the engine's ids after the database's")

			require.NoError(t, s.InsertAudit(ctx, store.AuditEntry{ID: id, At: t0, Actor: "ops", Action: "instance.resume", Result: "ok"}))
			log, err := s.ListAudit(ctx, store.ListAuditParams{})
			require.NoError(t, err)
			require.Len(t, log, 2)
			require.Equal(t, id, log[0].ID, "newest first")
			inc, _, err := s.RecordIncident(ctx, store.Incident{ID: id, ProcessInstanceID: pi.ID, Cause: "locking", LastFailureAt: t0})
			require.NoError(t, err)
			require.Equal(t, id, inc.ID)
			lock, err := s.InsertLock(ctx, store.Lock{ID: id, ScopeKey: store.LockScopeGlobal, BusinessKey: "k", ProcessInstanceID: pi.ID, Held: true, CreatedAt: t0})
			require.NoError(t, err)
			require.Equal(t, id, lock.ID)
			b, err := s.InsertBatch(ctx, store.Batch{ID: id, Action: "suspend", State: store.BatchRunning, CreatedAt: t0})
			require.NoError(t, err)
			require.Equal(t, id, b.ID)
		})
	}
}
