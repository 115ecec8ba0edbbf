package gormstore

import (
	"context"
	"fmt"

	"github.com/goxpdl/goxpdl/store"
)

// idCounter names the IDs of the activity instances one SQLite
// transaction inserts, before it inserts them. SQLite has one writer: the
// transaction that writes holds the database's only write lock, so the
// next IDs are those after the largest the table ever handed out
// (AUTOINCREMENT keeps it in sqlite_sequence), and a transaction that
// read it and then lost the lock to another writer cannot commit (its
// snapshot is stale), so two transactions never insert one ID.
//
// The engine uses it to give an activity its ID when the activity is
// created, so that the row is written once, in its final state, when the
// transaction ends, instead of being inserted before its application
// call (whose idempotency key names the ID) and updated after it.
//
// One counter serves a transaction and the savepoints nested in it; IDs
// of a savepoint rolled back are gaps.
type idCounter struct {
	next int64 // 0 until read from the database
}

// ReserveActivityInstanceIDs implements store.Tx.
func (s *Store) ReserveActivityInstanceIDs(ctx context.Context, n int) (int64, error) {
	if s.dialect != store.DialectSQLite {
		return 0, fmt.Errorf("reserve activity instance ids on %s: %w", s.dialect, store.ErrNotSupported)
	}
	if n < 1 {
		return 0, fmt.Errorf("gormstore: reserve %d activity instance ids: want at least 1", n)
	}
	if !s.inTx() {
		return 0, fmt.Errorf("gormstore: reserve activity instance ids outside a transaction: %w", store.ErrNotSupported)
	}
	return s.reserveIDs(ctx, n)
}

// reserveIDs hands out n IDs of the transaction's counter (SQLite).
func (s *Store) reserveIDs(ctx context.Context, n int) (int64, error) {
	ids := s.ids
	if ids == nil {
		ids = &idCounter{} // a Store over a transaction it did not begin
		s.ids = ids
	}
	if ids.next == 0 {
		// The larger of the AUTOINCREMENT high-water mark and the
		// largest ID (a table made without AUTOINCREMENT has no
		// sqlite_sequence row).
		row := s.db.Statement.ConnPool.QueryRowContext(ctx,
			"SELECT MAX(COALESCE((SELECT `seq` FROM `sqlite_sequence` WHERE `name` = ?), 0), "+
				"COALESCE((SELECT MAX(`id`) FROM `"+tableActivityInstances+"`), 0))", tableActivityInstances)
		var last int64
		if err := row.Scan(&last); err != nil {
			return 0, wrap(err, "reserve activity instance ids")
		}
		ids.next = last + 1
	}
	first := ids.next
	ids.next += int64(n)
	return first, nil
}
