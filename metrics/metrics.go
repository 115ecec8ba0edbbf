package metrics

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/goxpdl/goxpdl/engine"
)

// ErrAttached is returned by Attach when the Metrics already reads
// another engine: each engine needs a Metrics of its own (with a
// WithConstLabels that tells them apart when they share a registry).
var ErrAttached = errors.New("metrics: attached to another engine")

// DefaultQueryTimeout bounds the database queries of one scrape.
const DefaultQueryTimeout = 5 * time.Second

// Option configures New.
type Option func(*options)

type options struct {
	log         *slog.Logger
	timeout     time.Duration
	constLabels prometheus.Labels
}

// WithLogger sets where failed scrape queries are logged; default
// slog.Default().
func WithLogger(l *slog.Logger) Option {
	return func(o *options) {
		if l != nil {
			o.log = l
		}
	}
}

// WithQueryTimeout bounds the engine's database queries of one scrape
// (backlog, timers, open incidents); default DefaultQueryTimeout. A query
// that fails or times out leaves its gauges out of that scrape and counts
// in goxpdl_scrape_errors_total.
func WithQueryTimeout(d time.Duration) Option {
	return func(o *options) {
		if d > 0 {
			o.timeout = d
		}
	}
}

// WithConstLabels adds labels to every metric, such as the node's name
// when several engines of one process register with one registry.
func WithConstLabels(labels prometheus.Labels) Option {
	return func(o *options) { o.constLabels = labels }
}

// Metrics is an engine.Observer that counts what the engine reports and
// a prometheus.Collector that exports it, with gauges and counters read
// from the engine at scrape time. Create it with New, pass it as
// engine.Config.Observer (New attaches the engine to it), and register it
// with a prometheus.Registerer. It is safe for concurrent use.
type Metrics struct {
	engine.NopObserver // methods added to engine.Observer later do nothing until counted here

	opts options
	eng  atomic.Pointer[engine.Engine]

	instances         *prometheus.CounterVec
	instanceDuration  *prometheus.HistogramVec
	activities        *prometheus.CounterVec
	activityDuration  *prometheus.HistogramVec
	stepDuration      *prometheus.HistogramVec
	eventLag          *prometheus.HistogramVec
	callDuration      *prometheus.HistogramVec
	timerLateness     *prometheus.HistogramVec
	groupMembers      prometheus.Histogram
	groupDuration     prometheus.Histogram
	groupsFailed      prometheus.Counter
	incidentsOpened   *prometheus.CounterVec
	incidentsResolved *prometheus.CounterVec
	scrapeErrors      prometheus.Counter
	observed          []prometheus.Collector

	scraped map[string]*prometheus.Desc // by metric name
}

var (
	_ engine.Observer      = (*Metrics)(nil)
	_ engine.Attacher      = (*Metrics)(nil)
	_ prometheus.Collector = (*Metrics)(nil)
)

// New returns a Metrics not attached to an engine yet. Pass it as
// engine.Config.Observer: engine.New attaches the engine to it (see
// Attach). Until then it exports only what it observed.
func New(opts ...Option) *Metrics {
	o := options{log: slog.Default(), timeout: DefaultQueryTimeout}
	for _, opt := range opts {
		opt(&o)
	}
	m := &Metrics{opts: o, scraped: make(map[string]*prometheus.Desc)}
	byName := make(map[string]def, len(catalog))
	for _, d := range catalog {
		byName[d.name] = d
		if d.scraped {
			m.scraped[d.name] = d.desc(o.constLabels)
		}
	}
	counterVec := func(name string) *prometheus.CounterVec {
		d := byName[name]
		return prometheus.NewCounterVec(prometheus.CounterOpts{Name: d.name, Help: d.help, ConstLabels: o.constLabels}, d.labels)
	}
	histogramVec := func(name string) *prometheus.HistogramVec {
		d := byName[name]
		return prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: d.name, Help: d.help, ConstLabels: o.constLabels, Buckets: d.buckets}, d.labels)
	}
	plainCounter := func(name string) prometheus.Counter {
		d := byName[name]
		return prometheus.NewCounter(prometheus.CounterOpts{Name: d.name, Help: d.help, ConstLabels: o.constLabels})
	}
	plainHistogram := func(name string) prometheus.Histogram {
		d := byName[name]
		return prometheus.NewHistogram(prometheus.HistogramOpts{Name: d.name, Help: d.help, ConstLabels: o.constLabels, Buckets: d.buckets})
	}
	m.instances = counterVec(nameInstancesFinished)
	m.instanceDuration = histogramVec(nameInstanceDuration)
	m.activities = counterVec(nameActivitiesFinished)
	m.activityDuration = histogramVec(nameActivityDuration)
	m.stepDuration = histogramVec(nameStepDuration)
	m.eventLag = histogramVec(nameEventLag)
	m.callDuration = histogramVec(nameApplicationDuration)
	m.timerLateness = histogramVec(nameTimerLateness)
	m.groupMembers = plainHistogram(nameGroupCommitMembers)
	m.groupDuration = plainHistogram(nameGroupCommitDuration)
	m.groupsFailed = plainCounter(nameGroupCommitsFailed)
	m.incidentsOpened = counterVec(nameIncidentsOpened)
	m.incidentsResolved = counterVec(nameIncidentsResolved)
	m.scrapeErrors = plainCounter(nameScrapeErrors)
	m.observed = []prometheus.Collector{
		m.instances, m.instanceDuration, m.activities, m.activityDuration, m.stepDuration, m.eventLag, m.callDuration,
		m.timerLateness, m.groupMembers, m.groupDuration, m.groupsFailed, m.incidentsOpened, m.incidentsResolved, m.scrapeErrors,
	}
	// Series whose labels are known in advance start at 0, so that
	// rate() and increase() see their first event.
	for _, c := range engine.IncidentCauses {
		m.incidentsOpened.WithLabelValues(string(c))
	}
	for _, p := range pools {
		m.eventLag.WithLabelValues(p)
	}
	return m
}

