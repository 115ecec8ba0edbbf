package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"math"
	"os"
	"os/signal"
	"runtime/pprof"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"gorm.io/gorm"

	"github.com/goxpdl/goxpdl/engine"
	"github.com/goxpdl/goxpdl/timer"
	"github.com/goxpdl/goxpdl/xpdl"
)

// benchUsage is the full usage text of "goxpdl bench".
const benchUsage = `Usage: goxpdl bench [--workload NAME | --file FILE... [--process ID|NAME]] [--db DSN]
                    [--instances N] [--concurrency C] [--nodes M] [--baseline] [--json]

Bench measures the engine's throughput on a database: it deploys a
workload, starts N process instances from C client goroutines, waits
until all of them have completed and reports the rates, the latencies
and how many database transactions each instance took. Applications
nothing is registered for run as no-ops, so the figures are the
engine's own cost.

Flags:

	--workload NAME     a built-in workload (default seq10):
	                      seq10     10 automatic activities (Tool calls of
	                                an unbound application) in sequence;
	                                each runs in its own transaction
	                      seq10set  the same 10 activities in one
	                                ActivitySet, run by one BlockActivity:
	                                all 10 commit in one transaction
	--file FILE         run a process of this XPDL file instead; its
	                    activities must be automatic (no work items).
	                    Repeatable: the files are deployed as one, as by
	                    "goxpdl run FILE...", and the process is the first
	                    file's
	--process ID|NAME   with --file: which WorkflowProcess, in the first
	                    file or else in the first other file that has it
	                    (default: the one of the first file that no other
	                    process in its package uses as a subflow)
	--db DSN            default: in-memory SQLite.
	                    sqlite:PATH | mysql://USER:PASS@tcp(HOST:PORT)/DB |
	                    postgres://USER:PASS@HOST:PORT/DB
	                    The engine's tables are created if missing; the
	                    instances stay in the database afterwards.
	--instances N       process instances to run (default 1000)
	--concurrency C     client goroutines calling StartProcess, and the
	                    size of each of the engine's worker pools
	                    (default 8)
	--nodes M           run the engine as M nodes, each a process of its
	                    own (this program, run again with a hidden
	                    subcommand), all on the --db database: MySQL/
	                    MariaDB or PostgreSQL only, SQLite is refused.
	                    The C clients are spread over the nodes (and the
	                    instances with them), because a node runs the
	                    events its own transactions publish: clients of
	                    one node would leave the others idle. Each node's
	                    worker pools have size C. The figures are for the
	                    whole; per_node adds each node's. bench stops
	                    every node it started, on success, failure and
	                    Ctrl-C; a node whose bench died stops by itself.
	                    Without --nodes the engine runs in this process
	--baseline          first measure the database's raw single-row
	                    commits/s: C goroutines, each committing one-row
	                    INSERT transactions into a scratch table
	                    (goxpdl_bench_baseline, dropped afterwards) for
	                    about 2 seconds, on the same connection settings
	--json              print one JSON object instead of text lines

Figures (JSON field names; the text lines use the same names):

	workload, process   the workload ("file" with --file) and process id
	file                with --file: the file (the files, separated by spaces)
	db                  the database, without its password
	instances, concurrency, completed, failed
	nodes               with --nodes: M
	start_errors        StartProcess calls that failed (counted in failed)
	seconds             from the first StartProcess call to the last
	                    instance's completion
	instances_per_s     completed instances per second
	activities          activity instances completed: 10 per instance for
	                    both built-in workloads (a BlockActivity itself is
	                    not counted, the activities of its set are)
	activities_per_s    activities per second
	commits_per_instance  engine transactions per instance: the
	                    StartProcess calls plus the events the engine
	                    processed (each event is processed in one engine
	                    transaction, on its own or chained into the
	                    transaction of the step that sent it), divided by
	                    the instances. A retried
	                    event counts once; events_failed and conflicts show
	                    the retries.
	db_transactions_per_instance  database transactions that carried
	                    the engine's transactions, per instance: runs that
	                    arrive together share one (group commit), so this
	                    is below commits_per_instance under load
	events_processed, events_failed, conflicts  the engine's counters
	events_chained      of events_processed, those processed in the
	                    transaction of the step that sent them
	p50_ms, p99_ms      latency of one instance, from its StartProcess
	                    call to its completion. The clients start
	                    instances as fast as the engine takes them, so
	                    this includes the wait behind the other instances
	peak_rss_bytes      the program's peak resident memory (VmHWM of
	                    /proc/self/status; 0 where there is none); with
	                    --nodes the largest node's
	baseline_commits_per_s  with --baseline: the raw single-row commits/s
	activities_per_baseline_commit  activities_per_s / baseline_commits_per_s
	instances_per_baseline_commit   instances_per_s / baseline_commits_per_s
	per_node            with --nodes, one object per node (text: a line
	                    node_K): node, clients, started (instances its
	                    clients started), activities (that it ran),
	                    events_processed, events_failed, conflicts,
	                    db_transactions, peak_rss_bytes

Diagnostics (not part of the stable interface):

	--cpuprofile FILE   write a CPU profile of the workload (not of the
	                    baseline) for "go tool pprof"
	--memprofile FILE   write an allocation profile, taken when the
	                    workload ends, for "go tool pprof -sample_index
	                    alloc_space"; it counts from the program's start,
	                    so leave out --baseline
	--chain-steps N     the engine's Config.ChainSteps (default: the
	                    engine's, 16; -1: every step commits on its own)

Exit status:

	0  every instance completed
	1  the definition (--file) is invalid
	2  usage error, or a file or the database cannot be used
	3  some instance did not complete: its StartProcess call failed, or it
	   ended Terminated or Locking, has an Abnormal activity, offered a
	   work item, or stopped making progress; the figures are printed all
	   the same
`

