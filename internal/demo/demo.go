// Package demo is the demo of "goxpdl serve --demo" (docs/serve.md): the
// use case of the paper goxpdl descends from, a telecom operator's
// assessment of its service providers (sp-assessment.xpdl), with a
// driver that keeps it busy so that every page of the console shows
// life.
//
// A Driver binds the package's applications to small Go functions,
// deploys the package, and then, at each step (Config.StartEvery),
// starts an instance and completes the work items that simulated people
// have had long enough to do. Some of it goes wrong on purpose: the
// scoring application fails now and then (an incident for an operator to
// retry), the mail gateway is down for a while every few minutes (calls
// retried, "failing" incidents that clear themselves), and the channel
// manager lets some decisions run past their deadline (the deadline
// takes the exception path). All time comes from Config.Clock, the
// engine's.
package demo

import (
	"bytes"
	"context"
	_ "embed" // the demo package
	"errors"
	"fmt"
	"hash/fnv"
	"log/slog"
	"math/rand/v2"
	"slices"
	"sync"
	"time"

	"github.com/goxpdl/goxpdl/engine"
	"github.com/goxpdl/goxpdl/timer"
	"github.com/goxpdl/goxpdl/wftype"
	"github.com/goxpdl/goxpdl/workitem"
)

// Source is the demo's XPDL 2.2 package, sp-assessment.xpdl.
//
//go:embed sp-assessment.xpdl
var Source []byte

// The demo package and its processes.
const (
	PackageID = "sp_assessment"
	// ProcessID is the main process, the assessment of one SP.
	ProcessID = "assessment"
	// SubflowID is the subflow in which the SP hands in its evidence.
	SubflowID = "collect_evidence"
)

// Defaults of Config.
const (
	DefaultStartEvery  = 3 * time.Second
	DefaultMinWork     = 5 * time.Second
	DefaultMaxWork     = 40 * time.Second
	DefaultFailureRate = 0.1
	DefaultSkipRate    = 0.25
	DefaultOutageEvery = 5 * time.Minute
	DefaultOutage      = 30 * time.Second
	DefaultMaxOpen     = 300
)

// Config configures a Driver.
type Config struct {
	// Engine runs the demo; required. New binds the demo's applications
	// to it.
	Engine *engine.Engine
	// Clock is where the driver's time comes from; give it the engine's
	// (engine.Config.Clock). Default the system clock.
	Clock timer.Clock
	// StartEvery is the pace: each step starts one instance and does the
	// work that is due; default DefaultStartEvery.
	StartEvery time.Duration
	// MinWork and MaxWork bound how long a simulated person takes for a
	// work item, counted from its creation; each item gets its own time
	// in between. Defaults DefaultMinWork and DefaultMaxWork.
	MinWork, MaxWork time.Duration
	// FailureRate is the share of calls of the scoring application that
	// fail (a fatal error: the activity goes Abnormal and an incident
	// opens); default DefaultFailureRate, negative for none.
	FailureRate float64
	// SkipRate is the share of the manager's decisions nobody makes, so
	// that their deadline fires; default DefaultSkipRate, negative for
	// none.
	SkipRate float64
	// OutageEvery and Outage make the mail gateway of the notification
	// application fail (retryably) for Outage at the start of every
	// OutageEvery of the clock; defaults DefaultOutageEvery and
	// DefaultOutage. A negative Outage means no outage.
	OutageEvery, Outage time.Duration
	// MaxOpen stops new starts while this many demo instances are open
	// (not ended), so that a demo left running for days stays small;
	// default DefaultMaxOpen.
	MaxOpen int
	// Seed seeds the random choices (scores, failures); the same seed
	// and the same clock give the same demo.
	Seed uint64
	// Logger receives the driver's logs; default slog.Default().
	Logger *slog.Logger
}

// Driver runs the demo on an engine: create it with New, then Start and
// Stop it, or call Step yourself.
type Driver struct {
	cfg  Config
	eng  *engine.Engine
	log  *slog.Logger
	loop *timer.Periodic

	mu      sync.Mutex
	rng     *rand.Rand
	started int
	depID   int64
}

// ErrNoEngine is returned by New without Config.Engine.
var ErrNoEngine = errors.New("demo: no engine")

