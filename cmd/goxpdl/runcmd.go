package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/goxpdl/goxpdl/engine"
	"github.com/goxpdl/goxpdl/resource"
	"github.com/goxpdl/goxpdl/timer"
	"github.com/goxpdl/goxpdl/wftype"
	"github.com/goxpdl/goxpdl/xpdl"
)

// runUsage is the full usage text of "goxpdl run".
const runUsage = `Usage: goxpdl run [flags] FILE...

Run deploys the XPDL files (with the ExternalPackages they reference) into
an engine as one deployment, starts one process instance and runs it
until it finishes or can make no further progress. A SubFlow in one file
may call a process of another, as "goxpdl validate" accepts for the files
named together; files that share a package Id stay distinct packages.
Applications nothing is registered for run as no-ops; JavaScript tool
agents run their scripts.

Flags (before the files):

	--process ID|NAME   which WorkflowProcess, by Id or else by Name, in the
	                    first file or else in the first other file that has
	                    it (default: the one of the first file that no other
	                    process in its package uses as a subflow)
	--db DSN            default: in-memory SQLite.
	                    sqlite:PATH | mysql://USER:PASS@tcp(HOST:PORT)/DB |
	                    postgres://USER:PASS@HOST:PORT/DB
	--timeout D         give up waiting D after the instance started (default
	                    60s; 0: never), as on
	                    Ctrl-C (SIGINT) or SIGTERM: print where the instance
	                    stands (open activities and their states, work
	                    items, timers) and exit 3
	--set NAME=VALUE    initial value of a data field (repeatable); the value
	                    is parsed by the field's type
	--hook CLASS=JS     run JavaScript for a tool-agent or hook class
	                    (repeatable): the call's parameters, or for a
	                    Bonita hook every variable, are its variables, and
	                    what it assigns is handed back; an empty script
	                    does nothing. For files whose vendor classes
	                    decide a loop, e.g. --hook IncrementHook='counter++'
	--workitems auto|none  auto (default): complete each work item as soon
	                    as it is offered, as the first user (by id) who may
	                    take it, or "auto" when the organisation names
	                    nobody; none: leave them open (the run ends when the
	                    process can make no further progress)
	--org FILE          organisation file (YAML or JSON: users, roles,
	                    units, participant mappings) that decides whom work
	                    items are offered to and who may complete them;
	                    default: anyone may do anything
	--dead-branch lock|end  what a lost branch does (an activity that has
	                    outgoing transitions and fires none of them): lock
	                    (default) puts the process in Locking once nothing
	                    else is alive, with a diagnosis; end ends the branch
	                    silently, as Shark does. A package's DeadBranch
	                    extended attribute wins over this flag
	--trace jsonl       one JSON object per line on standard output for every
	                    event: seq, time, type, process, instance, and where
	                    relevant activity, activityInstance, workitem, state,
	                    error
` + scriptFlagsUsage + `

Without --trace a summary line goes to standard output; with it, to
standard error.

Exit status:

	0  the process instance Completed
	1  the definition is invalid, or the process has no activities (validate
	   warns that it cannot run) and is not started
	2  usage error, or a file or the database cannot be used
	3  the instance ended Terminated or Locking, has an Abnormal activity,
	   or cannot progress (for example open work items with --workitems none),
	   or it did not end within --timeout, or run was interrupted
`

const runShortUsage = `Usage: goxpdl run [--process ID|NAME] [--timeout D] [--db DSN] [--set NAME=VALUE]... [--hook CLASS=JS]... [--workitems auto|none] [--org FILE] [--dead-branch lock|end] [--trace jsonl] [--script-memory SIZE] [--script-depth N] [--script-result SIZE] [--script-result-total SIZE] [--condition-timeout D] [--script-timeout D] FILE...
Run "goxpdl help run" for details.
`

// exitStuck is run's exit code for an instance that did not complete.
const exitStuck = 3

// stallLimit is how long run waits for pending work (a retry after
// backoff) without any progress before it gives up.
const stallLimit = 60 * time.Second

// setFlags collects repeated --set NAME=VALUE flags.
type setFlags map[string]string

