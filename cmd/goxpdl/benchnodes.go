package main

import (
	"bufio"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"os/signal"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/goxpdl/goxpdl/engine"
	"github.com/goxpdl/goxpdl/scheduler"
	"github.com/goxpdl/goxpdl/store/gormstore"
	"github.com/goxpdl/goxpdl/timer"
)

// "goxpdl bench --nodes M" runs the workload on M engine nodes, each an
// operating-system process of its own, all on one database. The process
// that the user started (the owner) deploys the workload, starts the
// nodes by running its own executable again with the hidden subcommand
// benchNodeCommand, and talks to each over its standard input and output:
//
//	owner → node (stdin, one word a line): "go" (start the clients), "stop"
//	node → owner (stdout, one JSON object a line): ready, the instances it
//	        started, the records the owner's collector needs, the end of
//	        its starts, and at the end its counters
//
// The clients run in the nodes, spread over them: a node keeps the events
// its own transactions publish (recovery.md, "Nodes and leases"), so an
// instance started through one node runs there unless another node polls
// its events first, and clients that all went through one node would
// leave the others nearly idle. The owner merges what the nodes report
// into one collector: the latency of an instance is its completion (on
// whichever node) minus its start (on its node), both by the machine's
// wall clock.
//
// The owner stops every node it started, on success, failure and Ctrl-C:
// it sends "stop" and waits; a node that has not exited after
// nodeStopWait gets SIGINT, and after nodeKillWait more SIGKILL. A node
// whose standard input closes (its owner died) stops by itself.

// benchNodeCommand is the hidden subcommand one node of "bench --nodes"
// runs. It is not in "goxpdl help": its flags and its protocol are
// between the owner and its nodes, not a stable interface.
const benchNodeCommand = "_bench-node"

// How long the owner waits for a node: to be ready (open the database,
// start the engine), to exit after "stop" before it sends SIGINT, and
// after SIGINT before SIGKILL.
const (
	nodeReadyWait = 2 * time.Minute
	nodeStopWait  = time.Minute
	nodeKillWait  = 15 * time.Second
)

// nodeMsg is one line a node writes to its owner. K says which kind:
// "ready", "started" (Instance, At), "rec" (Rec, At), "starts_done"
// (StartErrors, FirstError) or "stats" (Stats).
type nodeMsg struct {
	K           string     `json:"k"`
	Instance    int64      `json:"i,omitempty"`
	At          int64      `json:"at,omitempty"` // Unix nanoseconds
	Rec         *nodeRec   `json:"rec,omitempty"`
	StartErrors int        `json:"start_errors,omitempty"`
	FirstError  string     `json:"first_error,omitempty"`
	Stats       *nodeStats `json:"stats,omitempty"`
}

// nodeRec is the part of an engine.Record the collector reads.
type nodeRec struct {
	Type     string `json:"t"`
	Instance int64  `json:"i"`
	Parent   int64  `json:"p,omitempty"`
	Activity string `json:"a,omitempty"`
	State    string `json:"s,omitempty"`
	Error    string `json:"e,omitempty"`
}

// nodeStats are a node's counters over the run (after its engine stopped,
// less before its clients began).
type nodeStats struct {
	EventsProcessed uint64 `json:"events_processed"` // the scheduler's, without the chained ones
	EventsChained   uint64 `json:"events_chained"`
	EventsFailed    uint64 `json:"events_failed"`
	Conflicts       uint64 `json:"conflicts"`
	Transactions    uint64 `json:"db_transactions"`
	PeakRSSBytes    int64  `json:"peak_rss_bytes"`
}

// benchNodeReport is one node's line of the report of "bench --nodes".
type benchNodeReport struct {
	Node            int    `json:"node"`
	Clients         int    `json:"clients"`
	Started         int    `json:"started"`
	Activities      int64  `json:"activities"`
	EventsProcessed uint64 `json:"events_processed"`
	EventsFailed    uint64 `json:"events_failed"`
	Conflicts       uint64 `json:"conflicts"`
	DBTransactions  uint64 `json:"db_transactions"`
	PeakRSSBytes    int64  `json:"peak_rss_bytes"`
}

