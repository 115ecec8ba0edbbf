// Package engine is goxpdl's public API: an XPDL workflow engine a Go
// program embeds. The host deploys XPDL packages, starts process instances
// (in its own database transaction if it likes), completes work items,
// registers the Go functions behind XPDL Applications, and administers
// instances (suspend, resume, terminate).
//
// Inside, every change of an instance is driven by an event on the event
// bus: the event is written to the outbox in the same transaction as the
// change that produced it, handed to the scheduler after commit, and
// processed in order per process instance, different instances in
// parallel (docs/architecture.md, "The path of one event"). The state
// machines are in engine/machine, the navigator (splits, joins, deadlock)
// in engine/flow.
//
// Every command has a …Tx form that runs in the host's *gorm.DB
// transaction; a nil tx means the engine's own transaction, as the plain
// form. Every list call of the read API takes a filter and returns one
// page with the cursor of the next (docs/engine.md, "Reading instances").
package engine

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	lru "github.com/hashicorp/golang-lru/v2"
	"go.opentelemetry.io/otel/trace"
	"gorm.io/gorm"

	"github.com/goxpdl/goxpdl/eventbus"
	"github.com/goxpdl/goxpdl/idgen"
	"github.com/goxpdl/goxpdl/recovery"
	"github.com/goxpdl/goxpdl/resource"
	"github.com/goxpdl/goxpdl/scheduler"
	"github.com/goxpdl/goxpdl/script"
	"github.com/goxpdl/goxpdl/sink"
	"github.com/goxpdl/goxpdl/store"
	"github.com/goxpdl/goxpdl/timer"
	"github.com/goxpdl/goxpdl/xpdl"
)

// The default time limits of scripts and conditions (Config.ScriptTimeout,
// Config.ConditionTimeout).
const (
	// DefaultScriptTimeout bounds a script task or a script tool agent.
	DefaultScriptTimeout = 5 * time.Second
	// DefaultConditionTimeout bounds a condition or an expression: they
	// are comparisons that take microseconds, and each runs inside a
	// step's transaction, which an endless one would hold for as long.
	DefaultConditionTimeout = time.Second
)

