package main

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/cschleiden/go-workflows/backend"
	"github.com/cschleiden/go-workflows/backend/history"
	"github.com/cschleiden/go-workflows/backend/monoprocess"
	"github.com/cschleiden/go-workflows/backend/mysql"
	"github.com/cschleiden/go-workflows/backend/sqlite"
	"github.com/cschleiden/go-workflows/client"
	"github.com/cschleiden/go-workflows/core"
	"github.com/cschleiden/go-workflows/worker"
	"github.com/cschleiden/go-workflows/workflow"
)

// The go-workflows side of the workloads: the same shapes as peersXPDL,
// written as go-workflows workflows. Activities do nothing.

// gwNoop is the no-op activity.
func gwNoop(context.Context) (int, error) { return 0, nil }

// gwSeq10 is W1: ten activities, one after the other.
func gwSeq10(ctx workflow.Context) error {
	for range 10 {
		if _, err := workflow.ExecuteActivity[int](ctx, workflow.DefaultActivityOptions, gwNoop).Get(ctx); err != nil {
			return err
		}
	}
	return nil
}

// gwFan10 is W3: ten activities at once, then wait for all of them.
func gwFan10(ctx workflow.Context) error {
	return gwParallelActivities(ctx, 10)
}

func gwParallelActivities(ctx workflow.Context, n int) error {
	fs := make([]workflow.Future[int], n)
	for i := range fs {
		fs[i] = workflow.ExecuteActivity[int](ctx, workflow.DefaultActivityOptions, gwNoop)
	}
	for _, f := range fs {
		if _, err := f.Get(ctx); err != nil {
			return err
		}
	}
	return nil
}

// gwTree is W2's every level: depth > 0 starts treeFanOut trees one
// level down; depth 0 starts treeLeafFanOut leaves.
func gwTree(ctx workflow.Context, depth int) error {
	n, child := treeFanOut, any(gwTree)
	if depth == 0 {
		n, child = treeLeafFanOut, gwLeaf
	}
	fs := make([]workflow.Future[any], n)
	for i := range fs {
		fs[i] = workflow.CreateSubWorkflowInstance[any](ctx, workflow.DefaultSubWorkflowOptions, child, depth-1)
	}
	for _, f := range fs {
		if _, err := f.Get(ctx); err != nil {
			return err
		}
	}
	return nil
}

// gwLeaf is a leaf of W2's tree: treeActivities activities at once.
func gwLeaf(ctx workflow.Context, _ int) error {
	return gwParallelActivities(ctx, treeActivities)
}

// gwTask is W4's and W6's work item: go-workflows has none, so the
// workflow waits for a "claim" signal and then a "complete" signal. (The
// client sends "complete" only once "claim" has been processed: sent
// together, the second signal can arrive while the instance is locked
// by the task of the first, and the monoprocess wrapper's wake-up is
// then spent: the worker finds it only at its next 30 s poll.)
func gwTask(ctx workflow.Context) error {
	workflow.NewSignalChannel[string](ctx, "claim").Receive(ctx)
	workflow.NewSignalChannel[string](ctx, "complete").Receive(ctx)
	return nil
}

// gwTimer is W5: sleep until due.
func gwTimer(ctx workflow.Context, due time.Time) error {
	return workflow.Sleep(ctx, due.Sub(workflow.Now(ctx)))
}

// hooked wraps a go-workflows backend to see, after each commit of a
// workflow task, which instance it was for and in what state it left
// it: how the suite learns that an instance completed (or is waiting)
// without polling the database. It changes nothing of what is stored.
type hooked struct {
	backend.Backend
	onTask func(instanceID string, finished bool)
}

