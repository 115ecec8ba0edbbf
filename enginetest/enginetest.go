package enginetest

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"gorm.io/gorm"

	"github.com/goxpdl/goxpdl/engine"
	"github.com/goxpdl/goxpdl/resource"
	"github.com/goxpdl/goxpdl/store/gormstore"
	"github.com/goxpdl/goxpdl/timer"
	"github.com/goxpdl/goxpdl/xpdl"
)

// Epoch is where the fake clock of a harness starts unless WithStart says
// otherwise: a Monday, 09:00 UTC.
var Epoch = time.Date(2026, 1, 5, 9, 0, 0, 0, time.UTC)

// DefaultTimeout is how long, in real time, one wait of a harness may
// take before it fails (WithTimeout): a backstop against an engine that
// never stops working, not a limit tests are expected to reach.
const DefaultTimeout = time.Minute

// ScriptLimit is the time limit of every script and condition of a
// harness's engine (engine.Config.ScriptTimeout and ConditionTimeout),
// unless WithConfig sets them: far above what a script of a test takes,
// even under -race on a loaded machine, and below DefaultTimeout, so that
// a runaway script shows as an Abnormal activity.
const ScriptLimit = 30 * time.Second

// TB is the part of testing.TB a harness uses: *testing.T, *testing.B
// and *testing.F are TBs. Fatalf must not return (testing's stops the
// test's goroutine).
type TB interface {
	Helper()
	Fatalf(format string, args ...any)
	Errorf(format string, args ...any)
	Logf(format string, args ...any)
	Cleanup(fn func())
	Context() context.Context
}

// Option configures a harness (New).
type Option func(*options)

type options struct {
	configure []func(*engine.Config)
	setup     []func(*engine.Engine)
	directory resource.Directory
	db        *gorm.DB
	dsn       string
	start     time.Time
	timeout   time.Duration
	logger    *slog.Logger
}

// WithConfig changes the engine's configuration before the engine is
// created: any field of engine.Config except DB and Clock, which the
// harness owns (WithDB and WithDSN choose the database; the clock is
// always the harness's fake clock). Several WithConfig apply in order.
func WithConfig(fn func(cfg *engine.Config)) Option {
	return func(o *options) { o.configure = append(o.configure, fn) }
}

// WithApplication registers fn for the XPDL Application id (interface
// I2) before the engine starts, as engine.Engine.RegisterApplication does.
func WithApplication(id string, fn engine.ApplicationFunc, opts ...engine.AppOption) Option {
	return WithSetup(func(e *engine.Engine) { e.RegisterApplication(id, fn, opts...) })
}

// WithSetup calls fn with the engine after it is created and before it
// starts: the place to register tool agents, script agents or anything
// else the engine takes before Start.
func WithSetup(fn func(e *engine.Engine)) Option {
	return func(o *options) { o.setup = append(o.setup, fn) }
}

// WithDirectory tells the engine who the people are (interface I3,
// engine.Config.Directory); default resource.Anyone, with which every
// user may take every work item.
func WithDirectory(d resource.Directory) Option {
	return func(o *options) { o.directory = d }
}

// WithDB runs the engine on db, the host's own database (SQLite or
// MySQL/MariaDB), instead of a private in-memory SQLite database. The
// engine creates its tables in it; the harness does not close it. Give
// each test a database of its own: instances other tests left there
// are the engine's to recover.
func WithDB(db *gorm.DB) Option {
	return func(o *options) { o.db = db }
}

// WithDSN runs the engine on the database dsn names, in the form
// goxpdl's --db flag takes (gormstore.DSNForms: sqlite:PATH or
// mysql://USER:PASS@tcp(HOST:PORT)/DB). The harness opens it and closes
// it when the test ends. An empty dsn keeps the default, so that
// WithDSN(os.Getenv("MY_TEST_DSN")) runs on MySQL only when a variable
// says so. As with WithDB, each test needs a database of its own.
func WithDSN(dsn string) Option {
	return func(o *options) { o.dsn = dsn }
}

