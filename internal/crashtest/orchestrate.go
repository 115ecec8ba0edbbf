package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"os"
	"slices"
	"time"

	"gorm.io/gorm"

	"github.com/goxpdl/goxpdl/store/gormstore"
)

// Timing of the orchestrator's own loops.
const (
	statusPoll   = 250 * time.Millisecond
	exitPoll     = 100 * time.Millisecond
	driverPause  = 50 * time.Millisecond
	childStop    = nodeStopTimeout + 5*time.Second
	maxSelfExits = 10
)

// orchestra runs one scenario: it starts, kills, restarts and stops the
// nodes, and measures what follows.
type orchestra struct {
	began time.Time // when the scenario started
	cfg   config
	log   *slog.Logger
	load  *load
	dbs   databases
	work  string
	exe   string
	db    *gorm.DB
	p     probe
	rng   *rand.Rand
	rep   *Report

	live      map[string]*child // the current process of each node
	runs      map[string]int    // processes started, by node
	watchers  map[*child]runWatch
	pending   map[string]int // kills of a node not yet followed by progress
	selfExits int
}

// runWatch measures one run of a node from its start.
type runWatch struct {
	m marks
	w *watcher
}

// runScenario runs cfg's scenario and verifies the result. An error is a
// set-up problem (or an interrupt), not a finding.
func runScenario(ctx context.Context, cfg config, log *slog.Logger) (*Report, error) {
	began := clock.Now()
	l, err := readLoad(cfg.defs)
	if err != nil {
		return nil, err
	}
	seed := cfg.seed
	if seed == 0 {
		seed = uint64(clock.Now().UnixNano())
	}
	work := cfg.workDir
	if work == "" {
		if work, err = os.MkdirTemp("", "goxpdl-crashtest-"); err != nil {
			return nil, err
		}
	} else if err := os.MkdirAll(work, 0o755); err != nil {
		return nil, err
	}
	exe, err := os.Executable()
	if err != nil {
		return nil, fmt.Errorf("find my own binary to start the nodes: %w", err)
	}
	dbs, err := prepareDatabases(ctx, cfg, work)
	if err != nil {
		return nil, err
	}
	db, err := openDB(dbs.engine)
	if err != nil {
		return nil, err
	}
	defer closeDB(db)
	// The schema exists before any node starts, so that the nodes'
	// migrations (several at once in multi) have nothing to do.
	st, err := gormstore.New(db)
	if err != nil {
		return nil, err
	}
	if err := st.Migrate(ctx); err != nil {
		return nil, err
	}
	jdb, err := openDB(dbs.journal)
	if err != nil {
		return nil, err
	}
	defer closeDB(jdb)
	if err := migrateJournal(jdb); err != nil {
		return nil, err
	}

	o := &orchestra{
		began: began, cfg: cfg, log: log, load: l, dbs: dbs, work: work, exe: exe, db: db, p: probe{db: db},
		rng: rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15)),
		rep: &Report{
			Scenario: cfg.scenario, Database: dbs.about, WorkDir: work, Seed: seed, Nodes: cfg.nodes,
			Instances: cfg.instances, Failures: []string{}, Source: sourceState(ctx),
			MachineBefore: readMachine(work),
		},
		live: make(map[string]*child), runs: make(map[string]int), watchers: make(map[*child]runWatch),
		pending: make(map[string]int),
	}
	defer o.stopAll(context.WithoutCancel(ctx))
	log.Info("crash test starting", "scenario", cfg.scenario, "database", dbs.about, "instances", cfg.instances,
		"kills", cfg.kills, "nodes", cfg.nodes, "seed", seed, "work", work)

	switch cfg.scenario {
	case scenarioMulti, scenarioPostgresMulti:
		err = o.multi(ctx)
	case scenarioMySQLRestart:
		err = o.dbRestarts(ctx)
	default:
		err = o.kills(ctx)
	}
	if err == nil {
		err = o.final(ctx)
	}
	o.stopAll(context.WithoutCancel(ctx))
	if err != nil {
		return nil, err
	}
	o.rep.MachineAfter = readMachine(work)
	log.Info("verifying")
	if o.rep.Verification, err = verify(ctx, db, jdb, l, cfg.instances); err != nil {
		return nil, err
	}
	if o.rep.NodeLogs, err = summarizeLogs(work); err != nil {
		return nil, fmt.Errorf("summarize the node logs: %w", err)
	}
	if o.rep.NodeCounters, o.rep.NodeCounterRuns, err = nodeCounters(work); err != nil {
		return nil, fmt.Errorf("total the node counters: %w", err)
	}
	o.rep.ElapsedS = clock.Now().Sub(began).Seconds()
	o.rep.finish()
	return o.rep, nil
}

