package gormstore

import (
	"context"
	"errors"
	"fmt"

	"gorm.io/gorm"
	"gorm.io/gorm/clause"

	"github.com/goxpdl/goxpdl/store"
)

// insertDefinitionTries bounds the retries of InsertDefinition when a
// concurrent deployment of the same package takes the version it chose.
const insertDefinitionTries = 5

// InsertDefinition implements store.Tx. The next version is read and
// written in one transaction; on MySQL the read locks the package's rows
// (FOR UPDATE) so that it sees concurrent deployments. Two deployments of
// one package that still race end in a unique-key violation or a deadlock;
// when the Store is over a pool the insert is retried, inside a caller's
// transaction the error (ErrDuplicate or ErrConflict) is returned for the
// caller to retry the transaction.
func (s *Store) InsertDefinition(ctx context.Context, params store.InsertDefinitionParams) (store.Definition, error) {
	if params.PackageID == "" {
		return store.Definition{}, errors.New("insert definition: empty package id")
	}
	if err := requireTime("insert definition: created at", params.CreatedAt); err != nil {
		return store.Definition{}, err
	}
	var (
		m   definitionModel
		err error
	)
	for range insertDefinitionTries {
		err = s.atomic(ctx, func(db *gorm.DB) error {
			q := db.Model(&definitionModel{}).Where("package_id = ?", params.PackageID)
			if s.dialect == store.DialectMySQL {
				q = q.Clauses(clause.Locking{Strength: clause.LockingStrengthUpdate})
			}
			var versions []int
			if err := q.Order("version DESC").Limit(1).Pluck("version", &versions).Error; err != nil {
				return err
			}
			next := 1
			if len(versions) > 0 {
				next = versions[0] + 1
			}
			m = definitionModel{
				PackageID: params.PackageID,
				Version:   next,
				Name:      params.Name,
				Source:    dbBytes(params.Source),
				CreatedAt: dbTime(params.CreatedAt),
			}
			return db.Create(&m).Error
		})
		err = translate(err)
		if err == nil || s.inTx() || !(errors.Is(err, store.ErrDuplicate) || errors.Is(err, store.ErrConflict)) {
			break
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

// ListDefinitions implements store.Tx.
func (s *Store) ListDefinitions(ctx context.Context, params store.ListDefinitionsParams) ([]store.Definition, error) {
	q := s.db.WithContext(ctx).Order("id")
	if params.PackageID != "" {
		q = q.Where("package_id = ?", params.PackageID)
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
