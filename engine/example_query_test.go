package engine_test

import (
	"context"
	"fmt"
	"log"

	"github.com/goxpdl/goxpdl/engine"
	"github.com/goxpdl/goxpdl/store/gormstore"
	"github.com/goxpdl/goxpdl/wftype"
	"github.com/goxpdl/goxpdl/workitem"
)

// Example_instances pages through process instances: every list call of
// the engine takes a filter and returns one page with the cursor of the
// next. docs/engine.md shows the marked part.
func Example_instances() {
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
	defer func() { _ = e.Stop(ctx) }()
	if _, err := e.Deploy(ctx, []byte(orderXPDL)); err != nil {
		log.Fatal(err)
	}
	for _, order := range []string{"a", "b", "c", "d", "e"} {
		if _, err := e.StartProcess(ctx, engine.StartOptions{Package: "orders", BusinessKey: "order-" + order, Variables: map[string]any{"orderId": order}}); err != nil {
			log.Fatal(err)
		}
	}
	_ = e.WaitIdle(ctx)

	// begin docblock docs/engine.md
	f := engine.InstanceFilter{Package: "orders", States: []wftype.ProcessState{wftype.ProcessRunning}, Limit: 2}
	for {
		page, err := e.Instances(ctx, f)
		if err != nil {
			log.Fatal(err)
		}
		for _, pi := range page.Instances {
			items, err := e.WorkItems(ctx, engine.WorkItemFilter{Instance: pi.ID, States: workitem.OpenStates})
			if err != nil {
				log.Fatal(err)
			}
			fmt.Printf("%s, %s v%d: %s, %d open work item(s)\n", pi.BusinessKey, pi.Process, pi.Version, pi.State, len(items.WorkItems))
		}
		if page.Next == 0 { // the last page
			break
		}
		f.After = page.Next
	}
	// end docblock
	_ = e.Stop(ctx)
	if sqlDB, err := db.DB(); err == nil {
		_ = sqlDB.Close()
	}
	// Output:
	// order-a, order v1: Running, 1 open work item(s)
	// order-b, order v1: Running, 1 open work item(s)
	// order-c, order v1: Running, 1 open work item(s)
	// order-d, order v1: Running, 1 open work item(s)
	// order-e, order v1: Running, 1 open work item(s)
}
