package engine_test

import (
	"context"
	"fmt"
	"log"

	"github.com/goxpdl/goxpdl/engine"
	"github.com/goxpdl/goxpdl/store/gormstore"
	"github.com/goxpdl/goxpdl/workitem"
)

// Example_workItemForm completes a work item from a form: WorkItemForm
// says which values the item takes and their types, and the text a person
// typed goes in as TextOutputs, parsed by those types. docs/workitems.md
// shows the marked part.
func Example_workItemForm() {
	ctx := context.Background()
	db, err := gormstore.OpenSQLite(gormstore.MemoryPath)
	if err != nil {
		log.Fatal(err)
	}
	e, err := engine.New(engine.Config{DB: db})
	if err != nil {
		log.Fatal(err)
	}
	e.RegisterApplication("ship", func(context.Context, *engine.Call) (map[string]any, error) {
		return map[string]any{"tracking": "T-1"}, nil
	})
	if err := e.Start(ctx); err != nil {
		log.Fatal(err)
	}
	defer func() { _ = e.Stop(ctx) }()
	if _, err := e.Deploy(ctx, []byte(orderXPDL)); err != nil {
		log.Fatal(err)
	}
	id, err := e.StartProcess(ctx, engine.StartOptions{Package: "orders", Variables: map[string]any{"orderId": "o-1"}})
	if err != nil {
		log.Fatal(err)
	}
	_ = e.WaitIdle(ctx)
	items, err := e.WorkItems(ctx, engine.WorkItemFilter{Instance: id, States: workitem.OpenStates})
	if err != nil {
		log.Fatal(err)
	}
	item := items.WorkItems[0].ID

	// begin docblock docs/workitems.md
	form, err := e.WorkItemForm(ctx, item)
	if err != nil {
		log.Fatal(err)
	}
	for _, f := range form.Fields {
		fmt.Printf("%s (%s) = %#v\n", f.ID, f.Type, f.Value)
	}
	// What a person typed, as text: parsed by the declared types.
	_, err = e.CompleteWorkItem(ctx, item, engine.Completion{User: "clerk1", TextOutputs: map[string]string{"approved": "maybe"}})
	fmt.Println(err)
	_, err = e.CompleteWorkItem(ctx, item, engine.Completion{User: "clerk1", TextOutputs: map[string]string{"approved": "yes"}})
	fmt.Println(err)
	// end docblock
	_ = e.WaitIdle(ctx)
	vars, err := e.Variables(ctx, id)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("approved:", vars["approved"], "tracking:", vars["tracking"])
	_ = e.Stop(ctx)
	if sqlDB, err := db.DB(); err == nil {
		_ = sqlDB.Close()
	}
	// Output:
	// orderId (STRING) = "o-1"
	// approved (BOOLEAN) = false
	// tracking (STRING) = ""
	// variable "approved": maybe (string) is not a valid BOOLEAN
	// <nil>
	// approved: true tracking: T-1
}

// ExampleEngine_Settings shows the configuration an engine runs with,
// defaults applied, as an administration page shows it.
func ExampleEngine_Settings() {
	db, err := gormstore.OpenSQLite(gormstore.MemoryPath)
	if err != nil {
		log.Fatal(err)
	}
	e, err := engine.New(engine.Config{DB: db, NodeID: "node-a", CriticalWorkers: 2})
	if err != nil {
		log.Fatal(err)
	}
	s := e.Settings()
	fmt.Println(s.NodeID, s.Database)
	fmt.Println("pools:", s.CriticalWorkers, s.NormalWorkers, s.NormalWorkersMin, s.NormalWorkersMax)
	fmt.Println("poll:", s.PollInterval, "lease:", s.EventLease, "batch chunk:", s.BatchChunk)
	if sqlDB, err := db.DB(); err == nil {
		_ = sqlDB.Close()
	}
	// Output:
	// node-a sqlite
	// pools: 2 16 16 128
	// poll: 200ms lease: 30s batch chunk: 100
}
