package gormstore

import (
	"context"
	"errors"

	"github.com/goxpdl/goxpdl/store"
)

// InsertSubscriptions implements store.Tx: the subscriptions with the
// caller's ids.
func (s *Store) InsertSubscriptions(ctx context.Context, subs []store.Subscription) ([]store.Subscription, error) {
	done, err := s.writing(ctx)
	if err != nil {
		return nil, err
	}
	defer done()
	ms := make([]subscriptionModel, len(subs))
	for i, sub := range subs {
		if err := errors.Join(
			requireID("insert subscriptions", sub.ID),
			requireTime("insert subscriptions: created at", sub.CreatedAt),
		); err != nil {
			return nil, err
		}
		ms[i] = subscriptionModel{
			ID: sub.ID, Kind: sub.Kind, Name: sub.Name, ProcessInstanceID: sub.ProcessInstanceID,
			ActivityInstanceID: sub.ActivityInstanceID, ActivityDefID: sub.ActivityDefID, CreatedAt: dbTime(sub.CreatedAt),
		}
	}
	if err := createBatch(ctx, s, ms); err != nil {
		return nil, wrap(err, "insert %d subscriptions", len(subs))
	}
	out := make([]store.Subscription, len(ms))
	for i := range ms {
		out[i] = ms[i].row()
	}
	return out, nil
}

// ListSubscriptions implements store.Tx.
func (s *Store) ListSubscriptions(ctx context.Context, params store.ListSubscriptionsParams) ([]store.Subscription, error) {
	q := s.db.WithContext(ctx).Order("id")
	if params.Kind != "" {
		q = q.Where("kind = ?", params.Kind)
	}
	if params.Name != "" {
		q = q.Where("name = ?", params.Name)
	}
	if params.ProcessInstanceID != 0 {
		q = q.Where("process_instance_id = ?", params.ProcessInstanceID)
	}
	if params.AfterID != 0 {
		q = q.Where("id > ?", params.AfterID)
	}
	if params.Limit > 0 {
		q = q.Limit(params.Limit)
	}
	var ms []subscriptionModel
	if err := q.Find(&ms).Error; err != nil {
		return nil, wrap(err, "list subscriptions")
	}
	out := make([]store.Subscription, len(ms))
	for i := range ms {
		out[i] = ms[i].row()
	}
	return out, nil
}

// DeleteSubscriptions implements store.Tx.
func (s *Store) DeleteSubscriptions(ctx context.Context, params store.DeleteSubscriptionsParams) (int64, error) {
	done, err := s.writing(ctx)
	if err != nil {
		return 0, err
	}
	defer done()
	q, err := s.scoped(ctx, "subscriptions", params.ProcessInstanceID, params.ActivityInstanceIDs, params.IDs)
	if err != nil {
		return 0, err
	}
	res := q.Delete(&subscriptionModel{})
	if res.Error != nil {
		return 0, wrap(res.Error, "delete subscriptions")
	}
	return res.RowsAffected, nil
}