// Config sets up an Engine. Only DB is required.
type Config struct {
	// DB is the database the engine keeps its state in (SQLite or
	// MySQL/MariaDB, opened with gormstore.OpenSQLite or OpenMySQL or by
	// the host). Required. The engine works on it through a store.Store
	// (Engine.Store) built over it.
	DB *gorm.DB
	// SkipMigrate leaves the schema alone; by default New creates or
	// upgrades the engine's tables (goxpdl_*).
	SkipMigrate bool
	// Clock is where all time comes from; default the system clock.
	Clock timer.Clock
	// Logger receives the engine's logs; default slog.Default().
	Logger *slog.Logger
	// NodeID names this engine node among those sharing the database
	// (table goxpdl_nodes); default host name and process id. A node
	// that restarts under the same NodeID takes over the claims of its
	// previous run at once; under a new one, when the old run's
	// NodeLease has passed. Each process needs its own.
	NodeID string
	// NodeLease is how long a node counts as alive after it last renewed
	// its registration (it renews every third of it); a node silent for
	// longer is taken over by the others. Default 5s.
	NodeLease time.Duration
	// CriticalWorkers sizes the pool for process control (terminate,
	// suspend, resume, scheduling, deadlines); default 4.
	CriticalWorkers int
	// NormalWorkers is the size the pool for activity work and
	// application calls starts at; default 16. The engine resizes that
	// pool at run time between NormalWorkersMin and NormalWorkersMax by
	// its load (docs/engine.md); the critical pool keeps its size.
	NormalWorkers int
	// NormalWorkersMin is the smallest the normal pool shrinks to;
	// default NormalWorkers.
	NormalWorkersMin int
	// NormalWorkersMax is the largest the normal pool grows to; default
	// 128, or NormalWorkers when that is larger. Equal to
	// NormalWorkersMin, the pool is fixed.
	NormalWorkersMax int
	// PoolAdaptInterval is how often the normal pool's load is sampled
	// and the pool resized; default 500ms.
	PoolAdaptInterval time.Duration
	// PollInterval is how often the outbox is polled for events the
	// engine did not produce itself (a host transaction's, another
	// node's, ones whose processing failed); default 200ms.
	PollInterval time.Duration
	// EventLease is how long a claimed event belongs to this node before
	// another claim may take it; default 30s.
	EventLease time.Duration
	// ScriptTimeout bounds each script: an XPDL 2 script task, a script
	// tool agent or hook (RegisterScriptAgent); default 5s.
	ScriptTimeout time.Duration
	// ConditionTimeout bounds each condition and expression: transition,
	// loop and join conditions, deadline and timer expressions, actual
	// parameters; default DefaultConditionTimeout. A condition runs
	// inside the step that evaluates it, holding its transaction.
	ConditionTimeout time.Duration
	// ScriptLimits bound the memory, the call depth and the size of the
	// result of every evaluation, condition or script (see package
	// script, Limits). A script over one fails as any failing script
	// does: its activity goes Abnormal with an incident whose error names
	// the limit. The zero value takes script's defaults (64 MiB, 1024
	// calls, 1 MiB); a negative field turns its limit off.
	ScriptLimits script.Limits
	// NoOpUnboundApplications makes calls to applications nothing is
	// registered for succeed without doing anything (their OUT
	// parameters keep their values), as the command-line tool does.
	// Otherwise such a call is fatal and the activity goes Abnormal.
	NoOpUnboundApplications bool
	// DefinitionCacheSize is how many parsed definitions are kept in
	// memory; default 256.
	DefinitionCacheSize int
	// MaxDefinitionBytes is the largest XPDL document a deployment
	// takes (xpdl.ReadOpts.MaxBytes); default xpdl.DefaultMaxBytes,
	// 16 MiB. The reader's other XML limits keep their defaults
	// (docs/security.md).
	MaxDefinitionBytes int64
	// DefinitionLimits are the limits every deployed package is checked
	// against before it is validated (xpdl.Limits; its zero fields take
	// their defaults): a package that exceeds one is refused with an
	// *xpdl.LimitError naming it, and nothing is stored. Definitions
	// already deployed are not checked again.
	DefinitionLimits xpdl.Limits
	// Directory tells the engine who may do the work (I3): whom a manual
	// activity's work item is offered to, who may claim and complete it,
	// and the roles and units that make up a user's worklist. Default
	// resource.Anyone: items are offered to the performer participant and
	// every user may take them.
	Directory resource.Directory
	// InstanceCacheSize is how many process instances' committed state
	// (the instance and its unfinished activities) is kept in memory
	// between events, so that an event does not read them again; default
	// 10000. A stale entry (another node changed the instance) costs one
	// retry, never a wrong result.
	InstanceCacheSize int
	// Notify receives durable notifications of the record types in
	// NotifyTypes (default DefaultNotifyTypes: every work-item change and
	// inbox message): written to the outbox with the step, delivered at
	// least once after it commits, retried with backoff while Notify
	// returns an error. Nil writes none.
	Notify NotifyFunc
	// NotifyTypes are the record types Notify receives; empty means
	// DefaultNotifyTypes.
	NotifyTypes []string
	// Publish, when set, publishes every record of every step (the
	// records Subscribe and `goxpdl run --trace` see, but the batch.*
	// ones, which belong to no instance) to a message broker: Kafka
	// (sink/kafka), NATS JetStream (sink/nats) or the host's own
	// sink.Sink. Each record is written to a publication outbox in the
	// transaction of its step and published after it commits, at least
	// once, in order per instance, with a stable ID; a sink that fails
	// or cannot be reached holds no engine work up: the records wait in
	// the outbox until it takes them (docs/sinks.md). Nil, the default,
	// writes nothing and runs nothing. Every node sharing a database
	// should publish to the same sink: one of them at a time does.
	Publish sink.Sink
	// PublishInterval is how often the publisher looks for records it
	// was not told of (a host's transaction's, another node's, those of
	// a failed Publish) and, on the nodes not publishing, at the backlog;
	// after a failed Publish the next waits this long, doubling with
	// each failure in a row up to a minute. Default
	// DefaultPublishInterval.
	PublishInterval time.Duration
	// PublishBatch is the most records one Publish call carries; default
	// DefaultPublishBatch.
	PublishBatch int
	// PublishLease is how long the node publishing keeps that right
	// without renewing it (it renews it every third): another node takes
	// over once a holder that died let it run out. Default
	// DefaultPublishLease.
	PublishLease time.Duration
	// Location is the time zone of dates without one and of calendar
	// (cron) schedules in timer events and reminder policies; default
	// time.Local.
	Location *time.Location
	// TimerPollInterval is the longest the timer service sleeps before
	// looking for due timers it was not told of (armed by another node
	// or in a host's transaction); default 1s. Timers this engine arms
	// wake it on time.
	TimerPollInterval time.Duration
	// MaxLoopInstances caps the instances one looping activity runs
	// (docs/loops.md): a multi-instance loop whose MI_Condition asks for
	// more, and a standard loop without LoopMaximum whose LoopCondition
	// still holds after that many iterations, go Abnormal. Default
	// DefaultMaxLoopInstances.
	MaxLoopInstances int
	// MaxSubflowDepth caps how deep subflows nest: a SubFlow activity
	// (SYNCHR or ASYNCHR) whose child would lie more than this many
	// levels below its top-level instance goes Abnormal instead, with a
	// CauseSubflow incident whose error names the limit (the text of a
	// *SubflowDepthError, matching ErrSubflowDepth), and no child is
	// created. A process that calls itself without end stops there
	// rather than starting instances until the database fills. Zero or
	// negative takes DefaultMaxSubflowDepth.
	MaxSubflowDepth int
	// MinTimerCycle is the shortest interval a repeating timer may have:
	// a deployment with a TimeCycle (of a timer event) or a Reminder
	// policy that repeats more often is refused with ErrBadTimer. Zero
	// takes DefaultMinTimerCycle (one second); negative allows any.
	MinTimerCycle time.Duration
	// DeadBranch says what a lost branch does: a completed activity that
	// has outgoing transitions and fires none of them (its conditions all
	// failed and none is OTHERWISE). DeadBranchLock (the default, paper
	// §2.1): once nothing else in the process is alive, the process goes
	// Locking with a diagnosis naming the activity, the conditions it
	// evaluated and the values they read. DeadBranchEnd: the branch ends
	// there and the process completes when nothing else is alive, as
	// Shark does (JaWE's implicit-termination samples rely on it). A
	// package's DeadBranch extended attribute ("lock" or "end") wins over
	// this setting for its processes. An activity without outgoing
	// transitions is an end point either way.
	DeadBranch DeadBranchMode
	// RescueInterval is how often recovery's second phase sweeps the
	// database for instances that could move on but have no event to
	// move them (a lost event): they get the event they need
	// (docs/recovery.md). The first sweep runs as Start returns; Recover
	// sweeps too. Default a minute; negative turns off the periodic
	// sweep and Start's (Recover still sweeps).
	RescueInterval time.Duration
	// RetryPolicy is the retry policy of applications registered
	// without one (RegisterApplication's WithRetry); its zero fields are
	// DefaultRetryPolicy's.
	RetryPolicy RetryPolicy
	// BatchChunk is how many instances a batch (StartBatch) processes
	// between two commits of its progress; default DefaultBatchChunk.
	BatchChunk int
	// BatchParallel is how many of a chunk's commands a batch runs at
	// once; default 1, one after another. More goes faster where the
	// database can commit in parallel (MySQL's four commit lanes), at the
	// cost of the engine's other normal work.
	BatchParallel int
	// BatchPerTx is how many instances of a chunk a suspend or terminate
	// batch gives their commands in one database transaction, each in a
	// savepoint of its own (one that fails is rolled back alone and
	// tried again in a transaction of its own); default
	// DefaultBatchPerTx. 1 gives every instance its own transaction.
	// More commits less often and holds the database longer per commit
	// (on SQLite, its single write lock). At most BatchChunk.
	BatchPerTx int
	// BatchPollInterval is how often the batch runner looks for batches
	// to run that it was not told of (started on another node, released
	// by a node that stopped); default a second. Negative: this node
	// runs no batches.
	BatchPollInterval time.Duration
	// ChainSteps is how many events of its own instance a step may
	// process after its own in its database transaction: when a step
	// sends its instance an event due at once (the next activity of a
	// sequence, an instance's first activities), or such an event waits
	// in the instance's mailbox (the branches of a parallel split), that
	// event is processed right away, in a savepoint of the same
	// transaction, instead of after the commit in a transaction of its
	// own (engine/chain.go). A
	// sequence of automatic activities then costs one commit rather than
	// one each, and nothing else changes: each step is still a run of
	// its own, with its own history, records and observations, a step
	// that fails is rolled back alone and handled as if it had run on its
	// own, and the steps before it commit. A chain stops when process
	// control waits for its commit lane; where the store's deferred
	// savepoints cost nothing (store.Capabilities.DeferredSavepoints:
	// SQLite, MySQL) the runs of a group commit chain too, each its own
	// instance's steps, and elsewhere (PostgreSQL) a chain runs only while
	// its transaction is alone on its lane. Zero takes DefaultChainSteps;
	// negative turns chains off (every step commits on its own).
	ChainSteps int
	// Retention deletes finished instances some time after they ended,
	// on a schedule (engine/retention.go, docs/operations.md); the zero
	// value keeps them forever.
	Retention Retention
	// Observer receives the engine's measurements: instances and
	// activities finishing, each event's processing, application calls,
	// timers firing, group commits, incidents (observe.go; package
	// metrics makes Prometheus metrics of them). An Observer that is an
	// Attacher is attached to the engine by New. Nil observes nothing.
	// Engine.Stats has the counters either way.
	Observer Observer
	// TracerProvider, when set, makes OpenTelemetry spans: one per step
	// (an event of the outbox processed, "goxpdl step KIND") and one per
	// application or hook call ("goxpdl application ID"), a child of its
	// step's, whose span context the host's ApplicationFunc finds in its
	// context. The steps of one process instance are children of the
	// instance's span context (Engine.InstanceSpanContext), so a tracing
	// backend shows one trace per instance. Nil makes no spans and costs
	// nothing.
	TracerProvider trace.TracerProvider
	// TraceNamespace goes into the hash that makes an instance's trace
	// id: set it to tell the instances of several goxpdl databases that
	// report to one tracing backend apart (their instance ids repeat).
	TraceNamespace string
}

