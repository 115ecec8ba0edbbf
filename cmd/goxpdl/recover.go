package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"strings"
	"sync/atomic"
	"time"

	"github.com/goxpdl/goxpdl/engine"
	"github.com/goxpdl/goxpdl/timer"
)

// recoverUsage is the full usage text of "goxpdl recover".
const recoverUsage = `Usage: goxpdl recover --db DSN [--until-idle] [--node-id ID] [--applications noop|fail] [--json]

Recover recovers an engine database after a crash and runs its pending
work. It starts an engine node on the database, which first takes over
the work of the nodes that stopped without leaving (its own previous run,
and nodes whose lease ran out), then processes the events that were
written but not processed and fires the timers that fell due.

Flags:

	--db DSN          the engine's database (required):
	                  ` + dbUsage + `
	--until-idle      stop when nothing is left to do now: no event to
	                  process, no timer due (work waiting for people, for
	                  a later timer or for a retry's backoff stays); without
	                  it, run as a node until interrupted (Ctrl-C)
	--node-id ID      the node's name; a node restarted under the name of
	                  a killed run takes its work over at once (default:
	                  host name and process id)
	--applications M  what calls of applications do: noop (default) makes
	                  them succeed without doing anything, as goxpdl run
	                  does; fail makes them fatal (the activity goes
	                  Abnormal). The command line has none of a host's
	                  code: a host recovers by starting its own engine.
	--json            print the report as one JSON object

"goxpdl resume --until-idle" (and "goxpdl resume" without an instance)
is recover's old name, kept working with a deprecation note on standard
error.

Exit status: 0 when the engine ran (and, with --until-idle, reached
idle); 2 on a usage error, when the database cannot be opened, or when
another process holds a SQLite database.
`

const recoverShortUsage = "usage: goxpdl recover --db DSN [--until-idle] [--node-id ID] [--applications noop|fail] [--json]\n"

// recoverReport is what "goxpdl recover --json" prints.
type recoverReport struct {
	DB              string                `json:"db"`
	Node            string                `json:"node,omitempty"`
	Recovery        engine.RecoveryReport `json:"recovery"`
	EventsProcessed uint64                `json:"events_processed"`
	EventsFailed    uint64                `json:"events_failed"`
	TimersFired     uint64                `json:"timers_fired"`
	// FirstProgressMS is the time from Start to the first committed
	// transition: how long the restart took to get going.
	FirstProgressMS float64          `json:"first_progress_ms,omitempty"`
	Seconds         float64          `json:"seconds"`
	Counts          map[string]int64 `json:"counts"`
}

func runRecover(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	return runRecoverAs("recover", args, stdin, stdout, stderr)
}

// runRecoverAs is recover run under name: "recover", or its deprecated
// alias "resume".
func runRecoverAs(name string, args []string, _ io.Reader, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() { printErr(stderr, "%s", recoverShortUsage) }
	dsn := fs.String("db", "", "database")
	untilIdle := fs.Bool("until-idle", false, "stop when idle")
	nodeID := fs.String("node-id", "", "node name")
	apps := fs.String("applications", "noop", "noop|fail")
	asJSON := fs.Bool("json", false, "print JSON")
	if code, ok := parseDBCommand(fs, args, dsn, recoverUsage, recoverShortUsage, stdout, stderr); !ok {
		return code
	}
	if *apps != "noop" && *apps != "fail" {
		printErr(stderr, "goxpdl %s: --applications %q: want noop or fail\n", name, *apps)
		return exitUsage
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	db, closeDB, err := openDB(*dsn)
	if err != nil {
		printErr(stderr, "goxpdl %s: %v\n", name, err)
		return exitUsage
	}
	defer closeDB()

	clock := timer.Real()
	began := clock.Now()
	e, err := engine.New(engine.Config{
		DB: db, NodeID: *nodeID, NoOpUnboundApplications: *apps == "noop",
		Logger: slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: slog.LevelWarn})),
	})
	if err != nil {
		printErr(stderr, "goxpdl %s: %v\n", name, err)
		return exitUsage
	}
	var firstProgress atomic.Int64 // time from Start to the first record; 0 before it
	startAt := clock.Now()
	defer e.Subscribe(func(engine.Record) {
		firstProgress.CompareAndSwap(0, int64(max(clock.Now().Sub(startAt), 1)))
	})()
	if err := e.Start(ctx); err != nil {
		printErr(stderr, "goxpdl %s: %v\n", name, err)
		return exitUsage
	}
	rep := recoverReport{DB: describeDB(*dsn), Node: *nodeID}
	code := exitOK
	if rep.Recovery, err = e.Recover(ctx); err != nil {
		printErr(stderr, "goxpdl %s: recover: %v\n", name, err)
		code = exitUsage
	} else if *untilIdle {
		if err := e.WaitQuiet(ctx); err != nil {
			printErr(stderr, "goxpdl %s: %v\n", name, err)
			code = exitUsage
		}
	} else {
		<-ctx.Done()
	}
	stopCtx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := e.Stop(stopCtx); err != nil {
		printErr(stderr, "goxpdl %s: stop: %v\n", name, err)
		code = exitUsage
	}
	stats := e.Stats()
	rep.EventsProcessed, rep.EventsFailed = stats.Scheduler.EventsProcessed, stats.Scheduler.EventsFailed
	rep.TimersFired = stats.Timers.Fired
	rep.Seconds = clock.Now().Sub(began).Seconds()
	if d := time.Duration(firstProgress.Load()); d > 0 {
		rep.FirstProgressMS = float64(d.Microseconds()) / 1000
	}
	counts, err := readInstances(context.WithoutCancel(ctx), e.Store(), instanceFilter{})
	if err != nil {
		printErr(stderr, "goxpdl %s: %v\n", name, err)
		return exitUsage
	}
	rep.Counts = counts.Counts
	if *asJSON {
		out, err := json.MarshalIndent(rep, "", "  ")
		if err != nil {
			printErr(stderr, "goxpdl %s: %v\n", name, err)
			return exitUsage
		}
		return writeOut(stdout, stderr, string(out)+"\n", code)
	}
	return writeOut(stdout, stderr, formatRecover(rep, counts), code)
}

func formatRecover(rep recoverReport, counts instancesReport) string {
	var b strings.Builder
	r := rep.Recovery
	fmt.Fprintf(&b, "recovered: %d events pending, %d waiting for a retry", r.PendingEvents, r.WaitingEvents)
	if len(r.ReapedNodes) > 0 {
		fmt.Fprintf(&b, "; took over nodes %s (%d claims)", strings.Join(r.ReapedNodes, ", "), r.ReleasedClaims)
	}
	if r.OverdueTimers {
		b.WriteString("; timers overdue")
	}
	fmt.Fprintf(&b, "\nran %.1f s: %d events processed (%d failed), %d timers fired",
		rep.Seconds, rep.EventsProcessed, rep.EventsFailed, rep.TimersFired)
	if rep.FirstProgressMS > 0 {
		fmt.Fprintf(&b, "; first progress %.0f ms after start", rep.FirstProgressMS)
	}
	b.WriteString("\n\n")
	counts.Instances = nil
	b.WriteString(formatInstances(counts))
	return b.String()
}