const benchShortUsage = `Usage: goxpdl bench [--workload NAME | --file FILE... [--process ID|NAME]] [--db DSN] [--instances N] [--concurrency C] [--nodes M] [--baseline] [--json]
Run "goxpdl help bench" for details.
`

// Defaults of bench's flags. 1000 instances take a few seconds on SQLite
// yet are enough for a stable p99; 8 clients keep a small machine's
// database busy without measuring mostly lock waits.
const (
	benchDefaultWorkload    = "seq10"
	benchDefaultInstances   = 1000
	benchDefaultConcurrency = 8
)

// baselineDuration is how long --baseline commits rows.
const baselineDuration = 2 * time.Second

// baselineTable is the scratch table of --baseline.
const baselineTable = "goxpdl_bench_baseline"

// benchOptions are bench's flags.
type benchOptions struct {
	workload, process, db  string
	files                  fileFlags
	instances, concurrency int
	nodes                  int
	baseline, json         bool
	cpuProfile             string
	memProfile             string
	chainSteps             int
}

func runBench(args []string, _ io.Reader, stdout, stderr io.Writer) int {
	var opts benchOptions
	fs := flag.NewFlagSet("bench", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() { printErr(stderr, "%s", benchShortUsage) }
	fs.StringVar(&opts.workload, "workload", "", "seq10|seq10set")
	fs.Var(&opts.files, "file", "XPDL file (repeatable)")
	fs.StringVar(&opts.process, "process", "", "WorkflowProcess Id or Name")
	fs.StringVar(&opts.db, "db", "", "database")
	fs.IntVar(&opts.instances, "instances", benchDefaultInstances, "process instances")
	fs.IntVar(&opts.concurrency, "concurrency", benchDefaultConcurrency, "client goroutines and worker pool size")
	fs.IntVar(&opts.nodes, "nodes", 0, "engine nodes, each a process of its own (MySQL/MariaDB, PostgreSQL)")
	fs.BoolVar(&opts.baseline, "baseline", false, "measure raw commits/s first")
	fs.BoolVar(&opts.json, "json", false, "print JSON")
	fs.StringVar(&opts.cpuProfile, "cpuprofile", "", "write a CPU profile")
	fs.StringVar(&opts.memProfile, "memprofile", "", "write an allocation profile")
	fs.IntVar(&opts.chainSteps, "chain-steps", 0, "engine.Config.ChainSteps")
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return writeOut(stdout, stderr, benchUsage, exitOK)
		}
		return exitUsage
	}
	if msg := opts.check(fs.NArg()); msg != "" {
		printErr(stderr, "goxpdl bench: %s\n%s", msg, benchShortUsage)
		return exitUsage
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	if opts.nodes > 0 {
		return benchNodes(ctx, opts, stdout, stderr)
	}
	return bench(ctx, opts, stdout, stderr)
}

// check completes the defaults and returns what is wrong with the flags,
// or "".
func (o *benchOptions) check(nargs int) string {
	switch {
	case nargs != 0:
		return "unexpected arguments (an XPDL file goes after --file)"
	case o.workload != "" && len(o.files) > 0:
		return "--workload and --file exclude each other"
	case o.process != "" && len(o.files) == 0:
		return "--process needs --file"
	case o.instances < 1:
		return fmt.Sprintf("--instances %d: want at least 1", o.instances)
	case o.concurrency < 1:
		return fmt.Sprintf("--concurrency %d: want at least 1", o.concurrency)
	}
	if msg := o.nodesRefusal(); msg != "" {
		return msg
	}
	if len(o.files) == 0 {
		if o.workload == "" {
			o.workload = benchDefaultWorkload
		}
		if _, ok := workloads[o.workload]; !ok {
			return fmt.Sprintf("--workload %q: want %s", o.workload, strings.Join(workloadNames(), " or "))
		}
	}
	return ""
}