// nodesRefusal says why opts cannot run on several nodes, or "".
func (o *benchOptions) nodesRefusal() string {
	switch {
	case o.nodes < 0:
		return fmt.Sprintf("--nodes %d: want at least 1", o.nodes)
	case o.nodes == 0:
		return ""
	case o.db == "" || strings.HasPrefix(o.db, gormstore.SQLiteScheme):
		return fmt.Sprintf("--nodes %d needs a database the nodes can share: --db mysql://... or postgres://... (SQLite is one process per file)", o.nodes)
	case o.cpuProfile != "":
		return "--cpuprofile profiles one process: not with --nodes"
	case o.memProfile != "":
		return "--memprofile profiles one process: not with --nodes"
	}
	return ""
}

// share is node k's part of total spread over m nodes: the first
// total%m nodes take one more.
func share(total, m, k int) int {
	n := total / m
	if k < total%m {
		n++
	}
	return n
}

// benchNodes is bench with opts.nodes nodes.
func benchNodes(ctx context.Context, opts benchOptions, stdout, stderr io.Writer) int {
	target, code := loadTarget(opts, stderr)
	if code != exitOK {
		return code
	}
	exe, err := os.Executable()
	if err != nil {
		printErr(stderr, "goxpdl bench: --nodes runs this program again: %v\n", err)
		return exitUsage
	}
	clock := timer.Real()
	report := benchReport{
		Workload: opts.workload, Process: target.process, DB: describeDB(opts.db),
		Instances: opts.instances, Concurrency: opts.concurrency, Nodes: opts.nodes,
	}
	if len(opts.files) > 0 {
		report.Workload, report.File = "file", strings.Join(opts.files, " ")
	}
	defID, code := deployForNodes(ctx, opts, target, &report, clock, stderr)
	if code != exitOK {
		return code
	}

	runCtx, cancel := context.WithCancel(ctx)
	defer cancel()
	col := newCollector(clock, target.blocks)
	var outMu sync.Mutex // the nodes' standard error, line by line
	nodes := make([]*benchNode, opts.nodes)
	for k := range nodes {
		nodes[k] = &benchNode{
			k: k, clients: share(opts.concurrency, opts.nodes, k), instances: share(opts.instances, opts.nodes, k),
			ready: make(chan struct{}), startsDone: make(chan struct{}), exited: make(chan struct{}),
		}
	}
	// Every node started is stopped before benchNodes returns, whatever
	// the way out.
	defer stopNodes(nodes, stderr)
	for _, n := range nodes {
		args := []string{benchNodeCommand, "--db", opts.db, "--definition", strconv.FormatInt(defID, 10),
			"--process", target.process, "--instances", strconv.Itoa(n.instances), "--clients", strconv.Itoa(n.clients),
			"--workers", strconv.Itoa(opts.concurrency), "--node", strconv.Itoa(n.k + 1),
			"--chain-steps", strconv.Itoa(opts.chainSteps)}
		if err := n.start(exe, args, col, target.blocks, &prefixWriter{mu: &outMu, w: stderr, prefix: fmt.Sprintf("goxpdl bench: node %d: ", n.k+1)}); err != nil {
			printErr(stderr, "goxpdl bench: node %d: %v\n", n.k+1, err)
			return exitUsage
		}
	}
	for _, n := range nodes {
		if err := n.await(runCtx, clock, n.ready, nodeReadyWait, "ready"); err != nil {
			printErr(stderr, "goxpdl bench: node %d: %v\n", n.k+1, err)
			return exitUsage
		}
	}

	start := clock.Now()
	for _, n := range nodes {
		if err := n.send("go"); err != nil {
			printErr(stderr, "goxpdl bench: node %d: %v\n", n.k+1, err)
			return exitUsage
		}
	}
	var firstStartErr string
	for _, n := range nodes {
		if err := n.await(runCtx, clock, n.startsDone, 0, "its starts"); err != nil {
			printErr(stderr, "goxpdl bench: node %d: %v\n", n.k+1, err)
			return exitUsage
		}
		report.StartErrors += n.startErrors
		if firstStartErr == "" {
			firstStartErr = n.firstStartErr
		}
	}
	switch {
	case report.StartErrors == opts.instances:
		printErr(stderr, "goxpdl bench: start: %s\n", firstStartErr)
		return exitUsage
	case report.StartErrors > 0:
		printErr(stderr, "goxpdl bench: %d of %d StartProcess calls failed; the first: %s\n", report.StartErrors, opts.instances, firstStartErr)
	}
	res, err := col.wait(runCtx, opts.instances-report.StartErrors)
	if err != nil {
		printErr(stderr, "goxpdl bench: %v\n", err)
		return exitUsage
	}

	// The nodes' counters come with their last line, once they stopped.
	stopNodes(nodes, stderr)
	var total nodeStats
	for _, n := range nodes {
		if !n.stop(stderr) || n.stats == nil {
			printErr(stderr, "goxpdl bench: node %d did not report its counters\n", n.k+1)
			return exitUsage
		}
		total.EventsProcessed += n.stats.EventsProcessed
		total.EventsChained += n.stats.EventsChained
		total.EventsFailed += n.stats.EventsFailed
		total.Conflicts += n.stats.Conflicts
		total.Transactions += n.stats.Transactions
		report.PerNode = append(report.PerNode, benchNodeReport{
			Node: n.k + 1, Clients: n.clients, Started: n.started, Activities: n.activities,
			EventsProcessed: n.stats.EventsProcessed + n.stats.EventsChained, EventsFailed: n.stats.EventsFailed, Conflicts: n.stats.Conflicts,
			DBTransactions: n.stats.Transactions, PeakRSSBytes: n.stats.PeakRSSBytes,
		})
	}
	after := engine.Stats{
		Scheduler: scheduler.Stats{EventsProcessed: total.EventsProcessed, EventsFailed: total.EventsFailed},
		Conflicts: total.Conflicts, Commits: engine.CommitStats{Transactions: total.Transactions}, Chained: total.EventsChained,
	}
	report.fill(res, res.end.Sub(start), after, engine.Stats{})
	report.PeakRSSBytes = 0 // the owner's own is no engine's: the largest node's
	for _, n := range report.PerNode {
		report.PeakRSSBytes = max(report.PeakRSSBytes, n.PeakRSSBytes)
	}
	return printReport(report, opts.json, res, stdout, stderr)
}