func (s setFlags) String() string { return fmt.Sprint(map[string]string(s)) }

func (s setFlags) Set(v string) error { return setPair(s, v, "NAME=VALUE") }

// setPair stores a KEY=VALUE flag value in m; form names the flag's
// syntax in the error.
func setPair(m map[string]string, v, form string) error {
	key, value, ok := strings.Cut(v, "=")
	if !ok || strings.TrimSpace(key) == "" {
		return fmt.Errorf("want %s, got %q", form, v)
	}
	m[strings.TrimSpace(key)] = value
	return nil
}

// hookFlags collects repeated --hook CLASS=SCRIPT flags.
type hookFlags map[string]string

func (h hookFlags) String() string { return fmt.Sprint(map[string]string(h)) }

func (h hookFlags) Set(v string) error { return setPair(h, v, "CLASS=SCRIPT") }

type runOptions struct {
	files                              []string
	process, db, workitems, trace, org string
	deadBranch                         string
	timeout                            time.Duration
	sets                               setFlags
	hooks                              hookFlags
	limits                             scriptFlags
}

func runRun(args []string, _ io.Reader, stdout, stderr io.Writer) int {
	opts := runOptions{sets: setFlags{}, hooks: hookFlags{}}
	fs := flag.NewFlagSet("run", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() { printErr(stderr, "%s", runShortUsage) }
	fs.StringVar(&opts.process, "process", "", "WorkflowProcess Id or Name")
	fs.StringVar(&opts.db, "db", "", "database")
	fs.Var(opts.sets, "set", "NAME=VALUE")
	fs.Var(opts.hooks, "hook", "CLASS=SCRIPT")
	fs.StringVar(&opts.workitems, "workitems", "auto", "auto|none")
	fs.StringVar(&opts.trace, "trace", "", "jsonl")
	fs.StringVar(&opts.org, "org", "", "organisation file")
	fs.StringVar(&opts.deadBranch, "dead-branch", "", "lock|end")
	fs.DurationVar(&opts.timeout, "timeout", defaultRunTimeout, "give up after D")
	opts.limits.register(fs)
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return writeOut(stdout, stderr, runUsage, exitOK)
		}
		return exitUsage
	}
	switch {
	case fs.NArg() == 0:
		printErr(stderr, "goxpdl run: want at least one FILE\n%s", runShortUsage)
		return exitUsage
	case opts.workitems != "auto" && opts.workitems != "none":
		printErr(stderr, "goxpdl run: --workitems %q: want auto or none\n", opts.workitems)
		return exitUsage
	case opts.deadBranch != "" && opts.deadBranch != string(engine.DeadBranchLock) && opts.deadBranch != string(engine.DeadBranchEnd):
		printErr(stderr, "goxpdl run: --dead-branch %q: want lock or end\n", opts.deadBranch)
		return exitUsage
	case opts.trace != "" && opts.trace != "jsonl":
		printErr(stderr, "goxpdl run: --trace %q: want jsonl\n", opts.trace)
		return exitUsage
	case opts.timeout < 0:
		printErr(stderr, "goxpdl run: --timeout %v: want a duration from 0 (never) on\n", opts.timeout)
		return exitUsage
	}
	if err := opts.limits.check(); err != nil {
		printErr(stderr, "goxpdl run: %v\n", err)
		return exitUsage
	}
	opts.files = fs.Args()
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	return runFile(ctx, opts, stdout, stderr)
}

