package gormstore_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	gormmysql "gorm.io/driver/mysql"
	"gorm.io/gorm"

	"github.com/goxpdl/goxpdl/store"
	"github.com/goxpdl/goxpdl/store/gormstore"
)

// reopenMySQL opens the database of db again with multiStatements set as
// given, and closes it when the test ends.
func reopenMySQL(t *testing.T, db *gorm.DB, multiStatements bool) *gorm.DB {
	t.Helper()
	d, ok := db.Dialector.(*gormmysql.Dialector)
	require.True(t, ok)
	cfg := d.DSNConfig.Clone()
	cfg.MultiStatements = multiStatements
	dsn := cfg.FormatDSN()
	if !multiStatements {
		dsn += "&multiStatements=false" // said, or OpenMySQL turns it on
	}
	again, err := gormstore.OpenMySQL(dsn)
	require.NoError(t, err)
	t.Cleanup(func() {
		sqlDB, err := again.DB()
		require.NoError(t, err)
		require.NoError(t, sqlDB.Close())
	})
	return again
}

// TestPipelinedTransaction covers the statements of a pipelined MySQL
// transaction that the conformance suite cannot reach through store.Tx:
// the host's own statements (gorm's Exec, Row) in the engine's
// transaction, after writes the store held back. And a pool whose DSN
// turns multiStatements off runs every write at once.
func TestPipelinedTransaction(t *testing.T) {
	t.Parallel()
	base := openMySQL(t)
	s := newStore(t, reopenMySQL(t, base, true))
	ctx := t.Context()
	t0 := time.Date(2026, 11, 24, 1, 0, 0, 0, time.UTC)
	pi, err := s.InsertProcessInstance(ctx, store.ProcessInstance{ID: 1, DefinitionID: 1, ProcessDefID: "main", State: "Running", CreatedAt: t0, UpdatedAt: t0})
	require.NoError(t, err)
	var lastID int64
	history := func(n int) []store.HistoryEntry {
		var hs []store.HistoryEntry
		for range n {
			lastID++
			hs = append(hs, store.HistoryEntry{ID: lastID, ProcessInstanceID: pi.ID, Subject: store.SubjectProcess, ToState: "Running", At: t0})
		}
		return hs
	}
	stale := store.UpdateProcessInstanceParams{ID: pi.ID, ExpectedVersion: 9, State: "Completed", UpdatedAt: t0}

	t.Run("Exec", func(t *testing.T) { //nolint:paralleltest // the steps share one instance and build on each other
		err := s.InTx(ctx, func(ctx context.Context, tx store.Tx) error {
			db := tx.(*gormstore.Store).DB().WithContext(ctx)
			pool, err := db.DB()
			require.NoError(t, err, "gorm's DB() works in a pipelined transaction")
			require.NoError(t, pool.PingContext(ctx))
			// Three history rows wait; the host's UPDATE goes in the same
			// text and its result is its own.
			require.NoError(t, tx.InsertHistory(ctx, history(3)))
			res := db.Exec("UPDATE goxpdl_process_instances SET diagnosis = ? WHERE id = ?", "host", pi.ID)
			require.NoError(t, res.Error)
			require.Equal(t, int64(1), res.RowsAffected)
			var n int64
			require.NoError(t, db.Raw("SELECT COUNT(*) FROM goxpdl_history WHERE process_instance_id = ?", pi.ID).Scan(&n).Error)
			require.Equal(t, int64(3), n)

			// A refused write waits; the host's next statement is not run
			// and reports it.
			_, err = tx.UpdateProcessInstance(ctx, stale)
			require.NoError(t, err, "held back")
			res = db.Exec("UPDATE goxpdl_process_instances SET diagnosis = ? WHERE id = ?", "lost", pi.ID)
			require.ErrorIs(t, res.Error, store.ErrConflict)
			return res.Error
		})
		require.ErrorIs(t, err, store.ErrConflict)
		got, err := s.GetProcessInstance(ctx, pi.ID)
		require.NoError(t, err)
		require.Empty(t, got.Diagnosis, "rolled back")
	})

	t.Run("Row", func(t *testing.T) { //nolint:paralleltest // the steps share one instance and build on each other
		err := s.InTx(ctx, func(ctx context.Context, tx store.Tx) error {
			db := tx.(*gormstore.Store).DB().WithContext(ctx)
			_, err := tx.UpdateProcessInstance(ctx, store.UpdateProcessInstanceParams{ID: pi.ID, ExpectedVersion: 1, State: "Suspended", UpdatedAt: t0})
			require.NoError(t, err)
			var state string
			require.NoError(t, db.Raw("SELECT state FROM goxpdl_process_instances WHERE id = ?", pi.ID).Row().Scan(&state))
			require.Equal(t, "Suspended", state)

			_, err = tx.UpdateProcessInstance(ctx, stale)
			require.NoError(t, err, "held back")
			require.Error(t, db.Raw("SELECT state FROM goxpdl_process_instances WHERE id = ?", pi.ID).Row().Scan(&state),
				"a row read after a refused write fails")
			return nil
		})
		require.NoError(t, err, "the refused write was reported to the read, and is gone")
		got, err := s.GetProcessInstance(ctx, pi.ID)
		require.NoError(t, err)
		require.Equal(t, "Suspended", got.State)
		require.Equal(t, int64(2), got.Version)
	})

	t.Run("NotPipelined", func(t *testing.T) { //nolint:paralleltest // the steps share one instance and build on each other
		plain := newStore(t, reopenMySQL(t, base, false))
		err := plain.InTx(ctx, func(ctx context.Context, tx store.Tx) error {
			_, err := tx.UpdateProcessInstance(ctx, stale)
			require.ErrorIs(t, err, store.ErrConflict, "without multiStatements a write runs at once")
			return nil
		})
		require.NoError(t, err)
	})
}

