package gormstore_test

import (
	"context"
	"fmt"
	"log"
	"time"

	"gorm.io/gorm"

	"github.com/goxpdl/goxpdl/store"
	"github.com/goxpdl/goxpdl/store/gormstore"
)

// invoice is a table of the host program.
type invoice struct {
	ID     int64 `gorm:"primaryKey"`
	Amount int64
}

// The host writes its business row and the engine's state in one
// transaction: both commit, or neither does.
func ExampleNew_hostTransaction() {
	ctx := context.Background()
	db, err := gormstore.OpenSQLite(gormstore.MemoryPath)
	if err != nil {
		log.Fatal(err)
	}
	sqlDB, err := db.DB()
	if err != nil {
		log.Fatal(err)
	}
	defer func() {
		if err := sqlDB.Close(); err != nil {
			log.Fatal(err)
		}
	}()
	s, err := gormstore.New(db)
	if err != nil {
		log.Fatal(err)
	}
	if err := s.Migrate(ctx); err != nil {
		log.Fatal(err)
	}
	if err := db.AutoMigrate(&invoice{}); err != nil {
		log.Fatal(err)
	}

	now := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	err = db.WithContext(ctx).Transaction(func(tx *gorm.DB) error {
		if err := tx.Create(&invoice{Amount: 1200}).Error; err != nil {
			return err
		}
		inTx, err := gormstore.New(tx) // the engine's store inside the host's transaction
		if err != nil {
			return err
		}
		_, err = inTx.InsertProcessInstance(ctx, store.ProcessInstance{
			ID: 1, ProcessDefID: "approve_invoice", State: "Initiated", CreatedAt: now, UpdatedAt: now,
		})
		return err
	})
	if err != nil {
		log.Fatal(err)
	}

	var invoices int64
	if err := db.Model(&invoice{}).Count(&invoices).Error; err != nil {
		log.Fatal(err)
	}
	counts, err := s.CountProcessInstancesByState(ctx)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("invoices:", invoices, "instances:", counts)
	// Output: invoices: 1 instances: map[Initiated:1]
}