// deployForNodes opens the database, measures the baseline when asked,
// and deploys the workload with an engine that does not start (the nodes
// find the definition in the database). It returns the definition's id.
func deployForNodes(ctx context.Context, opts benchOptions, target benchTarget, report *benchReport, clock timer.Clock, stderr io.Writer) (int64, int) {
	db, closeDB, err := openDB(opts.db)
	if err != nil {
		printErr(stderr, "goxpdl bench: %v\n", err)
		return 0, exitUsage
	}
	defer closeDB()
	if opts.baseline {
		perS, err := measureBaseline(ctx, db, clock, opts.concurrency, baselineDuration)
		if err != nil {
			printErr(stderr, "goxpdl bench: baseline: %v\n", err)
			return 0, exitUsage
		}
		report.BaselineCommitsPerS = &perS
	}
	e, err := engine.New(engine.Config{
		DB: db, NoOpUnboundApplications: true,
		Logger: slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: slog.LevelWarn})),
	})
	if err != nil {
		printErr(stderr, "goxpdl bench: %v\n", err)
		return 0, exitUsage
	}
	dep, code := deployBenchTarget(ctx, e, target, opts, stderr)
	return dep.ID, code
}

// benchNode is the owner's handle on one node process.
type benchNode struct {
	k                  int // 0-based; the node is called k+1
	clients, instances int

	cmd   *exec.Cmd
	stdin io.WriteCloser
	// reader is the goroutine that reads the node's standard output; it
	// ends when the node closes it (at its exit), and closes exited.
	ready, startsDone, exited chan struct{}
	askOnce, stopOnce         sync.Once
	stopped                   bool

	// Written by the reader; read after the channel that follows them.
	started       int
	activities    int64
	startErrors   int
	firstStartErr string
	stats         *nodeStats
	readErr       error
}