// TestInsertIDs checks that the MySQL store keeps the ids its callers
// give the rows it inserts: each id reads back the row inserted for it,
// across a batch of more than one statement too.
func TestInsertIDs(t *testing.T) {
	t.Parallel()
	s := newStore(t, openMySQL(t))
	ctx := t.Context()
	t0 := time.Date(2026, 11, 24, 1, 0, 0, 0, time.UTC)
	pi, err := s.InsertProcessInstance(ctx, store.ProcessInstance{ID: 7, DefinitionID: 1, ProcessDefID: "main", State: "Running", CreatedAt: t0, UpdatedAt: t0})
	require.NoError(t, err)
	require.Equal(t, int64(7), pi.ID)
	got, err := s.GetProcessInstance(ctx, pi.ID)
	require.NoError(t, err)
	require.Equal(t, "main", got.ProcessDefID)

	var evs []store.Event
	for i := range 501 { // two statements of at most 500 rows
		evs = append(evs, store.Event{ID: int64(i + 1), EventID: fmt.Sprintf("e%03d", i), ProcessInstanceID: pi.ID, Kind: "k", CreatedAt: t0, AvailableAt: t0})
	}
	stored, err := s.InsertEvents(ctx, evs)
	require.NoError(t, err)
	require.Len(t, stored, len(evs))
	for _, i := range []int{0, 1, 499, 500} {
		require.Equal(t, evs[i].ID, stored[i].ID)
		e, err := s.GetEvent(ctx, stored[i].ID)
		require.NoError(t, err)
		require.Equal(t, evs[i].EventID, e.EventID)
	}

	err = s.InTx(ctx, func(ctx context.Context, tx store.Tx) error {
		acts, err := tx.InsertActivityInstances(ctx, []store.ActivityInstance{
			{ID: 1, ProcessInstanceID: pi.ID, ActivityDefID: "A", State: "Initiated", CreatedAt: t0, UpdatedAt: t0},
			{ID: 2, ProcessInstanceID: pi.ID, ActivityDefID: "B", State: "Initiated", CreatedAt: t0, UpdatedAt: t0},
		})
		require.NoError(t, err)
		for i, want := range []string{"A", "B"} {
			a, err := tx.GetActivityInstance(ctx, acts[i].ID)
			require.NoError(t, err)
			require.Equal(t, want, a.ActivityDefID)
		}
		return nil
	})
	require.NoError(t, err)
}