// CompleteWorkflowTask commits the task, then reports it.
func (h *hooked) CompleteWorkflowTask(ctx context.Context, task *backend.WorkflowTask, state core.WorkflowInstanceState,
	executed, activities, timers []*history.Event, events []*history.WorkflowEvent,
) error {
	if err := h.Backend.CompleteWorkflowTask(ctx, task, state, executed, activities, timers, events); err != nil {
		return err
	}
	if !task.WorkflowInstance.SubWorkflow() {
		h.onTask(task.WorkflowInstance.InstanceID, state == core.WorkflowInstanceStateFinished)
	}
	return nil
}

// gwRun is one measurement on go-workflows.
type gwRun struct {
	spec runSpec
	tr   *tracker
	c    *client.Client

	mu      sync.Mutex
	waiting map[string]chan struct{} // instance → closed once it waits
	seen    map[string]bool
}

// gwBackend opens spec's database as go-workflows' bench does: SQLite
// or MySQL behind the monoprocess wrapper (workers are told of new tasks
// at once rather than by polling), 100 MySQL connections.
func gwBackend(spec runSpec) (backend.Backend, error) {
	logger := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	opts := []backend.BackendOption{backend.WithLogger(logger)}
	if spec.WorkerName != "" {
		opts = append(opts, backend.WithWorkerName(spec.WorkerName))
	}
	switch spec.DB {
	case dbSQLite:
		// The constructor sets journal_mode=WAL before busy_timeout, so
		// it fails at once (a panic) on a file whose previous user is
		// still closing it: the tests run W6's two phases in one process.
		for attempt := 1; ; attempt++ {
			b, err := newSQLiteBackend(spec.SQLitePath, opts)
			if err == nil || attempt == 5 || !strings.Contains(err.Error(), "SQLITE_BUSY") {
				return b, err
			}
			<-clock.NewTimer(100 * time.Millisecond).C()
		}
	case dbMariaDB:
		if err := installMariaDBFix(); err != nil {
			return nil, err
		}
		m := spec.MySQL
		return monoprocess.NewMonoprocessBackend(mysql.NewMysqlBackend(m.Host, m.Port, m.User, m.Password, m.Database,
			mysql.WithBackendOptions(opts...),
			mysql.WithMySQLOptions(func(db *sql.DB) { db.SetMaxOpenConns(100) }))), nil
	}
	return nil, fmt.Errorf("unknown database %q", spec.DB)
}

// newSQLiteBackend opens go-workflows' SQLite backend, its panic as an
// error.
func newSQLiteBackend(path string, opts []backend.BackendOption) (b backend.Backend, err error) {
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("go-workflows: %v", p)
		}
	}()
	return monoprocess.NewMonoprocessBackend(sqlite.NewSqliteBackend(path, sqlite.WithBackendOptions(opts...))), nil
}

// runGoWF runs spec on go-workflows.
func runGoWF(ctx context.Context, spec runSpec) (res result, err error) {
	res = result{Engine: engineGoWF, Workload: spec.Workload, DB: spec.DB, N: spec.N, Load1: loadAverage()}
	// The backend constructors panic on errors (a failed migration).
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("go-workflows: %v", p)
		}
	}()
	inner, err := gwBackend(spec)
	if err != nil {
		return res, err
	}
	want := spec.N
	if spec.Workload == "W6" && spec.Phase == phaseRestart {
		want = 1
	}
	g := &gwRun{spec: spec, tr: newTracker(want), waiting: map[string]chan struct{}{}, seen: map[string]bool{}}
	b := &hooked{Backend: inner, onTask: g.onTask}
	defer func() {
		if cerr := b.Close(); cerr != nil && err == nil {
			err = cerr
		}
	}()
	w := worker.New(b, &worker.DefaultOptions)
	for _, wf := range []workflow.Workflow{gwSeq10, gwFan10, gwTree, gwLeaf, gwTask, gwTimer} {
		if err := w.RegisterWorkflow(wf); err != nil {
			return res, err
		}
	}
	if err := w.RegisterActivity(gwNoop); err != nil {
		return res, err
	}
	wctx, stop := context.WithCancel(ctx)
	defer func() {
		stop()
		if werr := w.WaitForCompletion(); werr != nil && err == nil {
			err = werr
		}
	}()
	if err := w.Start(wctx); err != nil {
		return res, err
	}
	g.c = client.New(b)
	switch spec.Workload {
	case "W1", "W1s", "W2", "W3":
		err = g.throughput(ctx, &res)
	case "W4":
		err = g.workItems(ctx, &res)
	case "W5":
		err = g.timers(ctx, &res)
	case "W6":
		err = g.parked(ctx, &res)
	default:
		err = fmt.Errorf("unknown workload %q", spec.Workload)
	}
	fillMemory(&res)
	return res, err
}