// start runs the node process and its reader.
func (n *benchNode) start(exe string, args []string, col *collector, blocks map[string]bool, stderr io.Writer) error {
	n.cmd = exec.Command(exe, args...) //nolint:gosec // this very program, with arguments it made
	// A test binary that doubles as goxpdl (testscript.Main) runs main
	// when called by that name.
	n.cmd.Args[0] = "goxpdl"
	n.cmd.Stderr = stderr
	var err error
	if n.stdin, err = n.cmd.StdinPipe(); err != nil {
		return err
	}
	stdout, err := n.cmd.StdoutPipe()
	if err != nil {
		return err
	}
	if err := n.cmd.Start(); err != nil {
		return err
	}
	go n.read(stdout, col, blocks)
	return nil
}

// read follows the node's lines until it closes its standard output.
func (n *benchNode) read(r io.Reader, col *collector, blocks map[string]bool) {
	defer close(n.exited)
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64*1024), 1<<20)
	for sc.Scan() {
		var m nodeMsg
		if err := json.Unmarshal(sc.Bytes(), &m); err != nil {
			n.readErr = fmt.Errorf("a line the owner cannot read: %q: %w", sc.Text(), err)
			continue
		}
		switch m.K {
		case "ready":
			closeOnce(n.ready)
		case "started":
			n.started++
			col.started(m.Instance, time.Unix(0, m.At))
		case "rec":
			if m.Rec == nil {
				continue
			}
			if m.Rec.Type == engine.RecordActivityCompleted && !blocks[m.Rec.Activity] {
				n.activities++
			}
			col.recordAt(engine.Record{
				Type: m.Rec.Type, Instance: m.Rec.Instance, Parent: m.Rec.Parent, Activity: m.Rec.Activity,
				State: m.Rec.State, Error: m.Rec.Error,
			}, time.Unix(0, m.At))
		case "starts_done":
			select {
			case <-n.startsDone: // said twice: the first counts
			default:
				n.startErrors, n.firstStartErr = m.StartErrors, m.FirstError
				close(n.startsDone)
			}
		case "stats":
			n.stats = m.Stats
		}
	}
	if err := sc.Err(); err != nil && n.readErr == nil {
		n.readErr = err
	}
}

// closeOnce closes ch unless it is closed already; only the reader
// closes it.
func closeOnce(ch chan struct{}) {
	select {
	case <-ch:
	default:
		close(ch)
	}
}

// await waits for ch, for the node's exit (an error), for ctx, or for
// limit (0: no limit).
func (n *benchNode) await(ctx context.Context, clock timer.Clock, ch <-chan struct{}, limit time.Duration, what string) error {
	var expired <-chan time.Time
	if limit > 0 {
		t := clock.NewTimer(limit)
		defer t.Stop()
		expired = t.C()
	}
	select {
	case <-ch:
		return nil
	case <-n.exited:
		select {
		case <-ch: // its last lines came with its exit
			return nil
		default:
		}
		if n.readErr != nil {
			return fmt.Errorf("exited before %s: %w", what, n.readErr)
		}
		return fmt.Errorf("exited before %s", what)
	case <-expired:
		return fmt.Errorf("not %s within %s", what, limit)
	case <-ctx.Done():
		return ctx.Err()
	}
}

// send writes one word to the node.
func (n *benchNode) send(word string) error {
	_, err := io.WriteString(n.stdin, word+"\n")
	return err
}

