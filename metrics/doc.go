// Package metrics exports goxpdl's engine to Prometheus: counters and
// histograms of what the engine observes (instances and activities by
// outcome, step latency, event lag, application calls, timer lateness,
// group commits, incidents) and, at scrape time, its pools, queues,
// backlog, timers and open incidents. docs/metrics.md lists every metric.
//
// The engine itself knows nothing of Prometheus: it reports through
// engine.Observer, which a Metrics implements. Wire them in this order:
//
//	m := metrics.New()                                         // 1. the observer first
//	eng, err := engine.New(engine.Config{DB: db, Observer: m}) // 2. New attaches eng to m
//	reg := prometheus.NewRegistry()
//	reg.MustRegister(m)                                        // 3. the collector
//	mux.Handle("GET /metrics", metrics.Handler(reg))           // 4. the endpoint
//
// The caller's obligations: one Metrics per engine (Attach refuses a
// second engine with ErrAttached; give each its WithConstLabels when
// several engines share a registry), and register it once. With
// engine.Observers(m, other), m is attached the same way. A scrape runs
// two counting queries against the engine's database (WithQueryTimeout
// bounds them); when they fail, their gauges are left out of that scrape
// and goxpdl_scrape_errors_total counts it.
//
// Observations of steps made in a host's transaction (the engine's …Tx
// commands) are not counted: the engine cannot see whether the host
// commits. Application calls are counted wherever they run.
package metrics
