package gormstore

import (
	"context"
	"errors"
	"fmt"

	"gorm.io/gorm"
	"gorm.io/gorm/clause"

	"github.com/goxpdl/goxpdl/store"
)

// RegisterNode implements store.Tx: the node's row is read under a row
// lock and then updated, or inserted when there is none.
func (s *Store) RegisterNode(ctx context.Context, params store.RegisterNodeParams) (store.Node, string, error) {
	switch {
	case params.ID == "" || params.Owner == "":
		return store.Node{}, "", errors.New("register node: empty id or owner")
	case !params.LeaseUntil.After(params.Now):
		return store.Node{}, "", fmt.Errorf("register node %s: lease until %v is not after now %v", params.ID, params.LeaseUntil, params.Now)
	}
	m := nodeModel{
		ID: params.ID, Owner: params.Owner, Epoch: 1, Host: params.Host, PID: params.PID,
		StartedAt: dbTime(params.Now), HeartbeatAt: dbTime(params.Now), LeaseUntil: dbTime(params.LeaseUntil),
	}
	var replaced string
	err := s.atomic(ctx, func(db *gorm.DB) error {
		var old nodeModel
		err := db.Clauses(clause.Locking{Strength: clause.LockingStrengthUpdate}).Take(&old, "id = ?", params.ID).Error
		switch {
		case errors.Is(err, gorm.ErrRecordNotFound):
			return db.Create(&m).Error
		case err != nil:
			return err
		}
		replaced, m.Epoch = old.Owner, old.Epoch+1
		return db.Model(&nodeModel{}).Where("id = ?", params.ID).Updates(map[string]any{
			"owner": m.Owner, "epoch": m.Epoch, "host": m.Host, "pid": m.PID,
			"started_at": m.StartedAt, "heartbeat_at": m.HeartbeatAt, "lease_until": m.LeaseUntil,
		}).Error
	})
	if err != nil {
		return store.Node{}, "", wrap(err, "register node %s", params.ID)
	}
	return m.row(), replaced, nil
}

// RenewNode implements store.Tx.
func (s *Store) RenewNode(ctx context.Context, params store.RenewNodeParams) error {
	done, err := s.writing(ctx)
	if err != nil {
		return err
	}
	defer done()
	res := s.db.WithContext(ctx).Model(&nodeModel{}).
		Where("id = ? AND owner = ?", params.ID, params.Owner).
		Updates(map[string]any{"heartbeat_at": dbTime(params.Now), "lease_until": dbTime(params.LeaseUntil)})
	if res.Error != nil {
		return wrap(res.Error, "renew node %s", params.ID)
	}
	if res.RowsAffected > 0 {
		return nil
	}
	// MySQL counts changed rows, not matched ones: a renewal that writes
	// the same times changes nothing and still holds the lease.
	var held int64
	if err := s.db.WithContext(ctx).Model(&nodeModel{}).Where("id = ? AND owner = ?", params.ID, params.Owner).Count(&held).Error; err != nil {
		return wrap(err, "renew node %s", params.ID)
	}
	if held == 0 {
		return fmt.Errorf("renew node %s for %q: %w", params.ID, params.Owner, store.ErrLeaseLost)
	}
	return nil
}

// ListNodes implements store.Tx.
func (s *Store) ListNodes(ctx context.Context) ([]store.Node, error) {
	var ms []nodeModel
	if err := s.db.WithContext(ctx).Order("id" + s.collateC()).Find(&ms).Error; err != nil {
		return nil, wrap(err, "list nodes")
	}
	out := make([]store.Node, len(ms))
	for i := range ms {
		out[i] = ms[i].row()
	}
	return out, nil
}

// RemoveNode implements store.Tx.
func (s *Store) RemoveNode(ctx context.Context, params store.RemoveNodeParams) (bool, error) {
	done, err := s.writing(ctx)
	if err != nil {
		return false, err
	}
	defer done()
	q := s.db.WithContext(ctx).Where("id = ? AND owner = ?", params.ID, params.Owner)
	if !params.ExpiredBy.IsZero() {
		q = q.Where("lease_until < ?", dbTime(params.ExpiredBy))
	}
	res := q.Delete(&nodeModel{})
	if res.Error != nil {
		return false, wrap(res.Error, "remove node %s", params.ID)
	}
	return res.RowsAffected > 0, nil
}
