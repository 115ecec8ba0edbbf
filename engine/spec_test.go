package engine_test

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/cockroachdb/datadriven"
	"github.com/dustin/go-humanize"
	"github.com/stretchr/testify/require"
	"gorm.io/gorm"

	"github.com/goxpdl/goxpdl/engine"
	"github.com/goxpdl/goxpdl/store/dbtest"
	"github.com/goxpdl/goxpdl/timer"
	"github.com/goxpdl/goxpdl/workitem"
	"github.com/goxpdl/goxpdl/xpdl/xpdltest"
)

// specDir holds the engine's specification: datadriven scripts of
// commands and the trace each one produces (docs/spec.md).
const specDir = "../testdata/spec"

// TestSpec runs the specification in testdata/spec: every file is a
// script of commands (deploy, start, complete, fail, advance, ...) on a
// fresh engine with a fake clock, and the expected output of each command
// is the trace of what the engine did. It runs on an in-memory SQLite
// database and, when GOXPDL_MYSQL_DSN or GOXPDL_POSTGRES_DSN is set, on
// MySQL/MariaDB or PostgreSQL, against the same expected output. `go test ./engine -run Spec -rewrite`
// regenerates the output; review the diff.
func TestSpec(t *testing.T) {
	t.Parallel()
	dialects := []dbtest.Dialect{{Name: "SQLite", Open: dbtest.OpenSQLiteMemory}, {Name: "MySQL", Open: dbtest.OpenMySQL}, {Name: "Postgres", Open: dbtest.OpenPostgres}}
	for _, d := range dialects {
		t.Run(d.Name, func(t *testing.T) {
			t.Parallel()
			if d.Name != "SQLite" {
				// Skips, with the reason, when no server is named.
				if d.Name == "MySQL" {
					dbtest.MySQLDSN(t)
				} else {
					dbtest.PostgresDSN(t)
				}
				if f := flag.Lookup("rewrite"); f != nil && f.Value.String() == "true" {
					t.Skip("-rewrite takes the output from SQLite; run again without it to check " + d.Name + " against it")
				}
			}
			datadriven.Walk(t, specDir, func(t *testing.T, path string) {
				if !strings.HasSuffix(path, ".txt") {
					t.Skipf("%s is not a spec file", path)
				}
				s := newSpec(t, d.Open(t))
				datadriven.RunTest(t, path, s.run)
			})
		})
	}
}

// settleGuard and settleGuardFaulty bound the real time a spec waits for
// its engine to settle, without and with the fault suite's faults. A
// command settles in milliseconds; the guards are there so that a defect
// fails the script instead of hanging the test binary.
const (
	settleGuard       = 2 * time.Minute
	settleGuardFaulty = 20 * time.Second
)

// specEpoch is when every spec starts; times are printed relative to it.
var specEpoch = time.Date(2026, 1, 5, 9, 0, 0, 0, time.UTC)

// spec is one script's engine and what the script has named so far.
type spec struct {
	t   *testing.T
	ctx context.Context
	// look is the context of the script's own reads of the database
	// (settle, state, calls, finding a work item): ctx, or under the
	// fault suite ctx exempt from faults.
	look      context.Context
	faulty    bool   // the fault suite runs the script: see startEngine
	heal      func() // under the fault suite: ends an outage before the script waits or retries
	db        *gorm.DB
	clock     *timer.Fake
	cfg       engine.Config
	e         *engine.Engine
	apps      map[string]*specApp
	callCount map[string]int // calls of each application, by name, rolled back or not

	mu      sync.Mutex
	records []engine.Record
	unsub   func()

	// aliases name instances (p1, p2, ...) and work items (w1, ...) in
	// the order the script meets them, so that the output does not depend
	// on the ids a database hands out.
	instances []int64
	items     []int64
	current   int64 // the instance commands act on by default
	messages  int   // messages sent so far
	lastBatch int64 // the id of the latest batch the script started
	latest    engine.Deployment
}