// TestHeldWritesJoinOnMySQL: the steps of several instances in one
// pipelined transaction, as a group commit runs them, go to the server as
// one statement of each kind, and a joined write that one row refuses
// fails with ErrConflict and ErrHeldWrite, naming that row.
func TestHeldWritesJoinOnMySQL(t *testing.T) {
	t.Parallel()
	s := newStore(t, reopenMySQL(t, openMySQL(t), true))
	ctx := t.Context()
	t0 := time.Date(2026, 11, 27, 6, 0, 0, 0, time.UTC)
	const n = 4
	var events []store.Event
	for i := range int64(n) {
		_, err := s.InsertProcessInstance(ctx, store.ProcessInstance{ID: 100 + i, DefinitionID: 1, ProcessDefID: "main", State: "Running", CreatedAt: t0, UpdatedAt: t0})
		require.NoError(t, err)
		events = append(events, store.Event{ID: 200 + i, EventID: fmt.Sprint(200 + i), ProcessInstanceID: 100 + i, Kind: "k", CreatedAt: t0, AvailableAt: t0})
	}
	_, err := s.InsertEvents(ctx, events)
	require.NoError(t, err)
	claimed, err := s.ClaimEvents(ctx, store.ClaimEventsParams{Owner: "node-1", Limit: n, Now: t0, LeaseUntil: t0.Add(time.Minute)})
	require.NoError(t, err)
	require.Len(t, claimed, n)

	// step is what the engine writes for one step of instance i.
	step := func(ctx context.Context, tx store.Tx, i, expected int64) error {
		if err := tx.MarkEventsProcessed(ctx, store.MarkEventsProcessedParams{IDs: []int64{200 + i}, ProcessedAt: t0, Owner: "node-1"}); err != nil {
			return err
		}
		if _, err := tx.UpdateProcessInstance(ctx, store.UpdateProcessInstanceParams{ID: 100 + i, ExpectedVersion: expected, FromState: "Running", State: "Running", UpdatedAt: t0}); err != nil {
			return err
		}
		if _, err := tx.InsertActivityInstances(ctx, []store.ActivityInstance{{ID: 300 + i, ProcessInstanceID: 100 + i, ActivityDefID: "A", State: "Initiated", CreatedAt: t0, UpdatedAt: t0}}); err != nil {
			return err
		}
		if _, err := tx.AppendEvents(ctx, []store.Event{{ID: 400 + i, EventID: fmt.Sprint(400 + i), ProcessInstanceID: 100 + i, Kind: "k", CreatedAt: t0, AvailableAt: t0}}); err != nil {
			return err
		}
		return tx.InsertHistory(ctx, []store.HistoryEntry{{ID: 500 + i, ProcessInstanceID: 100 + i, Subject: store.SubjectProcess, ToState: "Running", At: t0}})
	}
	// statements counts the statements of this session by verb.
	statements := func(db *gorm.DB) map[string]int64 {
		rows, err := db.Raw("SHOW SESSION STATUS WHERE Variable_name IN ('Com_insert', 'Com_update')").Rows()
		require.NoError(t, err)
		defer func() { require.NoError(t, rows.Close()) }()
		out := map[string]int64{}
		for rows.Next() {
			var name string
			var v int64
			require.NoError(t, rows.Scan(&name, &v))
			out[name] = v
		}
		require.NoError(t, rows.Err())
		return out
	}

	t.Run("Joined", func(t *testing.T) { //nolint:paralleltest // the steps build on each other
		err := s.InTx(ctx, func(ctx context.Context, tx store.Tx) error {
			db := tx.(*gormstore.Store).DB().WithContext(ctx)
			before := statements(db)
			for i := range int64(n) {
				require.NoError(t, step(ctx, tx, i, 1))
			}
			require.NoError(t, tx.Flush(ctx))
			after := statements(db)
			// One INSERT each for activities, events and history; one
			// UPDATE each for the instances and the marks.
			require.Equal(t, int64(3), after["Com_insert"]-before["Com_insert"])
			require.Equal(t, int64(2), after["Com_update"]-before["Com_update"])
			return nil
		})
		require.NoError(t, err)
		for i := range int64(n) {
			pi, err := s.GetProcessInstance(ctx, 100+i)
			require.NoError(t, err)
			require.Equal(t, int64(2), pi.Version)
			ev, err := s.GetEvent(ctx, 200+i)
			require.NoError(t, err)
			require.NotNil(t, ev.ProcessedAt)
			_, err = s.GetEvent(ctx, 400+i)
			require.NoError(t, err)
			_, err = s.GetActivityInstance(ctx, 300+i)
			require.NoError(t, err)
		}
	})

	t.Run("OneRowRefuses", func(t *testing.T) { //nolint:paralleltest // the steps build on each other
		err := s.InTx(ctx, func(ctx context.Context, tx store.Tx) error {
			for i := range int64(n) {
				expected := int64(2)
				if i == 2 {
					expected = 9 // stale
				}
				_, err := tx.UpdateProcessInstance(ctx, store.UpdateProcessInstanceParams{ID: 100 + i, ExpectedVersion: expected, FromState: "Running", State: "Running", UpdatedAt: t0})
				require.NoError(t, err, "held back")
			}
			return tx.Flush(ctx)
		})
		require.ErrorIs(t, err, store.ErrConflict)
		require.ErrorIs(t, err, store.ErrHeldWrite)
		require.ErrorContains(t, err, "process instance 102: expected version 9, found 2")
		pi, err := s.GetProcessInstance(ctx, 100)
		require.NoError(t, err)
		require.Equal(t, int64(2), pi.Version, "rolled back")
	})
}