// onTask is the hook: a finished instance is done; each task that
// leaves an instance waiting is announced on its channel (the first one:
// the work item is offered; the next: the claim was processed).
func (g *gwRun) onTask(id string, finished bool) {
	g.tr.progress()
	if finished {
		g.tr.done(id)
		return
	}
	g.mu.Lock()
	first := !g.seen[id]
	g.seen[id] = true
	g.mu.Unlock()
	if first && g.spec.Workload == "W6" && g.spec.Phase == phasePark {
		g.tr.done(id)
	}
	if first && g.spec.Workload == "W5" {
		g.tr.armedOne(id)
	}
	select {
	case g.taskCh(id) <- struct{}{}:
	default:
	}
}

// taskCh carries a token for each committed task of instance id that
// left it waiting.
func (g *gwRun) taskCh(id string) chan struct{} {
	g.mu.Lock()
	defer g.mu.Unlock()
	ch, ok := g.waiting[id]
	if !ok {
		ch = make(chan struct{}, 4)
		g.waiting[id] = ch
	}
	return ch
}

// nextTask waits for the next committed task of instance id that left
// it waiting.
func (g *gwRun) nextTask(ctx context.Context, id string) error {
	tm := clock.NewTimer(stallLimit)
	defer tm.Stop()
	select {
	case <-g.taskCh(id):
		return nil
	case <-tm.C():
		return fmt.Errorf("instance %s: no workflow task in %v", id, stallLimit)
	case <-ctx.Done():
		return ctx.Err()
	}
}

// claimAndComplete is the go-workflows side of a work item's claim and
// completion: the "claim" signal, and once the workflow has processed it
// (as goxpdl's ClaimWorkItem returns once the claim is committed), the
// "complete" signal.
func (g *gwRun) claimAndComplete(ctx context.Context, id string) error {
	if err := g.c.SignalWorkflow(ctx, id, "claim", "u1"); err != nil {
		return err
	}
	if err := g.nextTask(ctx, id); err != nil {
		return err
	}
	return g.c.SignalWorkflow(ctx, id, "complete", "u1")
}

func instanceID(workload string, i int) string { return fmt.Sprintf("%s-%d", workload, i) }

// throughput runs W1, W1s, W2 or W3.
func (g *gwRun) throughput(ctx context.Context, res *result) error {
	wf, args := map[string]workflow.Workflow{"W1": gwSeq10, "W1s": gwSeq10, "W2": gwTree, "W3": gwFan10}[g.spec.Workload], []any(nil)
	if g.spec.Workload == "W2" {
		args = []any{2} // the root of a tree of depth 2
	}
	serial := g.spec.Workload == "W1s"
	c := g.spec.Clients
	if serial {
		c = 1
	}
	start := clock.Now()
	err := clients(ctx, g.spec.N, c, func(ctx context.Context, i int) error {
		id := instanceID(g.spec.Workload, i)
		began := clock.Now()
		if _, err := g.c.CreateWorkflowInstance(ctx, client.WorkflowInstanceOptions{InstanceID: id}, wf, args...); err != nil {
			return err
		}
		g.tr.started(id, began)
		if serial {
			return g.tr.awaitOne(ctx, id)
		}
		return nil
	})
	if err != nil {
		return err
	}
	lat, end, err := g.tr.wait(ctx)
	fillThroughput(res, g.spec.Workload, lat, end.Sub(start))
	return err
}