// nodeID names the i-th node, from 1.
func nodeID(i int) string { return fmt.Sprintf("node-%d", i) }

// seeder is the node that deploys and starts the instances.
var seeder = nodeID(1)

// start starts a process of node id, and a watcher of its progress.
func (o *orchestra) start(ctx context.Context, id string) (*child, error) {
	m, err := o.p.marks(ctx)
	if err != nil {
		return nil, err
	}
	nc := nodeConfig{
		db: o.dbs.engine, journal: o.dbs.journal, id: id, defs: o.cfg.defs, appSleep: o.cfg.appSleep,
		lease: o.cfg.lease, driverPause: driverPause, readyFD: readyFD, seedBatch: o.cfg.seedBatch,
	}
	if id == seeder {
		nc.instances = o.cfg.instances
	}
	o.runs[id]++
	c, err := startChild(o.exe, nodeArgs(nc), id, o.runs[id], o.work)
	if err != nil {
		return nil, err
	}
	o.live[id] = c
	w := watch(ctx, c.started,
		condition{"progress", func(ctx context.Context) (bool, error) { return o.p.progressed(ctx, m) }},
		condition{"backlog", func(ctx context.Context) (bool, error) { return o.p.drained(ctx, m) }},
	)
	o.watchers[c] = runWatch{m: m, w: w}
	o.log.Info("node started", "node", id, "run", c.run, "pid", c.cmd.Process.Pid, "backlog", m.backlog)
	return c, nil
}

// end records a run of a node that is over.
func (o *orchestra) end(ctx context.Context, c *child, how string) {
	rw, ok := o.watchers[c]
	if !ok {
		return // recorded already
	}
	delete(o.watchers, c)
	rw.w.stop()
	prog, progOK := rw.w.result("progress")
	backlog, backlogOK := rw.w.result("backlog")
	rec := runRecord{
		Node: c.id, Run: c.run, Backlog: rw.m.backlog, RanMS: float64(clock.Now().Sub(c.started).Microseconds()) / 1000,
		End: how, ProgressMS: ms(prog, progOK), BacklogMS: ms(backlog, backlogOK),
	}
	select {
	case <-c.ready:
		rec.ReadyMS = ms(c.readyAt.Sub(c.started), c.isReady)
	default:
	}
	if !backlogOK && rw.m.backlog > 0 {
		var err error
		if rec.BacklogLeft, rec.Leftovers, err = o.p.leftovers(ctx, rw.m); err != nil {
			o.log.Warn("cannot describe the left-over events", "err", err)
		}
	}
	o.rep.Runs = append(o.rep.Runs, rec)
	if progOK {
		o.rep.KillsSurvived += o.pending[c.id]
		o.pending[c.id] = 0
	}
}

// kill kills a node's process.
func (o *orchestra) kill(ctx context.Context, c *child) {
	c.kill()
	o.rep.Kills++
	o.end(ctx, c, "killed")
	o.log.Info("node killed", "node", c.id, "run", c.run, "after", clock.Now().Sub(c.started).Round(time.Millisecond))
}

// failure notes something that went wrong while the load ran.
func (o *orchestra) failure(format string, args ...any) {
	msg := fmt.Sprintf(format, args...)
	o.rep.Failures = append(o.rep.Failures, msg)
	o.log.Warn("failure", "what", msg)
}

