package metrics_test

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	dto "github.com/prometheus/client_model/go"
	"github.com/stretchr/testify/require"
	"gorm.io/gorm"

	"github.com/goxpdl/goxpdl/engine"
	"github.com/goxpdl/goxpdl/enginetest"
	"github.com/goxpdl/goxpdl/metrics"
	"github.com/goxpdl/goxpdl/sink"
	"github.com/goxpdl/goxpdl/store/dbtest"
	"github.com/goxpdl/goxpdl/store/gormstore"
	"github.com/goxpdl/goxpdl/timer"
	"github.com/goxpdl/goxpdl/wftype"
	"github.com/goxpdl/goxpdl/xpdl/xpdltest"
)

var epoch = time.Date(2026, 12, 1, 8, 0, 0, 0, time.UTC)

// ordersXPDL is package "orders": Charge calls the application charge,
// then Review is a clerk's work with a one-minute deadline; done, the
// order goes to Done, late, to Late.
var ordersXPDL = strings.Replace(xpdltest.PackageWith(`<Applications>
  <Application Id="charge"><FormalParameters>
    <FormalParameter Id="amount" Mode="IN"><DataType><BasicType Type="INTEGER"/></DataType></FormalParameter>
  </FormalParameters></Application>
</Applications>`, xpdltest.Process("order", "",
	xpdltest.Activity("Charge", `<Implementation><Tool Id="charge"><ActualParameters><ActualParameter>x</ActualParameter></ActualParameters></Tool></Implementation>`, "", "")+
		xpdltest.Activity("Review", `<Implementation><No/></Implementation><Performer>clerk</Performer>`+
			`<Deadline Execution="SYNCHR"><DeadlineCondition>PT1M</DeadlineCondition><ExceptionName>late</ExceptionName></Deadline>`, "", "")+
		xpdltest.Activity("Done", "<Route/>", "", "")+
		xpdltest.Activity("Late", "<Route/>", "", ""),
	xpdltest.Transition("t1", "Charge>Review")+xpdltest.Transition("t2", "Review>Done")+
		xpdltest.Transition("t3", "Review>Late!exception=late"))), `Id="pkg"`, `Id="orders"`, 1)

// rig is an engine on a fake clock (enginetest) with its Metrics in a
// registry.
type rig struct {
	*enginetest.Harness
	t   *testing.T
	m   *metrics.Metrics
	reg *prometheus.Registry
}

func newRig(t *testing.T, db *gorm.DB) *rig {
	t.Helper()
	m := metrics.New()
	var h *enginetest.Harness
	// charge takes two seconds by the engine's clock, and fails for a
	// negative amount.
	charge := func(_ context.Context, c *engine.Call) (map[string]any, error) {
		h.Clock().Advance(2 * time.Second)
		if c.Params["amount"].(int64) < 0 {
			return nil, errors.New("card declined")
		}
		return nil, nil
	}
	h = enginetest.New(t, enginetest.WithDB(db), enginetest.WithStart(epoch), enginetest.WithApplication("charge", charge),
		enginetest.WithConfig(func(c *engine.Config) { c.Observer = m }))
	reg := prometheus.NewPedanticRegistry()
	reg.MustRegister(m)
	h.Deploy([]byte(ordersXPDL))
	return &rig{Harness: h, t: t, m: m, reg: reg}
}

// family returns the gathered metric family name.
func (r *rig) family(name string) *dto.MetricFamily {
	r.t.Helper()
	families, err := r.reg.Gather()
	require.NoError(r.t, err)
	for _, f := range families {
		if f.GetName() == name {
			return f
		}
	}
	r.t.Fatalf("no metric %s", name)
	return nil
}

// histogram returns the count and sum of the series of name with the
// given labels.
func (r *rig) histogram(name string, labels map[string]string) (uint64, float64) {
	r.t.Helper()
	for _, m := range r.family(name).GetMetric() {
		if hasLabels(m, labels) {
			return m.GetHistogram().GetSampleCount(), m.GetHistogram().GetSampleSum()
		}
	}
	r.t.Fatalf("no series %s%v", name, labels)
	return 0, 0
}