// DeadBranchMode is what a lost branch does (Config.DeadBranch).
type DeadBranchMode string

// The dead-branch modes.
const (
	// DeadBranchLock locks the process once nothing else is alive.
	DeadBranchLock DeadBranchMode = "lock"
	// DeadBranchEnd ends the branch silently (Shark's behaviour).
	DeadBranchEnd DeadBranchMode = "end"
)

// AttrDeadBranch is the package-level extended attribute that sets the
// dead-branch mode of a package's processes: "lock" or "end".
const AttrDeadBranch = "DeadBranch"

func (m DeadBranchMode) valid() bool { return m == DeadBranchLock || m == DeadBranchEnd }

// lockLost says whether a lost branch locks d's processes.
func (e *Engine) lockLost(d *deployment) bool {
	if d != nil && d.deadBranch != "" {
		return d.deadBranch == DeadBranchLock
	}
	return e.cfg.DeadBranch == DeadBranchLock
}

// Group commit (groupcommit.go): how many database transactions run the
// engine's own transactions at once on MySQL and PostgreSQL (SQLite has
// one writer), and
// how many engine transactions one of them carries at most.
const (
	mysqlCommitLanes = 4
	maxCommitGroup   = 32
)

// Engine runs XPDL processes. Create it with New, bind applications, call
// Start, and Stop it when done. It is safe for concurrent use.
type Engine struct {
	cfg   Config
	store store.Store
	clock timer.Clock
	log   *slog.Logger
	eval  *script.Evaluator
	bus   *eventbus.Bus
	sched *scheduler.Scheduler
	defs  *lru.Cache[int64, *deployment]

	instances   *instanceCache
	directory   resource.Directory
	notifyTypes []string

	appMu  sync.RWMutex
	apps   map[string]binding
	agents map[string]binding

	obsMu     sync.RWMutex
	observers []func(Record)
	seq       atomic.Int64
	observer  Observer     // Config.Observer; nil for none
	tracer    trace.Tracer // from Config.TracerProvider; nil for none

	state   atomic.Int32 // 0 new, 1 running, 2 stopped
	runMu   sync.Mutex
	runStop context.CancelFunc

	conflicts atomic.Uint64
	// chainsInGroups: the members of a group commit chain too
	// (commitLane.mayChain), where the store's deferred savepoints cost
	// nothing.
	chainsInGroups bool
	// chainSteps is Config.ChainSteps resolved (0: no chains);
	// chainedSteps counts the events chains processed, and maybeCalled
	// holds the events whose chained step failed after calling an
	// application (chain.go).
	chainSteps   int
	chainedSteps atomic.Uint64
	maybeCalled  calledSet
	// takeMargin is how much of its claim a queued event must have left
	// for a chain to take it from its mailbox (chain.go, takable).
	takeMargin time.Duration

	commits *groupCommitter
	// ids makes the IDs of the rows the engine writes (package idgen).
	ids       *idgen.Allocator
	timers    *timer.Service
	rescuer   *timer.Periodic // nil when Config.RescueInterval < 0
	batches   *timer.Periodic // the batch runner (batch.go); nil when Config.BatchPollInterval < 0
	retention *retention
	folder    *timer.Periodic        // folds the instance counts (overview.go)
	publisher *publisher             // hands records to Config.Publish (publish.go); nil without a sink
	dbVersion atomic.Pointer[string] // the server's version, once read (overview.go)
	// bulkLoadedFunc, set by tests only, sees each instance commandMany
	// loaded, with its version (a test makes it stale).
	bulkLoadedFunc func(id int64, version *int64)

	// owner identifies this run of the node: NodeID and a random suffix.
	// Its event claims carry it.
	owner      string
	membership *recovery.Membership
	// private says that the database is a private in-memory SQLite one,
	// which has no node registry: Stop releases the run's claims itself.
	private    bool
	unlockFile func()      // releases the SQLite file lock; nil when none
	replaced   atomic.Bool // a newer run of this NodeID took over
}

