package gormstore

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"gorm.io/gorm"
	"gorm.io/gorm/clause"

	"github.com/goxpdl/goxpdl/store"
)

// InsertEvents implements store.Tx. A batch is one INSERT (or several in a
// transaction or savepoint), so a duplicate EventID fails the whole batch
// on both databases.
func (s *Store) InsertEvents(ctx context.Context, events []store.Event) ([]store.Event, error) {
	if s.dialect == store.DialectPostgres && !s.inTx() {
		// pgInsertEvents undoes a failed batch with a statement of its
		// own: in a transaction, so that no other node sees it meanwhile.
		var out []store.Event
		err := s.InTx(ctx, func(ctx context.Context, tx store.Tx) error {
			var err error
			out, err = tx.InsertEvents(ctx, events)
			return err
		})
		return out, err
	}
	done, err := s.writing(ctx)
	if err != nil {
		return nil, err
	}
	defer done()
	rows, out, err := eventRows(events)
	if err != nil {
		return nil, err
	}
	// Sent at once, not queued on a pipelined transaction: a duplicate
	// EventID is the caller's answer (ErrDuplicate), not a later one's.
	insert := func(db *gorm.DB, query string, args []any, _ int) error {
		_, err := db.Statement.ConnPool.ExecContext(ctx, query, args...)
		return err
	}
	if s.dialect == store.DialectPostgres {
		insert = s.pgInsertEvents(ctx)
	}
	if err := insertChunks(ctx, s, tableEvents, eventColumnsWithID, rows, insert); err != nil {
		return nil, wrap(err, "insert %d events", len(events))
	}
	return out, nil
}

// AppendEvents implements store.Tx: on a pipelined transaction the
// insert waits in the queue, where the inserts of the other members of a
// group commit join it (coalesce.go); elsewhere it is InsertEvents.
func (s *Store) AppendEvents(ctx context.Context, events []store.Event) ([]store.Event, error) {
	if _, ok := s.db.Statement.ConnPool.(*pipeline); !ok || len(events) == 0 || len(events) > batchSize {
		return s.InsertEvents(ctx, events)
	}
	done, err := s.writing(ctx)
	if err != nil {
		return nil, err
	}
	defer done()
	rows, out, err := eventRows(events)
	if err != nil {
		return nil, err
	}
	if err := s.write(ctx, insertWrite(s, tableEvents, eventColumnsWithID, rows)); err != nil {
		return nil, wrap(err, "insert %d events", len(events))
	}
	return out, nil
}

// eventRows checks events and returns their rows (values in the order
// of eventColumnsWithID) and the events as they will be stored.
func eventRows(events []store.Event) (rows [][]any, stored []store.Event, err error) {
	ms, err := eventModels(events)
	if err != nil {
		return nil, nil, err
	}
	rows = make([][]any, len(ms))
	stored = make([]store.Event, len(ms))
	for i, m := range ms {
		rows[i] = append([]any{m.ID}, m.values()...)
		stored[i] = m.row()
	}
	return rows, stored, nil
}

// eventModels checks events and returns their models.
func eventModels(events []store.Event) ([]eventModel, error) {
	ms := make([]eventModel, len(events))
	for i, e := range events {
		if e.EventID == "" {
			return nil, fmt.Errorf("insert events: event %d has an empty EventID", i)
		}
		if err := errors.Join(
			requireID("insert events", e.ID),
			requireTime("insert events: created at", e.CreatedAt),
			requireTime("insert events: available at", e.AvailableAt),
		); err != nil {
			return nil, err
		}
		ms[i] = eventModel{
			ID:                e.ID,
			EventID:           e.EventID,
			ProcessInstanceID: e.ProcessInstanceID,
			Kind:              e.Kind,
			Payload:           dbBytes(e.Payload),
			Critical:          e.Critical,
			CreatedAt:         dbTime(e.CreatedAt),
			AvailableAt:       dbTime(e.AvailableAt),
		}
		if e.ClaimedBy != "" && e.ClaimedUntil != nil {
			ms[i].ClaimedBy = e.ClaimedBy
			ms[i].ClaimedUntil = dbTimePtr(e.ClaimedUntil)
			ms[i].Attempts = 1
		}
	}
	return ms, nil
}

// eventColumnsWithID are the id and eventColumns.
var eventColumnsWithID = append([]string{"id"}, eventColumns...)

// GetEvent implements store.Tx.
func (s *Store) GetEvent(ctx context.Context, id int64) (store.Event, error) {
	var m eventModel
	if err := s.db.WithContext(ctx).Take(&m, "id = ?", id).Error; err != nil {
		return store.Event{}, wrap(err, "get event %d", id)
	}
	return m.row(), nil
}