// workloads are the built-in workloads by name: the body of their
// WorkflowProcess (ActivitySets and Activities). Their XPDL is generated,
// so that the benchmark needs no files.
var workloads = map[string]func() string{
	"seq10":    func() string { return seqActivities(10) },
	"seq10set": func() string { return seqSet(10) },
}

func workloadNames() []string {
	names := make([]string, 0, len(workloads))
	for n := range workloads {
		names = append(names, n)
	}
	slices.Sort(names)
	return names
}

// benchApplication is the application every built-in activity calls.
// Nothing is registered for it, so the engine runs it as a no-op.
const benchApplication = "noop"

// seqActivities returns n Tool activities A01..An in sequence, with their
// transitions.
func seqActivities(n int) string {
	var acts, trans strings.Builder
	acts.WriteString("<Activities>")
	trans.WriteString("<Transitions>")
	for i := 1; i <= n; i++ {
		fmt.Fprintf(&acts, `<Activity Id="A%02d"><Implementation><Tool Id="%s" Type="APPLICATION"/></Implementation></Activity>`, i, benchApplication)
		if i > 1 {
			fmt.Fprintf(&trans, `<Transition Id="T%02d" From="A%02d" To="A%02d"/>`, i, i-1, i)
		}
	}
	acts.WriteString("</Activities>")
	trans.WriteString("</Transitions>")
	return acts.String() + trans.String()
}

// seqSet returns an ActivitySet "S" holding seqActivities(n) and a top
// level of one BlockActivity "Block" that runs it.
func seqSet(n int) string {
	return `<ActivitySets><ActivitySet Id="S">` + seqActivities(n) + `</ActivitySet></ActivitySets>` +
		`<Activities><Activity Id="Block"><BlockActivity BlockId="S"/></Activity></Activities>`
}

// workloadXPDL returns the XPDL 1.0 package of a built-in workload: one
// WorkflowProcess whose id is the workload's name.
func workloadXPDL(name string) []byte {
	return []byte(`<?xml version="1.0" encoding="UTF-8"?>
<Package xmlns="http://www.wfmc.org/2002/XPDL1.0" Id="goxpdl-bench" Name="goxpdl bench">
  <PackageHeader><XPDLVersion>1.0</XPDLVersion><Vendor>goxpdl</Vendor><Created>2026-01-01</Created></PackageHeader>
  <Applications><Application Id="` + benchApplication + `"/></Applications>
  <WorkflowProcesses><WorkflowProcess Id="` + name + `">` + workloads[name]() + `</WorkflowProcess></WorkflowProcesses>
</Package>
`)
}

// benchReport is what bench prints; the JSON field names are part of the
// command-line contract (README.md, "goxpdl bench").
type benchReport struct {
	Workload                    string   `json:"workload"`
	Process                     string   `json:"process"`
	File                        string   `json:"file,omitempty"`
	DB                          string   `json:"db"`
	Instances                   int      `json:"instances"`
	Concurrency                 int      `json:"concurrency"`
	Nodes                       int      `json:"nodes,omitempty"`
	Completed                   int      `json:"completed"`
	Failed                      int      `json:"failed"`
	StartErrors                 int      `json:"start_errors"`
	Seconds                     float64  `json:"seconds"`
	InstancesPerS               float64  `json:"instances_per_s"`
	Activities                  int64    `json:"activities"`
	ActivitiesPerS              float64  `json:"activities_per_s"`
	CommitsPerInstance          float64  `json:"commits_per_instance"`
	DBTransactionsPerInstance   float64  `json:"db_transactions_per_instance"`
	EventsProcessed             uint64   `json:"events_processed"`
	EventsChained               uint64   `json:"events_chained"`
	EventsFailed                uint64   `json:"events_failed"`
	Conflicts                   uint64   `json:"conflicts"`
	P50Ms                       float64  `json:"p50_ms"`
	P99Ms                       float64  `json:"p99_ms"`
	PeakRSSBytes                int64    `json:"peak_rss_bytes"`
	BaselineCommitsPerS         *float64 `json:"baseline_commits_per_s,omitempty"`
	ActivitiesPerBaselineCommit *float64 `json:"activities_per_baseline_commit,omitempty"`
	InstancesPerBaselineCommit  *float64 `json:"instances_per_baseline_commit,omitempty"`
	// PerNode is each node's part, with --nodes.
	PerNode []benchNodeReport `json:"per_node,omitempty"`
}