func hasLabels(m *dto.Metric, want map[string]string) bool {
	have := map[string]string{}
	for _, lp := range m.GetLabel() {
		have[lp.GetName()] = lp.GetValue()
	}
	for k, v := range want {
		if have[k] != v {
			return false
		}
	}
	return true
}

func TestMetricsOfARealRun(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, db *gorm.DB) {
		r := newRig(t, db)

		// A: reviewed in time. B: its review's deadline fires, 30 s late
		// (the clock jumps past it). C: the charge fails; its incident
		// stays open.
		a := r.Start("order", map[string]any{"x": 10})
		r.Advance(10 * time.Second)
		r.CompleteWorkItemAs(a, "Review", "clerk1", nil)
		r.RunUntil(a, wftype.ProcessCompleted)
		b := r.Start("order", map[string]any{"x": 20})
		r.WorkItem(b, "Review")
		r.Clock().Advance(90 * time.Second) // a jump, not Advance's steps: the deadline fires late
		r.RunUntil(b, wftype.ProcessCompleted)
		c := r.Start("order", map[string]any{"x": -1})
		r.RunUntil(c, wftype.ProcessRunning)

		require.NoError(t, testutil.GatherAndCompare(r.reg, strings.NewReader(`
# HELP goxpdl_instances_finished_total Process instances that finished, by definition and outcome (completed, terminated, locked).
# TYPE goxpdl_instances_finished_total counter
goxpdl_instances_finished_total{outcome="completed",package="orders",process="order"} 2
# HELP goxpdl_activities_finished_total Activity instances that finished, by definition, activity type and outcome (completed, exception, skipped, cancelled, abnormal).
# TYPE goxpdl_activities_finished_total counter
goxpdl_activities_finished_total{outcome="abnormal",package="orders",process="order",type="application"} 1
goxpdl_activities_finished_total{outcome="completed",package="orders",process="order",type="application"} 2
goxpdl_activities_finished_total{outcome="completed",package="orders",process="order",type="manual"} 1
goxpdl_activities_finished_total{outcome="exception",package="orders",process="order",type="manual"} 1
goxpdl_activities_finished_total{outcome="completed",package="orders",process="order",type="route"} 2
# HELP goxpdl_incidents_open Open incidents of every node, by cause.
# TYPE goxpdl_incidents_open gauge
goxpdl_incidents_open{cause="application"} 1
goxpdl_incidents_open{cause="condition"} 0
goxpdl_incidents_open{cause="exception"} 0
goxpdl_incidents_open{cause="failing"} 0
goxpdl_incidents_open{cause="locking"} 0
goxpdl_incidents_open{cause="other"} 0
goxpdl_incidents_open{cause="retries-exhausted"} 0
goxpdl_incidents_open{cause="subflow"} 0
# HELP goxpdl_timers Durable timers of every node, by state (pending, paused, fired).
# TYPE goxpdl_timers gauge
goxpdl_timers{state="fired"} 0
goxpdl_timers{state="paused"} 0
goxpdl_timers{state="pending"} 0
# HELP goxpdl_timers_due Pending timers already due: the timer service is behind while this stays above 0.
# TYPE goxpdl_timers_due gauge
goxpdl_timers_due 0
# HELP goxpdl_events_unprocessed Unprocessed events in the outbox of every node: available now, or waiting for a retry's backoff.
# TYPE goxpdl_events_unprocessed gauge
goxpdl_events_unprocessed{state="available"} 0
goxpdl_events_unprocessed{state="waiting"} 0
# HELP goxpdl_pool_workers Current size of each worker pool (critical, normal).
# TYPE goxpdl_pool_workers gauge
goxpdl_pool_workers{pool="critical"} 4
goxpdl_pool_workers{pool="normal"} 16
# HELP goxpdl_scrape_errors_total Scrapes whose queries of the engine's database failed (those gauges were left out).
# TYPE goxpdl_scrape_errors_total counter
goxpdl_scrape_errors_total 0
`), "goxpdl_instances_finished_total", "goxpdl_activities_finished_total", "goxpdl_incidents_open", "goxpdl_timers",
			"goxpdl_timers_due", "goxpdl_events_unprocessed", "goxpdl_pool_workers", "goxpdl_scrape_errors_total"))

		opened := r.family("goxpdl_incidents_opened_total")
		for _, m := range opened.GetMetric() {
			want := 0.0
			if hasLabels(m, map[string]string{"cause": "application"}) {
				want = 1
			}
			require.InDelta(t, want, m.GetCounter().GetValue(), 0, "%v", m.GetLabel())
		}
		require.Len(t, opened.GetMetric(), len(engine.IncidentCauses), "every cause from 0")

		// Durations, by the engine's clock: A lived 12 s, B 92 s (it
		// started at +12 s and ended when the clock jumped to +104 s).
		n, sum := r.histogram("goxpdl_instance_duration_seconds", map[string]string{"outcome": "completed"})
		require.Equal(t, uint64(2), n)
		require.InDelta(t, 104.0, sum, 1e-9)
		n, sum = r.histogram("goxpdl_application_call_duration_seconds", map[string]string{"application": "charge", "result": "ok"})
		require.Equal(t, uint64(2), n)
		require.InDelta(t, 4.0, sum, 1e-9)
		n, sum = r.histogram("goxpdl_application_call_duration_seconds", map[string]string{"application": "charge", "result": "error"})
		require.Equal(t, uint64(1), n)
		require.InDelta(t, 2.0, sum, 1e-9)
		n, sum = r.histogram("goxpdl_timer_lateness_seconds", map[string]string{"kind": "deadline"})
		require.Equal(t, uint64(1), n)
		require.InDelta(t, 30.0, sum, 1e-9)
		n, _ = r.histogram("goxpdl_step_duration_seconds", map[string]string{"kind": engine.EventKindActivityStart, "result": "processed"})
		require.GreaterOrEqual(t, n, uint64(5), "Charge and Done/Late of A and B, C's Charge (Review, offered work, starts in the Charge step)")
		n, _ = r.histogram("goxpdl_step_duration_seconds", map[string]string{"kind": engine.EventKindTimer, "result": "processed"})
		require.Equal(t, uint64(1), n)
		n, _ = r.histogram("goxpdl_event_lag_seconds", map[string]string{"pool": "critical"})
		require.GreaterOrEqual(t, n, uint64(4), "the schedule events of A, B, C and B's timer")
		n, _ = r.histogram("goxpdl_group_commit_members", nil)
		require.Positive(t, n)

		// The counters read from Stats agree with the engine's own.
		st := r.Engine().Stats()
		require.InDelta(t, float64(st.Scheduler.EventsProcessed), scalar(t, r, "goxpdl_scheduler_events_total", map[string]string{"result": "processed"}), 0)
		require.InDelta(t, float64(st.Commits.Runs), scalar(t, r, "goxpdl_commit_runs_total", nil), 0)
		require.InDelta(t, 1, scalar(t, r, "goxpdl_timers_fired_total", nil), 0)

		problems, err := testutil.GatherAndLint(r.reg)
		require.NoError(t, err)
		require.Empty(t, problems, "the metrics follow Prometheus' naming conventions")
	})
}