// runFile deploys opts.files as one and runs a process of them until the
// instance ends, cannot progress, opts.timeout passes or ctx is cancelled
// (SIGINT, SIGTERM).
func runFile(ctx context.Context, opts runOptions, stdout, stderr io.Writer) int {
	pkgs, code := loadDeployment("run", opts.files, stderr)
	if code != exitOK {
		return code
	}
	k, proc, err := pickDeployedProcess(pkgs, opts.files, opts.process)
	if err != nil {
		printErr(stderr, "goxpdl run: %v\n", err)
		return exitUsage
	}

	var directory resource.Directory = resource.Anyone{}
	if opts.org != "" {
		org, err := resource.LoadOrgFile(opts.org)
		if err != nil {
			printErr(stderr, "goxpdl run: %v\n", err)
			return exitUsage
		}
		directory = org
	}
	db, closeDB, err := openDB(opts.db)
	if err != nil {
		printErr(stderr, "goxpdl run: %v\n", err)
		return exitUsage
	}
	defer closeDB()
	cfg := engine.Config{
		DB:                      db,
		Directory:               directory,
		NoOpUnboundApplications: true,
		DeadBranch:              engine.DeadBranchMode(opts.deadBranch),
		Logger:                  slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: slog.LevelWarn})),
	}
	opts.limits.apply(&cfg)
	e, err := engine.New(cfg)
	if err != nil {
		printErr(stderr, "goxpdl run: %v\n", err)
		return exitUsage
	}
	for class, src := range opts.hooks {
		e.RegisterScriptAgent(class, src)
	}
	tw := &traceWriter{w: stdout}
	if opts.trace == "jsonl" {
		defer e.Subscribe(tw.write)()
	}
	// The engine outlives ctx: when it ends, run stops the engine
	// gracefully and reads where the instance stands.
	if err := e.Start(context.WithoutCancel(ctx)); err != nil {
		printErr(stderr, "goxpdl run: %v\n", err)
		return exitUsage
	}
	defer func() {
		stopCtx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		if err := e.Stop(stopCtx); err != nil {
			printErr(stderr, "goxpdl run: stop: %v\n", err)
		}
	}()
	deps, err := e.DeployFiles(ctx, opts.files...)
	if err != nil {
		printErr(stderr, "goxpdl run: deploy: %v\n", err)
		if errors.Is(err, xpdl.ErrInvalid) {
			return exitProblems
		}
		return exitUsage
	}
	id, err := e.StartProcess(ctx, engine.StartOptions{DefinitionID: deps[k].ID, Process: proc.ID, TextVariables: opts.sets, Actor: "goxpdl run"})
	if msg, ok := emptyProcessProblem(err, opts.files[k], proc); ok {
		printErr(stderr, "%s\n", msg)
		return exitProblems
	} else if err != nil {
		printErr(stderr, "goxpdl run: start: %v\n", err)
		return exitUsage
	}
	// --timeout bounds the wait for the instance, not the set-up before it
	// (a slow disk or a loaded machine must not eat a short timeout).
	ctx, cancel := withRunTimeout(ctx, opts.timeout)
	defer cancel()
	outcome, err := drive(ctx, e, id, opts.workitems == "auto")
	var summary fmt.Stringer = outcome
	root := outcome.root
	if err != nil && ctx.Err() != nil {
		var s standing
		s, err = stopAndRead(e, id, context.Cause(ctx))
		summary, root = s, s.root
	}
	if err != nil {
		printErr(stderr, "goxpdl run: %v\n", err)
		return exitUsage
	}
	if err := tw.failed(); err != nil {
		printErr(stderr, "goxpdl run: write trace: %v\n", err)
		return exitUsage
	}
	if opts.trace == "jsonl" {
		printErr(stderr, "%s\n", summary)
	} else if code := writeOut(stdout, stderr, summary.String()+"\n", exitOK); code != exitOK {
		return code
	}
	if root.State == wftype.ProcessCompleted {
		return exitOK
	}
	return exitStuck
}

// traceWriter prints records as JSON Lines, remembering the first write
// error.
type traceWriter struct {
	mu  sync.Mutex
	w   io.Writer
	err error
}

func (t *traceWriter) write(r engine.Record) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.err != nil {
		return
	}
	data, err := json.Marshal(r)
	if err == nil {
		_, err = t.w.Write(append(data, '\n'))
	}
	t.err = err
}

// failed returns the first write error.
func (t *traceWriter) failed() error {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.err
}

// outcome is where a run ended.
type outcome struct {
	root      engine.ProcessInstance
	openItems []engine.WorkItem
	abnormal  []engine.ActivityInstance
	// waiting are the Waiting activities that wait for no subflow
	// instance of the tree: for a message, a signal or a timer.
	waiting []engine.ActivityInstance
	stalled bool
}