// text is the report as aligned "name value" lines.
func (r benchReport) text() string {
	var b strings.Builder
	line := func(name string, v any) {
		if f, ok := v.(float64); ok {
			v = strconv.FormatFloat(f, 'f', -1, 64)
		}
		fmt.Fprintf(&b, "%-31s %v\n", name, v)
	}
	line("workload", r.Workload)
	line("process", r.Process)
	if r.File != "" {
		line("file", r.File)
	}
	line("db", r.DB)
	line("instances", r.Instances)
	line("concurrency", r.Concurrency)
	if r.Nodes > 0 {
		line("nodes", r.Nodes)
	}
	line("completed", r.Completed)
	line("failed", r.Failed)
	line("start_errors", r.StartErrors)
	line("seconds", r.Seconds)
	line("instances_per_s", r.InstancesPerS)
	line("activities", r.Activities)
	line("activities_per_s", r.ActivitiesPerS)
	line("commits_per_instance", r.CommitsPerInstance)
	line("db_transactions_per_instance", r.DBTransactionsPerInstance)
	line("events_processed", r.EventsProcessed)
	line("events_chained", r.EventsChained)
	line("events_failed", r.EventsFailed)
	line("conflicts", r.Conflicts)
	line("p50_ms", r.P50Ms)
	line("p99_ms", r.P99Ms)
	line("peak_rss_bytes", r.PeakRSSBytes)
	if r.BaselineCommitsPerS != nil {
		line("baseline_commits_per_s", *r.BaselineCommitsPerS)
		line("activities_per_baseline_commit", *r.ActivitiesPerBaselineCommit)
		line("instances_per_baseline_commit", *r.InstancesPerBaselineCommit)
	}
	for _, n := range r.PerNode {
		line(fmt.Sprintf("node_%d", n.Node), fmt.Sprintf("clients %d started %d activities %d events_processed %d events_failed %d conflicts %d db_transactions %d peak_rss_bytes %d",
			n.Clients, n.Started, n.Activities, n.EventsProcessed, n.EventsFailed, n.Conflicts, n.DBTransactions, n.PeakRSSBytes))
	}
	return b.String()
}

// benchTarget is the deployable workload.
type benchTarget struct {
	src     []byte // built-in XPDL; nil with --file
	process string
	index   int             // with --file: the file whose process runs
	blocks  map[string]bool // ids of BlockActivities, not counted as activities
}

// loadTarget prepares the workload of opts. It returns an exit code other
// than exitOK when it cannot.
func loadTarget(opts benchOptions, stderr io.Writer) (benchTarget, int) {
	if len(opts.files) == 0 {
		return benchTarget{src: workloadXPDL(opts.workload), process: opts.workload, blocks: map[string]bool{"Block": true}}, exitOK
	}
	pkgs, code := loadDeployment("bench", opts.files, stderr)
	if code != exitOK {
		return benchTarget{}, code
	}
	k, proc, err := pickDeployedProcess(pkgs, opts.files, opts.process)
	if err != nil {
		printErr(stderr, "goxpdl bench: %v\n", err)
		return benchTarget{}, exitUsage
	}
	flows := []*xpdl.Flow{&proc.Flow}
	for _, set := range proc.ActivitySets {
		flows = append(flows, &set.Flow)
	}
	for _, f := range flows {
		for _, a := range f.Activities {
			if engine.IsManual(a) {
				printErr(stderr, "goxpdl bench: %s: activity %s of process %s is manual (it waits for a person); bench runs automatic activities only\n",
					opts.files[k], a.ID, proc.ID)
				return benchTarget{}, exitUsage
			}
		}
	}
	t := benchTarget{process: proc.ID, index: k, blocks: map[string]bool{}}
	for _, p := range allProcesses(pkgs) {
		for _, a := range p.Activities {
			if a.Kind == xpdl.ActivityBlock {
				t.blocks[a.ID] = true
			}
		}
		for _, set := range p.ActivitySets {
			for _, a := range set.Activities {
				if a.Kind == xpdl.ActivityBlock {
					t.blocks[a.ID] = true
				}
			}
		}
	}
	return t, exitOK
}