// scalar returns the value of the counter or gauge series of name with
// the given labels.
func scalar(t *testing.T, r *rig, name string, labels map[string]string) float64 {
	t.Helper()
	return value(t, r.reg, name, labels)
}

// value returns the value of the counter or gauge series of name with
// the given labels that g gathers.
func value(t *testing.T, g prometheus.Gatherer, name string, labels map[string]string) float64 {
	t.Helper()
	families, err := g.Gather()
	require.NoError(t, err)
	return valueIn(t, families, name, labels)
}

// valueIn is value in families already gathered.
func valueIn(t *testing.T, families []*dto.MetricFamily, name string, labels map[string]string) float64 {
	t.Helper()
	for _, f := range families {
		if f.GetName() != name {
			continue
		}
		for _, m := range f.GetMetric() {
			if hasLabels(m, labels) {
				if m.GetCounter() != nil {
					return m.GetCounter().GetValue()
				}
				return m.GetGauge().GetValue()
			}
		}
	}
	t.Fatalf("no series %s%v", name, labels)
	return 0
}

func TestScrapeOfAnUnreachableDatabaseServesTheRest(t *testing.T) {
	t.Parallel()
	db, err := gormstore.OpenSQLite(gormstore.MemoryPath)
	require.NoError(t, err)
	var logs strings.Builder
	m := metrics.New(metrics.WithLogger(slog.New(slog.NewTextHandler(&logs, nil))), metrics.WithQueryTimeout(time.Second))
	e, err := engine.New(engine.Config{DB: db, Observer: m, Logger: slog.New(slog.DiscardHandler)})
	require.NoError(t, err)
	sqlDB, err := db.DB()
	require.NoError(t, err)
	require.NoError(t, sqlDB.Close()) // the database goes away

	reg := prometheus.NewPedanticRegistry()
	reg.MustRegister(m)
	families, err := reg.Gather()
	require.NoError(t, err, "a failed query is not a failed scrape")
	names := map[string]bool{}
	for _, f := range families {
		names[f.GetName()] = true
	}
	require.True(t, names["goxpdl_pool_workers"], "the engine's counters are served")
	require.False(t, names["goxpdl_incidents_open"], "the gauges of the failed queries are left out")
	require.False(t, names["goxpdl_events_unprocessed"])
	require.InDelta(t, 1, valueIn(t, families, "goxpdl_scrape_errors_total", nil), 0, "counted in the scrape that failed")
	require.Contains(t, logs.String(), "could not read the engine's database")
	require.Zero(t, e.Stats().Scheduler.EventsProcessed)
}

