package gormstore

import (
	"context"
	"strconv"
	"sync/atomic"

	"github.com/goxpdl/goxpdl/store"
)

// savepoints numbers the savepoints Savepoint sets, so that every name is
// unique in the process and nested savepoints never share one: MySQL
// replaces a savepoint of the same name, SQLite stacks them, and a Store
// built by New over a host's transaction knows nothing of the savepoints
// another Store over it has set.
var savepoints atomic.Uint64

// Savepoint implements store.Tx. Inside a transaction it sets a savepoint
// with raw statements (the same syntax in SQLite and MySQL), since gorm's
// SavePoint and RollbackTo drop the database's errors on some dialects
// and Savepoint's caller must know when the transaction is lost. Over a
// pool, fn runs in a transaction of its own (InTx).
//
// On a pipelined transaction the writes queued before the savepoint
// are sent and checked first (Flush), and ROLLBACK TO SAVEPOINT drops
// those fn queued (pipeline.ExecContext).
func (s *Store) Savepoint(ctx context.Context, fn func(ctx context.Context, tx store.Tx) error) (failed, err error) {
	if !s.inTx() {
		err := s.InTx(ctx, func(ctx context.Context, tx store.Tx) error {
			if failed = fn(ctx, tx); failed == nil {
				failed = tx.Flush(ctx)
			}
			return failed
		})
		if failed != nil {
			return failed, nil
		}
		return nil, err
	}
	if err := s.Flush(ctx); err != nil {
		return nil, err
	}
	name := "goxpdl_sp_" + strconv.FormatUint(savepoints.Add(1), 10)
	if err := s.db.WithContext(ctx).Exec("SAVEPOINT " + name).Error; err != nil {
		return nil, wrap(err, "savepoint")
	}
	// What follows must run whatever became of ctx: fn may have failed
	// because it ended, and the transaction goes on.
	after := s.db.WithContext(context.WithoutCancel(ctx))
	panicked := true
	defer func() {
		if panicked {
			_ = after.Exec("ROLLBACK TO SAVEPOINT " + name).Error // the panic continues; its caller rolls back
		}
	}()
	if failed = fn(ctx, s); failed == nil {
		failed = s.Flush(ctx)
	}
	panicked = false
	if failed != nil {
		if err := after.Exec("ROLLBACK TO SAVEPOINT " + name).Error; err != nil {
			return failed, wrap(err, "roll back to savepoint")
		}
	}
	if err := after.Exec("RELEASE SAVEPOINT " + name).Error; err != nil {
		return failed, wrap(err, "release savepoint")
	}
	return failed, nil
}