// bench runs the benchmark opts describes and prints its report.
func bench(ctx context.Context, opts benchOptions, stdout, stderr io.Writer) int {
	target, code := loadTarget(opts, stderr)
	if code != exitOK {
		return code
	}
	db, closeDB, err := openDB(opts.db)
	if err != nil {
		printErr(stderr, "goxpdl bench: %v\n", err)
		return exitUsage
	}
	defer closeDB()
	clock := timer.Real()

	report := benchReport{
		Workload: opts.workload, Process: target.process, DB: describeDB(opts.db),
		Instances: opts.instances, Concurrency: opts.concurrency,
	}
	if len(opts.files) > 0 {
		report.Workload, report.File = "file", strings.Join(opts.files, " ")
	}
	if opts.baseline {
		perS, err := measureBaseline(ctx, db, clock, opts.concurrency, baselineDuration)
		if err != nil {
			printErr(stderr, "goxpdl bench: baseline: %v\n", err)
			return exitUsage
		}
		report.BaselineCommitsPerS = &perS
	}

	e, err := engine.New(engine.Config{
		DB:                      db,
		NoOpUnboundApplications: true,
		ChainSteps:              opts.chainSteps,
		NormalWorkers:           opts.concurrency,
		CriticalWorkers:         opts.concurrency,
		Logger:                  slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: slog.LevelWarn})),
	})
	if err != nil {
		printErr(stderr, "goxpdl bench: %v\n", err)
		return exitUsage
	}
	col := newCollector(clock, target.blocks)
	defer e.Subscribe(col.record)()
	if err := e.Start(ctx); err != nil {
		printErr(stderr, "goxpdl bench: %v\n", err)
		return exitUsage
	}
	defer func() {
		stopCtx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		if err := e.Stop(stopCtx); err != nil {
			printErr(stderr, "goxpdl bench: stop: %v\n", err)
		}
	}()
	dep, code := deployBenchTarget(ctx, e, target, opts, stderr)
	if code != exitOK {
		return code
	}
	before := e.Stats()

	if opts.cpuProfile != "" {
		f, err := os.Create(opts.cpuProfile)
		if err != nil {
			printErr(stderr, "goxpdl bench: %v\n", err)
			return exitUsage
		}
		defer func() {
			if err := f.Close(); err != nil {
				printErr(stderr, "goxpdl bench: cpu profile: %v\n", err)
			}
		}()
		if err := pprof.StartCPUProfile(f); err != nil {
			printErr(stderr, "goxpdl bench: cpu profile: %v\n", err)
			return exitUsage
		}
		defer pprof.StopCPUProfile()
	}

	start := clock.Now()
	startOpts := engine.StartOptions{DefinitionID: dep.ID, Process: target.process, Actor: "goxpdl bench"}
	startErrors, err := startInstances(ctx, e, clock, col.started, startOpts, opts.instances, opts.concurrency)
	switch {
	case ctx.Err() != nil:
		printErr(stderr, "goxpdl bench: %v\n", ctx.Err())
		return exitUsage
	case startErrors == opts.instances:
		printErr(stderr, "goxpdl bench: start: %v\n", err)
		return exitUsage
	case startErrors > 0:
		printErr(stderr, "goxpdl bench: %d of %d StartProcess calls failed; the first: %v\n", startErrors, opts.instances, err)
	}
	res, err := col.wait(ctx, opts.instances-startErrors)
	if err != nil {
		printErr(stderr, "goxpdl bench: %v\n", err)
		return exitUsage
	}
	pprof.StopCPUProfile() // the drain below is not part of the workload
	if opts.memProfile != "" {
		if err := writeAllocProfile(opts.memProfile); err != nil {
			printErr(stderr, "goxpdl bench: memory profile: %v\n", err)
			return exitUsage
		}
	}
	if res.stalled == 0 {
		// Count the events that finished instances leave behind (none
		// expected); a stalled run would wait for its retries here.
		if err := e.WaitIdle(ctx); err != nil {
			printErr(stderr, "goxpdl bench: %v\n", err)
			return exitUsage
		}
	}
	after := e.Stats()

	report.StartErrors = startErrors
	report.fill(res, res.end.Sub(start), after, before)
	return printReport(report, opts.json, res, stdout, stderr)
}

// printReport prints the failures of res on standard error and report on
// standard output, as JSON or text; it returns the exit code.
func printReport(report benchReport, asJSON bool, res benchResult, stdout, stderr io.Writer) int {
	if msg := res.failures(); msg != "" {
		printErr(stderr, "%s", msg)
	}
	var out string
	if asJSON {
		data, err := json.MarshalIndent(report, "", "  ")
		if err != nil {
			printErr(stderr, "goxpdl bench: %v\n", err)
			return exitUsage
		}
		out = string(data) + "\n"
	} else {
		out = report.text()
	}
	code := exitOK
	if report.Failed > 0 {
		code = exitStuck
	}
	return writeOut(stdout, stderr, out, code)
}