// ClaimEvents implements store.Tx: select the claimable events, then mark
// them claimed, in one transaction. The events whose claims expired come
// first, oldest lease first, then those never claimed (or released), in
// ID order.
//
// On MySQL the select is SELECT ... FOR UPDATE SKIP LOCKED, so concurrent
// claimants lock disjoint rows and never wait for each other; when
// ClaimEvents starts its own transaction it runs at READ COMMITTED so that
// InnoDB takes no gap locks that would hold up concurrent InsertEvents. On
// SQLite the database admits one writer at a time (OpenSQLite begins
// transactions IMMEDIATE), so a plain select and update cannot interleave
// with another claim; with deferred transactions a racing claim fails with
// ErrConflict instead of claiming twice.
func (s *Store) ClaimEvents(ctx context.Context, params store.ClaimEventsParams) ([]store.Event, error) {
	switch {
	case params.Owner == "":
		return nil, errors.New("claim events: empty owner")
	case params.Limit <= 0:
		return nil, fmt.Errorf("claim events: limit %d, want > 0", params.Limit)
	case !params.LeaseUntil.After(params.Now):
		return nil, fmt.Errorf("claim events: lease until %v is not after now %v", params.LeaseUntil, params.Now)
	}
	if err := requireTime("claim events: now", params.Now); err != nil {
		return nil, err
	}
	now, until := dbTime(params.Now), dbTime(params.LeaseUntil)

	opts := s.txOptions()
	var ms []eventModel
	err := s.atomic(ctx, func(db *gorm.DB) error {
		// Two walks of goxpdl_events_unclaimed, each in its own order so
		// that it stops after the rows it needs: first the claims that
		// expired (a node that died, a lease that ran out), then the
		// events nobody claimed, in ID order. Neither reads the rows
		// whose claims still run: a node's pre-claimed backlog, tens of
		// thousands of rows under load, sits between the two ranges.
		for i, where := range claimWalks {
			args := []any{now}
			if i == 0 {
				args = append(args, now)
			}
			q := db.Where(where, args...)
			switch params.Pool {
			case store.CriticalPool:
				q = q.Where("critical = ?", true)
			case store.NormalPool:
				q = q.Where("critical = ?", false)
			}
			if s.Capabilities().SupportsSkipLocked {
				q = q.Clauses(clause.Locking{Strength: clause.LockingStrengthUpdate, Options: clause.LockingOptionsSkipLocked})
			}
			var walked []eventModel
			if err := q.Order(s.claimOrders()[i]).Limit(params.Limit - len(ms)).Find(&walked).Error; err != nil {
				return err
			}
			ms = append(ms, walked...)
			if len(ms) == params.Limit {
				break
			}
		}
		if len(ms) == 0 {
			return nil
		}
		slices.SortFunc(ms, func(a, b eventModel) int { return cmp.Compare(a.ID, b.ID) })
		ids := make([]int64, len(ms))
		for i := range ms {
			ids[i] = ms[i].ID
		}
		return db.Model(&eventModel{}).Where("id IN ?", ids).Updates(map[string]any{
			"claimed_by":    params.Owner,
			"claimed_until": until,
			"attempts":      gorm.Expr("attempts + 1"),
		}).Error
	}, opts...)
	if err != nil {
		return nil, wrap(err, "claim events for %q", params.Owner)
	}
	out := make([]store.Event, len(ms))
	for i := range ms {
		ms[i].ClaimedBy = params.Owner
		ms[i].ClaimedUntil = &until
		ms[i].Attempts++
		out[i] = ms[i].row()
	}
	return out, nil
}

// claimWalks are ClaimEvents' two ranges of goxpdl_events_unclaimed:
// the expired claims, then the unclaimed events.
var claimWalks = [2]string{
	"processed_at IS NULL AND claimed_until <= ? AND available_at <= ?",
	"processed_at IS NULL AND claimed_until IS NULL AND available_at <= ?",
}

// claimOrders are the ORDER BY clauses of claimWalks that each database
// answers in the index's order, without a sort: MariaDB sorts when the
// columns it holds NULL are named, and PostgreSQL sorts unless they are
// (it does not take IS NULL as fixing a column).
func (s *Store) claimOrders() [2]string {
	if s.dialect == store.DialectPostgres {
		return [2]string{"processed_at, claimed_until, id", "processed_at, claimed_until, id"}
	}
	return [2]string{"claimed_until, id", "id"}
}

