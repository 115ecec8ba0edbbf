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

// The publication outbox (store.Publications): the engine's records
// waiting for its sink, and the leases that give one node the right to
// publish them.
const (
	tablePublications = "goxpdl_publications"
	tableLeases       = "goxpdl_leases"
)

// publicationModel is a record waiting to be published. The unique index
// on (instance_id, version, seq) is the order in which an
// instance's records are published; the primary key's order (the
// engine's ids, time-ordered) picks which instances come first. Its
// rows outlive their instance (keptTables): a record of an instance that
// retention purged is still published.
type publicationModel struct {
	ID                int64     `gorm:"column:id;primaryKey;autoIncrement:false"`
	ProcessInstanceID int64     `gorm:"column:instance_id;not null;uniqueIndex:goxpdl_publications_order,priority:1"`
	Version           int64     `gorm:"column:version;not null;uniqueIndex:goxpdl_publications_order,priority:2"`
	Seq               int       `gorm:"column:seq;not null;uniqueIndex:goxpdl_publications_order,priority:3"`
	Type              string    `gorm:"column:record_type;size:128;not null"`
	ProcessDefID      string    `gorm:"column:process_def_id;size:255;not null"`
	Payload           []byte    `gorm:"column:payload"`
	CreatedAt         time.Time `gorm:"column:created_at;not null;precision:6;autoCreateTime:false"`
}

func (publicationModel) TableName() string { return tablePublications }

func (m publicationModel) row() store.Publication {
	return store.Publication{
		ID: m.ID, ProcessInstanceID: m.ProcessInstanceID, Version: m.Version, Seq: m.Seq,
		Type: m.Type, ProcessDefID: m.ProcessDefID, Payload: rowBytes(m.Payload), CreatedAt: rowTime(m.CreatedAt),
	}
}

// publicationColumns are the columns InsertPublications writes, in the
// order of its rows' values.
var publicationColumns = []string{"id", "instance_id", "version", "seq", "record_type", "process_def_id", "payload", "created_at"}

// leaseModel is a named lease (store.Lease). Owner is "" once released.
type leaseModel struct {
	Name  string    `gorm:"column:name;primaryKey;size:191"`
	Owner string    `gorm:"column:owner;size:191;not null"`
	Until time.Time `gorm:"column:lease_until;not null;precision:6"`
}

func (leaseModel) TableName() string { return tableLeases }

func (m leaseModel) row() store.Lease {
	return store.Lease{Name: m.Name, Owner: m.Owner, Until: rowTime(m.Until)}
}

// InsertPublications implements store.Tx: one multi-row INSERT, queued on
// a pipelined transaction like history (the engine writes it on every
// step while a sink is configured).
func (s *Store) InsertPublications(ctx context.Context, pubs []store.Publication) error {
	if len(pubs) == 0 {
		return nil
	}
	done, err := s.writing(ctx)
	if err != nil {
		return err
	}
	defer done()
	rows := make([][]any, len(pubs))
	for i, p := range pubs {
		if err := errors.Join(
			requireID("insert publications", p.ID),
			requireTime("insert publications: created at", p.CreatedAt),
		); err != nil {
			return err
		}
		rows[i] = []any{p.ID, p.ProcessInstanceID, p.Version, p.Seq, p.Type, p.ProcessDefID, dbBytes(p.Payload), dbTime(p.CreatedAt)}
	}
	if err := insertRows(ctx, s, tablePublications, publicationColumns, rows); err != nil {
		return wrap(err, "insert %d publications", len(pubs))
	}
	return nil
}

// ListPublications implements store.Tx in two reads: the instances of
// the oldest waiting publications, then those instances' publications in
// order. The second is one statement, so it sees each instance as of one
// moment: a prefix of the instance's records, since a step that commits
// later commits a greater version.
func (s *Store) ListPublications(ctx context.Context, params store.ListPublicationsParams) ([]store.Publication, error) {
	if params.Limit <= 0 {
		return nil, fmt.Errorf("list publications: limit %d, want > 0", params.Limit)
	}
	db := s.db.WithContext(ctx)
	var oldest []int64
	if err := db.Model(&publicationModel{}).Order("id").Limit(params.Limit).Pluck("instance_id", &oldest).Error; err != nil {
		return nil, wrap(err, "list publications")
	}
	if len(oldest) == 0 {
		return nil, nil
	}
	seen := make(map[int64]bool, len(oldest))
	instances := make([]int64, 0, len(oldest))
	for _, id := range oldest {
		if !seen[id] {
			seen[id] = true
			instances = append(instances, id)
		}
	}
	var ms []publicationModel
	if err := db.Where("instance_id IN ?", instances).
		Order("instance_id").Order("version").Order("seq").Limit(params.Limit).Find(&ms).Error; err != nil {
		return nil, wrap(err, "list publications of %d instances", len(instances))
	}
	out := make([]store.Publication, len(ms))
	for i := range ms {
		out[i] = ms[i].row()
	}
	return out, nil
}

