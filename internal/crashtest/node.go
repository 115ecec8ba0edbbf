package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"slices"
	"sync"
	"syscall"
	"time"

	"gorm.io/gorm"

	"github.com/goxpdl/goxpdl/engine"
)

// nodeConfig is the command line of "crashtest node", the engine process
// the orchestrator starts and kills.
type nodeConfig struct {
	db, journal, id, defs string
	instances             int
	// seedBatch is how many instances the seeder starts per transaction.
	seedBatch       int
	appSleep, lease time.Duration
	driverPause     time.Duration
	// readyFD, when not 0, is a file descriptor (a pipe from the
	// orchestrator) that gets one byte once the node has started.
	readyFD int
}

// nodeArgs is the command line that starts a node with cfg.
func nodeArgs(cfg nodeConfig) []string {
	return []string{
		"node", "-db", cfg.db, "-journal", cfg.journal, "-node-id", cfg.id, "-defs", cfg.defs,
		"-instances", fmt.Sprint(cfg.instances), "-seed-batch", fmt.Sprint(cfg.seedBatch), "-app-sleep", cfg.appSleep.String(),
		"-lease", cfg.lease.String(), "-driver-pause", cfg.driverPause.String(), "-ready-fd", fmt.Sprint(cfg.readyFD),
	}
}

// nodeMain runs a node until SIGTERM or SIGINT. Its logs go to stderr,
// which the orchestrator keeps in the run's log file.
func nodeMain(args []string, stderr io.Writer) int {
	var cfg nodeConfig
	fset := flag.NewFlagSet("crashtest node", flag.ContinueOnError)
	fset.SetOutput(stderr)
	fset.StringVar(&cfg.db, "db", "", "the engine's database: sqlite:PATH, mysql://DSN or postgres://URL")
	fset.StringVar(&cfg.journal, "journal", "", "the application-call journal's database, in the same form")
	fset.StringVar(&cfg.id, "node-id", "node-1", "engine.Config.NodeID")
	fset.StringVar(&cfg.defs, "defs", "testdata/crash", "folder of the XPDL packages")
	fset.IntVar(&cfg.instances, "instances", 0, "deploy the packages and start instances until this many exist (0: neither)")
	fset.IntVar(&cfg.seedBatch, "seed-batch", 1, "instances started per transaction (StartProcessTx in one of the node's own)")
	fset.DurationVar(&cfg.appSleep, "app-sleep", 2*time.Millisecond, "how long each application call sleeps")
	fset.DurationVar(&cfg.lease, "lease", 0, "engine.Config.EventLease (0: the engine's default)")
	fset.DurationVar(&cfg.driverPause, "driver-pause", 50*time.Millisecond, "pause between the driver's rounds over the open work items")
	fset.IntVar(&cfg.readyFD, "ready-fd", 0, "file descriptor to write one byte to once started (0: none)")
	if err := fset.Parse(args); err != nil {
		return exitUsage
	}
	if cfg.db == "" || cfg.journal == "" || fset.NArg() != 0 {
		say(stderr, "usage: crashtest node -db DSN -journal DSN [-node-id ID] [-instances N] ...\n")
		return exitUsage
	}
	// Each run of a node has a log file of its own; the engine names the
	// node in the lines where it matters.
	log := slog.New(slog.NewTextHandler(stderr, nil))
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, os.Interrupt)
	defer stop()
	if err := runNode(ctx, cfg, log); err != nil {
		log.Error("node failed", "err", err)
		return exitFail
	}
	return exitOK
}

// nodeStopTimeout bounds the graceful stop of a node's engine.
const nodeStopTimeout = 10 * time.Second

// runNode runs an engine with the journaling application, a seeder (when
// cfg.instances > 0) and a work-item driver until ctx ends, then stops
// them and the engine.
func runNode(ctx context.Context, cfg nodeConfig, log *slog.Logger) error {
	l, err := readLoad(cfg.defs)
	if err != nil {
		return err
	}
	db, err := openDB(cfg.db)
	if err != nil {
		return err
	}
	defer closeDB(db)
	// The journal has a pool of its own: its writes commit at once,
	// whatever the engine's transaction does.
	jdb, err := openDB(cfg.journal)
	if err != nil {
		return err
	}
	defer closeDB(jdb)

	e, err := engine.New(engine.Config{DB: db, NodeID: cfg.id, Logger: log, EventLease: cfg.lease})
	if err != nil {
		return err
	}
	j := &journal{db: jdb, node: cfg.id, sleep: cfg.appSleep}
	e.RegisterApplication(appID, j.call)
	// Cancelling the engine's ctx is a hard stop; it outlives ctx so that
	// Stop can drain.
	engineCtx, hardStop := context.WithCancel(context.Background())
	defer hardStop()
	if err := e.Start(engineCtx); err != nil {
		return fmt.Errorf("start the engine: %w", err)
	}
	log.Info("node started")
	if cfg.readyFD != 0 {
		// The orchestrator sends SIGTERM only after this: a signal before
		// signal.NotifyContext would kill the node instead of stopping it.
		ready := os.NewFile(uintptr(cfg.readyFD), "ready")
		_, err := ready.Write([]byte{1})
		if err = errors.Join(err, ready.Close()); err != nil {
			log.Warn("cannot tell the orchestrator that the node started", "err", err)
		}
	}

	var wg sync.WaitGroup
	if cfg.instances > 0 {
		wg.Go(func() { seed(ctx, e, db, l, cfg.instances, max(cfg.seedBatch, 1), log) })
	}
	d := &driver{e: e, pause: cfg.driverPause, user: "crashdriver", log: log}
	wg.Go(func() { d.run(ctx) })
	<-ctx.Done()
	wg.Wait()
	stopCtx, cancel := context.WithTimeout(context.Background(), nodeStopTimeout)
	defer cancel()
	if err := e.Stop(stopCtx); err != nil {
		return fmt.Errorf("stop the engine: %w", err)
	}
	// The orchestrator totals these (logs.go, nodeCounters).
	st := e.Stats()
	log.Info(stoppedMessage,
		"events_processed", st.Scheduler.EventsProcessed, "events_failed", st.Scheduler.EventsFailed,
		"events_duplicate", st.Scheduler.EventsDuplicate, "events_dropped", st.Scheduler.EventsDropped,
		"events_polled", st.Bus.Polled, "conflicts", st.Conflicts,
		"workitems_completed", d.completed.Load(), "workitems_refused", d.refused.Load(), "workitems_failed", d.failed.Load())
	return nil
}

