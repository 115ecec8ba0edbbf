package engine_test

import (
	"context"
	"fmt"
	"log"

	"github.com/goxpdl/goxpdl/engine"
	"github.com/goxpdl/goxpdl/store/gormstore"
	"github.com/goxpdl/goxpdl/wftype"
)

// Example_overview reads what a dashboard shows, then pages through the
// newest instances first and counts those of a filter: the reads behind
// the console's dashboard and instance list. docs/engine.md shows the
// marked part.
func Example_overview() {
	ctx := context.Background()
	db, err := gormstore.OpenSQLite(gormstore.MemoryPath)
	if err != nil {
		log.Fatal(err)
	}
	e, err := engine.New(engine.Config{DB: db})
	if err != nil {
		log.Fatal(err)
	}
	if err := e.Start(ctx); err != nil {
		log.Fatal(err)
	}
	if _, err := e.Deploy(ctx, []byte(orderXPDL)); err != nil {
		log.Fatal(err)
	}
	var ids []int64
	for _, order := range []string{"a", "b", "c", "d", "e"} {
		id, err := e.StartProcess(ctx, engine.StartOptions{Package: "orders", BusinessKey: "order-" + order, Variables: map[string]any{"orderId": order}})
		if err != nil {
			log.Fatal(err)
		}
		ids = append(ids, id)
	}
	_ = e.WaitIdle(ctx)
	if err := e.Terminate(ctx, ids[1], engine.Op{Actor: "alice", Reason: "duplicate"}); err != nil {
		log.Fatal(err)
	}
	_ = e.WaitIdle(ctx)

	// begin docblock docs/engine.md
	o, err := e.Overview(ctx)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Printf("%d instances: %d running, %d terminated\n", o.Total, o.States[wftype.ProcessRunning], o.States[wftype.ProcessTerminated])
	for _, d := range o.Definitions {
		fmt.Printf("%s v%d, process %s: %d\n", d.Package, d.Version, d.Process, d.Total)
	}
	fmt.Printf("%d events to process, %d timers pending, on %s\n", o.Events.Unprocessed, o.Timers.Pending, o.Database.Dialect)

	// The newest first, two a page; the cursor is opaque.
	f := engine.InstanceFilter{Package: "orders", Sort: engine.SortStartedDesc, Limit: 2}
	for {
		page, err := e.Instances(ctx, f)
		if err != nil {
			log.Fatal(err)
		}
		for _, pi := range page.Instances {
			fmt.Printf("%s: %s\n", pi.BusinessKey, pi.State)
		}
		if page.Cursor == "" { // the last page
			break
		}
		f.Cursor = page.Cursor
	}
	running, err := e.CountInstances(ctx, engine.InstanceFilter{Package: "orders", States: []wftype.ProcessState{wftype.ProcessRunning}}, 0)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("running orders:", running.N)
	// end docblock
	_ = e.Stop(ctx)
	if sqlDB, err := db.DB(); err == nil {
		_ = sqlDB.Close()
	}
	// Output:
	// 5 instances: 4 running, 1 terminated
	// orders v1, process order: 5
	// 0 events to process, 0 timers pending, on sqlite
	// order-e: Running
	// order-d: Running
	// order-c: Running
	// order-b: Terminated
	// order-a: Running
	// running orders: 4
}