// New returns a driver for cfg.Engine and binds the demo's applications
// (computeScore, checkDocuments, notifyPartner) on it.
func New(cfg Config) (*Driver, error) {
	if cfg.Engine == nil {
		return nil, ErrNoEngine
	}
	if cfg.Clock == nil {
		cfg.Clock = timer.Real()
	}
	if cfg.StartEvery <= 0 {
		cfg.StartEvery = DefaultStartEvery
	}
	if cfg.MinWork <= 0 {
		cfg.MinWork = DefaultMinWork
	}
	if cfg.MaxWork <= 0 {
		cfg.MaxWork = DefaultMaxWork
	}
	if cfg.MaxWork < cfg.MinWork {
		return nil, fmt.Errorf("demo: MaxWork %v is less than MinWork %v", cfg.MaxWork, cfg.MinWork)
	}
	if cfg.FailureRate == 0 {
		cfg.FailureRate = DefaultFailureRate
	}
	if cfg.SkipRate == 0 {
		cfg.SkipRate = DefaultSkipRate
	}
	if cfg.OutageEvery <= 0 {
		cfg.OutageEvery = DefaultOutageEvery
	}
	if cfg.Outage == 0 {
		cfg.Outage = DefaultOutage
	}
	if cfg.MaxOpen <= 0 {
		cfg.MaxOpen = DefaultMaxOpen
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	d := &Driver{
		cfg: cfg, eng: cfg.Engine, log: cfg.Logger,
		rng: rand.New(rand.NewPCG(cfg.Seed, cfg.Seed^0x5eed)),
	}
	d.eng.RegisterApplication("computeScore", d.computeScore)
	d.eng.RegisterApplication("checkDocuments", checkDocuments)
	d.eng.RegisterApplication("notifyPartner", d.notifyPartner)
	return d, nil
}

// Deploy deploys the demo package, unless its latest deployed version is
// this very source (a restart on the same database), which it reuses.
// deployed says whether a new version was stored.
func Deploy(ctx context.Context, e *engine.Engine) (dep engine.Deployment, deployed bool, err error) {
	versions, err := e.Versions(ctx, PackageID)
	if err != nil && !errors.Is(err, engine.ErrNotFound) {
		return engine.Deployment{}, false, fmt.Errorf("demo: %w", err)
	}
	if n := len(versions); n > 0 {
		latest, src, err := e.DefinitionSource(ctx, versions[n-1].ID)
		if err != nil {
			return engine.Deployment{}, false, fmt.Errorf("demo: %w", err)
		}
		if bytes.Equal(src, Source) {
			return latest, false, nil
		}
	}
	dep, err = e.Deploy(ctx, Source)
	if err != nil {
		return engine.Deployment{}, false, fmt.Errorf("demo: deploy: %w", err)
	}
	return dep, true, nil
}

// Start deploys the demo (Deploy) and runs Step now and then every
// Config.StartEvery, on a goroutine of its own, until Stop or until ctx
// is cancelled. The engine must be started.
func (d *Driver) Start(ctx context.Context) error {
	if err := d.deploy(ctx); err != nil {
		return err
	}
	d.loop = timer.NewPeriodic(d.cfg.Clock, d.cfg.StartEvery, func(ctx context.Context) {
		if err := d.Step(ctx); err != nil && ctx.Err() == nil {
			d.log.Warn("demo: step", "error", err)
		}
	})
	d.loop.Start(ctx)
	return nil
}

// Stop stops the steps and waits for the one under way; it does not stop
// the engine. It is safe before Start and idempotent.
func (d *Driver) Stop(ctx context.Context) error {
	if d.loop == nil {
		return nil
	}
	if err := d.loop.Stop(ctx); err != nil {
		return fmt.Errorf("demo: stop: %w", err)
	}
	return nil
}

// Started is how many instances the driver has started.
func (d *Driver) Started() int {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.started
}

// deploy deploys the demo package, once.
func (d *Driver) deploy(ctx context.Context) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.depID != 0 {
		return nil
	}
	dep, deployed, err := Deploy(ctx, d.eng)
	if err != nil {
		return err
	}
	d.depID = dep.ID
	d.log.Info("demo: running", "package", dep.PackageID, "version", dep.Version, "new", deployed, "every", d.cfg.StartEvery)
	return nil
}