// WithStart sets where the fake clock starts; default Epoch.
func WithStart(t time.Time) Option {
	return func(o *options) { o.start = t }
}

// WithTimeout bounds, in real time, each wait of the harness (every
// helper that waits for the engine); default DefaultTimeout. A wait that
// reaches it fails the test with the instance's state.
func WithTimeout(d time.Duration) Option {
	return func(o *options) { o.timeout = d }
}

// WithLogger gives the engine a logger; by default its logs are
// discarded (the harness's failures say what went wrong).
func WithLogger(l *slog.Logger) Option {
	return func(o *options) { o.logger = l }
}

// Harness is a started engine on a fake clock, for one test. Create it
// with New. Its helpers fail the test (TB.Fatalf) rather than return
// errors; the engine itself (Engine) is there for everything else.
//
// Every helper that acts (Deploy, Start, CompleteWorkItem, Advance, ...)
// returns once the engine is quiet: it has processed every event it can
// now and fired every timer that is due, so that what a test reads next
// is settled. What waits for a person, a message, a later timer or a
// retry's backoff is left waiting. Methods must be called from the
// test's goroutine.
type Harness struct {
	tb      TB
	ctx     context.Context
	e       *engine.Engine
	clock   *timer.Fake
	timeout time.Duration

	mu      sync.Mutex
	cursor  map[int64]int64 // WaitForState's position in each instance's history
	matched map[matchKey]int
}

// harnesses numbers the harnesses of the process, for their node ids:
// two engines on one database must not share one.
var harnesses atomic.Int64

// New creates an engine on a private in-memory SQLite database (WithDB,
// WithDSN: another) with a fake clock at Epoch, starts it, and stops it
// when the test ends (tb.Cleanup). The engine is configured for tests:
// logs discarded, times in UTC, no periodic rescue sweep, and the time
// limits of scripts and conditions (which are in real time) at
// ScriptLimit rather than seconds, so that a loaded machine does not
// reach them; WithConfig changes any of it.
func New(tb TB, opts ...Option) *Harness {
	tb.Helper()
	o := options{start: Epoch, timeout: DefaultTimeout}
	for _, opt := range opts {
		opt(&o)
	}
	if o.timeout <= 0 {
		tb.Fatalf("enginetest: WithTimeout(%s): the bound of a wait must be positive", o.timeout)
	}
	db := o.db
	if db == nil {
		db = openDB(tb, o.dsn)
	}
	clock := timer.NewFake(o.start)
	logger := o.logger
	if logger == nil {
		logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	cfg := engine.Config{
		DB:             db,
		Clock:          clock,
		Logger:         logger,
		Location:       time.UTC,
		RescueInterval: -1,
		Directory:      o.directory,
		NodeID:         fmt.Sprintf("enginetest-%d", harnesses.Add(1)),
		// Scripts' and conditions' limits are in real time: on a busy
		// machine under -race a one-second condition runs out by load
		// alone.
		ConditionTimeout: ScriptLimit,
		ScriptTimeout:    ScriptLimit,
	}
	for _, fn := range o.configure {
		fn(&cfg)
	}
	if cfg.DB != db {
		tb.Fatalf("enginetest: WithConfig may not set Config.DB; use WithDB or WithDSN")
	}
	if cfg.Clock != timer.Clock(clock) {
		tb.Fatalf("enginetest: WithConfig may not set Config.Clock; the harness's clock is a timer.Fake (Harness.Clock)")
	}
	e, err := engine.New(cfg)
	if err != nil {
		tb.Fatalf("enginetest: engine.New: %v", err)
	}
	for _, fn := range o.setup {
		fn(e)
	}
	h := &Harness{tb: tb, ctx: tb.Context(), e: e, clock: clock, timeout: o.timeout, cursor: map[int64]int64{}, matched: map[matchKey]int{}}
	if err := e.Start(h.ctx); err != nil {
		tb.Fatalf("enginetest: engine.Start: %v", err)
	}
	tb.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), h.timeout)
		defer cancel()
		if err := e.Stop(ctx); err != nil {
			tb.Errorf("enginetest: engine.Stop: %v", err)
		}
	})
	return h
}

