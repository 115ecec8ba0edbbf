package metrics

import "github.com/prometheus/client_golang/prometheus"

// kind is a metric's Prometheus type.
type kind string

const (
	counter   kind = "counter"
	gauge     kind = "gauge"
	histogram kind = "histogram"
)

// def describes one metric the collector exports: docs/metrics.md lists
// the same (a test keeps them in step).
type def struct {
	name    string
	kind    kind
	labels  []string
	help    string
	buckets []float64 // histograms
	// scraped metrics are read from the engine at scrape time; the
	// others are counted from the engine's observations.
	scraped bool
}

// Bucket layouts, in seconds.
var (
	// stepBuckets: one step or one call, from a millisecond to a minute.
	stepBuckets = []float64{.001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 30, 60}
	// lagBuckets: waits in the outbox and the queues, and timer
	// lateness, from a millisecond to ten minutes.
	lagBuckets = []float64{.001, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 30, 60, 300, 600}
	// lifeBuckets: the life of an instance or an activity, from ten
	// milliseconds to a month (people take days).
	lifeBuckets = []float64{.01, .1, 1, 10, 60, 300, 1800, 3600, 4 * 3600, 86400, 7 * 86400, 30 * 86400}
	// memberBuckets: engine transactions per database transaction (at
	// most 32, the group-commit cap).
	memberBuckets = []float64{1, 2, 4, 8, 16, 32}
)

// Metric names.
const (
	nameInstancesFinished   = "goxpdl_instances_finished_total"
	nameInstanceDuration    = "goxpdl_instance_duration_seconds"
	nameActivitiesFinished  = "goxpdl_activities_finished_total"
	nameActivityDuration    = "goxpdl_activity_duration_seconds"
	nameStepDuration        = "goxpdl_step_duration_seconds"
	nameEventLag            = "goxpdl_event_lag_seconds"
	nameApplicationDuration = "goxpdl_application_call_duration_seconds"
	nameTimerLateness       = "goxpdl_timer_lateness_seconds"
	nameGroupCommitMembers  = "goxpdl_group_commit_members"
	nameGroupCommitDuration = "goxpdl_group_commit_duration_seconds"
	nameGroupCommitsFailed  = "goxpdl_group_commits_failed_total"
	nameIncidentsOpened     = "goxpdl_incidents_opened_total"
	nameIncidentsResolved   = "goxpdl_incidents_resolved_total"
	nameScrapeErrors        = "goxpdl_scrape_errors_total"
	nameSchedulerEvents     = "goxpdl_scheduler_events_total"
	nameSchedulerQueued     = "goxpdl_scheduler_queued_events"
	nameSchedulerMailboxes  = "goxpdl_scheduler_mailboxes"
	namePoolWorkers         = "goxpdl_pool_workers"
	namePoolWorkersMin      = "goxpdl_pool_workers_min"
	namePoolWorkersMax      = "goxpdl_pool_workers_max"
	namePoolRunning         = "goxpdl_pool_running_workers"
	namePoolWaiting         = "goxpdl_pool_waiting_tasks"
	nameBusPublished        = "goxpdl_bus_events_published_total"
	nameBusDispatched       = "goxpdl_bus_events_dispatched_total"
	nameBusPolled           = "goxpdl_bus_events_polled_total"
	nameBusRedelivered      = "goxpdl_bus_events_redelivered_total"
	nameBusPolls            = "goxpdl_bus_polls_total"
	nameBusPollErrors       = "goxpdl_bus_poll_errors_total"
	nameTimersFired         = "goxpdl_timers_fired_total"
	nameTimerRoundErrors    = "goxpdl_timer_round_errors_total"
	nameConflicts           = "goxpdl_conflicts_total"
	nameCommitTransactions  = "goxpdl_commit_transactions_total"
	nameCommitRuns          = "goxpdl_commit_runs_total"
	nameInstancesPurged     = "goxpdl_instances_purged_total"
	nameEventsUnprocessed   = "goxpdl_events_unprocessed"
	nameTimers              = "goxpdl_timers"
	nameTimersDue           = "goxpdl_timers_due"
	nameIncidentsOpen       = "goxpdl_incidents_open"
	nameSinkPublished       = "goxpdl_sink_published_total"
	nameSinkFailures        = "goxpdl_sink_failures_total"
	nameSinkPending         = "goxpdl_sink_pending_records"
	nameSinkLag             = "goxpdl_sink_lag_seconds"
	nameSinkHolding         = "goxpdl_sink_publishing"
)