// TestHostDBOnAPipelinedTransaction: a host's code in the engine's
// transaction (gormstore.HostDB) sends the held writes before its first
// statement; a refused one fails that statement and the transaction,
// even when the host's code goes on; the host's own failed statement is
// its own and the transaction goes on.
func TestHostDBOnAPipelinedTransaction(t *testing.T) {
	t.Parallel()
	s := newStore(t, reopenMySQL(t, openMySQL(t), true))
	ctx := t.Context()
	t0 := time.Date(2026, 11, 27, 6, 0, 0, 0, time.UTC)
	pi, err := s.InsertProcessInstance(ctx, store.ProcessInstance{ID: 1, DefinitionID: 1, ProcessDefID: "main", State: "Running", CreatedAt: t0, UpdatedAt: t0})
	require.NoError(t, err)
	require.NoError(t, s.DB().Exec("CREATE TABLE host_orders (id BIGINT PRIMARY KEY)").Error)

	t.Run("OwnError", func(t *testing.T) { //nolint:paralleltest // the steps build on each other
		err := s.InTx(ctx, func(ctx context.Context, tx store.Tx) error {
			require.NoError(t, tx.InsertHistory(ctx, []store.HistoryEntry{{ID: 1, ProcessInstanceID: pi.ID, Subject: store.SubjectProcess, ToState: "Running", At: t0}}))
			host, err := gormstore.HostDB(ctx, tx)
			require.NoError(t, err)
			require.NoError(t, host.Exec("INSERT INTO host_orders (id) VALUES (1)").Error)
			err = host.Exec("INSERT INTO host_orders (id) VALUES (1)").Error
			require.Error(t, err, "the host's duplicate")
			require.NotErrorIs(t, err, store.ErrHeldWrite)
			return nil // the host recovers
		})
		require.NoError(t, err)
		var n int64
		require.NoError(t, s.DB().Raw("SELECT COUNT(*) FROM goxpdl_history").Scan(&n).Error)
		require.Equal(t, int64(1), n, "the held write committed")
	})

	t.Run("HeldWriteRefused", func(t *testing.T) { //nolint:paralleltest // the steps build on each other
		err := s.InTx(ctx, func(ctx context.Context, tx store.Tx) error {
			_, err := tx.UpdateProcessInstance(ctx, store.UpdateProcessInstanceParams{ID: pi.ID, ExpectedVersion: 9, State: "Running", FromState: "Running", UpdatedAt: t0})
			require.NoError(t, err, "held back")
			host, err := gormstore.HostDB(ctx, tx)
			require.NoError(t, err)
			err = host.Exec("INSERT INTO host_orders (id) VALUES (2)").Error
			require.ErrorIs(t, err, store.ErrHeldWrite)
			require.ErrorIs(t, err, store.ErrConflict)
			// The host's code ignores it and goes on: it cannot.
			require.ErrorIs(t, host.Exec("INSERT INTO host_orders (id) VALUES (3)").Error, store.ErrConflict)
			require.ErrorIs(t, tx.Flush(ctx), store.ErrConflict)
			require.Error(t, host.Commit().Error, "the host's code cannot commit the engine's transaction")
			return nil // as if the engine had not looked
		})
		require.ErrorIs(t, err, store.ErrConflict, "the commit fails")
		var ids []int64
		require.NoError(t, s.DB().Raw("SELECT id FROM host_orders ORDER BY id").Scan(&ids).Error)
		require.Equal(t, []int64{1}, ids, "nothing of the transaction committed")
	})
}