func TestAttach(t *testing.T) {
	t.Parallel()
	newEngine := func(m engine.Observer) *engine.Engine {
		e, err := engine.New(engine.Config{DB: dbtest.OpenSQLiteMemory(t), Observer: m, Logger: slog.New(slog.DiscardHandler)})
		require.NoError(t, err)
		return e
	}
	m := metrics.New()
	e := newEngine(m)
	require.NoError(t, m.Attach(e), "attaching the same engine again does nothing")
	require.ErrorIs(t, m.Attach(newEngine(nil)), metrics.ErrAttached)
	require.Error(t, m.Attach(nil))

	_, err := engine.New(engine.Config{DB: dbtest.OpenSQLiteMemory(t), Observer: m})
	require.ErrorIs(t, err, engine.ErrConfig, "one Metrics per engine")
	require.ErrorIs(t, err, metrics.ErrAttached)

	// Inside engine.Observers it is attached too; not attached, it
	// exports only what it observed.
	both := metrics.New()
	newEngine(engine.Observers(both, engine.NopObserver{}))
	require.Positive(t, testutil.CollectAndCount(both, "goxpdl_pool_workers"))
	lone := metrics.New()
	require.Zero(t, testutil.CollectAndCount(lone, "goxpdl_pool_workers"))
	require.Equal(t, len(engine.IncidentCauses), testutil.CollectAndCount(lone, "goxpdl_incidents_opened_total"))
}