// New returns an Engine over cfg.DB, migrating the schema unless
// cfg.SkipMigrate. The engine processes events only after Start.
func New(cfg Config) (*Engine, error) {
	if cfg.DB == nil {
		return nil, fmt.Errorf("%w: Config.DB is nil", ErrConfig)
	}
	if cfg.Clock == nil {
		cfg.Clock = timer.Real()
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	if cfg.NodeID == "" {
		host, _ := os.Hostname()
		cfg.NodeID = host + ":" + strconv.Itoa(os.Getpid())
	}
	if cfg.CriticalWorkers <= 0 {
		cfg.CriticalWorkers = 4
	}
	if cfg.PollInterval <= 0 {
		cfg.PollInterval = 200 * time.Millisecond
	}
	if cfg.NodeLease <= 0 {
		cfg.NodeLease = recovery.DefaultLease
	}
	if cfg.EventLease <= 0 {
		cfg.EventLease = 30 * time.Second
	}
	if cfg.ScriptTimeout <= 0 {
		cfg.ScriptTimeout = DefaultScriptTimeout
	}
	if cfg.ConditionTimeout <= 0 {
		cfg.ConditionTimeout = DefaultConditionTimeout
	}
	cfg.ScriptLimits = cfg.ScriptLimits.WithDefaults()
	if cfg.DefinitionCacheSize <= 0 {
		cfg.DefinitionCacheSize = 256
	}
	if cfg.MaxDefinitionBytes <= 0 {
		cfg.MaxDefinitionBytes = xpdl.DefaultMaxBytes
	}
	cfg.DefinitionLimits = cfg.DefinitionLimits.WithDefaults()
	if cfg.InstanceCacheSize <= 0 {
		cfg.InstanceCacheSize = 10000
	}
	if cfg.MaxLoopInstances <= 0 {
		cfg.MaxLoopInstances = DefaultMaxLoopInstances
	}
	if cfg.MaxSubflowDepth <= 0 {
		cfg.MaxSubflowDepth = DefaultMaxSubflowDepth
	}
	if cfg.MinTimerCycle == 0 {
		cfg.MinTimerCycle = DefaultMinTimerCycle
	}
	if cfg.RescueInterval == 0 {
		cfg.RescueInterval = time.Minute
	}
	if cfg.BatchChunk <= 0 {
		cfg.BatchChunk = DefaultBatchChunk
	}
	if cfg.BatchPerTx <= 0 {
		cfg.BatchPerTx = DefaultBatchPerTx
	}
	if cfg.BatchPollInterval == 0 {
		cfg.BatchPollInterval = time.Second
	}
	if cfg.DeadBranch == "" {
		cfg.DeadBranch = DeadBranchLock
	}
	if !cfg.DeadBranch.valid() {
		return nil, fmt.Errorf("%w: Config.DeadBranch is %q, want %q or %q", ErrConfig, cfg.DeadBranch, DeadBranchLock, DeadBranchEnd)
	}
	st, err := openStore(cfg.DB, cfg.SkipMigrate)
	if err != nil {
		return nil, err
	}
	defs, err := lru.New[int64, *deployment](cfg.DefinitionCacheSize)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrConfig, err)
	}
	instances, err := newInstanceCache(cfg.InstanceCacheSize)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrConfig, err)
	}
	if cfg.Directory == nil {
		cfg.Directory = resource.Anyone{}
	}
	if cfg.Location == nil {
		cfg.Location = time.Local
	}
	if len(cfg.NotifyTypes) == 0 {
		cfg.NotifyTypes = DefaultNotifyTypes
	}
	e := &Engine{
		instances:   instances,
		directory:   cfg.Directory,
		notifyTypes: slices.Clone(cfg.NotifyTypes),
		cfg:         cfg,
		store:       st,
		clock:       cfg.Clock,
		log:         cfg.Logger,
		eval: script.New(script.Config{NowFunc: cfg.Clock.Now, Limits: cfg.ScriptLimits,
			// A regular expression gives up no sooner than the longest
			// time limit, so that one that gives up fails with it.
			MatchTimeout: max(cfg.ScriptTimeout, cfg.ConditionTimeout)}),
		defs:     defs,
		apps:     make(map[string]binding),
		agents:   make(map[string]binding),
		observer: cfg.Observer,
		tracer:   tracerOf(cfg.TracerProvider),
	}
	lanes := 1 // SQLite has one writer
	if st.Capabilities().Dialect != store.DialectSQLite {
		lanes = mysqlCommitLanes // MySQL/MariaDB and PostgreSQL: row locks
	}
	e.commits = newGroupCommitter(st, lanes, maxCommitGroup, cfg.Clock, cfg.Logger)
	e.chainsInGroups = st.Capabilities().DeferredSavepoints
	switch {
	case cfg.ChainSteps == 0:
		e.chainSteps = DefaultChainSteps
	case cfg.ChainSteps > 0:
		e.chainSteps = cfg.ChainSteps
	}
	e.takeMargin = cfg.EventLease / 3
	if e.observer != nil {
		e.commits.observe = func(o GroupCommitted) { e.observe(func(obs Observer) { obs.GroupCommitted(o) }) }
	}
	e.sched, err = scheduler.New(scheduler.Config{
		Handler:          e.handle,
		CriticalWorkers:  cfg.CriticalWorkers,
		NormalWorkers:    cfg.NormalWorkers,
		NormalWorkersMin: cfg.NormalWorkersMin,
		NormalWorkersMax: cfg.NormalWorkersMax,
		AdaptInterval:    cfg.PoolAdaptInterval,
		Clock:            cfg.Clock,
		Logger:           cfg.Logger,
	})
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrConfig, err)
	}
	e.owner = cfg.NodeID + "#" + rand.Text()[:10]
	// On SQLite one process owns the database (recovery.LockFile, or a
	// private in-memory database), so the allocator follows the clock
	// past a spent reservation rather than renew it in a statement of its
	// own, which would wait for the transaction asking for the id.
	e.ids, err = idgen.New(idgen.Config{
		Store: st, Clock: cfg.Clock, Owner: e.owner, Logger: cfg.Logger,
		Exclusive: st.Capabilities().Dialect == store.DialectSQLite,
	})
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrConfig, err)
	}
	e.bus, err = eventbus.New(eventbus.Config{
		Store:        e.store,
		Clock:        cfg.Clock,
		Owner:        e.owner,
		IDs:          e.ids.Next,
		Lease:        cfg.EventLease,
		PollInterval: cfg.PollInterval,
		Logger:       cfg.Logger,
	}, e.sched)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrConfig, err)
	}
	e.timers, err = timer.NewService(timer.ServiceConfig{
		Store:    e.store,
		Clock:    cfg.Clock,
		Fire:     e.fireTimers,
		Transact: e.fireTx,
		MaxWait:  cfg.TimerPollInterval,
		Logger:   cfg.Logger,
	})
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrConfig, err)
	}
	if cfg.RescueInterval > 0 {
		e.rescuer = timer.NewPeriodic(cfg.Clock, cfg.RescueInterval, func(ctx context.Context) {
			if n, err := e.rescue(ctx); err != nil && ctx.Err() == nil {
				e.log.Warn("recovery sweep failed; it runs again later", "err", err)
			} else if n > 0 {
				e.log.Info("recovery sweep sent lost events", "instances", n)
			}
		})
	}
	if cfg.BatchPollInterval > 0 {
		e.batches = timer.NewPeriodic(cfg.Clock, cfg.BatchPollInterval, e.runBatches)
	}
	e.folder = timer.NewPeriodic(cfg.Clock, countFoldInterval, e.foldCounts)
	if e.publisher, err = newPublisher(e, cfg); err != nil {
		return nil, err
	}
	if e.retention, err = e.newRetention(cfg.Retention, cfg.Location); err != nil {
		return nil, err
	}
	if a, ok := cfg.Observer.(Attacher); ok {
		if err := a.Attach(e); err != nil {
			return nil, fmt.Errorf("%w: Config.Observer: %w", ErrConfig, err)
		}
	}
	// Last, so that nothing fails after it: a node number, leased until
	// Stop (or, for an engine never stopped, until its lease runs out).
	if err := e.ids.Acquire(context.Background()); err != nil {
		return nil, fmt.Errorf("engine: %w", err)
	}
	return e, nil
}

