package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"gorm.io/gorm"

	"github.com/goxpdl/goxpdl/engine"
	"github.com/goxpdl/goxpdl/store/gormstore"
)

// peersXPDL is the goxpdl side of the workloads, one XPDL 2.2 package:
//
//	seq10   W1: ten no-op activities in sequence
//	fan10   W3: a parallel split into ten no-op activities and a parallel join
//	root    W2: go-workflows' tree, depth 2, fan-out 2, leaf fan-out 2,
//	mid1,   two activities per leaf: root starts two mid1 subflows, each
//	mid0,   two mid0, each two leaf; a leaf runs two no-op activities in
//	leaf    parallel (15 process instances, 16 activities per tree)
//	task    W4 and W6: one user task offered to the role clerk
//
// The no-op activities call the application "noop", for which nothing is
// registered: the engine runs it as a no-op (NoOpUnboundApplications), so
// the figures are the engine's own cost.
func peersXPDL() []byte {
	var b strings.Builder
	b.WriteString(`<?xml version="1.0" encoding="UTF-8"?>
<Package xmlns="http://www.wfmc.org/2009/XPDL2.2" Id="peers" Name="peer benchmarks">
  <PackageHeader><XPDLVersion>2.2</XPDLVersion><Vendor>goxpdl</Vendor><Created>2026-11-27</Created></PackageHeader>
  <Participants><Participant Id="clerk"><ParticipantType Type="ROLE"/></Participant></Participants>
  <Applications><Application Id="noop"/></Applications>
  <WorkflowProcesses>
`)
	noop := func(id string) string {
		return `<Activity Id="` + id + `"><Implementation><Task><TaskApplication Id="noop"/></Task></Implementation></Activity>`
	}
	sub := func(id, proc string) string {
		return `<Activity Id="` + id + `"><Implementation><SubFlow Id="` + proc + `" Execution="SYNCHR"/></Implementation></Activity>`
	}
	// parallel writes a process that splits into the given activities
	// and joins them.
	parallel := func(id string, acts []string) {
		fmt.Fprintf(&b, `    <WorkflowProcess Id="%s"><Activities><Activity Id="Split"><Route GatewayType="Parallel"/></Activity>`, id)
		for _, a := range acts {
			b.WriteString(a)
		}
		b.WriteString(`<Activity Id="Join"><Route GatewayType="Parallel"/></Activity></Activities><Transitions>`)
		for i := range acts {
			fmt.Fprintf(&b, `<Transition Id="s%d" From="Split" To="B%d"/><Transition Id="j%d" From="B%d" To="Join"/>`, i, i, i, i)
		}
		b.WriteString("</Transitions></WorkflowProcess>\n")
	}
	branches := func(n int, act func(id string) string) []string {
		out := make([]string, n)
		for i := range n {
			out[i] = act(fmt.Sprintf("B%d", i))
		}
		return out
	}

	b.WriteString(`    <WorkflowProcess Id="seq10"><Activities>`)
	for i := 1; i <= 10; i++ {
		b.WriteString(noop(fmt.Sprintf("A%02d", i)))
	}
	b.WriteString(`</Activities><Transitions>`)
	for i := 2; i <= 10; i++ {
		fmt.Fprintf(&b, `<Transition Id="T%02d" From="A%02d" To="A%02d"/>`, i, i-1, i)
	}
	b.WriteString("</Transitions></WorkflowProcess>\n")

	parallel("fan10", branches(10, noop))
	parallel("leaf", branches(treeActivities, noop))
	parallel("mid0", branches(treeLeafFanOut, func(id string) string { return sub(id, "leaf") }))
	parallel("mid1", branches(treeFanOut, func(id string) string { return sub(id, "mid0") }))
	parallel("root", branches(treeFanOut, func(id string) string { return sub(id, "mid1") }))

	b.WriteString(`    <WorkflowProcess Id="task"><Activities><Activity Id="Task"><Implementation><Task><TaskUser/></Task></Implementation><Performers><Performer>clerk</Performer></Performers></Activity></Activities></WorkflowProcess>
  </WorkflowProcesses>
</Package>
`)
	return []byte(b.String())
}

// The tree of W2, as go-workflows' bench runs it by default.
const (
	treeFanOut     = 2
	treeLeafFanOut = 2
	treeActivities = 2
	// treeActivityCount and treeInstanceCount are per tree.
	treeActivityCount = treeFanOut * treeFanOut * treeLeafFanOut * treeActivities
	treeInstanceCount = 1 + treeFanOut + treeFanOut*treeFanOut + treeFanOut*treeFanOut*treeLeafFanOut
)

