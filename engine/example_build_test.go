package engine_test

import (
	"context"
	"fmt"
	"log"

	"github.com/goxpdl/goxpdl/engine"
	"github.com/goxpdl/goxpdl/store/gormstore"
	"github.com/goxpdl/goxpdl/xpdl"
)

// ExampleEngine_DeployPackage deploys a process built in Go (xpdl.NewPackage)
// and runs it to completion. The engine stores the package's XPDL 2.2
// text (xpdl.Marshal), which is what it reads again after a restart.
func ExampleEngine_DeployPackage() {
	ctx := context.Background()
	// begin docblock docs/builder.md
	str := xpdl.Basic(xpdl.BasicString)
	b := xpdl.NewPackage("shipping")
	b.Application("ship", xpdl.Param("order", xpdl.ModeIn, str), xpdl.Param("parcel", xpdl.ModeOut, str))
	p := xpdl.NewProcess("ship-order")
	p.DataField("orderId", str)
	p.DataField("label", str)
	p.DataField("tracking", str)
	p.StartEvent("start")
	p.ScriptTask("prepare", `label = "order " + orderId`)
	p.ApplicationTask("ship", "ship", "orderId", "tracking")
	p.EndEvent("end")
	p.Sequence("start", "prepare", "ship", "end")
	b.Process(p)
	pkg, err := b.Build()
	if err != nil {
		log.Fatal(err)
	}
	src, err := xpdl.Marshal(pkg)
	if err != nil {
		log.Fatal(err)
	}

	db, err := gormstore.OpenSQLite(gormstore.MemoryPath)
	if err != nil {
		log.Fatal(err)
	}
	e, err := engine.New(engine.Config{DB: db})
	if err != nil {
		log.Fatal(err)
	}
	e.RegisterApplication("ship", func(_ context.Context, call *engine.Call) (map[string]any, error) {
		return map[string]any{"parcel": "TRK-" + call.Params["order"].(string)}, nil
	})
	if err := e.Start(ctx); err != nil {
		log.Fatal(err)
	}
	if _, err := e.DeployPackage(ctx, pkg, src); err != nil {
		log.Fatal(err)
	}
	id, err := e.StartProcess(ctx, engine.StartOptions{Package: "shipping", Variables: map[string]any{"orderId": "42"}})
	if err != nil {
		log.Fatal(err)
	}
	_ = e.WaitIdle(ctx)
	pi, _ := e.Instance(ctx, id)
	vars, _ := e.Variables(ctx, id)
	fmt.Println(pi.State, vars["label"], vars["tracking"])
	// end docblock
	_ = e.Stop(ctx)
	if sqlDB, err := db.DB(); err == nil {
		_ = sqlDB.Close()
	}
	// Output:
	// Completed order 42 TRK-42
}