// openDB opens the harness's own database: dsn, or a private in-memory
// SQLite database.
func openDB(tb TB, dsn string) *gorm.DB {
	tb.Helper()
	var db *gorm.DB
	var err error
	if dsn == "" {
		db, err = gormstore.OpenSQLite(gormstore.MemoryPath)
	} else {
		db, err = gormstore.OpenDSN(dsn)
	}
	if err != nil {
		tb.Fatalf("enginetest: open the database: %v", err)
	}
	tb.Cleanup(func() {
		if sqlDB, err := db.DB(); err == nil {
			_ = sqlDB.Close()
		}
	})
	return db
}

// Engine returns the harness's engine, for everything the helpers do not
// cover.
func (h *Harness) Engine() *engine.Engine { return h.e }

// Clock returns the fake clock the engine runs on. Prefer Advance, which
// also fires the timers that fall due and waits for the engine.
func (h *Harness) Clock() *timer.Fake { return h.clock }

// Now is the fake clock's time.
func (h *Harness) Now() time.Time { return h.clock.Now() }

// Context is the test's context (tb.Context()), for calls on Engine.
func (h *Harness) Context() context.Context { return h.ctx }

// fatalf fails the test with the harness's prefix.
func (h *Harness) fatalf(format string, args ...any) {
	h.tb.Helper()
	h.tb.Fatalf("enginetest: "+format, args...)
}

// bounded is the context of one call on the engine: the test's, ended
// after WithTimeout, so that a call a busy database holds up fails the
// test rather than hang it.
func (h *Harness) bounded() (context.Context, context.CancelFunc) {
	return context.WithTimeout(h.ctx, h.timeout)
}

// check fails the test when err is not nil, saying what was being done.
func (h *Harness) check(err error, format string, args ...any) {
	h.tb.Helper()
	if err == nil {
		return
	}
	if errors.Is(err, context.DeadlineExceeded) && h.ctx.Err() == nil {
		h.fatalf("%s: no answer within %s (WithTimeout): %v\n%s", fmt.Sprintf(format, args...), h.timeout, err, h.backlog())
	}
	h.fatalf("%s: %v", fmt.Sprintf(format, args...), err)
}

// Deploy deploys an XPDL package and returns its deployment; an invalid
// package fails the test with every problem found.
func (h *Harness) Deploy(xpdl []byte) engine.Deployment {
	h.tb.Helper()
	ctx, cancel := h.bounded()
	defer cancel()
	d, err := h.e.Deploy(ctx, xpdl)
	h.check(err, "deploy")
	h.Settle()
	return d
}

// DeployFile deploys the XPDL file at path (with the ExternalPackages it
// references) and returns the deployment of its package.
func (h *Harness) DeployFile(path string) engine.Deployment {
	h.tb.Helper()
	ctx, cancel := h.bounded()
	defer cancel()
	d, err := h.e.DeployFile(ctx, path)
	h.check(err, "deploy %s", path)
	h.Settle()
	return d
}

// DeployPackage deploys a package built in Go (xpdl.NewPackage and
// Build) or read and changed, storing its XPDL 2.2 text (xpdl.Marshal),
// and returns its deployment.
func (h *Harness) DeployPackage(pkg *xpdl.Package) engine.Deployment {
	h.tb.Helper()
	src, err := xpdl.Marshal(pkg)
	h.check(err, "write package %s as XPDL", pkg.ID)
	ctx, cancel := h.bounded()
	defer cancel()
	d, err := h.e.DeployPackage(ctx, pkg, src)
	h.check(err, "deploy package %s", pkg.ID)
	h.Settle()
	return d
}

