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

// InsertTimers implements store.Tx: the timers with the caller's ids.
func (s *Store) InsertTimers(ctx context.Context, timers []store.Timer) ([]store.Timer, error) {
	done, err := s.writing(ctx)
	if err != nil {
		return nil, err
	}
	defer done()
	ms := make([]timerModel, len(timers))
	for i, t := range timers {
		if err := errors.Join(
			requireID("insert timers", t.ID),
			requireTime("insert timers: due at", t.DueAt),
			requireTime("insert timers: created at", t.CreatedAt),
		); err != nil {
			return nil, err
		}
		state := t.State
		if state == "" {
			state = store.TimerPending
		}
		ms[i] = timerModel{
			ID: t.ID, ProcessInstanceID: t.ProcessInstanceID, ActivityInstanceID: t.ActivityInstanceID, DefinitionID: t.DefinitionID,
			Kind: t.Kind, Key: t.Key, State: string(state), DueAt: dbTime(t.DueAt), Count: t.Count,
			Payload: dbBytes(t.Payload), CreatedAt: dbTime(t.CreatedAt),
		}
	}
	if err := createBatch(ctx, s, ms); err != nil {
		return nil, wrap(err, "insert %d timers", len(timers))
	}
	out := make([]store.Timer, len(ms))
	for i := range ms {
		out[i] = ms[i].row()
	}
	return out, nil
}

// GetTimer implements store.Tx.
func (s *Store) GetTimer(ctx context.Context, id int64) (store.Timer, error) {
	var m timerModel
	if err := s.db.WithContext(ctx).Take(&m, "id = ?", id).Error; err != nil {
		return store.Timer{}, wrap(err, "get timer %d", id)
	}
	return m.row(), nil
}

// FireDueTimers implements store.Tx: select the due timers, then mark
// them fired, in one transaction, as ClaimEvents does: on MySQL with FOR
// UPDATE SKIP LOCKED at READ COMMITTED, so concurrent firers take
// disjoint rows; on SQLite under the single writer lock. The update is
// also conditional on the state, so that a racing firer that read the
// same rows moves (and returns) only those still pending.
func (s *Store) FireDueTimers(ctx context.Context, params store.FireDueTimersParams) ([]store.Timer, error) {
	if params.Limit <= 0 {
		return nil, fmt.Errorf("fire due timers: limit %d, want > 0", params.Limit)
	}
	if err := requireTime("fire due timers: now", params.Now); err != nil {
		return nil, err
	}
	now := dbTime(params.Now)
	opts := s.txOptions()
	var ms []timerModel
	err := s.atomic(ctx, func(db *gorm.DB) error {
		q := db.Where("state = ? AND due_at <= ?", string(store.TimerPending), now)
		if s.Capabilities().SupportsSkipLocked {
			q = q.Clauses(clause.Locking{Strength: clause.LockingStrengthUpdate, Options: clause.LockingOptionsSkipLocked})
		}
		if err := q.Order("due_at, id").Limit(params.Limit).Find(&ms).Error; err != nil {
			return err
		}
		if len(ms) == 0 {
			return nil
		}
		ids := make([]int64, len(ms))
		for i := range ms {
			ids[i] = ms[i].ID
		}
		res := db.Model(&timerModel{}).Where("id IN ? AND state = ?", ids, string(store.TimerPending)).
			Updates(map[string]any{"state": string(store.TimerFired), "fired_at": now})
		if res.Error != nil {
			return res.Error
		}
		if res.RowsAffected != int64(len(ms)) {
			// Another firer moved some of them between our read and our
			// write (possible only without row locks): give up this
			// round rather than return timers we did not fire.
			return store.ErrConflict
		}
		return nil
	}, opts...)
	if err != nil {
		return nil, wrap(err, "fire due timers")
	}
	out := make([]store.Timer, len(ms))
	for i := range ms {
		ms[i].State, ms[i].FiredAt = string(store.TimerFired), &now
		out[i] = ms[i].row()
	}
	return out, nil
}

// NextTimerDue implements store.Tx.
func (s *Store) NextTimerDue(ctx context.Context) (time.Time, bool, error) {
	var ms []timerModel
	err := s.db.WithContext(ctx).Select("due_at").Where("state = ?", string(store.TimerPending)).
		Order("due_at").Limit(1).Find(&ms).Error
	if err != nil {
		return time.Time{}, false, wrap(err, "next timer due")
	}
	if len(ms) == 0 {
		return time.Time{}, false, nil
	}
	return rowTime(ms[0].DueAt), true, nil
}

// CountTimers implements store.Tx: one pass over goxpdl_timers_due.
func (s *Store) CountTimers(ctx context.Context, now time.Time) (store.TimerCounts, error) {
	if err := requireTime("count timers: now", now); err != nil {
		return store.TimerCounts{}, err
	}
	var rows []struct {
		State string
		N     int64
		Due   int64
	}
	err := s.db.WithContext(ctx).Model(&timerModel{}).
		Select("state, COUNT(*) AS n, SUM(CASE WHEN due_at <= ? THEN 1 ELSE 0 END) AS due", dbTime(now)).
		Group("state").Scan(&rows).Error
	if err != nil {
		return store.TimerCounts{}, wrap(err, "count timers")
	}
	var c store.TimerCounts
	for _, r := range rows {
		switch store.TimerState(r.State) {
		case store.TimerPending:
			c.Pending, c.Due = r.N, r.Due
		case store.TimerPaused:
			c.Paused = r.N
		case store.TimerFired:
			c.Fired = r.N
		}
	}
	return c, nil
}