func (o outcome) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "instance %d of process %s: %s", o.root.ID, o.root.Process, o.root.State)
	if o.root.Diagnosis != "" {
		fmt.Fprintf(&b, ": %s", o.root.Diagnosis)
	}
	for _, a := range o.abnormal {
		fmt.Fprintf(&b, "; activity %s (instance %d of process instance %d) is Abnormal: %s", a.Activity, a.ID, a.Instance, a.Diagnosis)
	}
	for _, a := range o.waiting {
		fmt.Fprintf(&b, "; activity %s (instance %d of process instance %d) is Waiting", a.Activity, a.ID, a.Instance)
	}
	if len(o.openItems) > 0 {
		ids := make([]string, len(o.openItems))
		for i, wi := range o.openItems {
			ids[i] = fmt.Sprintf("%d (%s)", wi.ID, wi.Performer)
		}
		fmt.Fprintf(&b, "; open work items: %s", strings.Join(ids, ", "))
	}
	if o.stalled {
		b.WriteString("; no progress for " + stallLimit.String())
	}
	return b.String()
}

// drive runs the instance (and its subflows) until it finishes or nothing
// more can happen, completing work items as they come when auto is set.
func drive(ctx context.Context, e *engine.Engine, id int64, auto bool) (outcome, error) {
	clock := timer.Real()
	lastProgress := clock.Now()
	refused := map[int64]bool{} // items nobody the organisation names may take
	for {
		if err := e.WaitIdle(ctx); err != nil {
			return outcome{}, err
		}
		tree, err := instanceTree(ctx, e, id)
		if err != nil {
			return outcome{}, err
		}
		o := outcome{root: tree[0]}
		if o.root.State.IsFinal() {
			return o, nil
		}
		pending := false
		for _, pi := range tree {
			if pi.State.IsFinal() {
				continue
			}
			if pi.State == wftype.ProcessInitiated {
				pending = true
			}
			acts, err := allActivities(ctx, e, pi.ID)
			if err != nil {
				return outcome{}, err
			}
			for _, a := range acts {
				switch a.State {
				case wftype.ActivityAbnormal:
					o.abnormal = append(o.abnormal, a)
				case wftype.ActivityWaiting:
					if !callsSubflow(tree, a.ID) && !runsBlock(acts, a.ID) {
						o.waiting = append(o.waiting, a)
					}
				case wftype.ActivityInitiated, wftype.ActivityActive:
					pending = pending || pi.State == wftype.ProcessRunning
				}
			}
			items, err := openWorkItems(ctx, e, pi.ID)
			if err != nil {
				return outcome{}, err
			}
			o.openItems = append(o.openItems, items...)
		}
		completed := false
		for _, wi := range o.openItems {
			if !auto || refused[wi.ID] {
				continue
			}
			done, err := completeAsFirstEligible(ctx, e, wi)
			if err != nil {
				return outcome{}, err
			}
			completed = completed || done
			refused[wi.ID] = !done
		}
		switch {
		case completed:
			lastProgress = clock.Now()
			continue
		case pending && clock.Now().Sub(lastProgress) < stallLimit:
			// An event waits for its retry; look again shortly.
			t := clock.NewTimer(100 * time.Millisecond)
			select {
			case <-t.C():
			case <-ctx.Done():
				t.Stop()
				return outcome{}, ctx.Err()
			}
			continue
		}
		if !pending {
			// A timer may still move the instance on: wait for it.
			due, ok, err := nextProgressTimer(ctx, e, tree)
			if err != nil {
				return outcome{}, err
			}
			if ok {
				t := clock.NewTimer(max(due.Sub(clock.Now()), 0) + 10*time.Millisecond)
				select {
				case <-t.C():
				case <-ctx.Done():
					t.Stop()
					return outcome{}, ctx.Err()
				}
				lastProgress = clock.Now()
				continue
			}
		}
		// The reads above are not one snapshot: a timer may have fired
		// and moved an instance on between them. Only a tree that did
		// not change while it was read is stuck.
		again, err := instanceTree(ctx, e, id)
		if err != nil {
			return outcome{}, err
		}
		if !sameVersions(tree, again) {
			continue
		}
		o.stalled = pending
		return o, nil
	}
}

