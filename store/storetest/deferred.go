package storetest

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/goxpdl/goxpdl/store"
)

// testDeferredSavepoint checks Tx.DeferredSavepoint: fn's writes stay
// when it succeeds and go when it fails, whether or not any of them was
// sent before it failed; deferred and checked savepoints nest in each
// other; a held write that fails after fn ended fails the transaction,
// and a text sent across a standing mark that fails dooms it.
func (h *harness) testDeferredSavepoint(t *testing.T) {
	errBoom := errors.New("boom")
	mark, marks := historyMark, historyMarks
	// move is a versioned write of the instance from one state to
	// another, expecting version.
	move := func(ctx context.Context, tx store.Tx, piID, version int64, from, to string) error {
		_, err := tx.UpdateProcessInstance(ctx, store.UpdateProcessInstanceParams{
			ID: piID, ExpectedVersion: version, FromState: from, State: to, UpdatedAt: at(time.Duration(version) * time.Second)})
		return err
	}
	state := func(t *testing.T, b bundle, piID int64) (string, int64) {
		t.Helper()
		got, err := b.s.GetProcessInstance(b.ctx, piID)
		require.NoError(t, err)
		return got.State, got.Version
	}

	t.Run("StepsInARow", func(t *testing.T) {
		// What a chain does: steps one after another, each in a deferred
		// savepoint, one of them failing; their writes of a kind join.
		b := h.setup(t)
		pi := newProcessInstance(t, b, 1)
		require.NoError(t, b.s.InTx(b.ctx, func(ctx context.Context, tx store.Tx) error {
			require.NoError(t, mark(ctx, tx, pi.ID, "before"))
			steps := []struct {
				name     string
				from, to string
				fail     bool
			}{
				{"a", "Running", "Suspended", false},
				{"b", "Suspended", "Running", true},
				{"c", "Suspended", "Running", false},
				{"d", "Running", "Suspended", false},
			}
			version := int64(1)
			for _, s := range steps {
				failed, err := tx.DeferredSavepoint(ctx, func(ctx context.Context, tx store.Tx) error {
					if err := mark(ctx, tx, pi.ID, s.name); err != nil {
						return err
					}
					if err := move(ctx, tx, pi.ID, version, s.from, s.to); err != nil {
						return err
					}
					if s.fail {
						return errBoom
					}
					return nil
				})
				require.NoError(t, err)
				if s.fail {
					require.Same(t, errBoom, failed)
					continue
				}
				require.NoError(t, failed)
				version++
			}
			return mark(ctx, tx, pi.ID, "after")
		}))
		require.Equal(t, []string{"before", "a", "c", "d", "after"}, marks(t, b.ctx, b.s, pi.ID))
		st, v := state(t, b, pi.ID)
		require.Equal(t, "Suspended", st)
		require.Equal(t, int64(4), v)
	})

	t.Run("FailsAfterSending", func(t *testing.T) {
		// fn reads, which sends its writes (and the savepoint) before it
		// fails: the rollback is the database's.
		b := h.setup(t)
		pi := newProcessInstance(t, b, 1)
		require.NoError(t, b.s.InTx(b.ctx, func(ctx context.Context, tx store.Tx) error {
			failed, err := tx.DeferredSavepoint(ctx, func(ctx context.Context, tx store.Tx) error {
				return mark(ctx, tx, pi.ID, "kept")
			})
			require.NoError(t, errors.Join(failed, err))
			failed, err = tx.DeferredSavepoint(ctx, func(ctx context.Context, tx store.Tx) error {
				require.NoError(t, mark(ctx, tx, pi.ID, "sent, then rolled back"))
				require.NoError(t, move(ctx, tx, pi.ID, 1, "Running", "Suspended"))
				require.Equal(t, []string{"kept", "sent, then rolled back"}, marks(t, ctx, tx, pi.ID))
				require.NoError(t, mark(ctx, tx, pi.ID, "held, then dropped"))
				return errBoom
			})
			require.NoError(t, err)
			require.Same(t, errBoom, failed)
			require.Equal(t, []string{"kept"}, marks(t, ctx, tx, pi.ID))
			return mark(ctx, tx, pi.ID, "after")
		}))
		require.Equal(t, []string{"kept", "after"}, marks(t, b.ctx, b.s, pi.ID))
		st, v := state(t, b, pi.ID)
		require.Equal(t, "Running", st)
		require.Equal(t, int64(1), v)
	})

	t.Run("NestedWithCheckedSavepoints", func(t *testing.T) {
		b := h.setup(t)
		pi := newProcessInstance(t, b, 1)
		require.NoError(t, b.s.InTx(b.ctx, func(ctx context.Context, tx store.Tx) error {
			failed, err := tx.DeferredSavepoint(ctx, func(ctx context.Context, tx store.Tx) error {
				require.NoError(t, mark(ctx, tx, pi.ID, "outer"))
				inner := []struct {
					what     string
					deferred bool
					fail     bool
				}{
					{"deferred ok", true, false},
					{"deferred failed", true, true},
					{"checked ok", false, false},
					{"checked failed", false, true},
					{"deferred ok again", true, false},
				}
				for _, in := range inner {
					savepoint := tx.Savepoint
					if in.deferred {
						savepoint = tx.DeferredSavepoint
					}
					failed, err := savepoint(ctx, func(ctx context.Context, tx store.Tx) error {
						require.NoError(t, mark(ctx, tx, pi.ID, in.what))
						if in.fail {
							return errBoom
						}
						return nil
					})
					require.NoError(t, err)
					if in.fail {
						require.Same(t, errBoom, failed)
					} else {
						require.NoError(t, failed)
					}
				}
				return mark(ctx, tx, pi.ID, "outer end")
			})
			require.NoError(t, errors.Join(failed, err))
			// A failed deferred savepoint takes its inner ones with it,
			// deferred or checked.
			failed, err = tx.DeferredSavepoint(ctx, func(ctx context.Context, tx store.Tx) error {
				require.NoError(t, mark(ctx, tx, pi.ID, "second outer"))
				failed, err := tx.DeferredSavepoint(ctx, func(ctx context.Context, tx store.Tx) error {
					return mark(ctx, tx, pi.ID, "second inner, deferred")
				})
				require.NoError(t, errors.Join(failed, err))
				failed, err = tx.Savepoint(ctx, func(ctx context.Context, tx store.Tx) error {
					return mark(ctx, tx, pi.ID, "second inner, checked")
				})
				require.NoError(t, errors.Join(failed, err))
				return errBoom
			})
			require.NoError(t, err)
			require.Same(t, errBoom, failed)
			// And a deferred savepoint inside a checked one that fails.
			failed, err = tx.Savepoint(ctx, func(ctx context.Context, tx store.Tx) error {
				failed, err := tx.DeferredSavepoint(ctx, func(ctx context.Context, tx store.Tx) error {
					return mark(ctx, tx, pi.ID, "third inner, deferred")
				})
				require.NoError(t, errors.Join(failed, err))
				return errBoom
			})
			require.NoError(t, err)
			require.Same(t, errBoom, failed)
			return nil
		}))
		require.Equal(t, []string{"outer", "deferred ok", "checked ok", "deferred ok again", "outer end"}, marks(t, b.ctx, b.s, pi.ID))
	})

	t.Run("MarkOnAnEmptyQueue", func(t *testing.T) {
		// Nothing is held when the deferred savepoint is set, and the
		// first statement inside it is another savepoint's or a read:
		// the deferred one must still reach the database first.
		b := h.setup(t)
		pi := newProcessInstance(t, b, 1)
		require.NoError(t, b.s.InTx(b.ctx, func(ctx context.Context, tx store.Tx) error {
			require.NoError(t, tx.Flush(ctx))
			failed, err := tx.DeferredSavepoint(ctx, func(ctx context.Context, tx store.Tx) error {
				failed, err := tx.Savepoint(ctx, func(ctx context.Context, tx store.Tx) error {
					if err := mark(ctx, tx, pi.ID, "inner, checked"); err != nil {
						return err
					}
					return move(ctx, tx, pi.ID, 1, "Running", "Suspended")
				})
				require.NoError(t, errors.Join(failed, err))
				return errBoom
			})
			require.NoError(t, err)
			require.Same(t, errBoom, failed)
			require.Empty(t, marks(t, ctx, tx, pi.ID))

			failed, err = tx.DeferredSavepoint(ctx, func(ctx context.Context, tx store.Tx) error {
				require.Empty(t, marks(t, ctx, tx, pi.ID))
				require.NoError(t, mark(ctx, tx, pi.ID, "after a read"))
				require.Equal(t, []string{"after a read"}, marks(t, ctx, tx, pi.ID))
				return errBoom
			})
			require.NoError(t, err)
			require.Same(t, errBoom, failed)
			return mark(ctx, tx, pi.ID, "after")
		}))
		require.Equal(t, []string{"after"}, marks(t, b.ctx, b.s, pi.ID))
		st, v := state(t, b, pi.ID)
		require.Equal(t, "Running", st)
		require.Equal(t, int64(1), v)
	})

	t.Run("HeldWriteFailsTheCommit", func(t *testing.T) {
		b := h.setup(t)
		pi := newProcessInstance(t, b, 1)
		err := b.s.InTx(b.ctx, func(ctx context.Context, tx store.Tx) error {
			require.NoError(t, mark(ctx, tx, pi.ID, "before"))
			failed, err := tx.DeferredSavepoint(ctx, func(ctx context.Context, tx store.Tx) error {
				if err := mark(ctx, tx, pi.ID, "inside"); err != nil {
					return err
				}
				return move(ctx, tx, pi.ID, 7, "Running", "Suspended") // a conflict
			})
			require.NoError(t, err)
			if failed != nil {
				// A store that holds nothing back: fn saw its conflict.
				require.ErrorIs(t, failed, store.ErrConflict)
				return failed
			}
			return mark(ctx, tx, pi.ID, "after")
		})
		require.ErrorIs(t, err, store.ErrConflict)
		require.Empty(t, marks(t, b.ctx, b.s, pi.ID), "nothing of the transaction is committed")
	})

	t.Run("FailureAcrossAMarkDooms", func(t *testing.T) {
		b := h.setup(t)
		pi := newProcessInstance(t, b, 1)
		var rollbackErr error
		err := b.s.InTx(b.ctx, func(ctx context.Context, tx store.Tx) error {
			failed, err := tx.DeferredSavepoint(ctx, func(ctx context.Context, tx store.Tx) error {
				return move(ctx, tx, pi.ID, 7, "Running", "Suspended") // a conflict, held
			})
			require.NoError(t, err)
			if failed != nil {
				require.ErrorIs(t, failed, store.ErrConflict)
				return failed
			}
			// The next step reads: the text carries the first step's
			// write, and fails; the rollback to the second step's mark
			// cannot undo the first's, so the transaction is doomed.
			failed, rollbackErr = tx.DeferredSavepoint(ctx, func(ctx context.Context, tx store.Tx) error {
				require.NoError(t, mark(ctx, tx, pi.ID, "second"))
				_, err := tx.ListHistory(ctx, store.ListHistoryParams{ProcessInstanceID: pi.ID})
				return err
			})
			require.ErrorIs(t, failed, store.ErrConflict)
			require.ErrorIs(t, rollbackErr, store.ErrHeldWrite)
			// Whatever the caller does next fails too.
			_, err = tx.ListHistory(ctx, store.ListHistoryParams{ProcessInstanceID: pi.ID})
			require.ErrorIs(t, err, store.ErrHeldWrite)
			failed, err = tx.DeferredSavepoint(ctx, func(context.Context, store.Tx) error {
				t.Error("a deferred savepoint runs nothing in a doomed transaction")
				return nil
			})
			require.NoError(t, failed)
			require.ErrorIs(t, err, store.ErrHeldWrite)
			return nil // and the commit fails
		})
		require.ErrorIs(t, err, store.ErrConflict)
		require.Empty(t, marks(t, b.ctx, b.s, pi.ID))
		st, _ := state(t, b, pi.ID)
		require.Equal(t, "Running", st)
	})

	t.Run("Panic", func(t *testing.T) {
		b := h.setup(t)
		pi := newProcessInstance(t, b, 1)
		require.NoError(t, b.s.InTx(b.ctx, func(ctx context.Context, tx store.Tx) error {
			require.NoError(t, mark(ctx, tx, pi.ID, "before"))
			require.PanicsWithValue(t, "bug", func() {
				_, _ = tx.DeferredSavepoint(ctx, func(ctx context.Context, tx store.Tx) error {
					require.NoError(t, mark(ctx, tx, pi.ID, "rolled back"))
					require.NoError(t, move(ctx, tx, pi.ID, 1, "Running", "Suspended"))
					panic("bug")
				})
			})
			require.Equal(t, []string{"before"}, marks(t, ctx, tx, pi.ID))
			return mark(ctx, tx, pi.ID, "after")
		}))
		require.Equal(t, []string{"before", "after"}, marks(t, b.ctx, b.s, pi.ID))
		st, _ := state(t, b, pi.ID)
		require.Equal(t, "Running", st)
	})

	t.Run("OutsideATransaction", func(t *testing.T) {
		b := h.setup(t)
		pi := newProcessInstance(t, b, 1)
		failed, err := b.s.DeferredSavepoint(b.ctx, func(ctx context.Context, tx store.Tx) error {
			require.NoError(t, mark(ctx, tx, pi.ID, "rolled back"))
			return errBoom
		})
		require.NoError(t, err)
		require.Same(t, errBoom, failed)
		failed, err = b.s.DeferredSavepoint(b.ctx, func(ctx context.Context, tx store.Tx) error {
			return mark(ctx, tx, pi.ID, "kept")
		})
		require.NoError(t, errors.Join(failed, err))
		require.Equal(t, []string{"kept"}, marks(t, b.ctx, b.s, pi.ID))
	})
}
