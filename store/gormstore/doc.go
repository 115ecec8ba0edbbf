// Package gormstore implements store.Store with GORM, for SQLite (the
// default: pure Go, no cgo) and for MySQL 8 / MariaDB 10.6+ (production,
// and several engine processes sharing one database).
//
// Only the wiring code (the program's main, and engine/database.go, where a
// host's *gorm.DB becomes the engine's store and the engine's transaction a
// *gorm.DB again through DBOf) and tests import this package; everything
// else uses package store (a depguard rule keeps it so in the engine).
//
// # Quick start
//
//	db, err := gormstore.OpenSQLite("goxpdl.db") // or OpenMySQL(dsn), or the host's own *gorm.DB
//	...
//	defer func() { sqlDB, _ := db.DB(); sqlDB.Close() }()
//	s, err := gormstore.New(db)
//	...
//	err = s.Migrate(ctx)
//
// # Sharing the host's transaction
//
// New accepts any *gorm.DB, including a transaction of the host's:
//
//	err := hostDB.Transaction(func(tx *gorm.DB) error {
//		// business writes with tx ...
//		s, err := gormstore.New(tx)
//		if err != nil {
//			return err
//		}
//		_, err = s.InsertProcessInstance(ctx, inst) // runs in tx
//		return err
//	})
//
// Every method of such a Store runs in the host's transaction and commits
// or rolls back with it. InTx on it nests with a savepoint (see Store).
// Migrate refuses to run in a transaction.
//
// # Tables
//
// The tables are goxpdl_definitions, goxpdl_process_instances,
// goxpdl_activity_instances, goxpdl_variables, goxpdl_work_items,
// goxpdl_work_item_visibility (who sees an open item in their worklist),
// goxpdl_events (the outbox), goxpdl_history, goxpdl_inbox (the
// correlation inbox), goxpdl_timers, goxpdl_nodes, goxpdl_subscriptions
// (the events waiting for a signal), goxpdl_incidents, goxpdl_batches,
// goxpdl_batch_failures, goxpdl_locks, goxpdl_lock_keys, and
// goxpdl_instance_counts with goxpdl_instance_count_deltas (the instances
// per definition, process and state; counts.go), created by Migrate in
// the host's database. Timestamps are stored in UTC with microsecond
// precision (DATETIME(6) on MySQL). Errors are translated at the
// boundary: no row is store.ErrNotFound, a unique-key violation
// store.ErrDuplicate, a MySQL deadlock store.ErrConflict; the driver's
// error stays in the chain.
package gormstore