// callsSubflow reports whether activity instance id waits for a subflow
// instance of tree.
func callsSubflow(tree []engine.ProcessInstance, id int64) bool {
	for _, pi := range tree {
		if pi.ParentActivity == id {
			return true
		}
	}
	return false
}

// runsBlock reports whether activity instance id runs an activity set
// whose activities are among acts.
func runsBlock(acts []engine.ActivityInstance, id int64) bool {
	for _, a := range acts {
		if a.Block == id {
			return true
		}
	}
	return false
}

// sameVersions reports whether two reads of an instance tree saw the same
// instances at the same versions.
func sameVersions(a, b []engine.ProcessInstance) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i].ID != b[i].ID || a[i].Revision != b[i].Revision {
			return false
		}
	}
	return true
}

// nextProgressTimer is when the earliest timer that can move one of the
// unfinished instances of tree on is due.
func nextProgressTimer(ctx context.Context, e *engine.Engine, tree []engine.ProcessInstance) (time.Time, bool, error) {
	var next time.Time
	found := false
	for _, pi := range tree {
		if pi.State.IsFinal() {
			continue
		}
		t, ok, err := e.NextProgressTimer(ctx, pi.ID)
		if err != nil {
			return time.Time{}, false, err
		}
		if ok && (!found || t.DueAt.Before(next)) {
			next, found = t.DueAt, true
		}
	}
	return next, found, nil
}

// completeAsFirstEligible completes a work item as the first user (by id)
// the organisation says may take it, or as "auto" when it names nobody.
// It reports false, leaving the item open, when that user may not (the
// organisation lacks the item's role). An item that moved on meanwhile
// counts as done.
func completeAsFirstEligible(ctx context.Context, e *engine.Engine, wi engine.WorkItem) (bool, error) {
	users, err := e.EligibleUsers(ctx, wi.ID)
	if err != nil {
		if errors.Is(err, engine.ErrIllegalState) {
			return true, nil
		}
		return false, fmt.Errorf("work item %d: %w", wi.ID, err)
	}
	user := "auto"
	if len(users) > 0 {
		user = users[0]
	}
	_, err = e.CompleteWorkItem(ctx, wi.ID, engine.Completion{User: user})
	switch {
	case err == nil || errors.Is(err, engine.ErrIllegalState):
		return true, nil
	case errors.Is(err, engine.ErrNotAllowed):
		return false, nil
	}
	return false, fmt.Errorf("complete work item %d as %s: %w", wi.ID, user, err)
}

// instanceTree returns the instance and, recursively, its subflow
// instances.
func instanceTree(ctx context.Context, e *engine.Engine, id int64) ([]engine.ProcessInstance, error) {
	root, err := e.Instance(ctx, id)
	if err != nil {
		return nil, err
	}
	tree := []engine.ProcessInstance{root}
	for i := 0; i < len(tree); i++ {
		f := engine.InstanceFilter{Parent: tree[i].ID, Limit: 1000}
		for {
			kids, err := e.Instances(ctx, f)
			if err != nil {
				return nil, err
			}
			tree = append(tree, kids.Instances...)
			if kids.Next == 0 {
				break
			}
			f.After = kids.Next
		}
	}
	return tree, nil
}

// pickDeployedProcess finds the process a --process flag names among the
// packages of files (deployed together): in the first file that has a
// process with that Id or Name, as pickProcess finds it there; without the
// flag, the main process of the first file. It returns the index of the
// file too.
func pickDeployedProcess(pkgs []*xpdl.Package, files []string, flag string) (int, *xpdl.Process, error) {
	if flag != "" {
		for i, pkg := range pkgs {
			for _, p := range pkg.Processes {
				if p.ID == flag || p.Name == flag {
					proc, err := pickProcess(pkg, files[i], flag)
					return i, proc, err
				}
			}
		}
	}
	proc, err := pickProcess(pkgs[0], files[0], flag)
	return 0, proc, err
}
