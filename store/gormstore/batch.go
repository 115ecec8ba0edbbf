package gormstore

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"gorm.io/gorm"
	"gorm.io/gorm/clause"

	"github.com/goxpdl/goxpdl/store"
)

// Tables of the batches (store/batch.go).
const (
	tableBatches       = "goxpdl_batches"
	tableBatchFailures = "goxpdl_batch_failures"
)

// batchModel is a batch. Owner is "" when no runner holds it; the index
// on (state, owner) serves the runners' claims.
type batchModel struct {
	ID            int64      `gorm:"column:id;primaryKey;autoIncrement:false"`
	Action        string     `gorm:"column:action;size:64;not null"`
	Filter        []byte     `gorm:"column:filter"`
	Params        []byte     `gorm:"column:params"`
	Actor         string     `gorm:"column:actor;size:255;not null"`
	Reason        string     `gorm:"column:reason;type:text;not null"`
	Data          []byte     `gorm:"column:data"`
	State         string     `gorm:"column:state;size:32;not null;index:goxpdl_batches_claim,priority:1"`
	Owner         string     `gorm:"column:owner;size:191;not null;index:goxpdl_batches_claim,priority:2"`
	Total         int64      `gorm:"column:total;not null"`
	MaxInstanceID int64      `gorm:"column:max_instance_id;not null"`
	Cursor        int64      `gorm:"column:cursor_id;not null"`
	Done          int64      `gorm:"column:done;not null"`
	Skipped       int64      `gorm:"column:skipped;not null"`
	Failed        int64      `gorm:"column:failed;not null"`
	Error         string     `gorm:"column:error;type:text;not null"`
	Note          string     `gorm:"column:note;type:text;not null"`
	CreatedAt     time.Time  `gorm:"column:created_at;not null;precision:6;autoCreateTime:false"`
	UpdatedAt     time.Time  `gorm:"column:updated_at;not null;precision:6;autoUpdateTime:false"`
	EndedAt       *time.Time `gorm:"column:ended_at;precision:6"`
}

func (batchModel) TableName() string { return tableBatches }

func (m batchModel) row() store.Batch {
	return store.Batch{
		ID: m.ID, Action: m.Action, Filter: rowBytes(m.Filter), Params: rowBytes(m.Params), Actor: m.Actor,
		Reason: m.Reason, Data: rowBytes(m.Data), State: m.State, Total: m.Total, MaxInstanceID: m.MaxInstanceID,
		Cursor: m.Cursor, Done: m.Done, Skipped: m.Skipped, Failed: m.Failed, Error: m.Error, Note: m.Note, Owner: m.Owner,
		CreatedAt: rowTime(m.CreatedAt), UpdatedAt: rowTime(m.UpdatedAt), EndedAt: rowTimePtr(m.EndedAt),
	}
}

// batchFailureModel is an instance a batch skipped or failed on.
type batchFailureModel struct {
	ID                int64     `gorm:"column:id;primaryKey;autoIncrement:false"`
	BatchID           int64     `gorm:"column:batch_id;not null;index:goxpdl_batch_failures_batch"`
	ProcessInstanceID int64     `gorm:"column:process_instance_id;not null"`
	Skipped           bool      `gorm:"column:skipped;not null"`
	Error             string    `gorm:"column:error;type:text;not null"`
	At                time.Time `gorm:"column:at;not null;precision:6"`
}

func (batchFailureModel) TableName() string { return tableBatchFailures }

func (m batchFailureModel) row() store.BatchFailure {
	return store.BatchFailure{ID: m.ID, BatchID: m.BatchID, ProcessInstanceID: m.ProcessInstanceID,
		Skipped: m.Skipped, Error: m.Error, At: rowTime(m.At)}
}

// finalBatch reports whether a batch state is final.
func finalBatch(state string) bool {
	return state == store.BatchCancelled || state == store.BatchCompleted || state == store.BatchFailed
}