// Start starts a process with initial variables and returns the
// instance's id once the engine is quiet. process names what to start:
// "PACKAGE:PROCESS", a package id (its main process), or the id of a
// WorkflowProcess of one deployed package (the latest version of each).
func (h *Harness) Start(process string, vars map[string]any) int64 {
	h.tb.Helper()
	opts := h.resolve(process)
	opts.Variables = vars
	return h.StartWith(opts)
}

// StartWith starts a process as engine.Engine.StartProcess does, with
// every option, and returns the instance's id once the engine is quiet.
func (h *Harness) StartWith(opts engine.StartOptions) int64 {
	h.tb.Helper()
	ctx, cancel := h.bounded()
	defer cancel()
	id, err := h.e.StartProcess(ctx, opts)
	h.check(err, "start %s", describeStart(opts))
	h.Settle()
	return id
}

func describeStart(o engine.StartOptions) string {
	switch {
	case o.DefinitionID != 0:
		return fmt.Sprintf("deployment %d process %q", o.DefinitionID, o.Process)
	case o.Process != "":
		return o.Package + ":" + o.Process
	default:
		return o.Package
	}
}

// resolve turns Start's process name into start options.
func (h *Harness) resolve(name string) engine.StartOptions {
	h.tb.Helper()
	ctx, cancel := h.bounded()
	defer cancel()
	if pkg, proc, ok := strings.Cut(name, ":"); ok {
		return engine.StartOptions{Package: pkg, Process: proc}
	}
	deps, err := h.e.Deployments(ctx)
	h.check(err, "list deployments")
	latest := map[string]engine.Deployment{}
	for _, d := range deps {
		if d.Version > latest[d.PackageID].Version {
			latest[d.PackageID] = d
		}
	}
	if _, ok := latest[name]; ok {
		return engine.StartOptions{Package: name}
	}
	var found []string
	var all []string
	for _, d := range latest {
		for _, p := range d.Processes {
			all = append(all, d.PackageID+":"+p)
			if p == name {
				found = append(found, d.PackageID)
			}
		}
	}
	slices.Sort(all)
	slices.Sort(found)
	switch len(found) {
	case 1:
		return engine.StartOptions{Package: found[0], Process: name}
	case 0:
		h.fatalf("start %q: no deployed package or process has that id; deployed: %s", name, orNone(all))
	default:
		h.fatalf("start %q: the process is in several packages (%s); say PACKAGE:%s", name, strings.Join(found, ", "), name)
	}
	return engine.StartOptions{}
}

func orNone(s []string) string {
	if len(s) == 0 {
		return "none"
	}
	return strings.Join(s, ", ")
}

// Settle waits until the engine is quiet: every event it can process now
// processed, every due timer fired (engine.Engine.WaitQuiet). The helpers
// that act settle before they return; Settle is for what a test does on
// Engine itself.
func (h *Harness) Settle() {
	h.tb.Helper()
	ctx, cancel := context.WithTimeout(h.ctx, h.timeout)
	defer cancel()
	if err := h.e.WaitQuiet(ctx); err != nil {
		if errors.Is(err, context.DeadlineExceeded) && h.ctx.Err() == nil {
			h.fatalf("the engine did not go quiet within %s (WithTimeout): it keeps working\n%s", h.timeout, h.backlog())
		}
		h.fatalf("wait for the engine: %v", err)
	}
}

// backlog describes the engine's pending work, for failures.
func (h *Harness) backlog() string {
	ctx, cancel := h.lookContext()
	defer cancel()
	b, err := h.e.Backlog(ctx)
	if err != nil {
		return fmt.Sprintf("backlog: %v", err)
	}
	st := h.e.Stats().Scheduler
	return fmt.Sprintf("backlog: %d events available, %d waiting for a retry's backoff, %d timers pending (%d due), %d paused; scheduler queue %d",
		b.EventsAvailable, b.EventsWaiting, b.TimersPending, b.TimersDue, b.TimersPaused, st.QueueDepth)
}