// specApp is what an application registered by the script does: hand
// back outputs, or fail (a number of times, or always).
type specApp struct {
	outputs map[string]any
	failure string // "", "fatal", "retryable", "exception=NAME", "panic"
	message string
	times   int // failures left; <0: always
}

func newSpec(t *testing.T, db *gorm.DB) *spec {
	return newSpecWith(t, db, nil)
}

// newSpecWith is newSpec with prepare run on the spec before its engine
// starts (the fault suite's settings).
func newSpecWith(t *testing.T, db *gorm.DB, prepare func(*spec)) *spec {
	s := &spec{t: t, ctx: t.Context(), look: t.Context(), db: db, clock: timer.NewFake(specEpoch), apps: map[string]*specApp{}, callCount: map[string]int{}}
	s.cfg = engine.Config{
		DB:           db,
		Clock:        s.clock,
		Location:     time.UTC,
		Logger:       slog.New(slog.NewTextHandler(io.Discard, nil)),
		PollInterval: 20 * time.Millisecond,
		// The periodic recovery sweep runs on its own goroutine, at no
		// moment a script can name: scripts sweep with "recover".
		RescueInterval: -1,
		// A condition's time limit is real time: the default second
		// ran out under -race on a loaded machine (a run of the suite
		// with the load average at 10 failed so). Scripts that test the
		// limit set their own (restart condition-timeout=…).
		ConditionTimeout: time.Minute,
	}
	if prepare != nil {
		prepare(s)
	}
	require.NoError(t, db.WithContext(s.look).Exec("CREATE TABLE spec_calls (app VARCHAR(64) NOT NULL, activity VARCHAR(64) NOT NULL)").Error)
	s.startEngine()
	t.Cleanup(s.stopEngine)
	return s
}

// startEngine starts a new engine on the spec's database. Under the
// fault suite a start that fails (a fault struck New's migration or
// Start's registration) is tried again, as a host would.
func (s *spec) startEngine() {
	for attempt := 1; ; attempt++ {
		err := s.tryStartEngine()
		if err == nil {
			return
		}
		if !s.faulty || attempt == 3 {
			require.NoError(s.t, err)
		}
		if s.heal != nil {
			s.heal() // the host waits for the database to come back
		}
	}
}

func (s *spec) tryStartEngine() error {
	e, err := engine.New(s.cfg)
	if err != nil {
		return err
	}
	for name := range s.apps {
		e.RegisterApplication(name, s.application(name))
	}
	unsub := e.Subscribe(func(r engine.Record) {
		s.mu.Lock()
		s.records = append(s.records, r)
		s.mu.Unlock()
	})
	if err := e.Start(s.ctx); err != nil {
		unsub()
		_ = e.Stop(context.Background())
		return err
	}
	s.e, s.unsub = e, unsub
	return nil
}

// stopEngine stops the engine. Under the fault suite a Stop that a fault
// struck (releasing the node's claims) may fail: the next start takes
// the claims over.
func (s *spec) stopEngine() {
	if s.e == nil {
		return
	}
	s.unsub()
	ctx, cancel := context.WithTimeout(context.Background(), settleGuard) // a bound on a stuck stop
	defer cancel()
	if err := s.e.Stop(ctx); !s.faulty {
		require.NoError(s.t, err)
	}
	s.e = nil
}

// engineIDs matches the ids the engine makes (package idgen): 13 digits
// and more, 2^40 or so from 2020 on.
var engineIDs = regexp.MustCompile(`\b[1-9][0-9]{12,15}\b`)

// named is text with the ids the engine made (package idgen), which name
// the clock's time, written as the script sees them: a process instance
// the script has met by its alias (p1, p2, ...), any other id as <id>.
func (s *spec) named(text string) string {
	return engineIDs.ReplaceAllStringFunc(text, func(m string) string {
		id, err := strconv.ParseInt(m, 10, 64)
		if err == nil && slices.Contains(s.instances, id) {
			return s.alias(id)
		}
		return "<id>"
	})
}