// note notes something worth knowing that is no failure.
func (o *orchestra) note(format string, args ...any) {
	msg := fmt.Sprintf(format, args...)
	o.rep.Notes = append(o.rep.Notes, msg)
	o.log.Info("note", "what", msg)
}

// reviveExited restarts the nodes whose process ended by itself; each
// such exit is a failure.
func (o *orchestra) reviveExited(ctx context.Context) error {
	for _, id := range sortedKeys(o.live) {
		c := o.live[id]
		if !c.exited() || c.killed {
			continue
		}
		o.selfExits++
		o.end(ctx, c, "exited by itself: "+c.exitStatus())
		o.failure("node %s (run %d) exited by itself after %v: %s; see %s", id, c.run,
			clock.Now().Sub(c.started).Round(time.Millisecond), c.exitStatus(), c.logPath)
		if o.selfExits > maxSelfExits {
			return fmt.Errorf("nodes exited by themselves %d times; giving up (see %s)", o.selfExits, o.work)
		}
		if _, err := o.start(ctx, id); err != nil {
			return err
		}
	}
	return nil
}

// wait waits for d, reviving nodes that exit by themselves meanwhile.
func (o *orchestra) wait(ctx context.Context, d time.Duration) error {
	deadline := clock.Now().Add(d)
	for {
		if err := o.reviveExited(ctx); err != nil {
			return err
		}
		left := deadline.Sub(clock.Now())
		if left <= 0 {
			return nil
		}
		if err := pause(ctx, min(left, exitPoll)); err != nil {
			return err
		}
	}
}

// randDelay is a random run time between -kill-min and -kill-max.
func (o *orchestra) randDelay() time.Duration {
	span := o.cfg.killMax - o.cfg.killMin
	if span <= 0 {
		return o.cfg.killMin
	}
	return o.cfg.killMin + time.Duration(o.rng.Int64N(int64(span)+1))
}

// loadDone reports whether every instance asked for exists and finished.
func (o *orchestra) loadDone(ctx context.Context) (bool, error) {
	s, err := o.p.status(ctx)
	return s.done(o.cfg.instances), err
}

// kills is the sqlite and mysql scenario: one node, killed -kills times
// at random moments and restarted each time.
func (o *orchestra) kills(ctx context.Context) error {
	for k := 0; k < o.cfg.kills; k++ {
		if done, err := o.loadDone(ctx); err != nil {
			return err
		} else if done {
			o.note("every instance finished after %d of %d kills; the rest were not made (more -instances or a shorter -kill-max make the load outlast them)", k, o.cfg.kills)
			break
		}
		if c := o.live[seeder]; c == nil || c.exited() {
			if _, err := o.start(ctx, seeder); err != nil {
				return err
			}
		}
		if k == 0 && o.cfg.killWhenSeeded {
			if err := o.waitSeeded(ctx); err != nil {
				return err
			}
		}
		if err := o.wait(ctx, o.randDelay()); err != nil {
			return err
		}
		o.kill(ctx, o.live[seeder])
		o.pending[seeder]++
	}
	return nil
}

// waitSeeded waits until every root instance asked for exists, and notes
// how many instances were then unfinished.
func (o *orchestra) waitSeeded(ctx context.Context) error {
	for {
		s, err := o.p.status(ctx)
		if err != nil {
			return err
		}
		if s.Roots >= int64(o.cfg.instances) {
			o.note("every root instance existed %v after the start; %d instances were unfinished then, %d events unprocessed",
				clock.Now().Sub(o.began).Round(time.Millisecond), s.Unfinished, s.Unprocessed)
			return nil
		}
		if err := o.wait(ctx, statusPoll); err != nil {
			return err
		}
	}
}

