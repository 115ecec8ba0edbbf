package gormstore

import (
	"context"
	"errors"
	"time"

	"gorm.io/gorm"
	"gorm.io/gorm/clause"

	"github.com/goxpdl/goxpdl/store"
)

// Tables of the business-key locks.
const (
	tableLocks    = "goxpdl_locks"
	tableLockKeys = "goxpdl_lock_keys"
)

// lockModel is a business-key lock. Held is true for the holder and
// NULL for a waiting start, so that the unique index on (scope_key,
// business_key, held) admits one holder per scope and key, on every
// node, and any number of waiters.
type lockModel struct {
	ID                int64      `gorm:"column:id;primaryKey;autoIncrement:false"`
	ScopeKey          string     `gorm:"column:scope_key;size:255;not null;uniqueIndex:goxpdl_locks_held,priority:1"`
	BusinessKey       string     `gorm:"column:business_key;size:255;not null;uniqueIndex:goxpdl_locks_held,priority:2;index:goxpdl_locks_key"`
	Held              *bool      `gorm:"column:held;uniqueIndex:goxpdl_locks_held,priority:3"`
	ProcessInstanceID int64      `gorm:"column:process_instance_id;not null;index:goxpdl_locks_process"`
	CreatedAt         time.Time  `gorm:"column:created_at;not null;precision:6;autoCreateTime:false"`
	HeldSince         *time.Time `gorm:"column:held_since;precision:6"`
}

func (lockModel) TableName() string { return tableLocks }

func (m lockModel) row() store.Lock {
	return store.Lock{
		ID: m.ID, ScopeKey: m.ScopeKey, BusinessKey: m.BusinessKey, ProcessInstanceID: m.ProcessInstanceID,
		Held: m.Held != nil && *m.Held, CreatedAt: rowTime(m.CreatedAt), HeldSince: rowTimePtr(m.HeldSince),
	}
}

// lockKeyModel is one row per business key ever locked: the row that
// LocksForUpdate writes, whose row lock (MySQL) or the database's write
// lock (SQLite) serialises the changes of that key's locks.
type lockKeyModel struct {
	BusinessKey string `gorm:"column:business_key;primaryKey;size:255"`
	Seq         int64  `gorm:"column:seq;not null"`
}

func (lockKeyModel) TableName() string { return tableLockKeys }

// LocksForUpdate implements store.Tx: an upsert of the key's row (which
// takes its row lock on MySQL and the write lock on SQLite, held to the
// end of the transaction), then a read of its locks.
func (s *Store) LocksForUpdate(ctx context.Context, businessKey string) ([]store.Lock, error) {
	if businessKey == "" {
		return nil, errors.New("locks for update: no business key")
	}
	var out []store.Lock
	err := s.atomic(ctx, func(db *gorm.DB) error {
		err := db.Clauses(clause.OnConflict{
			Columns:   []clause.Column{{Name: "business_key"}},
			DoUpdates: clause.Assignments(map[string]any{"seq": gorm.Expr(tableLockKeys + ".seq + 1")}), // qualified: PostgreSQL finds "seq" ambiguous with excluded.seq
		}).Create(&lockKeyModel{BusinessKey: businessKey, Seq: 1}).Error
		if err != nil {
			return err
		}
		var ms []lockModel
		if err := db.Where("business_key = ?", businessKey).Order("id").Find(&ms).Error; err != nil {
			return err
		}
		out = make([]store.Lock, len(ms))
		for i := range ms {
			out[i] = ms[i].row()
		}
		return nil
	})
	if err != nil {
		return nil, wrap(err, "locks for update of %q", businessKey)
	}
	return out, nil
}