// The pools' label values.
const (
	poolCritical = "critical"
	poolNormal   = "normal"
)

var pools = []string{poolCritical, poolNormal}

// Attach makes m read e's counters and database at scrape time.
// engine.New calls it when m is Config.Observer (or one of
// engine.Observers); call it yourself only when m observes nothing and
// should export e's gauges. Attaching the same engine again does
// nothing; another engine is ErrAttached.
func (m *Metrics) Attach(e *engine.Engine) error {
	if e == nil {
		return errors.New("metrics: Attach(nil)")
	}
	if m.eng.CompareAndSwap(nil, e) || m.eng.Load() == e {
		return nil
	}
	return ErrAttached
}

// Handler serves what g gathers at /metrics, in the Prometheus text
// format (or OpenMetrics, when the scraper asks for it). A collector's
// error leaves its metrics out and serves the rest.
func Handler(g prometheus.Gatherer) http.Handler {
	return promhttp.HandlerFor(g, promhttp.HandlerOpts{ErrorHandling: promhttp.ContinueOnError, EnableOpenMetrics: true})
}

// Describe implements prometheus.Collector.
func (m *Metrics) Describe(ch chan<- *prometheus.Desc) {
	for _, c := range m.observed {
		c.Describe(ch)
	}
	for _, d := range catalog {
		if d.scraped {
			ch <- m.scraped[d.name]
		}
	}
}

// Collect implements prometheus.Collector: what m observed, and, once
// attached, the engine's Stats and a few counting queries (Backlog,
// IncidentCounts) bounded by WithQueryTimeout.
func (m *Metrics) Collect(ch chan<- prometheus.Metric) {
	if e := m.eng.Load(); e != nil {
		m.collectStats(ch, e.Stats())
		m.collectQueries(ch, e)
	}
	for _, c := range m.observed {
		c.Collect(ch)
	}
}

func (m *Metrics) collectStats(ch chan<- prometheus.Metric, st engine.Stats) {
	emit := func(name string, t prometheus.ValueType, v float64, labels ...string) {
		ch <- prometheus.MustNewConstMetric(m.scraped[name], t, v, labels...)
	}
	count := func(name string, v uint64, labels ...string) {
		emit(name, prometheus.CounterValue, float64(v), labels...)
	}
	gaugeOf := func(name string, v int, labels ...string) { emit(name, prometheus.GaugeValue, float64(v), labels...) }

	s := st.Scheduler
	count(nameSchedulerEvents, s.EventsProcessed, "processed")
	count(nameSchedulerEvents, s.EventsFailed, "failed")
	count(nameSchedulerEvents, s.EventsDuplicate, "duplicate")
	count(nameSchedulerEvents, s.EventsDropped, "dropped")
	gaugeOf(nameSchedulerQueued, s.QueueDepth)
	gaugeOf(nameSchedulerMailboxes, s.Mailboxes)
	gaugeOf(namePoolWorkers, s.CriticalWorkers, poolCritical)
	gaugeOf(namePoolWorkers, s.NormalWorkers, poolNormal)
	gaugeOf(namePoolWorkersMin, s.CriticalWorkers, poolCritical) // fixed
	gaugeOf(namePoolWorkersMin, s.NormalWorkersMin, poolNormal)
	gaugeOf(namePoolWorkersMax, s.CriticalWorkers, poolCritical)
	gaugeOf(namePoolWorkersMax, s.NormalWorkersMax, poolNormal)
	gaugeOf(namePoolRunning, s.CriticalRunning, poolCritical)
	gaugeOf(namePoolRunning, s.NormalRunning, poolNormal)
	gaugeOf(namePoolWaiting, s.CriticalWaiting, poolCritical)
	gaugeOf(namePoolWaiting, s.NormalWaiting, poolNormal)

	b := st.Bus
	count(nameBusPublished, b.Published)
	count(nameBusDispatched, b.Dispatched)
	count(nameBusPolled, b.Polled)
	count(nameBusRedelivered, b.Redelivered)
	count(nameBusPolls, b.Polls)
	count(nameBusPollErrors, b.PollErrors)

	count(nameTimersFired, st.Timers.Fired)
	count(nameTimerRoundErrors, st.Timers.Errors)
	count(nameConflicts, st.Conflicts)
	count(nameCommitTransactions, st.Commits.Transactions)
	count(nameCommitRuns, st.Commits.Runs)
	count(nameInstancesPurged, st.Purged)

	if p := st.Publish; p.Enabled {
		count(nameSinkPublished, p.Published)
		count(nameSinkFailures, p.Failures)
		emit(nameSinkPending, prometheus.GaugeValue, float64(p.Pending))
		emit(nameSinkLag, prometheus.GaugeValue, p.Lag.Seconds())
		holding := 0.0
		if p.Holding {
			holding = 1
		}
		emit(nameSinkHolding, prometheus.GaugeValue, holding)
	}
}

