package engine_test

import (
	"context"
	"fmt"
	"io"
	"log"
	"log/slog"

	"gorm.io/gorm"

	"github.com/goxpdl/goxpdl/engine"
	"github.com/goxpdl/goxpdl/store/gormstore"
)

// invoice is a business row of the host, written in the same transaction
// as the process instance that handles it.
type invoice struct {
	ID     int64
	Amount int
}

// ExampleEngine_Transaction starts a process in the host's own
// transaction, together with the host's business row: both commit, or
// neither does, and the engine runs the instance as soon as they have.
func ExampleEngine_Transaction() {
	ctx := context.Background()
	db, err := gormstore.OpenSQLite(gormstore.MemoryPath)
	if err != nil {
		log.Fatal(err)
	}
	if sqlDB, err := db.DB(); err == nil {
		defer func() { _ = sqlDB.Close() }()
	}
	if err := db.AutoMigrate(&invoice{}); err != nil {
		log.Fatal(err)
	}
	e, err := engine.New(engine.Config{DB: db, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		log.Fatal(err)
	}
	if err := e.Start(ctx); err != nil {
		log.Fatal(err)
	}
	defer func() { _ = e.Stop(ctx) }()
	if _, err := e.Deploy(ctx, []byte(`<?xml version="1.0" encoding="UTF-8"?>
<Package xmlns="http://www.wfmc.org/2002/XPDL1.0" Id="billing" Name="Billing">
  <PackageHeader><XPDLVersion>1.0</XPDLVersion><Vendor>example</Vendor><Created>2026-11-24</Created></PackageHeader>
  <WorkflowProcesses><WorkflowProcess Id="bill">
    <Activities><Activity Id="send"><Route/></Activity></Activities>
  </WorkflowProcess></WorkflowProcesses>
</Package>`)); err != nil {
		log.Fatal(err)
	}

	var id int64
	// begin docblock docs/engine.md
	err = e.Transaction(ctx, db, func(tx *gorm.DB) error {
		if err := tx.Create(&invoice{Amount: 120}).Error; err != nil { // the host's business row
			return err
		}
		id, err = e.StartProcessTx(ctx, tx, engine.StartOptions{Package: "billing"})
		return err
	})
	// end docblock
	if err != nil {
		log.Fatal(err)
	}
	_ = e.WaitQuiet(ctx)
	pi, _ := e.Instance(ctx, id)
	var invoices int64
	db.Model(&invoice{}).Count(&invoices)
	fmt.Println(pi.State, invoices)
	// Output: Completed 1
}