// run executes one command of the script and returns its output.
func (s *spec) run(t *testing.T, d *datadriven.TestData) string {
	s.t = t
	var out strings.Builder
	s.takeRecords() // nothing from before counts
	err := s.do(d, &out)
	if err != nil {
		fmt.Fprintf(&out, "error: %s\n", s.named(err.Error()))
	}
	s.settle()
	s.writeRecords(&out)
	if out.Len() == 0 {
		return "ok\n"
	}
	return out.String()
}

func (s *spec) do(d *datadriven.TestData, out *strings.Builder) error {
	switch d.Cmd {
	case "deploy":
		return s.deploy(d, out)
	case "start":
		return s.start(d)
	case "complete":
		return s.complete(d)
	case "app":
		s.register(d.CmdArgs[0].Key, &specApp{outputs: s.values(d.CmdArgs[1:])})
		return nil
	case "fail":
		return s.fail(d)
	case "advance":
		dur, err := time.ParseDuration(d.CmdArgs[0].Key)
		if err != nil {
			return err
		}
		s.settle() // what is armed is armed
		s.clock.Advance(dur)
		return nil
	case "suspend":
		return s.e.Suspend(s.ctx, s.instance(d), engine.Op{})
	case "resume":
		return s.e.Resume(s.ctx, s.instance(d), engine.Op{})
	case "terminate":
		return s.e.Terminate(s.ctx, s.instance(d), engine.Op{})
	case "signal":
		b, err := s.e.Signal(s.ctx, d.CmdArgs[0].Key, engine.SignalOpts{Variables: s.values(d.CmdArgs[1:])})
		if err == nil {
			fmt.Fprintf(out, "receivers: %d\n", len(b.Receivers))
		}
		return err
	case "send":
		m := engine.Message{MessageID: fmt.Sprintf("m%d", s.nextMessage()), Instance: s.instance(d), Activity: d.CmdArgs[0].Key, User: "clerk1"}
		var rest []datadriven.CmdArg
		for _, a := range d.CmdArgs[1:] {
			switch a.Key {
			case "instance":
			case "ttl":
				ttl, err := time.ParseDuration(a.Vals[0])
				if err != nil {
					return err
				}
				m.TTL = ttl
			default:
				rest = append(rest, a)
			}
		}
		m.Outputs = s.values(rest)
		del, err := s.e.Send(s.ctx, m)
		if err == nil {
			fmt.Fprintf(out, "delivery: %s\n", del.State)
		}
		return err
	case "recover":
		rep, err := s.e.Recover(s.ctx)
		if err == nil {
			fmt.Fprintf(out, "rescued: %d\n", rep.Rescued)
		}
		return err
	case "restart":
		s.stopEngine()
		for _, a := range d.CmdArgs {
			switch a.Key {
			case "dead-branch":
				s.cfg.DeadBranch = engine.DeadBranchMode(a.Vals[0])
			case "condition-timeout":
				d, err := time.ParseDuration(a.Vals[0])
				if err != nil {
					return err
				}
				s.cfg.ConditionTimeout = d
			case "script-memory", "script-result":
				n := int64(-1) // off
				if a.Vals[0] != "off" {
					u, err := humanize.ParseBytes(a.Vals[0])
					if err != nil {
						return err
					}
					n = int64(u)
				}
				if a.Key == "script-memory" {
					s.cfg.ScriptLimits.MemoryBudget = n
				} else {
					s.cfg.ScriptLimits.MaxResultBytes = n
				}
			case "script-depth":
				n, err := strconv.Atoi(a.Vals[0])
				if err != nil {
					return err
				}
				s.cfg.ScriptLimits.MaxCallStackDepth = n
			case "subflow-depth":
				n, err := strconv.Atoi(a.Vals[0])
				if err != nil {
					return err
				}
				s.cfg.MaxSubflowDepth = n
			default:
				return fmt.Errorf("restart: unknown setting %s", a.Key)
			}
		}
		s.startEngine()
		return nil
	case "state":
		s.settle()
		return s.state(d, out)
	case "calls":
		s.settle()
		return s.calls(out)
	case "loop":
		s.settle()
		return s.loop(d, out)
	default:
		if ok, err := s.operate(d, out); ok {
			return err
		}
		return fmt.Errorf("unknown command %q", d.Cmd)
	}
}

