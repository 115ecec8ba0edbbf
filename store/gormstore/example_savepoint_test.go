package gormstore_test

import (
	"context"
	"errors"
	"fmt"
	"log"
	"time"

	"github.com/goxpdl/goxpdl/store"
	"github.com/goxpdl/goxpdl/store/gormstore"
)

// openExample returns a migrated store over a fresh in-memory database
// and the function that closes it.
func openExample(ctx context.Context) (*gormstore.Store, func()) {
	db, err := gormstore.OpenSQLite(gormstore.MemoryPath)
	if err != nil {
		log.Fatal(err)
	}
	s, err := gormstore.New(db)
	if err != nil {
		log.Fatal(err)
	}
	if err := s.Migrate(ctx); err != nil {
		log.Fatal(err)
	}
	return s, func() {
		sqlDB, err := db.DB()
		if err == nil {
			err = sqlDB.Close()
		}
		if err != nil {
			log.Fatal(err)
		}
	}
}

// Several units of work share one transaction, each in a savepoint: the
// one that fails is rolled back alone, and the others commit.
func ExampleStore_Savepoint() {
	ctx := context.Background()
	s, closeDB := openExample(ctx)
	defer closeDB()

	now := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	errRefused := errors.New("refused")
	err := s.InTx(ctx, func(ctx context.Context, tx store.Tx) error {
		for i, process := range []string{"first", "refused", "third"} {
			failed, err := tx.Savepoint(ctx, func(ctx context.Context, tx store.Tx) error {
				if _, err := tx.InsertProcessInstance(ctx, store.ProcessInstance{
					ID: int64(i + 1), ProcessDefID: process, State: "Initiated", CreatedAt: now, UpdatedAt: now,
				}); err != nil {
					return err
				}
				if process == "refused" {
					return errRefused // after its write: the write goes
				}
				return nil
			})
			if err != nil {
				return err // the transaction is lost
			}
			fmt.Println(process, "failed:", failed)
		}
		return nil
	})
	if err != nil {
		log.Fatal(err)
	}
	rows, err := s.ListProcessInstances(ctx, store.ListProcessInstancesParams{})
	if err != nil {
		log.Fatal(err)
	}
	for _, pi := range rows {
		fmt.Println("committed:", pi.ProcessDefID)
	}
	// Output:
	// first failed: <nil>
	// refused failed: refused
	// third failed: <nil>
	// committed: first
	// committed: third
}

// Steps of a unit that can run again as a whole, each in a deferred
// savepoint: a step that fails is undone alone, and the writes of those
// that succeed wait, joined, for the commit (one multi-row INSERT here),
// with no statement for any savepoint.
func ExampleStore_DeferredSavepoint() {
	ctx := context.Background()
	s, closeDB := openExample(ctx)
	defer closeDB()

	now := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	errRefused := errors.New("refused")
	err := s.InTx(ctx, func(ctx context.Context, tx store.Tx) error {
		for i, step := range []string{"first", "refused", "third"} {
			failed, err := tx.DeferredSavepoint(ctx, func(ctx context.Context, tx store.Tx) error {
				if err := tx.InsertHistory(ctx, []store.HistoryEntry{{
					ID: int64(i + 1), ProcessInstanceID: 1, Subject: store.SubjectProcess, ToState: step, At: now,
				}}); err != nil {
					return err
				}
				if step == "refused" {
					return errRefused // after its write: the write goes
				}
				return nil
			})
			if err != nil {
				return err // the transaction is lost: run it again
			}
			fmt.Println(step, "failed:", failed)
		}
		return nil // a held write that fails now fails the commit
	})
	if err != nil {
		log.Fatal(err)
	}
	hist, err := s.ListHistory(ctx, store.ListHistoryParams{ProcessInstanceID: 1})
	if err != nil {
		log.Fatal(err)
	}
	for _, h := range hist {
		fmt.Println("committed:", h.ToState)
	}
	// Output:
	// first failed: <nil>
	// refused failed: refused
	// third failed: <nil>
	// committed: first
	// committed: third
}

// Code that has only the store.Tx gets the transaction's *gorm.DB back,
// to write tables of its own in the same transaction.
func ExampleDBOf() {
	ctx := context.Background()
	s, closeDB := openExample(ctx)
	defer closeDB()
	if err := s.DB().AutoMigrate(&invoice{}); err != nil {
		log.Fatal(err)
	}

	err := s.InTx(ctx, func(ctx context.Context, tx store.Tx) error {
		if err := tx.Flush(ctx); err != nil { // the store's held-back writes first
			return err
		}
		db, err := gormstore.DBOf(tx)
		if err != nil {
			return err
		}
		return db.WithContext(ctx).Create(&invoice{Amount: 300}).Error
	})
	if err != nil {
		log.Fatal(err)
	}
	var invoices int64
	if err := s.DB().Model(&invoice{}).Count(&invoices).Error; err != nil {
		log.Fatal(err)
	}
	fmt.Println("invoices:", invoices)
	// Output: invoices: 1
}