// workItems runs W4: start, wait until the instance waits, signal claim
// and complete; every tenth completion is signalled twice.
func (g *gwRun) workItems(ctx context.Context, res *result) error {
	var mu sync.Mutex
	start := clock.Now()
	err := clients(ctx, g.spec.N, g.spec.Clients, func(ctx context.Context, i int) error {
		id := instanceID("W4", i)
		if _, err := g.c.CreateWorkflowInstance(ctx, client.WorkflowInstanceOptions{InstanceID: id}, gwTask); err != nil {
			return err
		}
		if err := g.nextTask(ctx, id); err != nil { // offered
			return err
		}
		g.tr.started(id, clock.Now())
		if err := g.claimAndComplete(ctx, id); err != nil {
			return err
		}
		if i%10 == 0 {
			err := g.c.SignalWorkflow(ctx, id, "complete", "u1")
			mu.Lock()
			if err == nil {
				res.DupAccepted++
			} else {
				res.DupRejected++
			}
			mu.Unlock()
		}
		return g.tr.awaitOne(ctx, id)
	})
	if err != nil {
		return err
	}
	lat, end, err := g.tr.wait(ctx)
	elapsed := end.Sub(start)
	res.Seconds = round(elapsed.Seconds(), 3)
	res.Rate, res.RateUnit = round(float64(len(lat))/elapsed.Seconds(), 1), "round trips/s"
	res.Failed += res.N - len(lat)
	fillLatencies(res, lat)
	return err
}

// timers runs W5 (runTimers). An instance waits on its timer once its
// first workflow task, which schedules it, has committed.
func (g *gwRun) timers(ctx context.Context, res *result) error {
	lat, end, due, err := runTimers(ctx, g.spec, g.tr, func(ctx context.Context, i int, pilot bool, due time.Time) error {
		id := instanceID("W5", i)
		if pilot {
			id = instanceID("W5pilot", i)
		}
		if _, err := g.c.CreateWorkflowInstance(ctx, client.WorkflowInstanceOptions{InstanceID: id}, gwTimer, due); err != nil {
			return err
		}
		g.tr.started(id, due)
		return nil
	}, nil)
	if err != nil {
		return err
	}
	fillTimers(res, lat, end.Sub(due))
	return nil
}

// parked runs a phase of W6 (see goxpdlRun.parked).
func (g *gwRun) parked(ctx context.Context, res *result) error {
	if g.spec.Phase == phasePark {
		start := clock.Now()
		err := clients(ctx, g.spec.N, g.spec.Clients, func(ctx context.Context, i int) error {
			id := instanceID("W6", i)
			began := clock.Now()
			if _, err := g.c.CreateWorkflowInstance(ctx, client.WorkflowInstanceOptions{InstanceID: id}, gwTask); err != nil {
				return err
			}
			g.tr.started(id, began)
			return nil
		})
		if err != nil {
			return err
		}
		lat, end, err := g.tr.wait(ctx)
		if err != nil {
			return err
		}
		res.Seconds = round(end.Sub(start).Seconds(), 3)
		res.Rate, res.RateUnit = round(float64(len(lat))/end.Sub(start).Seconds(), 1), "parked/s"
		res.DBBytes, err = databaseBytes(ctx, g.spec)
		return err
	}
	id := instanceID("W6", 0)
	g.tr.started(id, programStart)
	if err := g.claimAndComplete(ctx, id); err != nil {
		return err
	}
	lat, _, err := g.tr.wait(ctx)
	if err != nil {
		return err
	}
	if len(lat) == 0 {
		return errors.New("no instance completed")
	}
	res.RestartMs = ms(lat[0])
	res.Rate, res.RateUnit = res.RestartMs, "ms"
	return nil
}