// deploy deploys the XPDL in the input: a whole document, a graph in the
// notation of xpdltest.Graph (deploy graph), or WorkflowProcess elements
// (with any package-level elements before them) wrapped in the package of
// xpdltest.PackageWith; or a file (deploy file=PATH, relative to the
// repository).
func (s *spec) deploy(d *datadriven.TestData, out *strings.Builder) error {
	if d.HasArg("together") {
		return s.deployTogether(d, out)
	}
	var src string
	switch {
	case d.HasArg("file"):
		var path string
		d.ScanArgs(s.t, "file", &path)
		data, err := os.ReadFile(filepath.Join("..", path))
		if err != nil {
			return err
		}
		src = string(data)
	case d.HasArg("graph"):
		lines := strings.Split(strings.TrimSpace(d.Input), "\n")
		src = xpdltest.Graph(lines[0], lines[1:]...)
	case strings.HasPrefix(strings.TrimSpace(d.Input), "<?xml"), strings.HasPrefix(strings.TrimSpace(d.Input), "<Package"):
		src = d.Input
	default:
		i := strings.Index(d.Input, "<WorkflowProcess ")
		if i < 0 {
			return errors.New("deploy: the input holds no WorkflowProcess")
		}
		src = xpdltest.PackageWith(d.Input[:i], d.Input[i:])
	}
	dep, err := s.e.Deploy(s.ctx, []byte(src))
	if err != nil {
		return err
	}
	s.latest = dep
	fmt.Fprintf(out, "deployed %s v%d: %s\n", dep.PackageID, dep.Version, strings.Join(dep.Processes, " "))
	return nil
}

// start starts a process: start [PROCESS] [lost-event] [k=v ...]; values
// are text, parsed by their declared types.
// deployTogether deploys the Package documents of the input as one
// deployment (Engine.DeployTogether): deploy together. Each is named
// fileN.xpdl, N from 1; start runs the first.
func (s *spec) deployTogether(d *datadriven.TestData, out *strings.Builder) error {
	var srcs []engine.Source
	for doc := range strings.SplitAfterSeq(d.Input, "</Package>") {
		if doc = strings.TrimSpace(doc); doc != "" {
			srcs = append(srcs, engine.Source{File: fmt.Sprintf("file%d.xpdl", len(srcs)+1), XPDL: []byte(doc)})
		}
	}
	deps, err := s.e.DeployTogether(s.ctx, srcs...)
	if err != nil {
		return err
	}
	s.latest = deps[0]
	for _, dep := range deps {
		fmt.Fprintf(out, "deployed %s v%d from %s: %s\n", dep.PackageID, dep.Version, dep.File, strings.Join(dep.Processes, " "))
	}
	return nil
}

func (s *spec) start(d *datadriven.TestData) error {
	opts := engine.StartOptions{DefinitionID: s.latest.ID, TextVariables: map[string]string{}}
	lost := false
	for i, a := range d.CmdArgs {
		switch {
		case a.Key == "lost-event" && len(a.Vals) == 0:
			lost = true
		case i == 0 && len(a.Vals) == 0:
			opts.Process = a.Key
		case a.Key == "key" && len(a.Vals) == 1:
			opts.IdempotencyKey = a.Vals[0]
		default:
			opts.TextVariables[a.Key] = strings.Join(a.Vals, ",")
		}
	}
	if s.faulty && opts.IdempotencyKey == "" {
		// The fault suite tries a start again after an error whose
		// commit it cannot know: the key makes that safe, as for a host.
		opts.IdempotencyKey = "spec:" + d.Pos
	}
	var id int64
	var err error
	if lost {
		// Started in a host transaction that also deletes the event that
		// would schedule it: an event lost (recovery's second phase).
		err = s.e.Transaction(s.ctx, s.db, func(tx *gorm.DB) error {
			if id, err = s.e.StartProcessTx(s.ctx, tx, opts); err != nil {
				return err
			}
			return tx.Exec("DELETE FROM goxpdl_events WHERE process_instance_id = ?", id).Error
		})
	} else {
		id, err = s.e.StartProcess(s.ctx, opts)
	}
	if err != nil {
		return err
	}
	s.current = id
	s.alias(id)
	return nil
}

