package engine_test

import (
	"context"
	"fmt"
	"io"
	"log"
	"log/slog"
	"time"

	"github.com/goxpdl/goxpdl/engine"
	"github.com/goxpdl/goxpdl/store/gormstore"
	"github.com/goxpdl/goxpdl/timer"
)

// greetXPDL is a process that completes as soon as it starts.
const greetXPDL = `<?xml version="1.0" encoding="UTF-8"?>
<Package xmlns="http://www.wfmc.org/2002/XPDL1.0" Id="greetings" Name="Greetings">
  <PackageHeader><XPDLVersion>1.0</XPDLVersion><Vendor>example</Vendor><Created>2026-11-26</Created></PackageHeader>
  <WorkflowProcesses>
    <WorkflowProcess Id="hello"><Activities><Activity Id="Hello"><Route/></Activity></Activities></WorkflowProcess>
    <WorkflowProcess Id="audit"><Activities><Activity Id="Record"><Route/></Activity></Activities></WorkflowProcess>
  </WorkflowProcesses>
</Package>`

// ExampleEngine_Purge keeps finished instances for 30 days (audit
// instances for a year), deleted every night at three, and purges by
// hand the instances that ended before a cutoff. The clock is a fake one
// here, so that the example can let days pass.
func ExampleEngine_Purge() {
	ctx := context.Background()
	db, err := gormstore.OpenSQLite(gormstore.MemoryPath)
	if err != nil {
		log.Fatal(err)
	}
	if sqlDB, err := db.DB(); err == nil {
		defer func() { _ = sqlDB.Close() }()
	}
	clock := timer.NewFake(time.Date(2026, 11, 26, 9, 0, 0, 0, time.UTC))
	// begin docblock docs/operations.md
	retention := engine.Retention{
		MaxAge: 30 * 24 * time.Hour, // Completed and Terminated instances, 30 days after they ended
		PerProcess: map[engine.RetentionScope]time.Duration{
			{Package: "greetings", Process: "audit"}: 365 * 24 * time.Hour, // a year for these
			{Package: "contracts"}:                   0,                    // forever
		},
		Schedule: "0 3 * * *", // every night at three (Config.Location); default hourly
	}
	// end docblock
	e, err := engine.New(engine.Config{
		DB: db, Clock: clock, Retention: retention, Logger: slog.New(slog.NewTextHandler(io.Discard, nil)),
	})
	if err != nil {
		log.Fatal(err)
	}
	if err := e.Start(ctx); err != nil {
		log.Fatal(err)
	}
	defer func() { _ = e.Stop(ctx) }()
	if _, err := e.Deploy(ctx, []byte(greetXPDL)); err != nil {
		log.Fatal(err)
	}
	for range 3 {
		if _, err := e.StartProcess(ctx, engine.StartOptions{Package: "greetings", Process: "hello"}); err != nil {
			log.Fatal(err)
		}
	}
	_ = e.WaitIdle(ctx)

	// begin docblock docs/operations.md
	// By hand: everything of package greetings that ended before now.
	report, err := e.Purge(ctx, engine.PurgeOptions{Before: clock.Now(), Package: "greetings"},
		engine.Op{Actor: "ops", Reason: "test data"})
	// end docblock
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("purged at 09:00:", report.Instances)

	clock.Advance(time.Minute)
	report, err = e.Purge(ctx, engine.PurgeOptions{Before: clock.Now(), Package: "greetings"}, engine.Op{Actor: "ops", Reason: "test data"})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("purged at 09:01:", report.Instances, "in", report.Batches, "batch")
	fmt.Println("purged in all:", e.Stats().Purged)
	// Output:
	// purged at 09:00: 0
	// purged at 09:01: 3 in 1 batch
	// purged in all: 3
}