// multi is the multi scenario: -nodes nodes; -kills times a random node is
// killed, the others must take its work over, and it is restarted, except
// after the last kill.
func (o *orchestra) multi(ctx context.Context) error {
	for i := 1; i <= o.cfg.nodes; i++ {
		if _, err := o.start(ctx, nodeID(i)); err != nil {
			return err
		}
	}
	for k := 0; k < o.cfg.kills; k++ {
		if done, err := o.loadDone(ctx); err != nil {
			return err
		} else if done {
			o.note("every instance finished after %d of %d kills; the rest were not made", k, o.cfg.kills)
			break
		}
		if err := o.wait(ctx, o.randDelay()); err != nil {
			return err
		}
		last := k == o.cfg.kills-1
		ids := sortedKeys(o.live)
		if last {
			// The last victim stays down: it may not be the seeder
			// while instances are still to be started.
			s, err := o.p.status(ctx)
			if err != nil {
				return err
			}
			if s.Roots < int64(o.cfg.instances) {
				ids = slices.DeleteFunc(ids, func(id string) bool { return id == seeder })
			}
		}
		victim := o.live[ids[o.rng.IntN(len(ids))]]
		if err := o.takeover(ctx, victim); err != nil {
			return err
		}
		if !last {
			if _, err := o.start(ctx, victim.id); err != nil {
				return err
			}
		} else {
			delete(o.live, victim.id)
			o.note("%s stays down after the last kill; the other nodes finish the load", victim.id)
		}
	}
	return nil
}

// takeover kills victim and measures how long the other nodes take to
// move its instances on and to process the events it had claimed.
func (o *orchestra) takeover(ctx context.Context, victim *child) error {
	o.kill(ctx, victim)
	killedAt := clock.Now()
	events, instances, err := o.p.claimed(ctx, victim.id)
	if err != nil {
		return err
	}
	m, err := o.p.marks(ctx)
	if err != nil {
		return err
	}
	conds := []condition{{"processed", func(ctx context.Context) (bool, error) { return o.p.processed(ctx, events) }}}
	if len(instances) > 0 {
		conds = append(conds, condition{"progress", func(ctx context.Context) (bool, error) {
			return o.p.instancesProgressed(ctx, m, instances)
		}})
	}
	w := watch(ctx, killedAt, conds...)
	o.settle(ctx, w, killedAt.Add(o.cfg.takeover))
	w.stop()
	if ctx.Err() != nil {
		return ctx.Err()
	}
	prog, progOK := w.result("progress")
	done, doneOK := w.result("processed")
	o.rep.Takeovers = append(o.rep.Takeovers, takeoverRecord{
		Node: victim.id, ClaimedEvents: len(events), Instances: len(instances),
		ProgressMS: ms(prog, progOK), ProcessedMS: ms(done, doneOK),
	})
	if !doneOK {
		o.failure("the %d events %s had claimed were not all processed by the other nodes within %v of its kill", len(events), victim.id, o.cfg.takeover)
		return nil
	}
	o.rep.KillsSurvived++
	o.log.Info("taken over", "node", victim.id, "claimed", len(events), "after", done.Round(time.Millisecond))
	return nil
}

// settle waits until w has seen everything it watches for, the load is
// done, ctx ends or deadline passes. It reports whether the load was done
// before w had seen everything.
func (o *orchestra) settle(ctx context.Context, w *watcher, deadline time.Time) (loadDone bool) {
	for clock.Now().Before(deadline) {
		select {
		case <-w.finished():
			return false
		default:
		}
		if done, err := o.loadDone(ctx); err == nil && done {
			// What w waits for may hold now too: let it see so.
			t := clock.NewTimer(settleGrace)
			defer t.Stop()
			select {
			case <-w.finished():
			case <-t.C():
			case <-ctx.Done():
			}
			return true
		}
		if pause(ctx, statusPoll) != nil {
			return false
		}
	}
	return false
}

// settleGrace is how long settle lets a watcher catch up once the load is
// done: a few of its polls.
const settleGrace = 10 * watchPoll

