package sink_test

import (
	"context"
	"fmt"
	"log"
	"strconv"
	"strings"
	"sync"

	"github.com/goxpdl/goxpdl/engine"
	"github.com/goxpdl/goxpdl/sink"
	"github.com/goxpdl/goxpdl/store/gormstore"
)

// helloXPDL is a process of one route: it starts and completes.
const helloXPDL = `<?xml version="1.0" encoding="UTF-8"?>
<Package xmlns="http://www.wfmc.org/2009/XPDL2.2" Id="greetings" Name="Greetings">
  <PackageHeader><XPDLVersion>2.2</XPDLVersion><Vendor>example</Vendor><Created>2026-11-01</Created></PackageHeader>
  <WorkflowProcesses><WorkflowProcess Id="hello">
    <Activities><Activity Id="Hello"><Route/></Activity></Activities>
  </WorkflowProcess></WorkflowProcesses>
</Package>`

// ExampleFunc is a sink of the host's own: here it prints what it gets;
// a real one hands the messages to its broker and returns nil only once
// the broker has them all.
func ExampleFunc() {
	ctx := context.Background()
	db, err := gormstore.OpenSQLite(gormstore.MemoryPath)
	if err != nil {
		log.Fatal(err)
	}
	if sqlDB, err := db.DB(); err == nil {
		defer func() { _ = sqlDB.Close() }()
	}
	// begin docblock docs/sinks.md
	var mu sync.Mutex // Publish is never called concurrently; the lines printed below are read after it
	var lines []string
	printer := sink.Func(func(_ context.Context, msgs []sink.Message) error {
		mu.Lock()
		defer mu.Unlock()
		for _, m := range msgs {
			lines = append(lines, fmt.Sprintf("%s %s key=%s %s", sink.Topic("wf.{process}", m), m.Type, m.Key(), m.Payload[:8]))
		}
		return nil
	})
	e, err := engine.New(engine.Config{DB: db, Publish: printer})
	// end docblock
	if err != nil {
		log.Fatal(err)
	}
	if err := e.Start(ctx); err != nil {
		log.Fatal(err)
	}
	defer func() { _ = e.Stop(ctx) }()
	if _, err := e.Deploy(ctx, []byte(helloXPDL)); err != nil {
		log.Fatal(err)
	}
	id, err := e.StartProcess(ctx, engine.StartOptions{Package: "greetings", Process: "hello"})
	if err != nil {
		log.Fatal(err)
	}
	// The key is the instance's id, which the engine makes: shown as
	// <instance> so that the output below does not change from run to run.
	key := "key=" + strconv.FormatInt(id, 10)
	if err := e.WaitQuiet(ctx); err != nil {
		log.Fatal(err)
	}
	if err := e.WaitPublished(ctx); err != nil {
		log.Fatal(err)
	}
	mu.Lock()
	defer mu.Unlock()
	for _, l := range lines {
		fmt.Println(strings.Replace(l, key, "key=<instance>", 1))
	}
	// Output:
	// wf.hello process.started key=<instance> {"seq":0
	// wf.hello activity.started key=<instance> {"seq":0
	// wf.hello activity.completed key=<instance> {"seq":0
	// wf.hello process.completed key=<instance> {"seq":0
}
