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

// purgeTables are the tables whose rows belong to a process instance
// through their process_instance_id column, deleted with it by
// PurgeProcessInstances. A table added with such a column must be added
// here (TestPurgeCoversEveryInstanceTable checks it); the worklist
// (tableVisibility) hangs off the work items and is deleted before them.
var purgeTables = []string{
	tableActivityInstances,
	tableVariables,
	tableWorkItems,
	tableEvents,
	tableHistory,
	tableInbox,
	tableTimers,
	tableSubscriptions,
	tableIncidents,
	tableLocks,         // none is left by an instance that ended; kept in step all the same
	tableBatchFailures, // a batch's record of a skipped or failed instance goes with it (its counts stay)
}

// keptTables name process instances (in an instance_id column) without
// belonging to them, and keep their rows when the instances are purged:
// the audit log of operator commands outlives what it audits, as an
// audit trail must (docs/operations.md, "Audit"); the records waiting
// for the sink are published whatever became of their instance.
var keptTables = []string{tableAudit, tablePublications}

// purgeChunk is the most ids one IN list of a purge carries.
const purgeChunk = 500

// pendingEvents is the condition "instance pi has an unprocessed event".
const pendingEvents = "EXISTS (SELECT 1 FROM " + tableEvents + " e WHERE e.process_instance_id = pi.id AND e.processed_at IS NULL)"

// PurgeProcessInstances implements store.Tx. It runs in three steps in
// one transaction:
//
//  1. pick the candidates: top-level (or orphaned) instances in a final
//     state, ended before the cutoff, with no unprocessed event, by the
//     index goxpdl_process_instances_ended;
//  2. on MySQL, lock them FOR UPDATE SKIP LOCKED, repeating the row's own
//     conditions, so that a concurrent purger (another node) takes other
//     instances; the locking read is a query of its own, without
//     subqueries, so that SKIP LOCKED cannot skip a row a subquery reads;
//  3. walk their subflow instances down, level by level, keeping those
//     that are final, ended before the cutoff and have no unprocessed
//     event (and stopping below one that is not), then delete the rows of
//     every table, the instances last, each DELETE repeating the
//     conditions of its rows.
func (s *Store) PurgeProcessInstances(ctx context.Context, params store.PurgeProcessInstancesParams) (store.PurgeResult, error) {
	switch {
	case len(params.States) == 0:
		return store.PurgeResult{}, errors.New("purge process instances: no states")
	case params.Limit <= 0 || params.Limit > store.MaxPurgeLimit:
		return store.PurgeResult{}, fmt.Errorf("purge process instances: limit %d, want 1 to %d", params.Limit, store.MaxPurgeLimit)
	}
	for _, x := range params.Exclude {
		if x.PackageID == "" {
			return store.PurgeResult{}, errors.New("purge process instances: an excluded scope without a package")
		}
	}
	if err := requireTime("purge process instances: ended before", params.EndedBefore); err != nil {
		return store.PurgeResult{}, err
	}
	before := dbTime(params.EndedBefore)
	var res store.PurgeResult
	err := s.atomic(ctx, func(db *gorm.DB) error {
		res = store.PurgeResult{}
		roots, err := s.purgeCandidates(db, params, before)
		if err != nil || len(roots) == 0 {
			return err
		}
		ids, err := s.purgeTree(db, roots, params.States, before)
		if err != nil {
			return err
		}
		res, err = purgeRows(db, ids, params.States, before)
		return err
	})
	if err != nil {
		return store.PurgeResult{}, wrap(err, "purge process instances")
	}
	return res, nil
}