// TestPipelinedTransactionBegins checks the transactions whose START
// TRANSACTION goes with their first text (begin.go): whatever becomes of
// one, its connection goes back to the pool outside a transaction. The
// pool has one connection, so each check reads the session the
// transaction used.
func TestPipelinedTransactionBegins(t *testing.T) {
	t.Parallel()
	db := reopenMySQL(t, openMySQL(t), true)
	pool, err := db.DB()
	require.NoError(t, err)
	pool.SetMaxOpenConns(1)
	s := newStore(t, db)
	ctx := t.Context()
	t0 := time.Date(2026, 11, 27, 1, 0, 0, 0, time.UTC)
	outside := func(t *testing.T) {
		t.Helper()
		var open int
		require.NoError(t, pool.QueryRowContext(ctx, "SELECT @@in_transaction").Scan(&open))
		require.Zero(t, open, "the session is not left in a transaction")
		require.Zero(t, pool.Stats().InUse, "the connection went back to the pool")
	}
	instance := func(id int64) store.ProcessInstance {
		return store.ProcessInstance{ID: id, DefinitionID: 1, ProcessDefID: "main", State: "Running", CreatedAt: t0, UpdatedAt: t0}
	}
	exists := func(t *testing.T, id int64) bool {
		t.Helper()
		_, err := s.GetProcessInstance(ctx, id)
		if errors.Is(err, store.ErrNotFound) {
			return false
		}
		require.NoError(t, err)
		return true
	}
	refused := errors.New("refused")

	t.Run("nothing sent", func(t *testing.T) { //nolint:paralleltest // one connection
		require.NoError(t, s.InTx(ctx, func(context.Context, store.Tx) error { return nil }))
		outside(t)
		require.ErrorIs(t, s.InTx(ctx, func(context.Context, store.Tx) error { return refused }), refused)
		outside(t)
	})
	t.Run("committed", func(t *testing.T) { //nolint:paralleltest // one connection
		require.NoError(t, s.InTx(ctx, func(ctx context.Context, tx store.Tx) error {
			_, err := tx.InsertProcessInstance(ctx, instance(1))
			return err
		}))
		outside(t)
		require.True(t, exists(t, 1))
	})
	t.Run("rolled back after a held write", func(t *testing.T) { //nolint:paralleltest // one connection
		require.ErrorIs(t, s.InTx(ctx, func(ctx context.Context, tx store.Tx) error {
			if _, err := tx.InsertProcessInstance(ctx, instance(2)); err != nil {
				return err
			}
			return refused
		}), refused)
		outside(t)
		require.False(t, exists(t, 2))
	})
	t.Run("rolled back after a read sent the begin", func(t *testing.T) { //nolint:paralleltest // one connection
		require.ErrorIs(t, s.InTx(ctx, func(ctx context.Context, tx store.Tx) error {
			if _, err := tx.InsertProcessInstance(ctx, instance(3)); err != nil {
				return err
			}
			got, err := tx.GetProcessInstance(ctx, 3)
			require.NoError(t, err)
			require.Equal(t, int64(3), got.ID, "the read sees the held insert")
			return refused
		}), refused)
		outside(t)
		require.False(t, exists(t, 3))
	})
	t.Run("a panic", func(t *testing.T) { //nolint:paralleltest // one connection
		require.Panics(t, func() {
			_ = s.InTx(ctx, func(ctx context.Context, tx store.Tx) error {
				if _, err := tx.GetProcessInstance(ctx, 1); err != nil {
					return err
				}
				_, _ = tx.InsertProcessInstance(ctx, instance(4))
				panic("host code")
			})
		})
		outside(t)
		require.False(t, exists(t, 4))
	})
	t.Run("a commit whose held write fails", func(t *testing.T) { //nolint:paralleltest // one connection
		err := s.InTx(ctx, func(ctx context.Context, tx store.Tx) error {
			_, err := tx.InsertProcessInstance(ctx, instance(5))
			require.NoError(t, err)
			_, err = tx.UpdateProcessInstance(ctx, store.UpdateProcessInstanceParams{ID: 1, ExpectedVersion: 9, State: "Completed", UpdatedAt: t0})
			require.NoError(t, err, "held back")
			return nil
		})
		require.ErrorIs(t, err, store.ErrConflict)
		outside(t)
		require.False(t, exists(t, 5))
	})
}