// Step does one step of the demo: it starts an instance (unless
// Config.MaxOpen are open) and completes the open work items of the demo
// whose time has come. It deploys the demo package first if Start has not.
func (d *Driver) Step(ctx context.Context) error {
	if err := d.deploy(ctx); err != nil {
		return err
	}
	if err := d.startOne(ctx); err != nil {
		return err
	}
	return d.work(ctx)
}

// partners are the service providers the demo assesses.
var partners = []string{
	"Pearl River Mobile Media", "Blue Sky Ringtones", "Jade Gate Games", "Lotus SMS Services",
	"North Star Music", "Red Lantern News", "Silver Bay Video", "Bamboo Weather Alerts",
	"Golden Phoenix Lottery Info", "Harbour Ticketing", "Mountain Mail Push", "Orchid Stock Quotes",
}

// notEnded are the states of the instances MaxOpen counts: those under way
// and those Locking, which wait for an operator's repair.
var notEnded = slices.Concat(wftype.OpenProcessStates, []wftype.ProcessState{wftype.ProcessLocking})

// startOne starts one assessment, unless MaxOpen are open.
func (d *Driver) startOne(ctx context.Context) error {
	page, err := d.eng.Instances(ctx, engine.InstanceFilter{
		Package: PackageID, Process: ProcessID, Limit: d.cfg.MaxOpen,
		States: notEnded,
	})
	if err != nil {
		return fmt.Errorf("demo: count open instances: %w", err)
	}
	if len(page.Instances) >= d.cfg.MaxOpen {
		return nil
	}
	d.mu.Lock()
	p := d.rng.IntN(len(partners))
	code := fmt.Sprintf("SP-%04d", 1000+d.rng.IntN(9000))
	depID := d.depID
	d.mu.Unlock()
	opts := engine.StartOptions{
		Package: PackageID, DefinitionID: depID, Process: ProcessID, Actor: "demo", BusinessKey: code,
		Variables: map[string]any{"partner": partners[p]},
	}
	id, err := d.eng.StartProcess(ctx, opts)
	if err != nil {
		return fmt.Errorf("demo: start: %w", err)
	}
	d.mu.Lock()
	d.started++
	d.mu.Unlock()
	d.log.Debug("demo: started", "instance", id, "partner", partners[p], "businessKey", code)
	return nil
}

// maxWorkPerStep bounds the work items one step looks at.
const maxWorkPerStep = 1000

// work completes the demo's open work items whose time has come.
func (d *Driver) work(ctx context.Context) error {
	now := d.cfg.Clock.Now()
	var after int64
	for seen := 0; seen < maxWorkPerStep; {
		page, err := d.eng.WorkItems(ctx, engine.WorkItemFilter{States: workitem.OpenStates, After: after, Limit: 200})
		if err != nil {
			return fmt.Errorf("demo: list work items: %w", err)
		}
		for _, wi := range page.WorkItems {
			seen++
			if wi.Process != ProcessID && wi.Process != SubflowID {
				continue
			}
			if wi.State == workitem.Suspended || now.Sub(wi.CreatedAt) < d.delay(wi.ID) {
				continue
			}
			if err := d.complete(ctx, wi); err != nil {
				if ctx.Err() != nil {
					return ctx.Err()
				}
				// A person got there first (through the console), or
				// the deadline withdrew the item meanwhile.
				d.log.Debug("demo: complete", "workitem", wi.ID, "error", err)
			}
		}
		if page.Next == 0 {
			return nil
		}
		after = page.Next
	}
	return nil
}

