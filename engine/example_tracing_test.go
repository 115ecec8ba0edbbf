package engine_test

import (
	"context"
	"fmt"
	"log"
	"slices"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/goxpdl/goxpdl/engine"
	"github.com/goxpdl/goxpdl/store/gormstore"
)

// ExampleConfig_tracerProvider makes OpenTelemetry spans of a process's
// steps and application calls. A real host passes the TracerProvider it
// exports with (OTLP, Jaeger ...); here the SDK's own recorder keeps the
// spans in memory.
func ExampleConfig_tracerProvider() {
	ctx := context.Background()
	db, err := gormstore.OpenSQLite(gormstore.MemoryPath)
	if err != nil {
		log.Fatal(err)
	}
	if sqlDB, err := db.DB(); err == nil {
		defer func() { _ = sqlDB.Close() }()
	}
	recorder := tracetest.NewSpanRecorder()
	// begin docblock docs/metrics.md
	provider := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(recorder))
	eng, err := engine.New(engine.Config{DB: db, TracerProvider: provider})
	if err != nil {
		log.Fatal(err)
	}
	eng.RegisterApplication("ship", func(ctx context.Context, call *engine.Call) (map[string]any, error) {
		// The host's own spans nest under the call's.
		_, span := provider.Tracer("shop").Start(ctx, "print label")
		defer span.End()
		return map[string]any{"tracking": "TRK-1"}, nil
	})
	// end docblock
	if err := eng.Start(ctx); err != nil {
		log.Fatal(err)
	}
	defer func() { _ = eng.Stop(ctx) }()
	if _, err := eng.Deploy(ctx, []byte(shipXPDL)); err != nil {
		log.Fatal(err)
	}
	id, err := eng.StartProcess(ctx, engine.StartOptions{Package: "tracing"})
	if err != nil {
		log.Fatal(err)
	}
	if err := eng.WaitQuiet(ctx); err != nil {
		log.Fatal(err)
	}
	// Every span of the instance is in its trace.
	instance := eng.InstanceSpanContext(id).TraceID()
	var names []string
	for _, s := range recorder.Ended() {
		if s.SpanContext().TraceID() == instance {
			names = append(names, s.Name())
		}
	}
	slices.Sort(names)
	for _, n := range slices.Compact(names) {
		fmt.Println(n)
	}
	// Output:
	// goxpdl application ship
	// goxpdl step activity.start
	// goxpdl step process.schedule
	// print label
}

// shipXPDL is a process of one application call.
const shipXPDL = `<?xml version="1.0" encoding="UTF-8"?>
<Package xmlns="http://www.wfmc.org/2009/XPDL2.2" Id="tracing">
  <PackageHeader><XPDLVersion>2.2</XPDLVersion><Vendor>goxpdl</Vendor><Created>2026-11-26</Created></PackageHeader>
  <Applications><Application Id="ship"><FormalParameters>
    <FormalParameter Id="tracking" Mode="OUT"><DataType><BasicType Type="STRING"/></DataType></FormalParameter>
  </FormalParameters></Application></Applications>
  <WorkflowProcesses><WorkflowProcess Id="ship">
    <DataFields><DataField Id="tracking"><DataType><BasicType Type="STRING"/></DataType></DataField></DataFields>
    <Activities>
      <Activity Id="Ship"><Implementation><Task><TaskApplication Id="ship"><ActualParameters><ActualParameter>tracking</ActualParameter></ActualParameters></TaskApplication></Task></Implementation></Activity>
    </Activities>
  </WorkflowProcess></WorkflowProcesses>
</Package>`