// Start recovers and starts processing events. Recovery comes first: the
// engine registers as a node of the database (on a SQLite file, after
// locking it for this process: another process holding it is
// recovery.ErrDatabaseInUse) and releases the event claims of its own
// previous run and of nodes whose lease ran out, so that the events they
// left unprocessed are processed at once. Then the scheduler's pools, the
// outbox poller (which picks those events up) and the timer service
// (which fires the timers that fell due meanwhile) start. It returns
// ErrNotRunning when the engine was stopped before.
func (e *Engine) Start(ctx context.Context) error {
	if !e.state.CompareAndSwap(0, 1) {
		return fmt.Errorf("%w: Start called twice or after Stop", ErrNotRunning)
	}
	if err := e.join(ctx); err != nil {
		e.state.Store(2)
		return errors.Join(err, e.ids.Stop(ctx))
	}
	if err := e.ids.Start(ctx); err != nil {
		return errors.Join(err, e.leave(ctx))
	}
	if err := e.sched.Start(ctx); err != nil {
		return errors.Join(err, e.leave(ctx))
	}
	if err := e.bus.Start(ctx); err != nil {
		return errors.Join(err, e.sched.Stop(ctx), e.leave(ctx))
	}
	if err := e.timers.Start(ctx); err != nil {
		return errors.Join(err, e.bus.Stop(ctx), e.sched.Stop(ctx), e.leave(ctx))
	}
	e.bus.Nudge()
	if e.rescuer != nil {
		e.rescuer.Start(ctx) // sweeps at once, then every RescueInterval
	}
	if e.batches != nil {
		e.batches.Start(ctx) // the batch runner
	}
	e.folder.Start(ctx)
	if e.retention.calendar != nil {
		e.retention.calendar.Start(ctx)
	}
	if e.publisher != nil {
		e.publisher.periodic.Start(ctx) // publishes what waits, then after every commit
	}
	return nil
}

