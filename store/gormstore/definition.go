package gormstore

import (
	"context"
	"errors"
	"fmt"

	"gorm.io/gorm"

	"github.com/goxpdl/goxpdl/store"
)

// insertDefinitionTries bounds the retries of InsertDefinition when
// concurrent deployments of the same package choose the same version. Each
// round has one winner, so n concurrent deployers need at most n rounds.
const insertDefinitionTries = 16

// InsertDefinition implements store.Tx. The next version is read without
// a lock and the unique (package_id, version) index arbitrates: a deployer
// that loses gets a duplicate-key error and, when the store owns its
// transaction, reads again and retries. (Locking the read with FOR UPDATE
// on MySQL takes gap locks when the package has no rows yet, and two
// deployers then deadlock on their inserts however often they retry.)
// Inside a caller's transaction the error is returned as ErrDuplicate or
// ErrConflict for the caller to retry. The id is the caller's; a
// duplicate id is ErrDuplicate at once.
func (s *Store) InsertDefinition(ctx context.Context, params store.InsertDefinitionParams) (store.Definition, error) {
	if params.PackageID == "" {
		return store.Definition{}, errors.New("insert definition: empty package id")
	}
	if err := errors.Join(
		requireID("insert definition", params.ID),
		requireTime("insert definition: created at", params.CreatedAt),
	); err != nil {
		return store.Definition{}, err
	}
	var (
		m   definitionModel
		err error
	)
	for range insertDefinitionTries {
		err = s.atomic(ctx, func(db *gorm.DB) error {
			if params.GroupID != 0 {
				var head definitionModel
				if err := db.Take(&head, "id = ?", params.GroupID).Error; err != nil {
					return wrap(err, "group %d", params.GroupID)
				}
				if head.GroupID != nil {
					return fmt.Errorf("group %d: definition %d is not the first of its deployment (%d is): %w", params.GroupID, head.ID, *head.GroupID, store.ErrNotFound)
				}
			}
			q := db.Model(&definitionModel{}).Where("package_id = ?", params.PackageID)
			var versions []int
			if err := q.Order("version DESC").Limit(1).Pluck("version", &versions).Error; err != nil {
				return err
			}
			next := 1
			if len(versions) > 0 {
				next = versions[0] + 1
			}
			m = definitionModel{
				ID:        params.ID,
				PackageID: params.PackageID,
				Version:   next,
				Name:      params.Name,
				Source:    dbBytes(params.Source),
				CreatedAt: dbTime(params.CreatedAt),
				File:      nullString(params.File),
			}
			if params.GroupID != 0 {
				m.GroupID = &params.GroupID
			}
			return db.Create(&m).Error
		})
		err = translate(err)
		if err == nil || s.inTx() || !(errors.Is(err, store.ErrDuplicate) || errors.Is(err, store.ErrConflict)) {
			break
		}
		if errors.Is(err, store.ErrDuplicate) {
			// Not another deployer's version when the id is taken:
			// trying again would meet it again.
			var n int64
			if cerr := s.db.WithContext(ctx).Model(&definitionModel{}).Where("id = ?", params.ID).Count(&n).Error; cerr != nil || n > 0 {
				break
			}
		}
	}
	if err != nil {
		return store.Definition{}, fmt.Errorf("insert definition of package %q: %w", params.PackageID, err)
	}
	return m.row(), nil
}

// GetDefinition implements store.Tx.
func (s *Store) GetDefinition(ctx context.Context, id int64) (store.Definition, error) {
	var m definitionModel
	if err := s.db.WithContext(ctx).Take(&m, "id = ?", id).Error; err != nil {
		return store.Definition{}, wrap(err, "get definition %d", id)
	}
	return m.row(), nil
}

// LatestDefinition implements store.Tx.
func (s *Store) LatestDefinition(ctx context.Context, packageID string) (store.Definition, error) {
	var m definitionModel
	err := s.db.WithContext(ctx).Where("package_id = ?", packageID).Order("version DESC").Take(&m).Error
	if err != nil {
		return store.Definition{}, wrap(err, "latest definition of package %q", packageID)
	}
	return m.row(), nil
}

// LatestDefinitionID implements store.Tx.
func (s *Store) LatestDefinitionID(ctx context.Context, packageID string) (int64, error) {
	var ids []int64
	err := s.db.WithContext(ctx).Model(&definitionModel{}).Where("package_id = ?", packageID).Order("version DESC").Limit(1).Pluck("id", &ids).Error
	if err != nil {
		return 0, wrap(err, "latest definition of package %q", packageID)
	}
	if len(ids) == 0 {
		return 0, fmt.Errorf("latest definition of package %q: %w", packageID, store.ErrNotFound)
	}
	return ids[0], nil
}

// ListDefinitions implements store.Tx.
func (s *Store) ListDefinitions(ctx context.Context, params store.ListDefinitionsParams) ([]store.Definition, error) {
	q := s.db.WithContext(ctx).Order("id")
	if params.PackageID != "" {
		q = q.Where("package_id = ?", params.PackageID)
	}
	if params.GroupID != 0 {
		q = q.Where("id = ? OR group_id = ?", params.GroupID, params.GroupID)
	}
	var ms []definitionModel
	if err := q.Find(&ms).Error; err != nil {
		return nil, wrap(err, "list definitions")
	}
	out := make([]store.Definition, len(ms))
	for i := range ms {
		out[i] = ms[i].row()
	}
	return out, nil
}