// dueAtXPDL is W5's process (the one of engine's
// BenchmarkTimersDueAtOnce): Wait, a manual activity with a SYNCHR
// deadline at the epoch milliseconds in dueAt, then Late on the
// exception, and the instance completes.
const dueAtXPDL = `<?xml version="1.0" encoding="UTF-8"?>
<Package xmlns="http://www.wfmc.org/2002/XPDL1.0" Id="dueat" Name="dueat">
  <PackageHeader><XPDLVersion>1.0</XPDLVersion><Vendor>goxpdl</Vendor><Created>2026-11-27</Created></PackageHeader>
  <Script Type="text/javascript"/>
  <Participants><Participant Id="clerk"><ParticipantType Type="ROLE"/></Participant></Participants>
  <WorkflowProcesses>
    <WorkflowProcess Id="p">
      <DataFields><DataField Id="dueAt"><DataType><BasicType Type="INTEGER"/></DataType></DataField></DataFields>
      <Activities>
        <Activity Id="Wait"><Implementation><No/></Implementation><Performer>clerk</Performer>
          <Deadline Execution="SYNCHR"><DeadlineCondition>dueAt</DeadlineCondition><ExceptionName>late</ExceptionName></Deadline></Activity>
        <Activity Id="Late"><Route/></Activity>
      </Activities>
      <Transitions>
        <Transition Id="t1" From="Wait" To="Late"><Condition Type="EXCEPTION">late</Condition></Transition>
      </Transitions>
    </WorkflowProcess>
  </WorkflowProcesses>
</Package>`

// goxpdlRun is one measurement on goxpdl.
type goxpdlRun struct {
	spec runSpec
	db   *gorm.DB
	e    *engine.Engine
	tr   *tracker

	mu        sync.Mutex
	items     map[int64]chan int64 // instance → its offered work item
	taskDone  map[int64]int        // instance → completions of Task
	failed    int
	unsubOnce func()
}

func goxpdlDSN(spec runSpec) string {
	if spec.DB == dbSQLite {
		return gormstore.SQLiteScheme + spec.SQLitePath
	}
	return gormstore.MySQLScheme + spec.MySQL.goDSN()
}

// runGoxpdl runs spec on goxpdl.
func runGoxpdl(ctx context.Context, spec runSpec) (result, error) {
	res := result{Engine: engineGoxpdl, Workload: spec.Workload, DB: spec.DB, N: spec.N, Load1: loadAverage()}
	db, err := gormstore.OpenDSN(goxpdlDSN(spec))
	if err != nil {
		return res, err
	}
	defer func() {
		if sqlDB, err := db.DB(); err == nil {
			_ = sqlDB.Close() // the engine has stopped; nothing to lose
		}
	}()
	e, err := engine.New(engine.Config{
		DB:                      db,
		NoOpUnboundApplications: true,
		NormalWorkers:           max(spec.Clients, 8),
		CriticalWorkers:         max(spec.Clients, 8),
		Logger:                  slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn})),
	})
	if err != nil {
		return res, err
	}
	want := spec.N
	if spec.Workload == "W6" {
		want = 1
		if spec.Phase == phasePark {
			want = spec.N
		}
	}
	g := &goxpdlRun{spec: spec, db: db, e: e, tr: newTracker(want), items: map[int64]chan int64{}, taskDone: map[int64]int{}}
	defer e.Subscribe(g.record)()
	if err := e.Start(ctx); err != nil {
		return res, err
	}
	defer func() {
		stopCtx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
		defer cancel()
		if err := e.Stop(stopCtx); err != nil {
			fmt.Fprintf(os.Stderr, "peers: goxpdl stop: %v\n", err)
		}
	}()
	if spec.Workload != "W6" || spec.Phase == phasePark {
		if _, err := e.Deploy(ctx, peersXPDL()); err != nil {
			return res, fmt.Errorf("deploy: %w", err)
		}
		if _, err := e.Deploy(ctx, []byte(dueAtXPDL)); err != nil {
			return res, fmt.Errorf("deploy: %w", err)
		}
	}
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
	g.mu.Lock()
	res.Failed += g.failed
	g.mu.Unlock()
	fillMemory(&res)
	return res, err
}