// join locks a SQLite file for this process and registers the node.
func (e *Engine) join(ctx context.Context) error {
	file, err := e.store.DatabaseFile(ctx)
	if err != nil {
		return err
	}
	if file == "" && e.store.Capabilities().Dialect == store.DialectSQLite {
		e.private = true
		return nil // a private in-memory database: no other node can see it
	}
	othersDead := false
	if file != "" {
		release, first, err := recovery.LockFile(file)
		if err != nil {
			return err
		}
		e.unlockFile, othersDead = release, first
	}
	e.membership, err = recovery.NewMembership(recovery.MembershipConfig{
		Store: e.store, Clock: e.clock, NodeID: e.cfg.NodeID, Owner: e.owner, Lease: e.cfg.NodeLease,
		OthersDead: othersDead, Replaced: e.stopProcessing, Logger: e.log,
	})
	if err == nil {
		_, err = e.membership.Join(ctx)
	}
	if err != nil {
		if e.unlockFile != nil {
			e.unlockFile()
		}
		return err
	}
	return nil
}

// leave deregisters the node, handing its unprocessed claims to the other
// nodes, and unlocks a SQLite file.
func (e *Engine) leave(ctx context.Context) error {
	var err error
	if e.membership != nil {
		err = e.membership.Leave(ctx)
	} else if e.private {
		// A private in-memory database has no node registry (join), but
		// the next engine the host starts on it must take the events this
		// run claimed and did not process at once, not after their lease.
		_, err = e.store.ReleaseClaims(ctx, e.owner)
	}
	// The node number goes back recording how far its ids went, so that
	// its next holder starts after them.
	err = errors.Join(err, e.ids.Stop(ctx))
	if e.unlockFile != nil {
		e.unlockFile()
	}
	return err
}