// complete completes the open work item of an activity of the current
// instance (or of instance=pN), or, with index=K, the work item of the
// K-th instance of the activity's latest loop, in whatever state it is:
// complete ACTIVITY [user=U] [index=K] [k=v ...].
func (s *spec) complete(d *datadriven.TestData) error {
	activity := d.CmdArgs[0].Key
	user := "clerk1"
	index := 0
	var rest []datadriven.CmdArg
	for _, a := range d.CmdArgs[1:] {
		switch a.Key {
		case "user":
			user = a.Vals[0]
		case "instance":
		case "index":
			n, err := strconv.Atoi(a.Vals[0])
			if err != nil || n < 1 {
				return fmt.Errorf("complete: index=%s is not a loop instance's number", a.Vals[0])
			}
			index = n
		default:
			rest = append(rest, a)
		}
	}
	id := s.instance(d)
	if index > 0 {
		item, err := s.loopItem(id, activity, index)
		if err != nil {
			return err
		}
		_, err = s.e.CompleteWorkItem(s.ctx, item, engine.Completion{User: user, Outputs: s.values(rest)})
		return err
	}
	items, err := workItemsOf(s.look, s.e, openItemsOf(id))
	if err != nil {
		return err
	}
	var found []engine.WorkItem
	for _, wi := range items {
		if wi.Activity == activity {
			found = append(found, wi)
		}
	}
	if len(found) == 0 {
		return fmt.Errorf("no open work item of activity %s in %s", activity, s.instanceName(id))
	}
	_, err = s.e.CompleteWorkItem(s.ctx, found[0].ID, engine.Completion{User: user, Outputs: s.values(rest)})
	return err
}

// fail makes an application fail: fail APP [retryable|exception=NAME|
// panic] [times=N] [msg=TEXT]; by default fatally, every time.
func (s *spec) fail(d *datadriven.TestData) error {
	app := &specApp{failure: "fatal", times: -1, message: "boom"}
	for _, a := range d.CmdArgs[1:] {
		switch a.Key {
		case "retryable", "panic":
			app.failure = a.Key
		case "exception":
			app.failure = "exception=" + a.Vals[0]
		case "times":
			n, err := strconv.Atoi(a.Vals[0])
			if err != nil {
				return err
			}
			app.times = n
		case "msg":
			app.message = strings.Join(a.Vals, ",")
		default:
			return fmt.Errorf("fail: unknown argument %s", a.Key)
		}
	}
	s.register(d.CmdArgs[0].Key, app)
	return nil
}

func (s *spec) register(name string, app *specApp) {
	s.mu.Lock()
	s.apps[name] = app
	s.mu.Unlock()
	s.e.RegisterApplication(name, s.application(name))
}

func (s *spec) application(name string) engine.ApplicationFunc {
	return func(ctx context.Context, call *engine.Call) (map[string]any, error) {
		// The host's business write: it commits with the engine's step,
		// or not at all (the calls command shows which did).
		if err := call.Tx.WithContext(ctx).Exec("INSERT INTO spec_calls (app, activity) VALUES (?, ?)", name, call.ActivityID).Error; err != nil {
			return nil, err
		}
		s.mu.Lock()
		defer s.mu.Unlock()
		app := s.apps[name]
		s.callCount[name]++
		if app.failure == "" || app.times == 0 {
			return app.outputs, nil
		}
		if app.times > 0 {
			app.times--
		}
		err := errors.New(app.message)
		switch {
		case app.failure == "retryable":
			return nil, engine.Retryable(err)
		case app.failure == "panic":
			panic(app.message)
		case strings.HasPrefix(app.failure, "exception="):
			return nil, &engine.ApplicationException{Name: strings.TrimPrefix(app.failure, "exception="), Err: err}
		}
		return nil, err
	}
}

