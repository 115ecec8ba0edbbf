package gormstore

import (
	"context"
	"errors"
	"fmt"
	"time"

	"gorm.io/gorm"
	"gorm.io/gorm/clause"

	"github.com/goxpdl/goxpdl/store"
)

// tableIDNodes holds the node numbers of the id allocator (package
// idgen), one row per number that was ever leased.
const tableIDNodes = "goxpdl_id_nodes"

// idNodeModel is a leased node number of the id allocator. Owner is ""
// once released.
type idNodeModel struct {
	Number        int       `gorm:"column:number;primaryKey;autoIncrement:false"`
	Owner         string    `gorm:"column:owner;size:191;not null"`
	LeaseUntil    time.Time `gorm:"column:lease_until;not null;precision:6"`
	ReservedUntil time.Time `gorm:"column:reserved_until;not null;precision:6"`
}

func (idNodeModel) TableName() string { return tableIDNodes }

func (m idNodeModel) row() store.IDNode {
	return store.IDNode{Number: m.Number, Owner: m.Owner, LeaseUntil: rowTime(m.LeaseUntil), ReservedUntil: rowTime(m.ReservedUntil)}
}

// AcquireIDNode implements store.Tx: the numbers' rows are read under a
// row lock, then the chosen one is inserted, or updated if it is still
// as read.
func (s *Store) AcquireIDNode(ctx context.Context, params store.AcquireIDNodeParams) (store.IDNode, time.Time, error) {
	switch {
	case params.Owner == "":
		return store.IDNode{}, time.Time{}, errors.New("acquire id node: empty owner")
	case params.Numbers < 1:
		return store.IDNode{}, time.Time{}, fmt.Errorf("acquire id node: %d numbers, want at least 1", params.Numbers)
	case params.Reserve <= 0:
		return store.IDNode{}, time.Time{}, fmt.Errorf("acquire id node: reserve %v, want > 0", params.Reserve)
	case !params.LeaseUntil.After(params.Now):
		return store.IDNode{}, time.Time{}, fmt.Errorf("acquire id node: lease until %v is not after now %v", params.LeaseUntil, params.Now)
	}
	now := dbTime(params.Now)
	var got idNodeModel
	var from time.Time
	err := s.atomic(ctx, func(db *gorm.DB) error {
		var rows []idNodeModel
		if err := db.Clauses(clause.Locking{Strength: clause.LockingStrengthUpdate}).
			Where("number < ?", params.Numbers).Order("number").Find(&rows).Error; err != nil {
			return err
		}
		byNumber := make(map[int]idNodeModel, len(rows))
		for _, r := range rows {
			byNumber[r.Number] = r
		}
		// The first number never used or free with its reservation
		// passed; else the free one reserved least far.
		pick, fresh := -1, false
		for n := range params.Numbers {
			r, ok := byNumber[n]
			if !ok {
				pick, fresh = n, true
				break
			}
			if r.LeaseUntil.After(now) {
				continue // held
			}
			if !r.ReservedUntil.After(now) {
				pick = n
				break
			}
			if pick < 0 || r.ReservedUntil.Before(byNumber[pick].ReservedUntil) {
				pick = n
			}
		}
		if pick < 0 {
			return fmt.Errorf("all %d id node numbers are leased: %w", params.Numbers, store.ErrExhausted)
		}
		from = now
		if old, ok := byNumber[pick]; ok && old.ReservedUntil.After(from) {
			from = old.ReservedUntil
		}
		got = idNodeModel{Number: pick, Owner: params.Owner, LeaseUntil: dbTime(params.LeaseUntil), ReservedUntil: dbTime(from.Add(params.Reserve))}
		if fresh {
			return db.Create(&got).Error
		}
		old := byNumber[pick]
		res := db.Model(&idNodeModel{}).Where("number = ? AND owner = ? AND lease_until = ?", pick, old.Owner, old.LeaseUntil).
			Updates(map[string]any{"owner": got.Owner, "lease_until": got.LeaseUntil, "reserved_until": got.ReservedUntil})
		if res.Error != nil {
			return res.Error
		}
		if res.RowsAffected == 0 {
			return fmt.Errorf("id node %d was taken meanwhile: %w", pick, store.ErrConflict)
		}
		return nil
	})
	if err != nil {
		return store.IDNode{}, time.Time{}, wrap(err, "acquire id node")
	}
	return got.row(), rowTime(from), nil
}

// RenewIDNode implements store.Tx.
func (s *Store) RenewIDNode(ctx context.Context, params store.RenewIDNodeParams) error {
	var held bool
	err := s.atomic(ctx, func(db *gorm.DB) error {
		var m idNodeModel
		err := db.Clauses(clause.Locking{Strength: clause.LockingStrengthUpdate}).
			Take(&m, "number = ? AND owner = ?", params.Number, params.Owner).Error
		if errors.Is(err, gorm.ErrRecordNotFound) || params.Owner == "" {
			return nil
		}
		if err != nil {
			return err
		}
		held = true
		reserved := dbTime(params.ReservedUntil)
		if reserved.Before(m.ReservedUntil) {
			reserved = m.ReservedUntil
		}
		return db.Model(&idNodeModel{}).Where("number = ?", params.Number).
			Updates(map[string]any{"lease_until": dbTime(params.LeaseUntil), "reserved_until": reserved}).Error
	})
	if err != nil {
		return wrap(err, "renew id node %d", params.Number)
	}
	if !held {
		return fmt.Errorf("renew id node %d for %q: %w", params.Number, params.Owner, store.ErrLeaseLost)
	}
	return nil
}

// ReleaseIDNode implements store.Tx.
func (s *Store) ReleaseIDNode(ctx context.Context, params store.ReleaseIDNodeParams) error {
	if params.Owner == "" {
		return nil
	}
	err := s.atomic(ctx, func(db *gorm.DB) error {
		var m idNodeModel
		err := db.Clauses(clause.Locking{Strength: clause.LockingStrengthUpdate}).
			Take(&m, "number = ? AND owner = ?", params.Number, params.Owner).Error
		if errors.Is(err, gorm.ErrRecordNotFound) {
			return nil
		}
		if err != nil {
			return err
		}
		reserved := dbTime(params.ReservedUntil)
		if reserved.Before(m.ReservedUntil) {
			reserved = m.ReservedUntil
		}
		return db.Model(&idNodeModel{}).Where("number = ?", params.Number).
			Updates(map[string]any{"owner": "", "lease_until": dbTime(params.Now), "reserved_until": reserved}).Error
	})
	return wrap(err, "release id node %d", params.Number)
}
