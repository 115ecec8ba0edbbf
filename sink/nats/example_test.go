package nats_test

import (
	"context"
	"log"

	"github.com/goxpdl/goxpdl/engine"
	"github.com/goxpdl/goxpdl/sink/nats"
	"github.com/goxpdl/goxpdl/store/gormstore"
)

// ExampleNew publishes an engine's records to NATS JetStream, one
// subject per process definition, into a stream the sink creates if it
// is missing. It needs a NATS server with JetStream at 127.0.0.1:4222
// (nats-server -js), so go test compiles it but does not run it;
// TestAnEnginePublishesToNATS does the same against the server.
func ExampleNew() {
	ctx := context.Background()
	db, err := gormstore.OpenSQLite(gormstore.MemoryPath)
	if err != nil {
		log.Fatal(err)
	}
	// begin docblock docs/sinks.md
	s, err := nats.New(nats.Config{
		URL:     "nats://127.0.0.1:4222",
		Subject: "goxpdl.{process}",
		Stream:  "GOXPDL", // created over goxpdl.* at the first Publish, if missing
	})
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
	if err := e.WaitPublished(ctx); err != nil {
		log.Fatal(err)
	}
}
