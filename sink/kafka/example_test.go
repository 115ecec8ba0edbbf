package kafka_test

import (
	"context"
	"fmt"
	"log"
	"strconv"
	"strings"

	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/goxpdl/goxpdl/engine"
	"github.com/goxpdl/goxpdl/sink"
	"github.com/goxpdl/goxpdl/sink/kafka"
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

// ExampleNew publishes an engine's records to Kafka, one topic per
// process definition, and reads them back. The cluster is franz-go's
// in-process fake; a host names its own brokers.
func ExampleNew() {
	ctx := context.Background()
	cluster, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.AllowAutoTopicCreation())
	if err != nil {
		log.Fatal(err)
	}
	defer cluster.Close()
	brokers := cluster.ListenAddrs()
	db, err := gormstore.OpenSQLite(gormstore.MemoryPath)
	if err != nil {
		log.Fatal(err)
	}
	if sqlDB, err := db.DB(); err == nil {
		defer func() { _ = sqlDB.Close() }()
	}

	// begin docblock docs/sinks.md
	s, err := kafka.New(kafka.Config{Brokers: brokers, Topic: "goxpdl.{process}"})
	if err != nil {
		log.Fatal(err)
	}
	defer s.Close() // after the engine stopped
	e, err := engine.New(engine.Config{DB: db, Publish: s})
	if err != nil {
		log.Fatal(err)
	}
	// end docblock
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

	consumer, err := kgo.NewClient(kgo.SeedBrokers(brokers...), kgo.ConsumeTopics("goxpdl.hello"),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	if err != nil {
		log.Fatal(err)
	}
	defer consumer.Close()
	for n := 0; n < 4; {
		consumer.PollFetches(ctx).EachRecord(func(r *kgo.Record) {
			n++
			var typ string
			for _, h := range r.Headers {
				if h.Key == sink.HeaderType {
					typ = string(h.Value)
				}
			}
			fmt.Println(strings.Replace(fmt.Sprintf("%s key=%s %s", r.Topic, r.Key, typ), key, "key=<instance>", 1))
		})
	}
	// Output:
	// goxpdl.hello key=<instance> process.started
	// goxpdl.hello key=<instance> activity.started
	// goxpdl.hello key=<instance> activity.completed
	// goxpdl.hello key=<instance> process.completed
}
