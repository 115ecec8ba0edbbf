package engine_test

import (
	"context"
	"fmt"
	"log"

	"github.com/goxpdl/goxpdl/engine"
	"github.com/goxpdl/goxpdl/store/gormstore"
	"github.com/goxpdl/goxpdl/wftype"
)

// approvalXPDL waits for a person to approve.
const approvalXPDL = `<?xml version="1.0" encoding="UTF-8"?>
<Package xmlns="http://www.wfmc.org/2002/XPDL1.0" Id="orders" Name="Orders">
  <PackageHeader><XPDLVersion>1.0</XPDLVersion><Vendor>example</Vendor><Created>2026-11-26</Created></PackageHeader>
  <Participants><Participant Id="clerk"><ParticipantType Type="ROLE"/></Participant></Participants>
  <WorkflowProcesses><WorkflowProcess Id="approve">
    <Activities>
      <Activity Id="approve"><Implementation><No/></Implementation><Performer>clerk</Performer></Activity>
    </Activities>
  </WorkflowProcess></WorkflowProcesses>
</Package>`

// A product is withdrawn: every running order waiting for approval is
// terminated by one bulk action. The batch runs in the background, a chunk
// at a time, and says how far it got; each instance's history names the
// operator, the reason and the batch.
func ExampleEngine_StartBatch() {
	ctx := context.Background()
	db, err := gormstore.OpenSQLite(gormstore.MemoryPath)
	if err != nil {
		log.Fatal(err)
	}
	e, err := engine.New(engine.Config{DB: db, BatchChunk: 2})
	if err != nil {
		log.Fatal(err)
	}
	if err := e.Start(ctx); err != nil {
		log.Fatal(err)
	}
	defer func() { _ = e.Stop(ctx) }()
	if _, err := e.Deploy(ctx, []byte(approvalXPDL)); err != nil {
		log.Fatal(err)
	}
	for range 5 {
		if _, err := e.StartProcess(ctx, engine.StartOptions{Package: "orders"}); err != nil {
			log.Fatal(err)
		}
	}
	_ = e.WaitIdle(ctx)

	// Wait for the batch's end, told by its batch.stopped record.
	stopped := make(chan engine.Record, 1)
	defer e.Subscribe(func(r engine.Record) {
		if r.Type == engine.RecordBatchStopped {
			stopped <- r
		}
	})()
	// begin docblock docs/operations.md
	batch, err := e.StartBatch(ctx, engine.BatchRequest{
		Action: engine.BatchTerminate,
		Filter: engine.InstanceFilter{Package: "orders", States: []wftype.ProcessState{wftype.ProcessRunning}},
		Op:     engine.Op{Actor: "alice", Reason: "product withdrawn"},
	})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("selected:", batch.Total)
	<-stopped // a batch.stopped record: it ended (or was paused, or let go)

	batch, err = e.Batch(ctx, batch.ID)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Printf("%s: %d done, %d skipped, %d failed\n", batch.State, batch.Done, batch.Skipped, batch.Failed)
	// end docblock
	page, err := e.Instances(ctx, engine.InstanceFilter{Package: "orders", States: []wftype.ProcessState{wftype.ProcessTerminated}})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("terminated:", len(page.Instances))
	_ = e.Stop(ctx) // before the database closes; the deferred Stop does nothing
	if sqlDB, err := db.DB(); err == nil {
		_ = sqlDB.Close()
	}
	// Output:
	// selected: 5
	// completed: 5 done, 0 skipped, 0 failed
	// terminated: 5
}