// complete does work item wi as the simulated person of its activity
// would, or leaves it when that person does not get round to it.
func (d *Driver) complete(ctx context.Context, wi engine.WorkItem) error {
	var user string
	out := map[string]any{}
	switch wi.Activity {
	case "Submit":
		user = "sp-portal"
		out["documents"] = int64(2 + d.pick(wi.ID, 1, 5)) // 2 of them are incomplete: resubmitted
	case "ReviewQuality":
		user = assessors[d.pick(wi.ID, 2, len(assessors))]
		out["quality"] = int64(55 + d.pick(wi.ID, 3, 46))
	case "ReviewComplaints":
		user = assessors[d.pick(wi.ID, 2, len(assessors))]
		// With quality in 55..100 and 0..14 complaints, about a sixth
		// of the scores are 80 or more (A) and a fifth under 50 (the
		// manager decides).
		out["complaints"] = int64(d.pick(wi.ID, 3, 15))
	case "Decide":
		if d.chance(wi.ID, 4, d.cfg.SkipRate) {
			return nil // busy: the deadline will decide
		}
		user = "chen.jie"
		out["downgrade"] = d.pick(wi.ID, 5, 2) == 1
	case "Improve":
		user = assessors[d.pick(wi.ID, 2, len(assessors))]
	default:
		return nil
	}
	_, err := d.eng.CompleteWorkItem(ctx, wi.ID, engine.Completion{User: user, Outputs: out, IdempotencyKey: fmt.Sprintf("demo-%d", wi.ID)})
	if err != nil {
		return fmt.Errorf("complete work item %d: %w", wi.ID, err)
	}
	return nil
}

// assessors are the simulated assessors.
var assessors = []string{"li.na", "wang.fang", "zhao.lei"}

// delay is how long the simulated person takes for work item id.
func (d *Driver) delay(id int64) time.Duration {
	span := d.cfg.MaxWork - d.cfg.MinWork
	if span <= 0 {
		return d.cfg.MinWork
	}
	return d.cfg.MinWork + time.Duration(d.hash(id, 0)%uint64(span))
}

// pick is a number in [0, n) fixed for work item id and purpose, so that
// a step that meets the item again decides the same.
func (d *Driver) pick(id int64, purpose uint64, n int) int {
	return int(d.hash(id, purpose) % uint64(n))
}

// chance is true with probability p, fixed for id and purpose.
func (d *Driver) chance(id int64, purpose uint64, p float64) bool {
	return p > 0 && float64(d.hash(id, purpose)%10000) < p*10000
}

// hash mixes the seed, id and purpose.
func (d *Driver) hash(id int64, purpose uint64) uint64 {
	h := fnv.New64a()
	var b [24]byte
	for i, v := range []uint64{d.cfg.Seed, uint64(id), purpose} {
		for j := range 8 {
			b[i*8+j] = byte(v >> (8 * j))
		}
	}
	_, _ = h.Write(b[:]) // a hash.Hash never fails to write
	return h.Sum64()
}

// computeScore is the application computeScore: the quality less two
// points a complaint, between 0 and 100. Now and then (FailureRate) the
// scoring service refuses, fatally.
func (d *Driver) computeScore(_ context.Context, call *engine.Call) (map[string]any, error) {
	d.mu.Lock()
	fail := d.cfg.FailureRate > 0 && d.rng.Float64() < d.cfg.FailureRate
	d.mu.Unlock()
	if fail {
		return nil, fmt.Errorf("scoring service: rating data of %s not available", call.IdempotencyKey)
	}
	score := max(0, min(100, intParam(call, "quality")-2*intParam(call, "complaints")))
	return map[string]any{"score": score}, nil
}

// checkDocuments is the application checkDocuments: a submission of at
// least three documents is complete.
func checkDocuments(_ context.Context, call *engine.Call) (map[string]any, error) {
	return map[string]any{"complete": intParam(call, "documents") >= 3}, nil
}

// notifyPartner is the application notifyPartner. The mail gateway is
// down for Outage at the start of every OutageEvery: the call fails
// retryably, and the engine retries it with backoff.
func (d *Driver) notifyPartner(_ context.Context, call *engine.Call) (map[string]any, error) {
	if d.cfg.Outage > 0 {
		since := time.Duration(d.cfg.Clock.Now().UnixNano() % int64(d.cfg.OutageEvery))
		if since < d.cfg.Outage {
			return nil, engine.Retryable(fmt.Errorf("mail gateway unavailable (back in %v)", (d.cfg.Outage - since).Round(time.Second)))
		}
	}
	d.log.Debug("demo: notified", "partner", call.Params["partner"], "grade", call.Params["grade"])
	return nil, nil
}

// intParam reads an INTEGER parameter of call; 0 when it is missing.
func intParam(call *engine.Call, name string) int64 {
	switch v := call.Params[name].(type) {
	case int64:
		return v
	case int:
		return int64(v)
	case float64:
		return int64(v)
	}
	return 0
}