// InsertLock implements store.Tx.
func (s *Store) InsertLock(ctx context.Context, lock store.Lock) (store.Lock, error) {
	switch {
	case lock.ScopeKey == "" || lock.BusinessKey == "":
		return store.Lock{}, errors.New("insert lock: no scope or business key")
	case lock.ProcessInstanceID == 0:
		return store.Lock{}, errors.New("insert lock: no process instance")
	}
	if err := errors.Join(
		requireID("insert lock", lock.ID),
		requireTime("insert lock: created at", lock.CreatedAt),
	); err != nil {
		return store.Lock{}, err
	}
	done, err := s.writing(ctx)
	if err != nil {
		return store.Lock{}, err
	}
	defer done()
	m := lockModel{
		ID: lock.ID, ScopeKey: lock.ScopeKey, BusinessKey: lock.BusinessKey, ProcessInstanceID: lock.ProcessInstanceID,
		CreatedAt: dbTime(lock.CreatedAt),
	}
	if lock.Held {
		held := true
		since := lock.CreatedAt
		if lock.HeldSince != nil {
			since = *lock.HeldSince
		}
		m.Held, m.HeldSince = &held, dbTimePtr(&since)
	}
	if err := s.db.WithContext(ctx).Create(&m).Error; err != nil {
		return store.Lock{}, wrap(err, "insert lock %s/%s of process instance %d", lock.ScopeKey, lock.BusinessKey, lock.ProcessInstanceID)
	}
	return m.row(), nil
}

// GrantLock implements store.Tx.
func (s *Store) GrantLock(ctx context.Context, id int64, at time.Time) error {
	if err := requireTime("grant lock: at", at); err != nil {
		return err
	}
	done, err := s.writing(ctx)
	if err != nil {
		return err
	}
	defer done()
	res := s.db.WithContext(ctx).Model(&lockModel{}).Where("id = ? AND held IS NULL", id).
		Updates(map[string]any{"held": true, "held_since": dbTime(at)})
	if res.Error != nil {
		return wrap(res.Error, "grant lock %d", id)
	}
	if res.RowsAffected == 0 {
		return wrap(gorm.ErrRecordNotFound, "grant lock %d", id)
	}
	return nil
}

// DeleteLocks implements store.Tx.
func (s *Store) DeleteLocks(ctx context.Context, params store.DeleteLocksParams) (int64, error) {
	if len(params.IDs) == 0 && params.ProcessInstanceID == 0 {
		return 0, errors.New("delete locks: no ids and no process instance")
	}
	done, err := s.writing(ctx)
	if err != nil {
		return 0, err
	}
	defer done()
	q := s.db.WithContext(ctx)
	if len(params.IDs) > 0 {
		q = q.Where("id IN ?", params.IDs)
	}
	if params.ProcessInstanceID != 0 {
		q = q.Where("process_instance_id = ?", params.ProcessInstanceID)
	}
	res := q.Delete(&lockModel{})
	if res.Error != nil {
		return 0, wrap(res.Error, "delete locks")
	}
	return res.RowsAffected, nil
}

// ListLocks implements store.Tx.
func (s *Store) ListLocks(ctx context.Context, params store.ListLocksParams) ([]store.Lock, error) {
	q := s.db.WithContext(ctx).Order("id")
	if params.ScopeKey != "" {
		q = q.Where("scope_key = ?", params.ScopeKey)
	}
	if params.BusinessKey != "" {
		q = q.Where("business_key = ?", params.BusinessKey)
	}
	if params.ProcessInstanceID != 0 {
		q = q.Where("process_instance_id = ?", params.ProcessInstanceID)
	}
	if params.Held != nil {
		if *params.Held {
			q = q.Where("held IS NOT NULL")
		} else {
			q = q.Where("held IS NULL")
		}
	}
	if params.AfterID != 0 {
		q = q.Where("id > ?", params.AfterID)
	}
	if params.Limit > 0 {
		q = q.Limit(params.Limit)
	}
	var ms []lockModel
	if err := q.Find(&ms).Error; err != nil {
		return nil, wrap(err, "list locks")
	}
	out := make([]store.Lock, len(ms))
	for i := range ms {
		out[i] = ms[i].row()
	}
	return out, nil
}