// ListTimers implements store.Tx.
func (s *Store) ListTimers(ctx context.Context, params store.ListTimersParams) ([]store.Timer, error) {
	q := s.db.WithContext(ctx).Model(&timerModel{})
	if params.ProcessInstanceID != 0 {
		q = q.Where("process_instance_id = ?", params.ProcessInstanceID)
	}
	if params.ActivityInstanceID != 0 {
		q = q.Where("activity_instance_id = ?", params.ActivityInstanceID)
	}
	if params.DefinitionID != 0 {
		q = q.Where("definition_id = ?", params.DefinitionID)
	}
	if len(params.States) > 0 {
		q = q.Where("state IN ?", timerStates(params.States))
	}
	if len(params.Kinds) > 0 {
		q = q.Where("kind IN ?", params.Kinds)
	}
	if params.After != nil {
		due := dbTime(params.After.DueAt)
		q = q.Where("(due_at > ? OR (due_at = ? AND id > ?))", due, due, params.After.ID)
	}
	if params.Limit > 0 {
		q = q.Limit(params.Limit)
	}
	var ms []timerModel
	if err := q.Order("due_at, id").Find(&ms).Error; err != nil {
		return nil, wrap(err, "list timers")
	}
	out := make([]store.Timer, len(ms))
	for i := range ms {
		out[i] = ms[i].row()
	}
	return out, nil
}

// DeleteTimers implements store.Tx.
func (s *Store) DeleteTimers(ctx context.Context, params store.DeleteTimersParams) (int64, error) {
	done, err := s.writing(ctx)
	if err != nil {
		return 0, err
	}
	defer done()
	q, err := s.scoped(ctx, "timers", params.ProcessInstanceID, params.ActivityInstanceIDs, params.IDs)
	if err != nil {
		return 0, err
	}
	if len(params.States) > 0 {
		q = q.Where("state IN ?", timerStates(params.States))
	}
	res := q.Delete(&timerModel{})
	if res.Error != nil {
		return 0, wrap(res.Error, "delete timers")
	}
	return res.RowsAffected, nil
}

// PauseTimers implements store.Tx.
func (s *Store) PauseTimers(ctx context.Context, params store.PauseTimersParams) (int64, error) {
	done, err := s.writing(ctx)
	if err != nil {
		return 0, err
	}
	defer done()
	if err := requireTime("pause timers: at", params.At); err != nil {
		return 0, err
	}
	res := s.db.WithContext(ctx).Model(&timerModel{}).
		Where("process_instance_id = ? AND state = ?", params.ProcessInstanceID, string(store.TimerPending)).
		Updates(map[string]any{"state": string(store.TimerPaused), "paused_at": dbTime(params.At)})
	if res.Error != nil {
		return 0, wrap(res.Error, "pause timers of process instance %d", params.ProcessInstanceID)
	}
	return res.RowsAffected, nil
}

// ResumeTimers implements store.Tx. The new due times are computed here,
// not in SQL, because the two dialects do date arithmetic differently; a
// process has few timers.
func (s *Store) ResumeTimers(ctx context.Context, params store.ResumeTimersParams) (int64, error) {
	if err := requireTime("resume timers: at", params.At); err != nil {
		return 0, err
	}
	at := dbTime(params.At)
	var moved int64
	err := s.atomic(ctx, func(db *gorm.DB) error {
		var ms []timerModel
		err := db.Select("id", "due_at", "paused_at").
			Where("process_instance_id = ? AND state = ?", params.ProcessInstanceID, string(store.TimerPaused)).
			Order("id").Find(&ms).Error
		if err != nil {
			return err
		}
		for _, m := range ms {
			due := m.DueAt
			if m.PausedAt != nil && at.After(*m.PausedAt) {
				due = dbTime(due.Add(at.Sub(*m.PausedAt)))
			}
			res := db.Model(&timerModel{}).Where("id = ? AND state = ?", m.ID, string(store.TimerPaused)).
				Updates(map[string]any{"state": string(store.TimerPending), "paused_at": nil, "due_at": due})
			if res.Error != nil {
				return res.Error
			}
			moved += res.RowsAffected
		}
		return nil
	})
	if err != nil {
		return 0, wrap(err, "resume timers of process instance %d", params.ProcessInstanceID)
	}
	return moved, nil
}

func timerStates(states []store.TimerState) []string {
	out := make([]string, len(states))
	for i, st := range states {
		out[i] = string(st)
	}
	return out
}

// scoped starts a statement on the rows of a process instance, of some of
// its activity instances, or with the given ids; what names the rows in
// the error when neither an instance nor ids are given (so that a delete
// never runs unscoped).
func (s *Store) scoped(ctx context.Context, what string, processInstanceID int64, activityInstanceIDs, ids []int64) (*gorm.DB, error) {
	if processInstanceID == 0 && len(ids) == 0 {
		return nil, fmt.Errorf("delete %s: neither a process instance nor ids given", what)
	}
	q := s.db.WithContext(ctx)
	if processInstanceID != 0 {
		q = q.Where("process_instance_id = ?", processInstanceID)
	}
	if len(activityInstanceIDs) > 0 {
		q = q.Where("activity_instance_id IN ?", activityInstanceIDs)
	}
	if len(ids) > 0 {
		q = q.Where("id IN ?", ids)
	}
	return q, nil
}