// InsertBatch implements store.Tx.
func (s *Store) InsertBatch(ctx context.Context, b store.Batch) (store.Batch, error) {
	switch {
	case b.Action == "":
		return store.Batch{}, errors.New("insert batch: no action")
	case b.State == "":
		return store.Batch{}, errors.New("insert batch: no state")
	}
	if err := errors.Join(
		requireID("insert batch", b.ID),
		requireTime("insert batch: created at", b.CreatedAt),
	); err != nil {
		return store.Batch{}, err
	}
	done, err := s.writing(ctx)
	if err != nil {
		return store.Batch{}, err
	}
	defer done()
	updated := b.UpdatedAt
	if updated.IsZero() {
		updated = b.CreatedAt
	}
	m := batchModel{
		ID: b.ID, Action: b.Action, Filter: dbBytes(b.Filter), Params: dbBytes(b.Params), Actor: b.Actor, Reason: b.Reason,
		Data: dbBytes(b.Data), State: b.State, Owner: b.Owner, Total: b.Total, MaxInstanceID: b.MaxInstanceID,
		Cursor: b.Cursor, Done: b.Done, Skipped: b.Skipped, Failed: b.Failed, Error: b.Error, Note: b.Note,
		CreatedAt: dbTime(b.CreatedAt), UpdatedAt: dbTime(updated), EndedAt: dbTimePtr(b.EndedAt),
	}
	if err := s.db.WithContext(ctx).Create(&m).Error; err != nil {
		return store.Batch{}, wrap(err, "insert batch")
	}
	return m.row(), nil
}

// GetBatch implements store.Tx.
func (s *Store) GetBatch(ctx context.Context, id int64) (store.Batch, error) {
	var m batchModel
	if err := s.db.WithContext(ctx).Take(&m, "id = ?", id).Error; err != nil {
		return store.Batch{}, wrap(err, "get batch %d", id)
	}
	return m.row(), nil
}

// ListBatches implements store.Tx.
func (s *Store) ListBatches(ctx context.Context, params store.ListBatchesParams) ([]store.Batch, error) {
	q := s.db.WithContext(ctx).Order("id")
	if len(params.States) > 0 {
		q = q.Where("state IN ?", params.States)
	}
	if len(params.Actions) > 0 {
		q = q.Where("action IN ?", params.Actions)
	}
	if params.AfterID != 0 {
		q = q.Where("id > ?", params.AfterID)
	}
	if params.Limit > 0 {
		q = q.Limit(params.Limit)
	}
	var ms []batchModel
	if err := q.Find(&ms).Error; err != nil {
		return nil, wrap(err, "list batches")
	}
	out := make([]store.Batch, len(ms))
	for i := range ms {
		out[i] = ms[i].row()
	}
	return out, nil
}

// ClaimBatch implements store.Tx: the candidate is read, then taken by an
// update that still requires it free (or already ours), so that of two
// concurrent claims one changes the row and the other looks again.
func (s *Store) ClaimBatch(ctx context.Context, params store.ClaimBatchParams) (store.Batch, error) {
	if params.Owner == "" {
		return store.Batch{}, errors.New("claim batch: empty owner")
	}
	if err := requireTime("claim batch: now", params.Now); err != nil {
		return store.Batch{}, err
	}
	for range 10 {
		var m batchModel
		err := s.db.WithContext(ctx).Where("state = ? AND owner IN ?", store.BatchRunning, []string{"", params.Owner}).
			Order("id").Take(&m).Error
		if err != nil {
			return store.Batch{}, wrap(err, "claim batch")
		}
		if m.Owner == params.Owner {
			return m.row(), nil
		}
		done, err := s.writing(ctx)
		if err != nil {
			return store.Batch{}, err
		}
		now := dbTime(params.Now)
		res := s.db.WithContext(ctx).Model(&batchModel{}).Where("id = ? AND state = ? AND owner = ''", m.ID, store.BatchRunning).
			Updates(map[string]any{"owner": params.Owner, "updated_at": now})
		done()
		if res.Error != nil {
			return store.Batch{}, wrap(res.Error, "claim batch %d", m.ID)
		}
		if res.RowsAffected == 1 {
			m.Owner, m.UpdatedAt = params.Owner, now
			return m.row(), nil
		}
	}
	return store.Batch{}, fmt.Errorf("claim batch: %w", store.ErrConflict)
}