// stopProcessing stops claiming events, firing timers and publishing: a
// newer run of this NodeID took the node over. The host's Stop still ends the engine.
func (e *Engine) stopProcessing() {
	e.replaced.Store(true)
	ctx := context.Background()
	var publisherErr error
	if e.publisher != nil {
		publisherErr = e.publisher.periodic.Stop(ctx)
	}
	if err := errors.Join(e.timers.Stop(ctx), e.bus.Stop(ctx), publisherErr); err != nil {
		e.log.Error("stopping after the node was taken over", "err", err)
	}
}

// Stop stops taking events and waits for the events already handed to
// the scheduler to be processed (graceful drain), or until ctx ends. Then
// the node leaves: its claims on events it did not process are released,
// so that other nodes (or the next Start) take them at once. Stop is
// idempotent.
func (e *Engine) Stop(ctx context.Context) error {
	if !e.state.CompareAndSwap(1, 2) {
		if e.state.CompareAndSwap(0, 2) {
			return e.ids.Stop(ctx) // never started: give the node number back
		}
		return nil
	}
	var rescuerErr, batchesErr, retentionErr, publisherErr error
	if e.publisher != nil {
		// A Publish under way is cancelled; its records stay in the
		// outbox, and the lease goes with the node's claims (leave).
		publisherErr = e.publisher.periodic.Stop(ctx)
	}
	folderErr := e.folder.Stop(ctx)
	if e.batches != nil {
		batchesErr = e.batches.Stop(ctx) // its batch is released for the next run or node
	}
	if e.rescuer != nil {
		rescuerErr = e.rescuer.Stop(ctx)
	}
	if e.retention.calendar != nil {
		retentionErr = e.retention.calendar.Stop(ctx)
	}
	return errors.Join(publisherErr, folderErr, batchesErr, rescuerErr, retentionErr, e.timers.Stop(ctx), e.bus.Stop(ctx), e.sched.Stop(ctx), e.leave(ctx))
}