// stopNodes asks every node to stop, then waits for each.
func stopNodes(nodes []*benchNode, stderr io.Writer) {
	for _, n := range nodes {
		n.askToStop()
	}
	for _, n := range nodes {
		n.stop(stderr)
	}
}

// askToStop sends "stop" and closes the node's standard input.
func (n *benchNode) askToStop() {
	n.askOnce.Do(func() {
		if n.cmd == nil || n.cmd.Process == nil {
			return
		}
		_ = n.send("stop") // a node that exited already cannot read it
		_ = n.stdin.Close()
	})
}

// stop ends the node: "stop" and its standard input closed, then SIGINT
// after nodeStopWait and SIGKILL after nodeKillWait more. It returns
// whether the node exited cleanly (status 0, every line read). Calls
// after the first return the first's answer.
func (n *benchNode) stop(stderr io.Writer) bool {
	n.stopOnce.Do(func() {
		if n.cmd == nil || n.cmd.Process == nil {
			return
		}
		n.askToStop()
		clock := timer.Real()
		wait := clock.NewTimer(nodeStopWait)
		defer wait.Stop()
		select {
		case <-n.exited:
		case <-wait.C():
			printErr(stderr, "goxpdl bench: node %d did not stop within %s: interrupting it\n", n.k+1, nodeStopWait)
			_ = n.cmd.Process.Signal(os.Interrupt)
			kill := clock.NewTimer(nodeKillWait)
			defer kill.Stop()
			select {
			case <-n.exited:
			case <-kill.C():
				printErr(stderr, "goxpdl bench: node %d did not stop within %s of SIGINT: killing it\n", n.k+1, nodeKillWait)
				_ = n.cmd.Process.Kill()
				<-n.exited
			}
		}
		err := n.cmd.Wait()
		if err != nil {
			printErr(stderr, "goxpdl bench: node %d: %v\n", n.k+1, err)
		}
		n.stopped = err == nil && n.readErr == nil
	})
	return n.stopped
}

// prefixWriter writes to w with prefix before every line, one Write at a
// time across the writers that share mu.
type prefixWriter struct {
	mu     *sync.Mutex
	w      io.Writer
	prefix string
	midway bool // the last Write ended inside a line
}

func (p *prefixWriter) Write(b []byte) (int, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	var out strings.Builder
	for _, line := range strings.SplitAfter(string(b), "\n") {
		if line == "" {
			continue
		}
		if !p.midway {
			out.WriteString(p.prefix)
		}
		out.WriteString(line)
		p.midway = !strings.HasSuffix(line, "\n")
	}
	if _, err := io.WriteString(p.w, out.String()); err != nil {
		return 0, err
	}
	return len(b), nil
}