// fill computes the figures from what the collector saw, the duration of
// the run and the engine's counters after and before it.
func (r *benchReport) fill(res benchResult, elapsed time.Duration, after, before engine.Stats) {
	secs := elapsed.Seconds()
	r.Completed = len(res.latencies)
	r.Failed = r.Instances - r.Completed
	r.Seconds = round(secs, 3)
	r.Activities = res.activities
	r.EventsChained = after.Chained - before.Chained
	r.EventsProcessed = after.Scheduler.EventsProcessed - before.Scheduler.EventsProcessed + r.EventsChained
	r.EventsFailed = after.Scheduler.EventsFailed - before.Scheduler.EventsFailed
	r.Conflicts = after.Conflicts - before.Conflicts
	r.CommitsPerInstance = round(float64(uint64(r.Instances)+r.EventsProcessed)/float64(r.Instances), 2)
	r.DBTransactionsPerInstance = round(float64(after.Commits.Transactions-before.Commits.Transactions)/float64(r.Instances), 2)
	if secs > 0 {
		r.InstancesPerS = round(float64(r.Completed)/secs, 1)
		r.ActivitiesPerS = round(float64(r.Activities)/secs, 1)
	}
	r.P50Ms = round(percentile(res.latencies, 0.50).Seconds()*1000, 2)
	r.P99Ms = round(percentile(res.latencies, 0.99).Seconds()*1000, 2)
	r.PeakRSSBytes = peakRSS()
	if r.BaselineCommitsPerS != nil {
		base := *r.BaselineCommitsPerS
		acts, insts := 0.0, 0.0
		if base > 0 {
			acts, insts = round(r.ActivitiesPerS/base, 3), round(r.InstancesPerS/base, 3)
		}
		r.ActivitiesPerBaselineCommit, r.InstancesPerBaselineCommit = &acts, &insts
	}
}

// startInstances calls StartProcess n times from c goroutines, telling
// onStart which instance each call made and when the call began. A call
// that fails (a database that refuses a write under load) is counted and
// the clients go on; it returns the number of failed calls and the first
// error.
//
// The goroutines are the benchmark's clients, not engine work, so they
// live here rather than in the scheduler: the command starts them and
// waits for them before it returns.
func startInstances(ctx context.Context, e *engine.Engine, clock timer.Clock, onStart func(id int64, began time.Time), opts engine.StartOptions, n, c int) (int, error) {
	var next atomic.Int64
	var wg sync.WaitGroup
	var mu sync.Mutex
	failed := 0
	var firstErr error
	for range c {
		wg.Go(func() {
			for next.Add(1) <= int64(n) && ctx.Err() == nil {
				began := clock.Now()
				id, err := e.StartProcess(ctx, opts)
				if err != nil {
					mu.Lock()
					failed++
					if firstErr == nil {
						firstErr = err
					}
					mu.Unlock()
					continue
				}
				onStart(id, began)
			}
		})
	}
	wg.Wait()
	return failed, firstErr
}

// collector follows the engine's records: when each instance started and
// finished, which failed, and how many activities completed.
type collector struct {
	clock  timer.Clock
	blocks map[string]bool

	mu         sync.Mutex
	began      map[int64]time.Time // root instances: StartProcess call time
	finished   map[int64]time.Time // any instance: its completion record
	failed     map[int64]string    // any instance: why it did not complete
	parent     map[int64]int64     // subflow instance → parent instance
	latencies  []time.Duration
	rootFailed map[int64]string
	activities int64
	lastRecord time.Time
	end        time.Time     // when the last root instance finished
	doneCh     chan struct{} // signalled after every change of the counts
}

func newCollector(clock timer.Clock, blocks map[string]bool) *collector {
	return &collector{
		clock: clock, blocks: blocks,
		began: map[int64]time.Time{}, finished: map[int64]time.Time{}, failed: map[int64]string{},
		parent: map[int64]int64{}, rootFailed: map[int64]string{},
		lastRecord: clock.Now(), doneCh: make(chan struct{}, 1),
	}
}

// started notes that StartProcess made root instance id, called at began.
// Its completion record may have come already.
func (c *collector) started(id int64, began time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.began[id] = began
	if at, ok := c.finished[id]; ok {
		c.rootFinished(id, at)
	}
	if why, ok := c.failed[id]; ok {
		c.fail(id, why)
	}
}

// record is the engine observer. It runs on the engine's workers, so it
// only updates counters.
func (c *collector) record(r engine.Record) { c.recordAt(r, c.clock.Now()) }

// recordAt notes record r, which its engine saw at now (with --nodes,
// another process's engine: now is its wall clock).
func (c *collector) recordAt(r engine.Record, now time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.lastRecord = c.clock.Now()
	switch r.Type {
	case engine.RecordProcessStarted:
		if r.Parent != 0 {
			c.parent[r.Instance] = r.Parent
			// A failure of this subflow may have come first.
			if why, ok := c.failed[r.Instance]; ok {
				c.fail(r.Instance, why)
			}
		}
	case engine.RecordActivityCompleted:
		if !c.blocks[r.Activity] {
			c.activities++
		}
	case engine.RecordProcessCompleted:
		c.finished[r.Instance] = now
		if _, ok := c.began[r.Instance]; ok {
			c.rootFinished(r.Instance, now)
		}
	case engine.RecordProcessTerminated, engine.RecordProcessLocked:
		c.fail(r.Instance, fmt.Sprintf("ended %s: %s", r.State, r.Error))
	case engine.RecordActivityAbnormal:
		c.fail(r.Instance, fmt.Sprintf("activity %s is Abnormal: %s", r.Activity, r.Error))
	case engine.RecordWorkItemCreated:
		c.fail(r.Instance, fmt.Sprintf("activity %s offered a work item (bench runs automatic activities only)", r.Activity))
	}
}

