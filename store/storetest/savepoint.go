package storetest

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/goxpdl/goxpdl/store"
)

// historyMark appends a history entry saying what: a write a store may
// hold back, for the savepoint tests.
func historyMark(ctx context.Context, tx store.Tx, piID int64, what string) error {
	return tx.InsertHistory(ctx, []store.HistoryEntry{{ID: nextID(), ProcessInstanceID: piID, Subject: store.SubjectProcess, ToState: what, At: t0}})
}

// historyMarks lists what the history entries of historyMark say, in
// order.
func historyMarks(t *testing.T, ctx context.Context, tx store.Tx, piID int64) []string {
	t.Helper()
	hist, err := tx.ListHistory(ctx, store.ListHistoryParams{ProcessInstanceID: piID})
	require.NoError(t, err)
	out := []string{}
	for _, e := range hist {
		out = append(out, e.ToState)
	}
	return out
}

// testSavepoint checks Tx.Savepoint: fn's writes stay when it succeeds
// and go when it fails, the transaction goes on either way, fn's
// held-back writes are fn's, savepoints nest, a panic takes fn's writes
// with it, and outside a transaction fn gets one of its own.
func (h *harness) testSavepoint(t *testing.T) {
	errBoom := errors.New("boom")
	mark, marks := historyMark, historyMarks
	// suspend moves the instance from Running (version 1) to Suspended:
	// a versioned write.
	suspend := func(ctx context.Context, tx store.Tx, piID int64) error {
		_, err := tx.UpdateProcessInstance(ctx, store.UpdateProcessInstanceParams{
			ID: piID, ExpectedVersion: 1, FromState: "Running", State: "Suspended", UpdatedAt: at(time.Second)})
		return err
	}

	t.Run("KeepsWhatSucceeded", func(t *testing.T) {
		b := h.setup(t)
		pi := newProcessInstance(t, b, 1)
		require.NoError(t, b.s.InTx(b.ctx, func(ctx context.Context, tx store.Tx) error {
			require.NoError(t, mark(ctx, tx, pi.ID, "before"))
			failed, err := tx.Savepoint(ctx, func(ctx context.Context, tx store.Tx) error {
				if err := mark(ctx, tx, pi.ID, "inside"); err != nil {
					return err
				}
				return suspend(ctx, tx, pi.ID)
			})
			require.NoError(t, err)
			require.NoError(t, failed)
			require.Equal(t, []string{"before", "inside"}, marks(t, ctx, tx, pi.ID))
			return mark(ctx, tx, pi.ID, "after")
		}))
		require.Equal(t, []string{"before", "inside", "after"}, marks(t, b.ctx, b.s, pi.ID))
		got, err := b.s.GetProcessInstance(b.ctx, pi.ID)
		require.NoError(t, err)
		require.Equal(t, "Suspended", got.State)
	})

	t.Run("RollsBackWhatFailed", func(t *testing.T) {
		b := h.setup(t)
		pi := newProcessInstance(t, b, 1)
		ctx, cancel := context.WithCancel(b.ctx)
		defer cancel()
		require.NoError(t, b.s.InTx(b.ctx, func(txCtx context.Context, tx store.Tx) error {
			require.NoError(t, mark(txCtx, tx, pi.ID, "before"))
			failed, err := tx.Savepoint(txCtx, func(ctx context.Context, tx store.Tx) error {
				if err := mark(ctx, tx, pi.ID, "inside"); err != nil {
					return err
				}
				if err := suspend(ctx, tx, pi.ID); err != nil {
					return err
				}
				_, err := tx.InsertEvents(ctx, []store.Event{event("inside", pi.ID)})
				return err
			})
			require.NoError(t, failed)
			require.NoError(t, err)
			// The same, failing; and its context ends before it returns.
			failed, err = tx.Savepoint(ctx, func(ctx context.Context, tx store.Tx) error {
				require.NoError(t, mark(ctx, tx, pi.ID, "rolled back"))
				_, err := tx.UpdateProcessInstance(ctx, store.UpdateProcessInstanceParams{
					ID: pi.ID, ExpectedVersion: 2, FromState: "Suspended", State: "Running", UpdatedAt: at(2 * time.Second)})
				require.NoError(t, err)
				_, err = tx.InsertEvents(ctx, []store.Event{event("rolled back", pi.ID)})
				require.NoError(t, err)
				cancel()
				return errBoom
			})
			require.NoError(t, err, "the rollback to the savepoint runs after its context ended")
			require.ErrorIs(t, failed, errBoom)
			require.Same(t, errBoom, failed, "fn's error comes back unchanged")

			// The transaction goes on, without the failed part.
			require.Equal(t, []string{"before", "inside"}, marks(t, txCtx, tx, pi.ID))
			got, err := tx.GetProcessInstance(txCtx, pi.ID)
			require.NoError(t, err)
			require.Equal(t, "Suspended", got.State)
			require.Equal(t, int64(2), got.Version)
			return mark(txCtx, tx, pi.ID, "after")
		}))
		require.Equal(t, []string{"before", "inside", "after"}, marks(t, b.ctx, b.s, pi.ID))
		got, err := b.s.GetProcessInstance(b.ctx, pi.ID)
		require.NoError(t, err)
		require.Equal(t, "Suspended", got.State)
		evs, err := b.s.ClaimEvents(b.ctx, store.ClaimEventsParams{Owner: "o", Now: at(time.Hour), LeaseUntil: at(2 * time.Hour), Limit: 10})
		require.NoError(t, err)
		require.Equal(t, []string{"inside"}, eventIDs(evs))
	})

	t.Run("HeldBackWritesAreFns", func(t *testing.T) {
		b := h.setup(t)
		pi := newProcessInstance(t, b, 1)
		require.NoError(t, b.s.InTx(b.ctx, func(ctx context.Context, tx store.Tx) error {
			failed, err := tx.Savepoint(ctx, func(ctx context.Context, tx store.Tx) error {
				if err := mark(ctx, tx, pi.ID, "rolled back"); err != nil {
					return err
				}
				// A conflict a store may hold back: fn returns nil, and
				// Savepoint finds it out before the savepoint ends.
				_, err := tx.UpdateProcessInstance(ctx, store.UpdateProcessInstanceParams{
					ID: pi.ID, ExpectedVersion: 7, FromState: "Running", State: "Suspended", UpdatedAt: at(time.Second)})
				return err
			})
			require.NoError(t, err)
			require.ErrorIs(t, failed, store.ErrConflict)
			require.Empty(t, marks(t, ctx, tx, pi.ID))
			return mark(ctx, tx, pi.ID, "after")
		}))
		require.Equal(t, []string{"after"}, marks(t, b.ctx, b.s, pi.ID))
	})

	t.Run("HeldBackWritesBeforeAreNotFns", func(t *testing.T) {
		b := h.setup(t)
		pi := newProcessInstance(t, b, 1)
		ran := false
		err := b.s.InTx(b.ctx, func(ctx context.Context, tx store.Tx) error {
			_, err := tx.UpdateProcessInstance(ctx, store.UpdateProcessInstanceParams{
				ID: pi.ID, ExpectedVersion: 7, FromState: "Running", State: "Suspended", UpdatedAt: at(time.Second)})
			if err != nil {
				return err // a store that does not hold writes back
			}
			failed, err := tx.Savepoint(ctx, func(context.Context, store.Tx) error {
				ran = true
				return nil
			})
			require.NoError(t, failed)
			return err
		})
		require.ErrorIs(t, err, store.ErrConflict)
		require.False(t, ran, "fn does not run after the writes before it failed")
	})

	t.Run("Nested", func(t *testing.T) {
		b := h.setup(t)
		pi := newProcessInstance(t, b, 1)
		require.NoError(t, b.s.InTx(b.ctx, func(ctx context.Context, tx store.Tx) error {
			failed, err := tx.Savepoint(ctx, func(ctx context.Context, tx store.Tx) error {
				require.NoError(t, mark(ctx, tx, pi.ID, "outer"))
				for _, what := range []string{"inner ok", "inner failed", "inner ok again"} {
					failed, err := tx.Savepoint(ctx, func(ctx context.Context, tx store.Tx) error {
						require.NoError(t, mark(ctx, tx, pi.ID, what))
						if what == "inner failed" {
							return errBoom
						}
						return nil
					})
					require.NoError(t, err)
					if what == "inner failed" {
						require.ErrorIs(t, failed, errBoom)
					} else {
						require.NoError(t, failed)
					}
				}
				return mark(ctx, tx, pi.ID, "outer end")
			})
			require.NoError(t, err)
			require.NoError(t, failed)
			// A failed outer savepoint takes its inner ones with it.
			failed, err = tx.Savepoint(ctx, func(ctx context.Context, tx store.Tx) error {
				require.NoError(t, mark(ctx, tx, pi.ID, "second outer"))
				failed, err := tx.Savepoint(ctx, func(ctx context.Context, tx store.Tx) error {
					return mark(ctx, tx, pi.ID, "second inner")
				})
				require.NoError(t, errors.Join(failed, err))
				return errBoom
			})
			require.NoError(t, err)
			require.ErrorIs(t, failed, errBoom)
			return nil
		}))
		require.Equal(t, []string{"outer", "inner ok", "inner ok again", "outer end"}, marks(t, b.ctx, b.s, pi.ID))
	})

	t.Run("Panic", func(t *testing.T) {
		b := h.setup(t)
		pi := newProcessInstance(t, b, 1)
		require.NoError(t, b.s.InTx(b.ctx, func(ctx context.Context, tx store.Tx) error {
			require.NoError(t, mark(ctx, tx, pi.ID, "before"))
			require.PanicsWithValue(t, "bug", func() {
				_, _ = tx.Savepoint(ctx, func(ctx context.Context, tx store.Tx) error {
					require.NoError(t, mark(ctx, tx, pi.ID, "rolled back"))
					require.NoError(t, suspend(ctx, tx, pi.ID))
					panic("bug")
				})
			})
			require.Equal(t, []string{"before"}, marks(t, ctx, tx, pi.ID))
			return mark(ctx, tx, pi.ID, "after")
		}))
		require.Equal(t, []string{"before", "after"}, marks(t, b.ctx, b.s, pi.ID))
		got, err := b.s.GetProcessInstance(b.ctx, pi.ID)
		require.NoError(t, err)
		require.Equal(t, "Running", got.State)
	})

	t.Run("OutsideATransaction", func(t *testing.T) {
		b := h.setup(t)
		pi := newProcessInstance(t, b, 1)
		failed, err := b.s.Savepoint(b.ctx, func(ctx context.Context, tx store.Tx) error {
			require.NoError(t, mark(ctx, tx, pi.ID, "rolled back"))
			require.NoError(t, suspend(ctx, tx, pi.ID))
			return errBoom
		})
		require.NoError(t, err)
		require.Same(t, errBoom, failed)
		require.Empty(t, marks(t, b.ctx, b.s, pi.ID))

		failed, err = b.s.Savepoint(b.ctx, func(ctx context.Context, tx store.Tx) error {
			if err := mark(ctx, tx, pi.ID, "kept"); err != nil {
				return err
			}
			return suspend(ctx, tx, pi.ID)
		})
		require.NoError(t, errors.Join(failed, err))
		require.Equal(t, []string{"kept"}, marks(t, b.ctx, b.s, pi.ID))
		got, err := b.s.GetProcessInstance(b.ctx, pi.ID)
		require.NoError(t, err)
		require.Equal(t, "Suspended", got.State)
	})
}

// testDatabaseFile checks Store.DatabaseFile: a SQLite database is a
// file that exists, or in memory; a MySQL server has none.
func (h *harness) testDatabaseFile(t *testing.T) {
	b := h.setup(t)
	file, err := b.s.DatabaseFile(b.ctx)
	require.NoError(t, err)
	if b.s.Capabilities().Dialect != store.DialectSQLite {
		require.Empty(t, file)
		return
	}
	if file == "" {
		return // in memory
	}
	require.True(t, filepath.IsAbs(file), "the file %q is a full path", file)
	_, err = os.Stat(file)
	require.NoError(t, err)
}
