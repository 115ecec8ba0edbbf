package gormstore

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"golang.org/x/sync/errgroup"

	"github.com/goxpdl/goxpdl/store"
)

// Transactions of one SQLite file queue in the process instead of in
// SQLite's busy handler: a transaction that holds the write lock for
// longer than busy_timeout makes the others wait, not fail with
// SQLITE_BUSY.
func TestWriteGateOutlastsTheBusyTimeout(t *testing.T) {
	t.Parallel()
	db, err := openSQLite(filepath.Join(t.TempDir(), "gate.db"), 20*time.Millisecond, OpenOpts{})
	require.NoError(t, err)
	t.Cleanup(func() { closeGorm(db) })
	s, err := New(db)
	require.NoError(t, err)
	require.NoError(t, s.Migrate(t.Context()))
	require.NotNil(t, s.gate)
	other, err := New(db)
	require.NoError(t, err)
	require.Equal(t, s.gate, other.gate, "one gate per pool")

	ctx := t.Context()
	held := make(chan struct{})
	var g errgroup.Group
	g.Go(func() error {
		return s.InTx(ctx, func(ctx context.Context, tx store.Tx) error {
			require.Nil(t, tx.(*Store).gate, "a transaction's Store has no gate")
			if _, err := tx.InsertEvents(ctx, []store.Event{{ID: 1000, EventID: "holder", Kind: "k", CreatedAt: gateEpoch, AvailableAt: gateEpoch}}); err != nil {
				return err
			}
			close(held)
			// SQLite's busy timeout runs on real time: hold the lock across ten of them.
			<-time.After(200 * time.Millisecond) //nolint:forbidigo // see above
			return nil
		})
	})
	<-held
	for i := range 3 {
		g.Go(func() error {
			return other.InTx(ctx, func(ctx context.Context, tx store.Tx) error {
				_, err := tx.InsertEvents(ctx, []store.Event{{ID: int64(i + 1), EventID: string(rune('a' + i)), Kind: "k", CreatedAt: gateEpoch, AvailableAt: gateEpoch}})
				return err
			})
		})
	}
	require.NoError(t, g.Wait())
	n, _, err := s.CountUnprocessedEvents(ctx, gateEpoch)
	require.NoError(t, err)
	require.Equal(t, int64(4), n)

	// A waiter whose ctx ends gives up without touching the database.
	require.NoError(t, s.gate.enter(ctx))
	cancelled, cancel := context.WithCancel(ctx)
	cancel()
	err = other.InTx(cancelled, func(context.Context, store.Tx) error { return nil })
	require.ErrorIs(t, err, context.Canceled)
	s.gate.leave()
}

func TestWriteGateOnlyForSQLiteFiles(t *testing.T) {
	t.Parallel()
	db, err := OpenSQLite(MemoryPath)
	require.NoError(t, err)
	t.Cleanup(func() { closeGorm(db) })
	s, err := New(db)
	require.NoError(t, err)
	require.Nil(t, s.gate, "an in-memory database has one connection already")
}

var gateEpoch = time.Date(2026, 11, 23, 9, 0, 0, 0, time.UTC)