// rootFinished counts the completion of root instance id.
func (c *collector) rootFinished(id int64, at time.Time) {
	if _, ok := c.rootFailed[id]; ok {
		return
	}
	c.latencies = append(c.latencies, at.Sub(c.began[id]))
	c.end = at
	c.signal()
}

// fail notes that instance id cannot complete, and so neither can the
// root instance it belongs to, once that is known.
func (c *collector) fail(id int64, why string) {
	if _, ok := c.failed[id]; !ok {
		c.failed[id] = why
	}
	root, chain := id, fmt.Sprintf("instance %d: %s", id, why)
	for {
		p, ok := c.parent[root]
		if !ok {
			break
		}
		root = p
		chain = fmt.Sprintf("instance %d: subflow %s", root, chain)
	}
	if _, ok := c.began[root]; !ok {
		return
	}
	if _, ok := c.rootFailed[root]; ok {
		return
	}
	c.rootFailed[root] = chain
	c.end = c.clock.Now()
	c.signal()
}

func (c *collector) signal() {
	select {
	case c.doneCh <- struct{}{}:
	default:
	}
}

// benchResult is what the collector saw by the end of the run.
type benchResult struct {
	latencies  []time.Duration
	activities int64
	rootFailed map[int64]string
	stalled    int // root instances neither finished nor failed
	end        time.Time
}

// wait returns when all n root instances have completed or failed, or
// when no record came for stallLimit (the rest count as stalled), or with
// ctx's error.
func (c *collector) wait(ctx context.Context, n int) (benchResult, error) {
	for {
		c.mu.Lock()
		finished := len(c.latencies) + len(c.rootFailed)
		quiet := c.clock.Now().Sub(c.lastRecord)
		if finished >= n || quiet >= stallLimit {
			res := benchResult{
				latencies: slices.Clone(c.latencies), activities: c.activities,
				rootFailed: c.rootFailed, stalled: n - finished, end: c.end,
			}
			if res.stalled > 0 {
				res.end = c.clock.Now()
			}
			c.mu.Unlock()
			return res, nil
		}
		c.mu.Unlock()
		t := c.clock.NewTimer(time.Second)
		select {
		case <-c.doneCh:
			t.Stop()
		case <-t.C():
		case <-ctx.Done():
			t.Stop()
			return benchResult{}, ctx.Err()
		}
	}
}

// maxFailuresShown bounds the failed instances listed on standard error.
const maxFailuresShown = 10

// failures describes the instances that did not complete, for standard
// error; "" when all did.
func (r benchResult) failures() string {
	var b strings.Builder
	ids := make([]int64, 0, len(r.rootFailed))
	for id := range r.rootFailed {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	for i, id := range ids {
		if i == maxFailuresShown {
			fmt.Fprintf(&b, "goxpdl bench: ... and %d more failed instances\n", len(ids)-i)
			break
		}
		fmt.Fprintf(&b, "goxpdl bench: %s\n", r.rootFailed[id])
	}
	if r.stalled > 0 {
		fmt.Fprintf(&b, "goxpdl bench: %d instances made no progress for %s\n", r.stalled, stallLimit)
	}
	return b.String()
}

// percentile returns the p-quantile of ds by the nearest-rank method; 0
// for none. It sorts ds.
func percentile(ds []time.Duration, p float64) time.Duration {
	if len(ds) == 0 {
		return 0
	}
	slices.Sort(ds)
	i := int(math.Ceil(p*float64(len(ds)))) - 1
	return ds[min(max(i, 0), len(ds)-1)]
}

func round(x float64, digits int) float64 {
	f := math.Pow(10, float64(digits))
	return math.Round(x*f) / f
}

// peakRSS returns the program's peak resident set size in bytes (VmHWM
// of /proc/self/status), or 0 where that is not available.
func peakRSS() int64 {
	data, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return 0
	}
	return parseVmHWM(data)
}

// parseVmHWM finds "VmHWM:   1234 kB" in the text of /proc/self/status.
func parseVmHWM(status []byte) int64 {
	sc := bufio.NewScanner(bytes.NewReader(status))
	for sc.Scan() {
		rest, ok := strings.CutPrefix(sc.Text(), "VmHWM:")
		if !ok {
			continue
		}
		fields := strings.Fields(rest)
		if len(fields) != 2 || fields[1] != "kB" {
			return 0
		}
		kb, err := strconv.ParseInt(fields[0], 10, 64)
		if err != nil {
			return 0
		}
		return kb * 1024
	}
	return 0
}