// stoppedMessage is the message of a node's last log line, which carries
// its counters.
const stoppedMessage = "node stopped"

// retryPause is how long the seeder waits after a failure (the database
// may be restarting) before it tries again.
const retryPause = 200 * time.Millisecond

// seed deploys the packages that are not deployed yet and starts root
// instances, alternating between the load's main processes, until n
// exist, batch of them per transaction. It counts what exists first, so
// that a node killed while seeding is followed by one that carries on.
//
// A start that fails may have committed all the same (the connection
// broke after the server committed), and StartOptions has no idempotency
// key: so after a failure the seeder counts again instead of starting
// the same instances twice, and logs a warning when the failed batch had
// committed.
func seed(ctx context.Context, e *engine.Engine, db *gorm.DB, l *load, n, batch int, log *slog.Logger) {
	have, ok := prepareSeed(ctx, e, l, log)
	if !ok {
		return
	}
	if have < n {
		log.Info("seed: starting instances", "have", have, "want", n, "per_transaction", batch)
	}
	for have < n {
		k := min(batch, n-have)
		err := startBatch(ctx, e, db, l, have, k)
		switch {
		case err == nil:
			have += k
			continue
		case ctx.Err() != nil:
			return
		}
		log.Warn("seed: start failed; retrying", "instances", k, "err", err)
		for {
			if pause(ctx, retryPause) != nil {
				return
			}
			got, cerr := countRoots(ctx, e)
			if cerr != nil {
				continue
			}
			if got > have {
				log.Warn("seed: a start that returned an error had committed", "err", err, "have", got)
			}
			have = got
			break
		}
	}
	log.Info("seed: done", "instances", n)
}

// startBatch starts k root instances, the first being the have-th of the
// load: one at a time with StartProcess, or several in one transaction
// of the node's own with StartProcessTx.
func startBatch(ctx context.Context, e *engine.Engine, db *gorm.DB, l *load, have, k int) error {
	if k == 1 {
		root := l.roots[have%len(l.roots)]
		_, err := e.StartProcess(ctx, engine.StartOptions{Package: root.Package, Process: root.Process, Actor: "crashtest"})
		return err
	}
	return db.WithContext(ctx).Transaction(func(tx *gorm.DB) error {
		for i := range k {
			root := l.roots[(have+i)%len(l.roots)]
			if _, err := e.StartProcessTx(ctx, tx, engine.StartOptions{Package: root.Package, Process: root.Process, Actor: "crashtest"}); err != nil {
				return err
			}
		}
		return nil
	})
}

// prepareSeed deploys what is missing and counts the root instances,
// retrying until it can or ctx ends (ok false).
func prepareSeed(ctx context.Context, e *engine.Engine, l *load, log *slog.Logger) (have int, ok bool) {
	for {
		err := deployMissing(ctx, e, l)
		if err == nil {
			if have, err = countRoots(ctx, e); err == nil {
				return have, true
			}
		}
		if ctx.Err() != nil {
			return 0, false
		}
		log.Warn("seed: deploy or count failed; retrying", "err", err)
		if pause(ctx, retryPause) != nil {
			return 0, false
		}
	}
}

// deployMissing deploys the load's packages that have no deployment yet.
func deployMissing(ctx context.Context, e *engine.Engine, l *load) error {
	deps, err := e.Deployments(ctx)
	if err != nil {
		return fmt.Errorf("list deployments: %w", err)
	}
	for i, f := range l.files {
		if slices.ContainsFunc(deps, func(d engine.Deployment) bool { return d.PackageID == l.packages[i] }) {
			continue
		}
		if _, err := e.DeployFile(ctx, f); err != nil {
			return fmt.Errorf("deploy %s: %w", f, err)
		}
	}
	return nil
}

// countRoots counts the process instances that are no subflow's.
func countRoots(ctx context.Context, e *engine.Engine) (int, error) {
	var n int
	f := engine.InstanceFilter{Limit: 1000}
	for {
		page, err := e.Instances(ctx, f)
		if err != nil {
			return 0, fmt.Errorf("list instances: %w", err)
		}
		for _, pi := range page.Instances {
			if pi.Parent == 0 {
				n++
			}
		}
		if page.Next == 0 {
			return n, nil
		}
		f.After = page.Next
	}
}

// expectedRefusal reports whether a completion was refused because the
// item or its instance moved on already: after a restart, or when two
// nodes' drivers race for one item. Those are not failures.
// ErrNotAllowed is such a refusal too: every user may complete every
// item (resource.Anyone), so it only says that another driver changed
// the item first.
func expectedRefusal(err error) bool {
	return errors.Is(err, engine.ErrIllegalState) || errors.Is(err, engine.ErrInstanceFinished) ||
		errors.Is(err, engine.ErrNotFound) || errors.Is(err, engine.ErrNotAllowed)
}