// DeletePublications implements store.Tx: the lease row is read under a
// row lock (on SQLite the transaction holds the only write lock), so that
// a holder that lost its lease deletes nothing.
func (s *Store) DeletePublications(ctx context.Context, params store.DeletePublicationsParams) error {
	switch {
	case params.Lease == "" || params.Owner == "":
		return errors.New("delete publications: empty lease or owner")
	case len(params.IDs) == 0:
		return nil
	}
	if err := requireTime("delete publications: now", params.Now); err != nil {
		return err
	}
	now := dbTime(params.Now)
	err := s.atomic(ctx, func(db *gorm.DB) error {
		var held []leaseModel
		if err := db.Clauses(clause.Locking{Strength: clause.LockingStrengthUpdate}).
			Where("name = ? AND owner = ? AND lease_until > ?", params.Lease, params.Owner, now).Find(&held).Error; err != nil {
			return err
		}
		if len(held) == 0 {
			return fmt.Errorf("%q does not hold the lease %q: %w", params.Owner, params.Lease, store.ErrLeaseLost)
		}
		for start := 0; start < len(params.IDs); start += batchSize {
			chunk := params.IDs[start:min(start+batchSize, len(params.IDs))]
			if err := db.Where("id IN ?", chunk).Delete(&publicationModel{}).Error; err != nil {
				return err
			}
		}
		return nil
	})
	return wrap(err, "delete %d publications", len(params.IDs))
}

// CountPublications implements store.Tx.
func (s *Store) CountPublications(ctx context.Context, limit int64) (store.PublicationBacklog, error) {
	db := s.db.WithContext(ctx)
	var b store.PublicationBacklog
	sub := db.Model(&publicationModel{}).Select("1")
	if limit > 0 {
		sub = sub.Limit(int(limit))
	}
	if err := db.Raw("SELECT COUNT(*) FROM (?) t", sub).Scan(&b.Count).Error; err != nil {
		return b, wrap(err, "count publications")
	}
	if b.Count == 0 {
		return b, nil
	}
	var first []publicationModel
	if err := db.Select("id, created_at").Order("id").Limit(1).Find(&first).Error; err != nil {
		return store.PublicationBacklog{}, wrap(err, "count publications")
	}
	if len(first) == 1 {
		b.Oldest = rowTime(first[0].CreatedAt)
	}
	return b, nil
}

// AcquireLease implements store.Tx: the lease row is read under a row
// lock, then inserted, or updated if it is free or already the caller's.
func (s *Store) AcquireLease(ctx context.Context, params store.AcquireLeaseParams) (store.Lease, error) {
	switch {
	case params.Name == "" || params.Owner == "":
		return store.Lease{}, errors.New("acquire lease: empty name or owner")
	case !params.Until.After(params.Now):
		return store.Lease{}, fmt.Errorf("acquire lease %q: until %v is not after now %v", params.Name, params.Until, params.Now)
	}
	if err := requireTime("acquire lease: now", params.Now); err != nil {
		return store.Lease{}, err
	}
	now := dbTime(params.Now)
	var got leaseModel
	var lost bool
	err := s.atomic(ctx, func(db *gorm.DB) error {
		var rows []leaseModel
		if err := db.Clauses(clause.Locking{Strength: clause.LockingStrengthUpdate}).
			Where("name = ?", params.Name).Find(&rows).Error; err != nil {
			return err
		}
		got = leaseModel{Name: params.Name, Owner: params.Owner, Until: dbTime(params.Until)}
		if len(rows) == 0 {
			// Two first callers: one insert wins, the other fails with
			// ErrDuplicate (the primary key) and may try again.
			return db.Create(&got).Error
		}
		old := rows[0]
		if old.Owner != "" && old.Owner != params.Owner && old.Until.After(now) {
			got, lost = old, true
			return nil
		}
		res := db.Model(&leaseModel{}).Where("name = ? AND owner = ? AND lease_until = ?", old.Name, old.Owner, old.Until).
			Updates(map[string]any{"owner": got.Owner, "lease_until": got.Until})
		if res.Error != nil {
			return res.Error
		}
		if res.RowsAffected == 0 {
			return fmt.Errorf("lease %q was taken meanwhile: %w", params.Name, store.ErrConflict)
		}
		return nil
	})
	if err != nil {
		return store.Lease{}, wrap(err, "acquire lease %q for %q", params.Name, params.Owner)
	}
	if lost {
		return got.row(), fmt.Errorf("lease %q is held by %q until %s: %w", params.Name, got.Owner, rowTime(got.Until).Format(time.RFC3339Nano), store.ErrLeaseLost)
	}
	return got.row(), nil
}

// ReleaseLease implements store.Tx.
func (s *Store) ReleaseLease(ctx context.Context, name, owner string) error {
	if name == "" || owner == "" {
		return errors.New("release lease: empty name or owner")
	}
	done, err := s.writing(ctx)
	if err != nil {
		return err
	}
	defer done()
	err = s.db.WithContext(ctx).Model(&leaseModel{}).Where("name = ? AND owner = ?", name, owner).Update("owner", "").Error
	return wrap(err, "release lease %q of %q", name, owner)
}

// releaseLeases lets go of every lease owner holds (ReleaseClaims).
func (s *Store) releaseLeases(ctx context.Context, owner string) error {
	err := s.db.WithContext(ctx).Model(&leaseModel{}).Where("owner = ?", owner).Update("owner", "").Error
	return wrap(err, "release the leases of %q", owner)
}