// Labels of the definition.
const (
	labelPackage = "package"
	labelProcess = "process"
)

// catalog is every metric, observed first, then scraped.
var catalog = []def{
	{name: nameInstancesFinished, kind: counter, labels: []string{labelPackage, labelProcess, "outcome"},
		help: "Process instances that finished, by definition and outcome (completed, terminated, locked)."},
	{name: nameInstanceDuration, kind: histogram, labels: []string{labelPackage, labelProcess, "outcome"}, buckets: lifeBuckets,
		help: "Time from a process instance's creation to its end, by definition and outcome."},
	{name: nameActivitiesFinished, kind: counter, labels: []string{labelPackage, labelProcess, "type", "outcome"},
		help: "Activity instances that finished, by definition, activity type and outcome (completed, exception, skipped, cancelled, abnormal)."},
	{name: nameActivityDuration, kind: histogram, labels: []string{labelPackage, labelProcess, "type", "outcome"}, buckets: lifeBuckets,
		help: "Time from an activity instance's creation to its end, by definition, activity type and outcome."},
	{name: nameStepDuration, kind: histogram, labels: []string{"kind", "result"}, buckets: stepBuckets,
		help: "Time to process one event (one step of one instance), by event kind and result (processed, retried, dropped)."},
	{name: nameEventLag, kind: histogram, labels: []string{"pool"}, buckets: lagBuckets,
		help: "Time from an event becoming available (written, or its retry due) to its processing, by pool (critical, normal)."},
	{name: nameApplicationDuration, kind: histogram, labels: []string{"application", "result"}, buckets: stepBuckets,
		help: "Duration of calls of the host's applications (hooks as hook:CLASS), by application and result (ok, exception, error)."},
	{name: nameTimerLateness, kind: histogram, labels: []string{"kind"}, buckets: lagBuckets,
		help: "Time from a timer's due time to its firing, by timer kind."},
	{name: nameGroupCommitMembers, kind: histogram, buckets: memberBuckets,
		help: "Engine transactions carried by one database transaction (group commit)."},
	{name: nameGroupCommitDuration, kind: histogram, buckets: stepBuckets,
		help: "Duration of the engine's database transactions, from begin to commit or rollback."},
	{name: nameGroupCommitsFailed, kind: counter,
		help: "Engine database transactions rolled back because a member or the commit failed."},
	{name: nameIncidentsOpened, kind: counter, labels: []string{"cause"},
		help: "Incidents opened, by cause."},
	{name: nameIncidentsResolved, kind: counter, labels: []string{"resolution"},
		help: "Incidents resolved, by resolution (retried, skipped, succeeded, terminated, moved, ended)."},
	{name: nameScrapeErrors, kind: counter,
		help: "Scrapes whose queries of the engine's database failed (those gauges were left out)."},

	{name: nameSchedulerEvents, kind: counter, labels: []string{"result"}, scraped: true,
		help: "Events the scheduler handed to the engine, by result (processed, failed, duplicate, dropped)."},
	{name: nameSchedulerQueued, kind: gauge, scraped: true,
		help: "Events queued in the scheduler and not yet handled."},
	{name: nameSchedulerMailboxes, kind: gauge, scraped: true,
		help: "Process instances with events queued in the scheduler."},
	{name: namePoolWorkers, kind: gauge, labels: []string{"pool"}, scraped: true,
		help: "Current size of each worker pool (critical, normal)."},
	{name: namePoolWorkersMin, kind: gauge, labels: []string{"pool"}, scraped: true,
		help: "Smallest size each worker pool may shrink to."},
	{name: namePoolWorkersMax, kind: gauge, labels: []string{"pool"}, scraped: true,
		help: "Largest size each worker pool may grow to."},
	{name: namePoolRunning, kind: gauge, labels: []string{"pool"}, scraped: true,
		help: "Workers of each pool running a handler now."},
	{name: namePoolWaiting, kind: gauge, labels: []string{"pool"}, scraped: true,
		help: "Mailboxes (and events without an instance) waiting for a worker of each pool."},
	{name: nameBusPublished, kind: counter, scraped: true,
		help: "Events the event bus wrote to the outbox (including those of transactions rolled back)."},
	{name: nameBusDispatched, kind: counter, scraped: true,
		help: "Events the event bus handed to the scheduler after their transaction committed."},
	{name: nameBusPolled, kind: counter, scraped: true,
		help: "Events the outbox poller claimed (another node's, a host transaction's, retries)."},
	{name: nameBusRedelivered, kind: counter, scraped: true,
		help: "Events handed over again from memory because their retry could not be recorded."},
	{name: nameBusPolls, kind: counter, scraped: true,
		help: "Rounds of the outbox poller."},
	{name: nameBusPollErrors, kind: counter, scraped: true,
		help: "Rounds of the outbox poller that failed."},
	{name: nameTimersFired, kind: counter, scraped: true,
		help: "Timers this node fired."},
	{name: nameTimerRoundErrors, kind: counter, scraped: true,
		help: "Rounds of the timer service that failed (retried)."},
	{name: nameConflicts, kind: counter, scraped: true,
		help: "Event processings retried because the instance changed underneath (optimistic concurrency)."},
	{name: nameCommitTransactions, kind: counter, scraped: true,
		help: "Database transactions that carried the engine's own transactions."},
	{name: nameCommitRuns, kind: counter, scraped: true,
		help: "Engine transactions run in them."},
	{name: nameInstancesPurged, kind: counter, scraped: true,
		help: "Process instances deleted by retention and Purge."},
	{name: nameEventsUnprocessed, kind: gauge, labels: []string{"state"}, scraped: true,
		help: "Unprocessed events in the outbox of every node: available now, or waiting for a retry's backoff."},
	{name: nameTimers, kind: gauge, labels: []string{"state"}, scraped: true,
		help: "Durable timers of every node, by state (pending, paused, fired)."},
	{name: nameTimersDue, kind: gauge, scraped: true,
		help: "Pending timers already due: the timer service is behind while this stays above 0."},
	{name: nameIncidentsOpen, kind: gauge, labels: []string{"cause"}, scraped: true,
		help: "Open incidents of every node, by cause."},
	// The sink's (engine.Config.Publish), exported only when one is set.
	{name: nameSinkPublished, kind: counter, scraped: true,
		help: "Records this node published to the sink."},
	{name: nameSinkFailures, kind: counter, scraped: true,
		help: "Publish calls of this node to the sink that failed (the records wait and are published again)."},
	{name: nameSinkPending, kind: gauge, scraped: true,
		help: "Records of every node waiting in the publication outbox for the sink, as of this node's last look."},
	{name: nameSinkLag, kind: gauge, scraped: true,
		help: "Age of the oldest record waiting for the sink (0 when none waits): how far the sink is behind."},
	{name: nameSinkHolding, kind: gauge, scraped: true,
		help: "1 on the node that publishes to the sink (it holds the publisher's lease), 0 on the others."},
}

// desc returns d's prometheus.Desc with the collector's constant labels.
func (d def) desc(constLabels prometheus.Labels) *prometheus.Desc {
	return prometheus.NewDesc(d.name, d.help, d.labels, constLabels)
}
