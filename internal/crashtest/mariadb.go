package main

import (
	"context"
	"fmt"
	"os/exec"
	"strings"
	"time"
)

// Timing of a database restart.
const (
	dbPing        = 200 * time.Millisecond
	dbBackTimeout = time.Minute
)

// dbRestarts is the mysql-restart scenario: the nodes run, and
// -db-restarts times the database server is shut down, left down for
// -db-down and started again. The nodes are not restarted: they must
// carry on by themselves.
func (o *orchestra) dbRestarts(ctx context.Context) error {
	for i := 1; i <= o.cfg.nodes; i++ {
		if _, err := o.start(ctx, nodeID(i)); err != nil {
			return err
		}
	}
	for r := 0; r < o.cfg.dbRestarts; r++ {
		if done, err := o.loadDone(ctx); err != nil {
			return err
		} else if done {
			o.note("every instance finished after %d of %d database restarts; the rest were not made", r, o.cfg.dbRestarts)
			break
		}
		if err := o.wait(ctx, o.randDelay()); err != nil {
			return err
		}
		if done, err := o.loadDone(ctx); err != nil {
			return err
		} else if done {
			o.note("every instance finished after %d of %d database restarts; the rest were not made", r, o.cfg.dbRestarts)
			break
		}
		if err := o.restartDatabase(ctx); err != nil {
			return err
		}
	}
	return nil
}

// restartDatabase stops the database server, waits -db-down, starts it
// and waits until it answers; then it measures how long the nodes take
// to make progress, and checks that they are still alive. The server is
// started again whatever happens in between.
func (o *orchestra) restartDatabase(ctx context.Context) error {
	o.log.Info("stopping the database", "command", o.cfg.dbStop)
	downAt := clock.Now()
	if err := runCommand(ctx, o.cfg.dbStop); err != nil {
		return fmt.Errorf("stop the database: %w", err)
	}
	waitErr := pause(ctx, o.cfg.dbDown)
	// Start it even when interrupted: the server is shared.
	startCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), dbBackTimeout)
	defer cancel()
	o.log.Info("starting the database", "command", o.cfg.dbStart)
	if err := runCommand(startCtx, o.cfg.dbStart); err != nil {
		return fmt.Errorf("start the database again: %w", err)
	}
	if err := o.awaitDatabase(startCtx); err != nil {
		return err
	}
	if waitErr != nil {
		return waitErr
	}
	upAt := clock.Now()
	o.rep.DBRestarts++
	m, err := o.p.marks(ctx)
	if err != nil {
		return err
	}
	w := watch(ctx, upAt,
		condition{"progress", func(ctx context.Context) (bool, error) { return o.p.progressed(ctx, m) }},
		condition{"backlog", func(ctx context.Context) (bool, error) { return o.p.drained(ctx, m) }},
	)
	// Wait for both, unless the load ends first (nothing was left to do).
	loadDone := o.settle(ctx, w, upAt.Add(o.cfg.takeover))
	w.stop()
	if ctx.Err() != nil {
		return ctx.Err()
	}
	prog, progOK := w.result("progress")
	backlog, backlogOK := w.result("backlog")
	alive := 0
	for _, id := range sortedKeys(o.live) {
		if c := o.live[id]; !c.exited() {
			alive++
		} else if !c.killed {
			o.failure("node %s exited while the database restarted: %s; see %s", id, c.exitStatus(), c.logPath)
		}
	}
	o.rep.DBRestartLog = append(o.rep.DBRestartLog, dbRestartRecord{
		DownMS: float64(upAt.Sub(downAt).Microseconds()) / 1000, ProgressMS: ms(prog, progOK), NodesAlive: alive,
		Backlog: m.backlog, BacklogMS: ms(backlog, backlogOK),
	})
	switch {
	case loadDone && (!progOK || !backlogOK):
		o.note("the load ended %v after the database answered again, before the progress and backlog were measured", clock.Now().Sub(upAt).Round(time.Millisecond))
	case !progOK:
		o.failure("no progress within %v of the database answering again", o.cfg.takeover)
	}
	if !backlogOK && !loadDone {
		o.failure("the %d events unprocessed when the database came back were not all processed within %v", m.backlog, o.cfg.takeover)
	}
	o.log.Info("database back", "down", upAt.Sub(downAt).Round(time.Millisecond), "progress", progOK, "nodes alive", alive)
	// The nodes that died are started again, so that the load can end
	// and be verified.
	return o.reviveExited(ctx)
}

// awaitDatabase waits until the database answers a ping.
func (o *orchestra) awaitDatabase(ctx context.Context) error {
	sqlDB, err := o.db.DB()
	if err != nil {
		return err
	}
	for {
		if err := sqlDB.PingContext(ctx); err == nil {
			return nil
		}
		if err := pause(ctx, dbPing); err != nil {
			return fmt.Errorf("%w within %v: %w", errDatabaseDown, dbBackTimeout, err)
		}
	}
}

// runCommand runs a command line (split at white space).
func runCommand(ctx context.Context, line string) error {
	fields := strings.Fields(line)
	if len(fields) == 0 {
		return fmt.Errorf("empty command")
	}
	out, err := exec.CommandContext(ctx, fields[0], fields[1:]...).CombinedOutput()
	if err != nil {
		return fmt.Errorf("%s: %w: %s", line, err, strings.TrimSpace(string(out)))
	}
	return nil
}