func (m *Metrics) collectQueries(ch chan<- prometheus.Metric, e *engine.Engine) {
	ctx, cancel := context.WithTimeout(context.Background(), m.opts.timeout)
	defer cancel()
	gaugeOf := func(name string, v int64, labels ...string) {
		ch <- prometheus.MustNewConstMetric(m.scraped[name], prometheus.GaugeValue, float64(v), labels...)
	}
	var errs []error
	if b, err := e.Backlog(ctx); err != nil {
		errs = append(errs, fmt.Errorf("backlog: %w", err))
	} else {
		gaugeOf(nameEventsUnprocessed, b.EventsAvailable, "available")
		gaugeOf(nameEventsUnprocessed, b.EventsWaiting, "waiting")
		gaugeOf(nameTimers, b.TimersPending, "pending")
		gaugeOf(nameTimers, b.TimersPaused, "paused")
		gaugeOf(nameTimers, b.TimersFired, "fired")
		gaugeOf(nameTimersDue, b.TimersDue)
	}
	if counts, err := e.IncidentCounts(ctx); err != nil {
		errs = append(errs, fmt.Errorf("incident counts: %w", err))
	} else {
		for _, c := range engine.IncidentCauses {
			gaugeOf(nameIncidentsOpen, counts[c], string(c))
		}
	}
	if len(errs) > 0 {
		m.scrapeErrors.Inc()
		m.opts.log.Warn("metrics: a scrape could not read the engine's database; its gauges are left out", "err", errors.Join(errs...))
	}
}

// InstanceFinished implements engine.Observer.
func (m *Metrics) InstanceFinished(o engine.InstanceFinished) {
	m.instances.WithLabelValues(o.Package, o.Process, string(o.Outcome)).Inc()
	m.instanceDuration.WithLabelValues(o.Package, o.Process, string(o.Outcome)).Observe(o.Duration.Seconds())
}

// ActivityFinished implements engine.Observer.
func (m *Metrics) ActivityFinished(o engine.ActivityFinished) {
	m.activities.WithLabelValues(o.Package, o.Process, string(o.Type), string(o.Outcome)).Inc()
	m.activityDuration.WithLabelValues(o.Package, o.Process, string(o.Type), string(o.Outcome)).Observe(o.Duration.Seconds())
}

// EventProcessed implements engine.Observer.
func (m *Metrics) EventProcessed(o engine.EventProcessed) {
	m.stepDuration.WithLabelValues(o.Kind, string(o.Result)).Observe(o.Duration.Seconds())
	pool := poolNormal
	if o.Critical {
		pool = poolCritical
	}
	m.eventLag.WithLabelValues(pool).Observe(o.Lag.Seconds())
}

// ApplicationCalled implements engine.Observer. A hook is labelled
// hook:CLASS, its tool agent class.
func (m *Metrics) ApplicationCalled(o engine.ApplicationCalled) {
	app := o.Application
	if o.Hook != "" {
		app = "hook:" + o.ToolAgentClass
	}
	m.callDuration.WithLabelValues(app, string(o.Result)).Observe(o.Duration.Seconds())
}

// TimerFired implements engine.Observer.
func (m *Metrics) TimerFired(o engine.FiredTimer) {
	m.timerLateness.WithLabelValues(string(o.Kind)).Observe(o.Lateness.Seconds())
}

// GroupCommitted implements engine.Observer.
func (m *Metrics) GroupCommitted(o engine.GroupCommitted) {
	m.groupMembers.Observe(float64(o.Members))
	m.groupDuration.Observe(o.Duration.Seconds())
	if o.Failed {
		m.groupsFailed.Inc()
	}
}

// IncidentOpened implements engine.Observer.
func (m *Metrics) IncidentOpened(o engine.IncidentOpened) {
	m.incidentsOpened.WithLabelValues(string(o.Cause)).Inc()
}

// IncidentsResolved implements engine.Observer.
func (m *Metrics) IncidentsResolved(o engine.IncidentsResolved) {
	m.incidentsResolved.WithLabelValues(o.Resolution).Add(float64(o.Count))
}