// record is the engine observer: it only notes what happened.
func (g *goxpdlRun) record(r engine.Record) {
	key := strconv.FormatInt(r.Instance, 10)
	switch r.Type {
	case engine.RecordProcessCompleted:
		if r.Parent == 0 {
			g.tr.done(key)
		}
	case engine.RecordActivityCompleted:
		g.tr.progress()
		if r.Activity == "Task" {
			g.mu.Lock()
			g.taskDone[r.Instance]++
			g.mu.Unlock()
		}
	case engine.RecordWorkItemCreated:
		g.mailbox(r.Instance) <- r.WorkItem
		if g.spec.Workload == "W5" {
			g.tr.armedOne(key)
		}
		if g.spec.Workload == "W6" && g.spec.Phase == phasePark {
			g.tr.done(key)
		}
	case engine.RecordProcessTerminated, engine.RecordProcessLocked, engine.RecordActivityAbnormal:
		g.mu.Lock()
		g.failed++
		g.mu.Unlock()
		fmt.Fprintf(os.Stderr, "peers: goxpdl instance %d: %s %s\n", r.Instance, r.Type, r.Error)
	}
}

// mailbox is the channel of instance's offered work item.
func (g *goxpdlRun) mailbox(instance int64) chan int64 {
	g.mu.Lock()
	defer g.mu.Unlock()
	ch, ok := g.items[instance]
	if !ok {
		ch = make(chan int64, 1)
		g.items[instance] = ch
	}
	return ch
}

// workloadProcess is the process a throughput workload starts.
var workloadProcess = map[string]string{"W1": "seq10", "W1s": "seq10", "W2": "root", "W3": "fan10"}

// activitiesPer is how many activities one started instance runs.
var activitiesPer = map[string]int{"W1": 10, "W1s": 10, "W2": treeActivityCount, "W3": 10}