// runBenchNode is one node of "bench --nodes": see the top of this file.
func runBenchNode(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	var (
		db, process                 string
		definition                  int64
		instances, clients, workers int
		node, chainSteps            int
	)
	fs := flag.NewFlagSet(benchNodeCommand, flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.StringVar(&db, "db", "", "database")
	fs.Int64Var(&definition, "definition", 0, "deployment id")
	fs.StringVar(&process, "process", "", "WorkflowProcess id")
	fs.IntVar(&instances, "instances", 0, "instances to start")
	fs.IntVar(&clients, "clients", 0, "client goroutines")
	fs.IntVar(&workers, "workers", benchDefaultConcurrency, "worker pool size")
	fs.IntVar(&node, "node", 0, "this node's number")
	fs.IntVar(&chainSteps, "chain-steps", 0, "engine.Config.ChainSteps")
	if err := fs.Parse(args); err != nil {
		return exitUsage
	}
	if db == "" || definition == 0 || process == "" || instances < 0 || clients < 0 || workers < 1 {
		printErr(stderr, "goxpdl %s: run by \"goxpdl bench --nodes\", not by hand\n", benchNodeCommand)
		return exitUsage
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	out := &nodeWriter{enc: json.NewEncoder(stdout)}

	dbh, closeDB, err := openDB(db)
	if err != nil {
		printErr(stderr, "%v\n", err)
		return exitUsage
	}
	defer closeDB()
	clock := timer.Real()
	e, err := engine.New(engine.Config{
		DB: dbh, NoOpUnboundApplications: true, NormalWorkers: workers, CriticalWorkers: workers, ChainSteps: chainSteps,
		Logger: slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: slog.LevelWarn})),
	})
	if err != nil {
		printErr(stderr, "%v\n", err)
		return exitUsage
	}
	defer e.Subscribe(func(r engine.Record) {
		switch r.Type {
		case engine.RecordProcessStarted, engine.RecordActivityCompleted, engine.RecordProcessCompleted,
			engine.RecordProcessTerminated, engine.RecordProcessLocked, engine.RecordActivityAbnormal, engine.RecordWorkItemCreated:
			out.write(nodeMsg{K: "rec", At: clock.Now().UnixNano(), Rec: &nodeRec{
				Type: r.Type, Instance: r.Instance, Parent: r.Parent, Activity: r.Activity, State: r.State, Error: r.Error,
			}})
		}
	})()
	if err := e.Start(ctx); err != nil {
		printErr(stderr, "%v\n", err)
		return exitUsage
	}
	stopEngine := func() {
		stopCtx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		if err := e.Stop(stopCtx); err != nil {
			printErr(stderr, "stop: %v\n", err)
		}
	}
	before := e.Stats()

	// The owner's words. The reader ends at "stop" or when the owner
	// closes the pipe (it exited, or it is stopping this node); either
	// ends this node.
	words := make(chan string, 2)
	ownerGone, cancelOwner := context.WithCancel(ctx)
	defer cancelOwner()
	go func() {
		defer cancelOwner()
		sc := bufio.NewScanner(stdin)
		for sc.Scan() {
			select {
			case words <- sc.Text():
			default:
			}
			if sc.Text() == "stop" {
				return
			}
		}
	}()
	out.write(nodeMsg{K: "ready"})
	select {
	case w := <-words:
		if w != "go" {
			stopEngine()
			return exitOK // stopped before the run
		}
	case <-ownerGone.Done():
		stopEngine()
		return exitUsage
	}
	startOpts := engine.StartOptions{DefinitionID: definition, Process: process, Actor: fmt.Sprintf("goxpdl bench node %d", node)}
	startErrors, err := startInstances(ownerGone, e, clock, func(id int64, began time.Time) {
		out.write(nodeMsg{K: "started", Instance: id, At: began.UnixNano()})
	}, startOpts, instances, clients)
	done := nodeMsg{K: "starts_done", StartErrors: startErrors}
	if err != nil {
		done.FirstError = err.Error()
	}
	out.write(done)
	<-ownerGone.Done() // "stop", a closed pipe, or a signal
	stopEngine()
	after := e.Stats()
	out.write(nodeMsg{K: "stats", Stats: &nodeStats{
		EventsProcessed: after.Scheduler.EventsProcessed - before.Scheduler.EventsProcessed,
		EventsChained:   after.Chained - before.Chained,
		EventsFailed:    after.Scheduler.EventsFailed - before.Scheduler.EventsFailed,
		Conflicts:       after.Conflicts - before.Conflicts,
		Transactions:    after.Commits.Transactions - before.Commits.Transactions,
		PeakRSSBytes:    peakRSS(),
	}})
	if out.err != nil {
		printErr(stderr, "write to the owner: %v\n", out.err)
		return exitUsage
	}
	if ctx.Err() != nil {
		return exitUsage // interrupted
	}
	return exitOK
}

// nodeWriter writes a node's lines, one at a time.
type nodeWriter struct {
	mu  sync.Mutex
	enc *json.Encoder
	err error
}

func (w *nodeWriter) write(m nodeMsg) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.err == nil {
		w.err = w.enc.Encode(m)
	}
}