// purgeCandidates returns the top-level instances to delete, locked on
// MySQL.
func (s *Store) purgeCandidates(db *gorm.DB, params store.PurgeProcessInstancesParams, before time.Time) ([]int64, error) {
	q := db.Table(tableProcessInstances+" pi").Select("pi.id").
		Where("pi.state IN ? AND pi.ended_at < ?", params.States, before).
		Where("pi.parent_instance_id IS NULL OR NOT EXISTS (SELECT 1 FROM " + tableProcessInstances + " p WHERE p.id = pi.parent_instance_id)").
		Where("NOT " + pendingEvents)
	if params.PackageID != "" {
		q = q.Where("pi.definition_id IN (SELECT d.id FROM "+tableDefinitions+" d WHERE d.package_id = ?)", params.PackageID)
	}
	if params.ProcessDefID != "" {
		q = q.Where("pi.process_def_id = ?", params.ProcessDefID)
	}
	for _, x := range params.Exclude {
		inPackage := "pi.definition_id IN (SELECT d.id FROM " + tableDefinitions + " d WHERE d.package_id = ?)"
		if x.ProcessDefID == "" {
			q = q.Where("NOT ("+inPackage+")", x.PackageID)
		} else {
			q = q.Where("NOT ("+inPackage+" AND pi.process_def_id = ?)", x.PackageID, x.ProcessDefID)
		}
	}
	var ids []int64
	if err := q.Limit(params.Limit).Pluck("pi.id", &ids).Error; err != nil {
		return nil, err
	}
	if len(ids) == 0 || !s.Capabilities().SupportsSkipLocked {
		return ids, nil // SQLite: the single writer holds the database
	}
	slices.Sort(ids)
	var locked []int64
	err := db.Model(&processInstanceModel{}).
		Where("id IN ? AND state IN ? AND ended_at < ?", ids, params.States, before).
		Clauses(clause.Locking{Strength: clause.LockingStrengthUpdate, Options: clause.LockingOptionsSkipLocked}).
		Order("id").Pluck("id", &locked).Error
	return locked, err
}

// purgeTree returns roots and the subflow instances below them that go
// with them.
func (s *Store) purgeTree(db *gorm.DB, roots []int64, states []string, before time.Time) ([]int64, error) {
	all := slices.Clone(roots)
	for level := roots; len(level) > 0; {
		var next []int64
		for chunk := range slices.Chunk(level, purgeChunk) {
			var kids []struct {
				ID        int64
				Purgeable bool
			}
			err := db.Table(tableProcessInstances+" pi").
				Select("pi.id, CASE WHEN pi.state IN ? AND pi.ended_at < ? AND NOT "+pendingEvents+" THEN 1 ELSE 0 END AS purgeable", states, before).
				Where("pi.parent_instance_id IN ?", chunk).Scan(&kids).Error
			if err != nil {
				return nil, err
			}
			for _, k := range kids {
				if k.Purgeable {
					next = append(next, k.ID)
				}
			}
		}
		all = append(all, next...)
		level = next
	}
	slices.Sort(all)
	return all, nil
}

// purgeRows deletes the instances ids and their rows in every table.
func purgeRows(db *gorm.DB, ids []int64, states []string, before time.Time) (store.PurgeResult, error) {
	var res store.PurgeResult
	for chunk := range slices.Chunk(ids, purgeChunk) {
		del := db.Where("work_item_id IN (?)", db.Table(tableWorkItems).Select("id").Where("process_instance_id IN ?", chunk)).
			Delete(&visibilityModel{})
		if del.Error != nil {
			return res, fmt.Errorf("delete from %s: %w", tableVisibility, del.Error)
		}
		res.Rows += del.RowsAffected
		for _, table := range purgeTables {
			del := db.Exec("DELETE FROM "+table+" WHERE process_instance_id IN ?", chunk)
			if del.Error != nil {
				return res, fmt.Errorf("delete from %s: %w", table, del.Error)
			}
			res.Rows += del.RowsAffected
		}
		// The deleted instances leave their counts (counts.go).
		if err := db.Exec("INSERT INTO "+tableInstanceCountDeltas+" (definition_id, process_def_id, state, n) "+
			"SELECT definition_id, process_def_id, state, -COUNT(*) FROM "+tableProcessInstances+
			" WHERE id IN ? AND state IN ? AND ended_at < ? GROUP BY definition_id, process_def_id, state",
			chunk, states, before).Error; err != nil {
			return res, fmt.Errorf("count purged instances: %w", err)
		}
		del = db.Exec("DELETE FROM "+tableProcessInstances+" WHERE id IN ? AND state IN ? AND ended_at < ?", chunk, states, before)
		if del.Error != nil {
			return res, fmt.Errorf("delete from %s: %w", tableProcessInstances, del.Error)
		}
		res.Rows += del.RowsAffected
		res.Instances += del.RowsAffected
	}
	return res, nil
}