// throughput runs W1, W1s, W2 or W3: N instances from C clients (W1s:
// one at a time), to completion.
func (g *goxpdlRun) throughput(ctx context.Context, res *result) error {
	opts := engine.StartOptions{Package: "peers", Process: workloadProcess[g.spec.Workload], Actor: "peers"}
	serial := g.spec.Workload == "W1s"
	c := g.spec.Clients
	if serial {
		c = 1
	}
	start := clock.Now()
	err := clients(ctx, g.spec.N, c, func(ctx context.Context, _ int) error {
		began := clock.Now()
		id, err := g.e.StartProcess(ctx, opts)
		if err != nil {
			return err
		}
		key := strconv.FormatInt(id, 10)
		g.tr.started(key, began)
		if serial {
			return g.tr.awaitOne(ctx, key)
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

// fillThroughput sets the figures of a throughput workload.
func fillThroughput(res *result, workload string, lat []time.Duration, elapsed time.Duration) {
	res.Seconds = round(elapsed.Seconds(), 3)
	res.Failed += res.N - len(lat)
	if workload == "W1s" {
		res.Rate, res.RateUnit = round(float64(len(lat))/elapsed.Seconds(), 1), "instances/s"
	} else {
		res.Rate, res.RateUnit = round(float64(len(lat)*activitiesPer[workload])/elapsed.Seconds(), 1), "activities/s"
	}
	fillLatencies(res, lat)
}

// workItems runs W4: each client starts an instance, waits for its work
// item, claims and completes it; every tenth completion is sent twice.
// The latency is from the claim to the instance's completion.
func (g *goxpdlRun) workItems(ctx context.Context, res *result) error {
	opts := engine.StartOptions{Package: "peers", Process: "task", Actor: "peers"}
	var mu sync.Mutex
	start := clock.Now()
	err := clients(ctx, g.spec.N, g.spec.Clients, func(ctx context.Context, i int) error {
		id, err := g.e.StartProcess(ctx, opts)
		if err != nil {
			return err
		}
		var item int64
		select {
		case item = <-g.mailbox(id):
		case <-ctx.Done():
			return ctx.Err()
		}
		key := strconv.FormatInt(id, 10)
		g.tr.started(key, clock.Now())
		if err := g.e.ClaimWorkItem(ctx, item, "u1", engine.Op{}); err != nil {
			return fmt.Errorf("claim %d: %w", item, err)
		}
		if _, err := g.e.CompleteWorkItem(ctx, item, engine.Completion{User: "u1"}); err != nil {
			return fmt.Errorf("complete %d: %w", item, err)
		}
		if i%10 == 0 {
			_, err := g.e.CompleteWorkItem(ctx, item, engine.Completion{User: "u1"})
			mu.Lock()
			if err == nil {
				res.DupAccepted++
			} else {
				res.DupRejected++
			}
			mu.Unlock()
		}
		return g.tr.awaitOne(ctx, key)
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
	if err := g.e.WaitIdle(ctx); err != nil {
		return err
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	for inst, n := range g.taskDone {
		if n != 1 {
			res.Failed++
			fmt.Fprintf(os.Stderr, "peers: goxpdl instance %d: Task completed %d times\n", inst, n)
		}
	}
	return err
}

// timers runs W5 (runTimers): instances whose deadlines are all due at
// one instant; the latency is from that instant to each instance's
// completion. An instance waits on its deadline once its work item is
// offered (the same transaction arms the deadline).
func (g *goxpdlRun) timers(ctx context.Context, res *result) error {
	lat, end, due, err := runTimers(ctx, g.spec, g.tr, func(ctx context.Context, _ int, _ bool, due time.Time) error {
		opts := engine.StartOptions{Package: "dueat", Variables: map[string]any{"dueAt": due.UnixMilli()}, Actor: "peers"}
		id, err := g.e.StartProcess(ctx, opts)
		if err != nil {
			return err
		}
		g.tr.started(strconv.FormatInt(id, 10), due)
		return nil
	}, g.e.WaitIdle)
	if err != nil {
		return err
	}
	fillTimers(res, lat, end.Sub(due))
	return nil
}

// fillTimers sets W5's figures.
func fillTimers(res *result, lat []time.Duration, elapsed time.Duration) {
	res.Seconds = round(elapsed.Seconds(), 3)
	res.Rate, res.RateUnit = round(float64(len(lat))/elapsed.Seconds(), 1), "timers/s"
	res.Failed += res.N - len(lat)
	fillLatencies(res, lat)
}

// w6WorkerName is go-workflows' worker name in both of W6's processes
// (see runSpec.WorkerName).
const w6WorkerName = "peers-w6"

// W6's phases.
const (
	phasePark    = "park"
	phaseRestart = "restart"
)

// parked runs a phase of W6. park: N instances each waiting on a work
// item, then the database's size. restart: from this process's start to
// the first instance that completes after one of its items is completed.
func (g *goxpdlRun) parked(ctx context.Context, res *result) error {
	if g.spec.Phase == phasePark {
		opts := engine.StartOptions{Package: "peers", Process: "task", Actor: "peers"}
		start := clock.Now()
		err := clients(ctx, g.spec.N, g.spec.Clients, func(ctx context.Context, _ int) error {
			began := clock.Now()
			id, err := g.e.StartProcess(ctx, opts)
			if err != nil {
				return err
			}
			g.tr.started(strconv.FormatInt(id, 10), began)
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
		if err := g.e.WaitIdle(ctx); err != nil {
			return err
		}
		res.DBBytes, err = databaseBytes(ctx, g.spec)
		return err
	}
	page, err := g.e.WorkItems(ctx, engine.WorkItemFilter{Limit: 1})
	if err != nil {
		return err
	}
	if len(page.WorkItems) == 0 {
		return errors.New("no parked work item")
	}
	wi := page.WorkItems[0]
	key := strconv.FormatInt(wi.Instance, 10)
	g.tr.started(key, programStart)
	if _, err := g.e.CompleteWorkItem(ctx, wi.ID, engine.Completion{User: "u1"}); err != nil {
		return err
	}
	lat, _, err := g.tr.wait(ctx)
	if err != nil {
		return err
	}
	res.RestartMs = ms(lat[0])
	res.Rate, res.RateUnit = res.RestartMs, "ms"
	return nil
}

// databaseBytes is the size of spec's database: the SQLite file and its
// WAL, or the MariaDB schema's data and index length.
func databaseBytes(ctx context.Context, spec runSpec) (int64, error) {
	if spec.DB == dbSQLite {
		var total int64
		matches, err := filepath.Glob(spec.SQLitePath + "*")
		if err != nil {
			return 0, err
		}
		for _, m := range matches {
			if st, err := os.Stat(m); err == nil {
				total += st.Size()
			}
		}
		return total, nil
	}
	return mariadbBytes(ctx, spec.MySQL)
}