// UpdateBatchProgress implements store.Tx.
func (s *Store) UpdateBatchProgress(ctx context.Context, params store.BatchProgressParams) (store.Batch, error) {
	if err := requireTime("update batch progress: now", params.Now); err != nil {
		return store.Batch{}, err
	}
	if params.Finish != "" && params.Finish != store.BatchCompleted && params.Finish != store.BatchFailed {
		return store.Batch{}, fmt.Errorf("update batch %d: cannot finish as %q", params.ID, params.Finish)
	}
	for _, f := range params.Failures {
		if err := requireID(fmt.Sprintf("update batch %d: failure", params.ID), f.ID); err != nil {
			return store.Batch{}, err
		}
	}
	var out batchModel
	err := s.atomic(ctx, func(db *gorm.DB) error {
		var m batchModel
		err := db.Clauses(clause.Locking{Strength: clause.LockingStrengthUpdate}).Take(&m, "id = ?", params.ID).Error
		if err != nil {
			return err
		}
		if params.Owner == "" || m.Owner != params.Owner {
			return fmt.Errorf("batch held by %q, not %q: %w", m.Owner, params.Owner, store.ErrLeaseLost)
		}
		now := dbTime(params.Now)
		m.Cursor = max(m.Cursor, params.Cursor)
		m.Done += params.Done
		m.Skipped += params.Skipped
		m.Failed += params.Failed
		m.UpdatedAt = now
		if params.Finish != "" && m.State == store.BatchRunning {
			m.State, m.Error, m.EndedAt, m.Owner = params.Finish, params.Error, &now, ""
		}
		if err := db.Model(&batchModel{}).Where("id = ?", m.ID).Updates(map[string]any{
			"cursor_id": m.Cursor, "done": m.Done, "skipped": m.Skipped, "failed": m.Failed, "updated_at": m.UpdatedAt,
			"state": m.State, "error": m.Error, "ended_at": m.EndedAt, "owner": m.Owner,
		}).Error; err != nil {
			return err
		}
		if len(params.Failures) > 0 {
			fs := make([]batchFailureModel, len(params.Failures))
			for i, f := range params.Failures {
				fs[i] = batchFailureModel{ID: f.ID, BatchID: m.ID, ProcessInstanceID: f.ProcessInstanceID, Skipped: f.Skipped,
					Error: f.Error, At: dbTime(f.At)}
				if f.At.IsZero() {
					fs[i].At = now
				}
			}
			if err := db.Create(&fs).Error; err != nil {
				return err
			}
		}
		out = m
		return nil
	})
	if err != nil {
		return store.Batch{}, wrap(err, "update batch %d", params.ID)
	}
	return out.row(), nil
}

// ReleaseBatch implements store.Tx.
func (s *Store) ReleaseBatch(ctx context.Context, id int64, owner string) error {
	if owner == "" {
		return nil
	}
	done, err := s.writing(ctx)
	if err != nil {
		return err
	}
	defer done()
	err = s.db.WithContext(ctx).Model(&batchModel{}).Where("id = ? AND owner = ?", id, owner).Update("owner", "").Error
	return wrap(err, "release batch %d", id)
}

// releaseBatches lets go of every batch owner holds (ReleaseClaims).
func (s *Store) releaseBatches(ctx context.Context, owner string) error {
	err := s.db.WithContext(ctx).Model(&batchModel{}).Where("owner = ?", owner).Update("owner", "").Error
	return wrap(err, "release the batches of %q", owner)
}

// SetBatchState implements store.Tx.
func (s *Store) SetBatchState(ctx context.Context, params store.SetBatchStateParams) (store.Batch, error) {
	if err := requireTime("set batch state: now", params.Now); err != nil {
		return store.Batch{}, err
	}
	var out batchModel
	var refused bool
	err := s.atomic(ctx, func(db *gorm.DB) error {
		err := db.Clauses(clause.Locking{Strength: clause.LockingStrengthUpdate}).Take(&out, "id = ?", params.ID).Error
		if err != nil {
			return err
		}
		if !slices.Contains(params.From, out.State) {
			refused = true
			return nil
		}
		now := dbTime(params.Now)
		out.State, out.UpdatedAt, out.Note = params.To, now, params.Note
		updates := map[string]any{"state": out.State, "updated_at": now, "note": out.Note}
		if finalBatch(params.To) {
			out.EndedAt = &now
			updates["ended_at"] = now
		}
		return db.Model(&batchModel{}).Where("id = ?", out.ID).Updates(updates).Error
	})
	if err != nil {
		return store.Batch{}, wrap(err, "set batch %d %s", params.ID, params.To)
	}
	if refused {
		return out.row(), fmt.Errorf("set batch %d %s: it is %s: %w", params.ID, params.To, out.State, store.ErrConflict)
	}
	return out.row(), nil
}

// ListBatchFailures implements store.Tx.
func (s *Store) ListBatchFailures(ctx context.Context, params store.ListBatchFailuresParams) ([]store.BatchFailure, error) {
	q := s.db.WithContext(ctx).Where("batch_id = ?", params.BatchID).Order("id")
	if params.AfterID != 0 {
		q = q.Where("id > ?", params.AfterID)
	}
	if params.Limit > 0 {
		q = q.Limit(params.Limit)
	}
	var ms []batchFailureModel
	if err := q.Find(&ms).Error; err != nil {
		return nil, wrap(err, "list the failures of batch %d", params.BatchID)
	}
	out := make([]store.BatchFailure, len(ms))
	for i := range ms {
		out[i] = ms[i].row()
	}
	return out, nil
}