func TestHandlerServesTheTextFormat(t *testing.T) {
	t.Parallel()
	m := metrics.New(metrics.WithConstLabels(prometheus.Labels{"node": "n1"}))
	m.InstanceFinished(engine.InstanceFinished{Package: "orders", Process: "order", Outcome: engine.InstanceCompleted, Duration: time.Second})
	reg := prometheus.NewRegistry()
	reg.MustRegister(m)
	srv := httptest.NewServer(metrics.Handler(reg))
	defer srv.Close()
	req, err := http.NewRequestWithContext(t.Context(), http.MethodGet, srv.URL+"/metrics", nil)
	require.NoError(t, err)
	resp, err := srv.Client().Do(req)
	require.NoError(t, err)
	defer func() { require.NoError(t, resp.Body.Close()) }()
	require.Equal(t, http.StatusOK, resp.StatusCode)
	require.Contains(t, resp.Header.Get("Content-Type"), "text/plain")
	body, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	require.Contains(t, string(body), `goxpdl_instances_finished_total{node="n1",outcome="completed",package="orders",process="order"} 1`)
	require.Contains(t, string(body), `goxpdl_instance_duration_seconds_sum{node="n1",outcome="completed",package="orders",process="order"} 1`)
}

// The sink's metrics follow its failures and its backlog.
func TestSinkMetrics(t *testing.T) {
	t.Parallel()
	m := metrics.New()
	var (
		mu   sync.Mutex
		down = true
		sent int
	)
	failed := make(chan struct{}, 1)
	s := sink.Func(func(_ context.Context, msgs []sink.Message) error {
		mu.Lock()
		defer mu.Unlock()
		if down {
			select {
			case failed <- struct{}{}:
			default:
			}
			return errors.New("broker down")
		}
		sent += len(msgs)
		return nil
	})
	h := enginetest.New(t, enginetest.WithStart(epoch),
		enginetest.WithConfig(func(c *engine.Config) { c.Observer, c.Publish = m, s }))
	reg := prometheus.NewPedanticRegistry()
	reg.MustRegister(m)
	h.Deploy([]byte(xpdltest.Graph("A B", "A>B")))
	started := h.Now()
	id := h.Start("p", nil)
	h.RunUntil(id, wftype.ProcessCompleted)
	<-failed
	e := h.Engine()
	waitFor(t, func() bool { return e.Stats().Publish.Pending > 0 }) // the look after the failure
	h.Clock().Advance(30 * time.Second)
	require.GreaterOrEqual(t, value(t, reg, "goxpdl_sink_failures_total", nil), 1.0)
	require.Positive(t, value(t, reg, "goxpdl_sink_pending_records", nil))
	require.InDelta(t, h.Now().Sub(started).Seconds(), value(t, reg, "goxpdl_sink_lag_seconds", nil), 1e-9, "since the first record")
	require.InDelta(t, 1.0, value(t, reg, "goxpdl_sink_publishing", nil), 0)
	require.Zero(t, value(t, reg, "goxpdl_sink_published_total", nil))

	mu.Lock()
	down = false
	mu.Unlock()
	h.Clock().Advance(time.Minute) // past the backoff
	require.NoError(t, e.WaitPublished(h.Context()))
	waitFor(t, func() bool { return e.Stats().Publish.Published > 0 }) // counted a moment after the delete
	mu.Lock()
	defer mu.Unlock()
	require.InDelta(t, float64(sent), value(t, reg, "goxpdl_sink_published_total", nil), 0)
	require.Zero(t, value(t, reg, "goxpdl_sink_pending_records", nil))
	require.Zero(t, value(t, reg, "goxpdl_sink_lag_seconds", nil))
}

// waitFor waits until cond holds, looking every millisecond of the real
// clock, until the test's context ends.
func waitFor(t *testing.T, cond func() bool) {
	t.Helper()
	for !cond() {
		tm := timer.Real().NewTimer(time.Millisecond)
		select {
		case <-t.Context().Done():
			tm.Stop()
			t.Fatalf("waiting: %v", t.Context().Err())
		case <-tm.C():
		}
	}
}