// measureBaseline returns the raw single-row commits/s of db: c goroutines
// each begin a transaction, insert one row into a scratch table and
// commit, for about d. It goes through the *sql.DB under db, so the
// connection settings are the engine's (for SQLite: WAL,
// synchronous=FULL, BEGIN IMMEDIATE) without GORM's overhead.
func measureBaseline(ctx context.Context, db *gorm.DB, clock timer.Clock, c int, d time.Duration) (float64, error) {
	sqlDB, err := db.DB()
	if err != nil {
		return 0, err
	}
	if _, err := sqlDB.ExecContext(ctx, "DROP TABLE IF EXISTS "+baselineTable); err != nil {
		return 0, fmt.Errorf("drop %s: %w", baselineTable, err)
	}
	if _, err := sqlDB.ExecContext(ctx, "CREATE TABLE "+baselineTable+
		" (worker INTEGER NOT NULL, n INTEGER NOT NULL, PRIMARY KEY (worker, n))"); err != nil {
		return 0, fmt.Errorf("create %s: %w", baselineTable, err)
	}
	insert := "INSERT INTO " + baselineTable + " (worker, n) VALUES (?, ?)"
	if db.Name() == "postgres" { // straight to the driver: its placeholders
		insert = "INSERT INTO " + baselineTable + " (worker, n) VALUES ($1, $2)"
	}
	var commits atomic.Int64
	var wg sync.WaitGroup
	var once sync.Once
	var firstErr error
	runCtx, cancel := context.WithCancel(ctx)
	defer cancel()
	start := clock.Now()
	deadline := start.Add(d)
	for w := range c {
		wg.Go(func() {
			for n := 0; runCtx.Err() == nil && clock.Now().Before(deadline); n++ {
				err := func() error {
					tx, err := sqlDB.BeginTx(runCtx, nil)
					if err != nil {
						return err
					}
					if _, err := tx.ExecContext(runCtx, insert, w, n); err != nil {
						return errors.Join(err, tx.Rollback())
					}
					return tx.Commit()
				}()
				if err != nil {
					once.Do(func() { firstErr = err; cancel() })
					return
				}
				commits.Add(1)
			}
		})
	}
	wg.Wait()
	elapsed := clock.Now().Sub(start)
	// Drop the table with a fresh context: an interrupted run still
	// cleans up.
	dropCtx, dropCancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer dropCancel()
	_, dropErr := sqlDB.ExecContext(dropCtx, "DROP TABLE "+baselineTable)
	if dropErr != nil {
		dropErr = fmt.Errorf("drop %s: %w", baselineTable, dropErr)
	}
	if firstErr != nil {
		return 0, errors.Join(fmt.Errorf("insert into %s: %w", baselineTable, firstErr), dropErr)
	}
	if err := errors.Join(ctx.Err(), dropErr); err != nil {
		return 0, err
	}
	return round(float64(commits.Load())/elapsed.Seconds(), 1), nil
}

// fileFlags collects repeated --file flags.
type fileFlags []string

func (f *fileFlags) String() string { return strings.Join(*f, " ") }

func (f *fileFlags) Set(v string) error {
	*f = append(*f, v)
	return nil
}

// allProcesses lists the processes of pkgs, in order.
func allProcesses(pkgs []*xpdl.Package) []*xpdl.Process {
	var out []*xpdl.Process
	for _, pkg := range pkgs {
		out = append(out, pkg.Processes...)
	}
	return out
}

// deployBenchTarget deploys the workload's definition on e: the built-in
// workload's package or the --file files (the deployment of the first
// file's process). It returns the deployment, or the exit status of a
// definition that is invalid (exitProblems) or cannot be deployed
// (exitUsage), reported on stderr.
func deployBenchTarget(ctx context.Context, e *engine.Engine, target benchTarget, opts benchOptions, stderr io.Writer) (engine.Deployment, int) {
	var dep engine.Deployment
	var err error
	if target.src != nil {
		dep, err = e.Deploy(ctx, target.src)
	} else {
		var deps []engine.Deployment
		if deps, err = e.DeployFiles(ctx, opts.files...); err == nil {
			dep = deps[target.index]
		}
	}
	if err != nil {
		printErr(stderr, "goxpdl bench: deploy: %v\n", err)
		if errors.Is(err, xpdl.ErrInvalid) {
			return dep, exitProblems
		}
		return dep, exitUsage
	}
	return dep, exitOK
}

// writeAllocProfile writes the allocations the program has made so far
// to path, in pprof's format.
func writeAllocProfile(path string) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	return errors.Join(pprof.Lookup("allocs").WriteTo(f, 0), f.Close())
}