// values turns k=v arguments into typed values: quoted text is a string,
// then integers, floats and booleans, and anything else a string.
func (s *spec) values(args []datadriven.CmdArg) map[string]any {
	if len(args) == 0 {
		return nil
	}
	out := make(map[string]any, len(args))
	for _, a := range args {
		v := strings.Join(a.Vals, ",")
		if unq, err := strconv.Unquote(v); err == nil {
			out[a.Key] = unq
		} else if n, err := strconv.ParseInt(v, 10, 64); err == nil {
			out[a.Key] = n
		} else if f, err := strconv.ParseFloat(v, 64); err == nil {
			out[a.Key] = f
		} else if b, err := strconv.ParseBool(v); err == nil {
			out[a.Key] = b
		} else {
			out[a.Key] = v
		}
	}
	return out
}

// instance is the instance a command names with instance=pN, else the
// current one.
func (s *spec) instance(d *datadriven.TestData) int64 {
	for _, a := range d.CmdArgs {
		if a.Key == "instance" && len(a.Vals) == 1 {
			n, err := strconv.Atoi(strings.TrimPrefix(a.Vals[0], "p"))
			require.NoError(s.t, err, "instance=pN")
			require.LessOrEqual(s.t, n, len(s.instances), "instance %s is unknown", a.Vals[0])
			return s.instances[n-1]
		}
	}
	return s.current
}

func (s *spec) alias(id int64) string {
	if i := slices.Index(s.instances, id); i >= 0 {
		return fmt.Sprintf("p%d", i+1)
	}
	s.instances = append(s.instances, id)
	return fmt.Sprintf("p%d", len(s.instances))
}

func (s *spec) instanceName(id int64) string { return s.alias(id) }

func (s *spec) itemName(id int64) string {
	if i := slices.Index(s.items, id); i >= 0 {
		return fmt.Sprintf("w%d", i+1)
	}
	s.items = append(s.items, id)
	return fmt.Sprintf("w%d", len(s.items))
}

// settle waits until the engine has nothing left to do now: no event
// queued or running, none in the outbox available, no timer due, the
// batch runner idle (Engine.WaitQuiet). Work
// waiting for people, later timers or a retry's backoff does not count.
//
// The wait has an end: an engine that never goes quiet is a finding, and
// the script fails saying what it still has to do rather than hang (after
// settleGuard of the real clock: a bound, not a measurement).
func (s *spec) settle() {
	guard := settleGuard
	if s.faulty {
		// Under the fault suite an outage ends when the script waits;
		// a run stuck there is reported sooner.
		guard = settleGuardFaulty
		if s.heal != nil {
			s.heal()
		}
	}
	ctx, cancel := context.WithTimeout(s.look, guard)
	defer cancel()
	if err := s.e.WaitQuiet(ctx); err != nil {
		b, berr := s.e.Backlog(s.look)
		var events []map[string]any
		_ = s.db.WithContext(s.look).Raw("SELECT id, process_instance_id, kind, attempts, available_at, claimed_by, claimed_until, processed_at FROM goxpdl_events WHERE processed_at IS NULL").Scan(&events).Error
		s.t.Fatalf("the engine never went quiet (%v): backlog %+v (%v), engine %+v, now %s, unprocessed events %v",
			err, b, berr, s.e.Stats(), s.clock.Now(), events)
	}
}

func (s *spec) takeRecords() []engine.Record {
	s.mu.Lock()
	defer s.mu.Unlock()
	recs := s.records
	s.records = nil
	return recs
}

// writeRecords prints the records since the last command, instance by
// instance (instances run in parallel; the records of one are ordered).
func (s *spec) writeRecords(out *strings.Builder) {
	recs := s.takeRecords()
	sort.SliceStable(recs, func(i, j int) bool {
		if recs[i].Instance != recs[j].Instance {
			return recs[i].Instance < recs[j].Instance
		}
		return recs[i].Seq < recs[j].Seq
	})
	for _, r := range recs {
		out.WriteString(s.formatRecord(r))
		out.WriteByte('\n')
	}
}