// WaitIdle returns when the engine has nothing queued or running (or ctx
// ends). Events in the outbox that this engine has not claimed yet, such
// as those of a host transaction committed a moment ago, are not counted;
// those its bus held back there while its queue was full
// (eventbus.BacklogSink) are: WaitIdle waits until they are handled.
func (e *Engine) WaitIdle(ctx context.Context) error {
	for {
		if err := e.sched.WaitIdle(ctx); err != nil {
			return err
		}
		if !e.bus.HoldingBack() {
			return nil
		}
		// The poller claims them on its next round; look again after
		// it.
		e.bus.Nudge()
		t := e.clock.NewTimer(idleRecheck)
		select {
		case <-ctx.Done():
			t.Stop()
			return ctx.Err()
		case <-t.C():
		}
	}
}

// idleRecheck is how long WaitIdle waits before it looks again while the
// bus holds events back in the outbox.
const idleRecheck = 10 * time.Millisecond

// Stats are the engine's counters.
type Stats struct {
	// Scheduler holds events processed and failed, queue depth, the
	// pools' running and waiting workers, and their current sizes.
	Scheduler scheduler.Stats
	// Bus holds events published and polled.
	Bus eventbus.Stats
	// Timers holds timers fired and the worst lateness seen.
	Timers timer.ServiceStats
	// Conflicts counts event processings retried because the instance
	// changed underneath (optimistic concurrency).
	Conflicts uint64
	// Commits holds how the engine's own transactions shared database
	// transactions (group commit).
	Commits CommitStats
	// Chained counts the events processed in the transaction of the step
	// that sent them (Config.ChainSteps); the scheduler's EventsProcessed
	// does not count them.
	Chained uint64
	// Purged counts the process instances retention and Purge deleted
	// (subflow instances included; PurgeTx's are not counted, since the
	// engine does not see whether the host commits).
	Purged uint64
	// Publish holds what the publisher did and how far the sink is
	// behind (Config.Publish); zero without a sink.
	Publish PublishStats
}

// CommitStats counts the engine's own transactions (runs) and the
// database transactions that carried them: several runs that arrive
// together share one (group commit).
type CommitStats struct {
	// Transactions counts database transactions committed or rolled
	// back, including the second one a group needs when a member fails.
	Transactions uint64
	// Runs counts engine transactions run in them.
	Runs uint64
}

// Stats returns the engine's counters.
func (e *Engine) Stats() Stats {
	return Stats{Scheduler: e.sched.Stats(), Bus: e.bus.Stats(), Timers: e.timers.Stats(), Conflicts: e.conflicts.Load(),
		Commits: e.commits.stats(), Chained: e.chainedSteps.Load(), Purged: e.retention.purged.Load(), Publish: e.publisher.stats()}
}

// Store returns the engine's store, for tools that read the engine's
// tables directly (the console, the command line).
func (e *Engine) Store() store.Store { return e.store }

// now is the engine's current time, truncated to microseconds: both
// databases keep six fractional digits.
func (e *Engine) now() time.Time { return e.clock.Now().UTC().Truncate(time.Microsecond) }