// final lets the live nodes (or node-1 when none is) run until every
// instance is finished, or -final-timeout passes, and stops them.
func (o *orchestra) final(ctx context.Context) error {
	began := clock.Now()
	done, err := o.loadDone(ctx)
	if err != nil {
		return err
	}
	running := slices.ContainsFunc(sortedKeys(o.live), func(id string) bool { return !o.live[id].exited() })
	if !done && !running {
		if _, err := o.start(ctx, seeder); err != nil {
			return err
		}
	}
	deadline := began.Add(o.cfg.final)
	// A load that goes on moving is given until the deadline; one that
	// stops moving for -stall-timeout has hung.
	mark, err := o.p.marks(ctx)
	if err != nil {
		return err
	}
	lastProgress := clock.Now()
	var s loadStatus
	for {
		if s, err = o.p.status(ctx); err != nil {
			o.log.Warn("final run: status query failed", "err", err)
		} else if s.done(o.cfg.instances) {
			o.rep.Final.ReachedIdle = true
			// Every kill was recovered from, whether or not work was
			// left after it.
			for id, n := range o.pending {
				o.rep.KillsSurvived += n
				o.pending[id] = 0
			}
			break
		}
		if moved, err := o.p.progressed(ctx, mark); err != nil {
			o.log.Warn("final run: progress query failed", "err", err)
		} else if moved {
			lastProgress = clock.Now()
			if mark, err = o.p.marks(ctx); err != nil {
				o.log.Warn("final run: progress query failed", "err", err)
			}
		}
		if stalled := clock.Now().Sub(lastProgress); stalled > o.cfg.stall {
			o.failure("the final run stopped making progress: no state change for %v; %d roots of %d, %d instances unfinished, %d events unprocessed",
				stalled.Round(time.Second), s.Roots, o.cfg.instances, s.Unfinished, s.Unprocessed)
			o.dumpStacks(ctx)
			break
		}
		if clock.Now().After(deadline) {
			o.failure("the final run did not finish the load within %v (it was still making progress): %d roots of %d, %d instances unfinished, %d events unprocessed",
				o.cfg.final, s.Roots, o.cfg.instances, s.Unfinished, s.Unprocessed)
			o.dumpStacks(ctx)
			break
		}
		if err := o.wait(ctx, statusPoll); err != nil {
			return err
		}
	}
	o.rep.Final.DurationMS = float64(clock.Now().Sub(began).Microseconds()) / 1000
	o.rep.Final.Status = s
	o.log.Info("final run over", "idle", o.rep.Final.ReachedIdle, "after", clock.Now().Sub(began).Round(time.Millisecond))
	return nil
}

// stackDumpTimeout bounds the wait for a node to write its goroutine dump
// and exit.
const stackDumpTimeout = 10 * time.Second

// dumpStacks makes every live node write its goroutines' stacks to its
// log and exit (SIGQUIT), and puts a summary of what they were waiting
// for in the report: a load that does not finish is a hang or a
// slowdown, and the stacks tell which.
func (o *orchestra) dumpStacks(ctx context.Context) {
	for _, id := range sortedKeys(o.live) {
		c := o.live[id]
		if !c.dumpStacks(stackDumpTimeout) {
			continue
		}
		o.end(ctx, c, "stopped with a goroutine dump (SIGQUIT)")
		delete(o.live, id)
		groups, err := summarizeStacks(c.logPath)
		if err != nil {
			o.log.Warn("cannot read the goroutine dump", "log", c.logPath, "err", err)
			continue
		}
		o.rep.Stacks = append(o.rep.Stacks, stackDump{Node: c.id, Run: c.run, Log: c.logPath, Groups: groups})
	}
}

// stopAll stops every live node gracefully.
func (o *orchestra) stopAll(ctx context.Context) {
	for _, id := range sortedKeys(o.live) {
		c := o.live[id]
		if err := c.stop(childStop); err != nil {
			o.failure("%v", err)
		}
		o.end(ctx, c, "stopped")
		delete(o.live, id)
	}
}

// errDatabaseDown is returned when the database does not answer again
// after a restart.
var errDatabaseDown = errors.New("the database did not come back")