func (s *spec) formatRecord(r engine.Record) string {
	parts := []string{s.alias(r.Instance), r.Type}
	if r.Activity != "" {
		parts = append(parts, r.Activity)
	}
	if r.WorkItem != 0 {
		parts = append(parts, s.itemName(r.WorkItem))
	}
	if r.State != "" && !redundantState(r) {
		parts = append(parts, "state="+r.State)
	}
	if r.From != "" {
		parts = append(parts, "from="+r.From)
	}
	if r.User != "" {
		parts = append(parts, "user="+r.User)
	}
	if len(r.Assignees) > 0 {
		parts = append(parts, "assignees="+strings.Join(r.Assignees, ","))
	}
	if r.Parent != 0 {
		parts = append(parts, "parent="+s.alias(r.Parent))
	}
	if r.Detail != "" {
		parts = append(parts, "detail="+strconv.Quote(s.named(r.Detail)))
	}
	if r.Due != nil {
		parts = append(parts, "due="+relative(*r.Due))
	}
	if r.Error != "" {
		parts = append(parts, "error="+strconv.Quote(s.named(firstLine(r.Error))))
	}
	return strings.Join(parts, " ")
}

// redundantState says whether a record's state is implied by its type.
func redundantState(r engine.Record) bool {
	switch r.Type {
	case engine.RecordActivityCompleted, engine.RecordProcessCompleted, engine.RecordProcessTerminated,
		engine.RecordProcessSuspended, engine.RecordProcessLocked, engine.RecordActivityAbnormal,
		engine.RecordActivityWaiting, engine.RecordProcessResumed, engine.RecordProcessStarted:
		return true
	case engine.RecordWorkItemCreated:
		return r.State == string(workitem.Offered)
	case engine.RecordWorkItemCompleted:
		return r.State == string(workitem.Completed)
	case engine.RecordWorkItemWithdrawn:
		return r.State == string(workitem.Withdrawn)
	}
	return false
}

// relative prints a time as an offset from the spec's epoch.
func relative(t time.Time) string {
	d := t.Sub(specEpoch)
	if d < 0 {
		return "-" + (-d).String()
	}
	return "+" + d.String()
}

// firstLine cuts a panic's stack from an error.
func firstLine(s string) string {
	line, _, _ := strings.Cut(s, "\n")
	return line
}

// state prints where an instance stands: state [instance=pN].
func (s *spec) state(d *datadriven.TestData, out *strings.Builder) error {
	id := s.instance(d)
	pi, err := s.e.Instance(s.look, id)
	if err != nil {
		return err
	}
	fmt.Fprintf(out, "%s %s %s", s.alias(id), pi.Process, pi.State)
	if pi.Parent != 0 {
		fmt.Fprintf(out, " parent=%s", s.alias(pi.Parent))
	}
	out.WriteByte('\n')
	if pi.Diagnosis != "" {
		fmt.Fprintf(out, "  diagnosis: %s\n", s.named(pi.Diagnosis))
	}
	acts, err := activitiesOf(s.look, s.e, id)
	if err != nil {
		return err
	}
	for _, a := range acts {
		fmt.Fprintf(out, "  activity %s %s", a.Activity, a.State)
		if a.ActivitySet != "" {
			fmt.Fprintf(out, " set=%s", a.ActivitySet)
		}
		if a.Diagnosis != "" {
			fmt.Fprintf(out, " diagnosis=%q", s.named(firstLine(a.Diagnosis)))
		}
		out.WriteByte('\n')
	}
	items, err := workItemsOf(s.look, s.e, engine.WorkItemFilter{Instance: id})
	if err != nil {
		return err
	}
	for _, wi := range items {
		fmt.Fprintf(out, "  workitem %s %s %s\n", s.itemName(wi.ID), wi.Activity, wi.State)
	}
	timers, err := timersOf(s.look, s.e, id)
	if err != nil {
		return err
	}
	for _, tm := range timers {
		fmt.Fprintf(out, "  timer %s %s due=%s\n", strings.TrimSpace(string(tm.Kind)+" "+tm.Key), tm.State, relative(tm.DueAt))
	}
	vars, err := s.e.Variables(s.look, id)
	if err != nil {
		return err
	}
	names := make([]string, 0, len(vars))
	for name := range vars {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		fmt.Fprintf(out, "  var %s=%s\n", name, formatValue(vars[name]))
	}
	return nil
}

