package engine

import (
	"cmp"
	"slices"
	"time"

	"github.com/goxpdl/goxpdl/scheduler"
	"github.com/goxpdl/goxpdl/script"
	"github.com/goxpdl/goxpdl/timer"
	"github.com/goxpdl/goxpdl/xpdl"
)

// Settings are the engine's configuration as it runs, defaults applied:
// what an administration page may show. They hold no database handle, no
// function and nothing secret (the Config's DB, Clock, Logger, Directory,
// Notify and RetryPolicy are left out). Durations are in nanoseconds in
// JSON, as time.Duration encodes.
type Settings struct {
	// NodeID names this node among those sharing the database; Run names
	// this run of it (event, timer and batch claims carry it).
	NodeID string `json:"nodeId"`
	Run    string `json:"run"`
	// Database is the store's dialect: "sqlite", "mysql" or "postgres".
	Database string `json:"database"`
	// Location is the time zone of dates without one and of calendar
	// schedules.
	Location string `json:"location"`
	// The pools: the critical pool's fixed size, the normal pool's
	// starting size and its bounds, and how often its load is sampled.
	CriticalWorkers   int           `json:"criticalWorkers"`
	NormalWorkers     int           `json:"normalWorkers"`
	NormalWorkersMin  int           `json:"normalWorkersMin"`
	NormalWorkersMax  int           `json:"normalWorkersMax"`
	PoolAdaptInterval time.Duration `json:"poolAdaptInterval"`
	// Intervals and leases (Config's fields of the same names; the
	// timer service's longest sleep is TimerPollInterval).
	PollInterval      time.Duration `json:"pollInterval"`
	EventLease        time.Duration `json:"eventLease"`
	NodeLease         time.Duration `json:"nodeLease"`
	TimerPollInterval time.Duration `json:"timerPollInterval"`
	// The time limits of scripts and of conditions, and the budgets
	// every evaluation is held to (Config's fields of the same names).
	ScriptTimeout    time.Duration `json:"scriptTimeout"`
	ConditionTimeout time.Duration `json:"conditionTimeout"`
	ScriptLimits     script.Limits `json:"scriptLimits"`
	// RescueInterval is how often recovery's sweep runs; negative: only
	// at Recover.
	RescueInterval time.Duration `json:"rescueInterval"`
	// Batches: instances per chunk, commands at once, and how often the
	// runner looks for batches (negative: this node runs none).
	BatchChunk        int           `json:"batchChunk"`
	BatchParallel     int           `json:"batchParallel"`
	BatchPollInterval time.Duration `json:"batchPollInterval"`
	// What a deployment takes: the largest XPDL document, and the
	// definition limits (xpdl.Limits, defaults applied; docs/security.md).
	MaxDefinitionBytes int64       `json:"maxDefinitionBytes"`
	DefinitionLimits   xpdl.Limits `json:"definitionLimits"`
	// Caches and limits.
	DefinitionCacheSize int `json:"definitionCacheSize"`
	InstanceCacheSize   int `json:"instanceCacheSize"`
	MaxLoopInstances    int `json:"maxLoopInstances"`
	MaxSubflowDepth     int `json:"maxSubflowDepth"`
	// DeadBranch is what a lost branch does; NoOpUnboundApplications
	// whether unbound applications succeed doing nothing.
	DeadBranch              DeadBranchMode `json:"deadBranch"`
	NoOpUnboundApplications bool           `json:"noOpUnboundApplications"`
	// NotifyTypes are the record types delivered to Config.Notify; empty
	// when there is no Notify.
	NotifyTypes []string `json:"notifyTypes,omitempty"`
	// Retention is the retention policy in short; its zero value keeps
	// every instance.
	Retention RetentionSettings `json:"retention"`
}

// RetentionSettings sum Config.Retention up.
type RetentionSettings struct {
	// On says whether retention deletes anything.
	On bool `json:"on"`
	// MaxAge is the default age; Scopes counts the packages and
	// processes with ages of their own.
	MaxAge time.Duration `json:"maxAge"`
	Scopes int           `json:"scopes"`
	// Schedule is when it runs; BatchSize how many top-level instances
	// one transaction deletes.
	Schedule  string `json:"schedule"`
	BatchSize int    `json:"batchSize"`
}

// Settings returns the engine's configuration as it runs.
func (e *Engine) Settings() Settings {
	c := e.cfg
	st := e.sched.Stats()
	s := Settings{
		NodeID: c.NodeID, Run: e.owner, Database: e.store.Capabilities().Dialect, Location: c.Location.String(),
		CriticalWorkers: st.CriticalWorkers, NormalWorkers: cmp.Or(c.NormalWorkers, scheduler.DefaultNormalWorkers),
		NormalWorkersMin: st.NormalWorkersMin, NormalWorkersMax: st.NormalWorkersMax,
		PoolAdaptInterval: cmp.Or(c.PoolAdaptInterval, scheduler.DefaultAdaptInterval),
		PollInterval:      c.PollInterval, EventLease: c.EventLease, NodeLease: c.NodeLease,
		TimerPollInterval: cmp.Or(c.TimerPollInterval, timer.DefaultMaxWait), ScriptTimeout: c.ScriptTimeout,
		ConditionTimeout: c.ConditionTimeout, ScriptLimits: c.ScriptLimits,
		RescueInterval: c.RescueInterval, BatchChunk: c.BatchChunk, BatchParallel: max(c.BatchParallel, 1),
		BatchPollInterval: c.BatchPollInterval, DefinitionCacheSize: c.DefinitionCacheSize,
		MaxDefinitionBytes: c.MaxDefinitionBytes, DefinitionLimits: c.DefinitionLimits,
		InstanceCacheSize: c.InstanceCacheSize, MaxLoopInstances: c.MaxLoopInstances,
		MaxSubflowDepth: c.MaxSubflowDepth, DeadBranch: c.DeadBranch,
		NoOpUnboundApplications: c.NoOpUnboundApplications,
		Retention: RetentionSettings{
			On: e.retention.calendar != nil, MaxAge: c.Retention.MaxAge, Scopes: len(c.Retention.PerProcess),
			Schedule: cmp.Or(c.Retention.Schedule, defaultRetentionSchedule), BatchSize: e.retention.batch,
		},
	}
	if c.Notify != nil {
		s.NotifyTypes = slices.Clone(e.notifyTypes)
	}
	return s
}

// Now returns the engine's current time (Config.Clock), as it stamps
// what it writes: what "overdue" and "due" are measured against.
func (e *Engine) Now() time.Time { return e.now() }
