package metrics_test

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"log"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"

	"github.com/goxpdl/goxpdl/engine"
	"github.com/goxpdl/goxpdl/metrics"
	"github.com/goxpdl/goxpdl/store/gormstore"
)

// helloXPDL is a process that completes as soon as it starts.
const helloXPDL = `<?xml version="1.0" encoding="UTF-8"?>
<Package xmlns="http://www.wfmc.org/2002/XPDL1.0" Id="greetings" Name="Greetings">
  <PackageHeader><XPDLVersion>1.0</XPDLVersion><Vendor>example</Vendor><Created>2026-12-01</Created></PackageHeader>
  <WorkflowProcesses>
    <WorkflowProcess Id="hello"><Activities><Activity Id="Hello"><Route/></Activity></Activities></WorkflowProcess>
  </WorkflowProcesses>
</Package>`

// Example wires Metrics into an engine, runs a process and scrapes
// /metrics as Prometheus would.
func Example() {
	ctx := context.Background()
	db, err := gormstore.OpenSQLite(gormstore.MemoryPath)
	if err != nil {
		log.Fatal(err)
	}
	if sqlDB, err := db.DB(); err == nil {
		defer func() { _ = sqlDB.Close() }()
	}
	logger := slog.New(slog.NewTextHandler(io.Discard, nil))

	// begin docblock docs/metrics.md
	// The observer first: it goes into the engine's Config, and New
	// attaches the engine to it.
	m := metrics.New()
	eng, err := engine.New(engine.Config{DB: db, Observer: m, Logger: logger})
	if err != nil {
		log.Fatal(err)
	}
	reg := prometheus.NewRegistry()
	reg.MustRegister(m, collectors.NewGoCollector()) // the host decides what else it exports
	mux := http.NewServeMux()
	mux.Handle("GET /metrics", metrics.Handler(reg))
	// end docblock

	if err := eng.Start(ctx); err != nil {
		log.Fatal(err)
	}
	defer func() { _ = eng.Stop(ctx) }()
	if _, err := eng.Deploy(ctx, []byte(helloXPDL)); err != nil {
		log.Fatal(err)
	}
	if _, err := eng.StartProcess(ctx, engine.StartOptions{Package: "greetings", Process: "hello"}); err != nil {
		log.Fatal(err)
	}
	if err := eng.WaitQuiet(ctx); err != nil {
		log.Fatal(err)
	}

	srv := httptest.NewServer(mux)
	defer srv.Close()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, srv.URL+"/metrics", nil)
	if err != nil {
		log.Fatal(err)
	}
	resp, err := srv.Client().Do(req)
	if err != nil {
		log.Fatal(err)
	}
	defer func() { _ = resp.Body.Close() }()
	lines := bufio.NewScanner(resp.Body)
	for lines.Scan() {
		line := lines.Text()
		for _, name := range []string{"goxpdl_instances_finished_total{", "goxpdl_activities_finished_total{", "goxpdl_incidents_open{cause=\"application\"}", "goxpdl_pool_workers{"} {
			if strings.HasPrefix(line, name) {
				fmt.Println(line)
			}
		}
	}
	// Output:
	// goxpdl_activities_finished_total{outcome="completed",package="greetings",process="hello",type="route"} 1
	// goxpdl_incidents_open{cause="application"} 0
	// goxpdl_instances_finished_total{outcome="completed",package="greetings",process="hello"} 1
	// goxpdl_pool_workers{pool="critical"} 4
	// goxpdl_pool_workers{pool="normal"} 16
}