// calls prints how often each application was called, and the business
// writes of those calls that committed.
func (s *spec) calls(out *strings.Builder) error {
	s.mu.Lock()
	names := make([]string, 0, len(s.apps))
	for name := range s.apps {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		fmt.Fprintf(out, "%s called %d times\n", name, s.callCount[name])
	}
	s.mu.Unlock()
	var rows []struct{ App, Activity string }
	if err := s.db.WithContext(s.look).Raw("SELECT app, activity FROM spec_calls ORDER BY app, activity").Scan(&rows).Error; err != nil {
		return err
	}
	for _, r := range rows {
		fmt.Fprintf(out, "committed: %s by %s\n", r.App, r.Activity)
	}
	return nil
}

// loopItem finds the latest work item of the index-th instance of the
// latest loop of activity in instance id, in any state.
func (s *spec) loopItem(id int64, activity string, index int) (int64, error) {
	acts, err := activitiesOf(s.look, s.e, id)
	if err != nil {
		return 0, err
	}
	var loop, inst int64
	for _, a := range acts {
		if a.Activity == activity && a.Loop == 0 {
			loop = a.ID
		}
	}
	for _, a := range acts {
		if loop != 0 && a.Loop == loop && a.LoopIndex == index {
			inst = a.ID
		}
	}
	if inst == 0 {
		return 0, fmt.Errorf("no instance %d of a loop of activity %s in %s", index, activity, s.instanceName(id))
	}
	items, err := workItemsOf(s.look, s.e, engine.WorkItemFilter{ActivityInstance: inst})
	if err != nil {
		return 0, err
	}
	if len(items) == 0 {
		return 0, fmt.Errorf("instance %d of activity %s has no work item", index, activity)
	}
	return items[len(items)-1].ID, nil
}

// loop prints the results of the latest loop of an activity of the
// current instance (or of instance=pN), as Engine.LoopResults gives them:
// loop ACTIVITY.
func (s *spec) loop(d *datadriven.TestData, out *strings.Builder) error {
	activity := d.CmdArgs[0].Key
	acts, err := activitiesOf(s.look, s.e, s.instance(d))
	if err != nil {
		return err
	}
	var loop int64
	for _, a := range acts {
		if a.Activity == activity && a.Loop == 0 {
			loop = a.ID
		}
	}
	if loop == 0 {
		return fmt.Errorf("no activity %s in %s", activity, s.instanceName(s.instance(d)))
	}
	res, err := s.e.LoopResults(s.look, loop)
	if err != nil {
		return err
	}
	fmt.Fprintf(out, "loop %s %s\n", res.Loop.Activity, res.Loop.State)
	if c := res.Countersign; c != nil {
		fmt.Fprintf(out, "  countersign rule=%s vote=%s decision=%s total=%d completed=%d approved=%d rejected=%d abstained=%d withdrawn=%d\n",
			c.Rule, c.Vote, cmp.Or(string(c.Decision), "none"), c.Total, c.Completed, c.Approved, c.Rejected, c.Abstained, c.Withdrawn)
	}
	for _, in := range res.Instances {
		fmt.Fprintf(out, "  %d %s", in.Index, in.State)
		if in.Ballot != "" {
			fmt.Fprintf(out, " %s", in.Ballot)
		}
		if in.Withdrawn {
			out.WriteString(" withdrawn")
		}
		if len(in.Outputs) > 0 {
			data, err := json.Marshal(in.Outputs)
			if err != nil {
				return err
			}
			fmt.Fprintf(out, " outputs=%s", data)
		}
		out.WriteByte('\n')
	}
	return nil
}

func formatValue(v any) string {
	if s, ok := v.(string); ok {
		return strconv.Quote(s)
	}
	return fmt.Sprint(v)
}

func (s *spec) nextMessage() int {
	s.messages++
	return s.messages
}