// MarkEventsProcessed implements store.Tx.
func (s *Store) MarkEventsProcessed(ctx context.Context, params store.MarkEventsProcessedParams) error {
	done, err := s.writing(ctx)
	if err != nil {
		return err
	}
	defer done()
	if len(params.IDs) == 0 {
		return nil
	}
	if err := requireTime("mark events processed: processed at", params.ProcessedAt); err != nil {
		return err
	}
	// A plain statement: the engine marks an event on every step. Later
	// marks of the same owner may join it on a pipelined transaction
	// (coalesce.go).
	return s.write(ctx, markWrite(s, params.IDs, params.ProcessedAt, params.Owner))
}

func uniqueIDs(ids []int64) map[int64]bool {
	set := make(map[int64]bool, len(ids))
	for _, id := range ids {
		set[id] = true
	}
	return set
}

// ReleaseClaims implements store.Tx.
func (s *Store) ReleaseClaims(ctx context.Context, owner string) (int64, error) {
	done, err := s.writing(ctx)
	if err != nil {
		return 0, err
	}
	defer done()
	if owner == "" {
		return 0, errors.New("release claims: empty owner")
	}
	res := s.db.WithContext(ctx).Model(&eventModel{}).
		Where("claimed_by = ? AND processed_at IS NULL", owner).
		Updates(map[string]any{"claimed_by": "", "claimed_until": nil})
	if res.Error != nil {
		return 0, wrap(res.Error, "release the claims of %q", owner)
	}
	if err := s.releaseBatches(ctx, owner); err != nil {
		return 0, err
	}
	if err := s.releaseLeases(ctx, owner); err != nil {
		return 0, err
	}
	return res.RowsAffected, nil
}

// ReleaseClaim implements store.Tx.
func (s *Store) ReleaseClaim(ctx context.Context, owner string, until time.Time) (int64, error) {
	if owner == "" {
		return 0, errors.New("release claim: empty owner")
	}
	if err := requireTime("release claim: until", until); err != nil {
		return 0, err
	}
	done, err := s.writing(ctx)
	if err != nil {
		return 0, err
	}
	defer done()
	res := s.db.WithContext(ctx).Model(&eventModel{}).
		Where("claimed_by = ? AND claimed_until = ? AND processed_at IS NULL", owner, dbTime(until)).
		Updates(map[string]any{"claimed_by": "", "claimed_until": nil})
	if res.Error != nil {
		return 0, wrap(res.Error, "release the claims of %q until %s", owner, until.Format(time.RFC3339Nano))
	}
	return res.RowsAffected, nil
}

// RetryEvent implements store.Tx.
func (s *Store) RetryEvent(ctx context.Context, params store.RetryEventParams) error {
	done, err := s.writing(ctx)
	if err != nil {
		return err
	}
	defer done()
	if err := requireTime("retry event: available at", params.AvailableAt); err != nil {
		return err
	}
	q := s.db.WithContext(ctx).Model(&eventModel{}).Where("id = ? AND processed_at IS NULL", params.ID)
	if params.Owner != "" {
		q = q.Where("claimed_by = ?", params.Owner)
	}
	changes := map[string]any{"available_at": dbTime(params.AvailableAt), "claimed_until": nil}
	if params.CallFailed {
		changes["call_failures"] = gorm.Expr("call_failures + 1")
	}
	err = q.Updates(changes).Error
	if err != nil {
		return wrap(err, "retry event %d", params.ID)
	}
	return nil
}

// NextEventAvailable implements store.Tx.
func (s *Store) NextEventAvailable(ctx context.Context, after time.Time) (time.Time, bool, error) {
	var ms []eventModel
	err := s.db.WithContext(ctx).Where("processed_at IS NULL AND available_at > ?", dbTime(after)).
		Order("available_at").Limit(1).Find(&ms).Error
	if err != nil {
		return time.Time{}, false, wrap(err, "next event available")
	}
	if len(ms) == 0 {
		return time.Time{}, false, nil
	}
	return rowTime(ms[0].AvailableAt), true, nil
}

// CountUnprocessedEvents implements store.Tx.
func (s *Store) CountUnprocessedEvents(ctx context.Context, now time.Time) (available, later int64, err error) {
	var rows []struct {
		Due   bool
		Count int64
	}
	err = s.db.WithContext(ctx).Model(&eventModel{}).
		Select("available_at <= ? AS due, COUNT(*) AS count", dbTime(now)).
		Where("processed_at IS NULL").Group("due").Scan(&rows).Error
	if err != nil {
		return 0, 0, wrap(err, "count unprocessed events")
	}
	for _, r := range rows {
		if r.Due {
			available += r.Count
		} else {
			later += r.Count
		}
	}
	return available, later, nil
}
