package engine_test

import (
	"context"
	"io"
	"log/slog"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/goxpdl/goxpdl/engine"
	"github.com/goxpdl/goxpdl/store/dbtest"
	"github.com/goxpdl/goxpdl/xpdl/xpdltest"
)

// BenchmarkBatchTerminate measures a bulk terminate of
// GOXPDL_BENCH_BATCH_N instances (default 2,000; the figure is
// 100,000) waiting at a manual activity, and what it costs the engine's
// other work: GOXPDL_BENCH_BATCH_LOAD clients (default 4) each start an
// instance of a four-activity automatic process and wait for it to
// complete, again and again, first alone for two seconds and then while
// the batch runs. It reports instances terminated per second and the
// load's activities per second alone and during the batch.
// GOXPDL_BENCH_BATCH_PARALLEL sets Config.BatchParallel (default 1);
// GOXPDL_BENCH_BATCH_PERTX sets Config.BatchPerTx (default
// DefaultBatchPerTx; 1 gives each instance its own transaction, as
// batches did before BatchPerTx).
//
//	go test -run '^$' -bench BenchmarkBatchTerminate -benchtime 1x -timeout 1h ./engine/
func BenchmarkBatchTerminate(b *testing.B) {
	n := benchEnvInt(b, "GOXPDL_BENCH_BATCH_N", 2000)
	clients := benchEnvInt(b, "GOXPDL_BENCH_BATCH_LOAD", 4)
	parallel := benchEnvInt(b, "GOXPDL_BENCH_BATCH_PARALLEL", 1)
	perTx := benchEnvInt(b, "GOXPDL_BENCH_BATCH_PERTX", engine.DefaultBatchPerTx)
	for _, d := range dbtest.Dialects {
		b.Run(d.Name, func(b *testing.B) {
			for range b.N {
				benchBatchOnce(b, d, n, clients, parallel, perTx)
			}
		})
	}
}

// batchBenchXPDL: "wait" waits for a person (the instances the batch
// terminates); "auto" is four routes in a row (the other work).
var batchBenchXPDL = xpdltest.PackageWith("",
	xpdltest.Process("wait", "",
		xpdltest.Activity("Review", `<Implementation><No/></Implementation><Performer>clerk</Performer>`, "", ""), "")+
		xpdltest.Process("auto", "",
			xpdltest.Activity("A", "<Route/>", "", "")+xpdltest.Activity("B", "<Route/>", "", "")+
				xpdltest.Activity("C", "<Route/>", "", "")+xpdltest.Activity("D", "<Route/>", "", ""),
			xpdltest.Transition("t1", "A>B")+xpdltest.Transition("t2", "B>C")+xpdltest.Transition("t3", "C>D")))

// batchBenchWave is how many instances the benchmark starts before it
// waits for the engine to work them off.
const batchBenchWave = 2000

func benchBatchOnce(b *testing.B, d dbtest.Dialect, n, clients, parallel, perTx int) {
	b.StopTimer()
	db := d.Open(b)
	e, err := engine.New(engine.Config{DB: db, Logger: slog.New(slog.NewTextHandler(io.Discard, nil)), PollInterval: 20 * time.Millisecond,
		BatchParallel: parallel, BatchPerTx: perTx})
	require.NoError(b, err)
	ctx := b.Context()
	require.NoError(b, e.Start(ctx))
	defer func() { require.NoError(b, e.Stop(context.Background())) }()
	_, err = e.Deploy(ctx, []byte(batchBenchXPDL))
	require.NoError(b, err)

	// The instances to terminate, started by 8 clients at once, in waves
	// of 2,000 that the engine works off before the next one: a backlog
	// of 100,000 unprocessed starts measures the event poller, not the
	// batch (on MariaDB it drained at a few instances a second).
	for started := 0; started < n; started += batchBenchWave {
		var next atomic.Int64
		next.Store(int64(started))
		end := int64(min(started+batchBenchWave, n))
		var wg sync.WaitGroup
		for range 8 {
			wg.Go(func() {
				for next.Add(1) <= end {
					_, err := e.StartProcess(ctx, engine.StartOptions{Package: "pkg", Process: "wait"})
					require.NoError(b, err)
				}
			})
		}
		wg.Wait()
		require.NoError(b, e.WaitQuiet(ctx))
	}
	require.NoError(b, e.WaitIdle(ctx))

	// The other work: closed-loop clients, each waiting for its instance.
	var activities atomic.Int64
	var waiters sync.Map // instance id -> chan struct{}, closed when it completes
	ended := func(id int64) chan struct{} {
		ch, _ := waiters.LoadOrStore(id, make(chan struct{}))
		return ch.(chan struct{})
	}
	stopped := make(chan engine.Record, 1)
	defer e.Subscribe(func(r engine.Record) {
		switch r.Type {
		case engine.RecordActivityCompleted:
			activities.Add(1)
		case engine.RecordProcessCompleted:
			close(ended(r.Instance))
		case engine.RecordBatchStopped:
			stopped <- r
		}
	})()
	load := func(until <-chan struct{}) (acts int64, took time.Duration) {
		start, before := time.Now(), activities.Load()
		var wg sync.WaitGroup
		for range clients {
			wg.Go(func() {
				for {
					select {
					case <-until:
						return
					default:
					}
					id, err := e.StartProcess(ctx, engine.StartOptions{Package: "pkg", Process: "auto"})
					require.NoError(b, err)
					select {
					case <-ended(id):
						waiters.Delete(id)
					case <-ctx.Done():
						return
					}
				}
			})
		}
		<-until
		acts, took = activities.Load()-before, time.Since(start)
		wg.Wait()
		return acts, took
	}

	alone := make(chan struct{})
	time.AfterFunc(2*time.Second, func() { close(alone) })
	aloneActs, aloneTook := load(alone)

	b.StartTimer()
	during := make(chan struct{})
	var batchTook time.Duration
	var batch engine.Batch
	go func() {
		defer close(during)
		start := time.Now()
		batch, err = e.StartBatch(ctx, engine.BatchRequest{Action: engine.BatchTerminate, Filter: engine.InstanceFilter{Process: "wait"}})
		if err != nil {
			return
		}
		<-stopped
		batchTook = time.Since(start)
	}()
	duringActs, duringTook := load(during)
	b.StopTimer()
	require.NoError(b, err)
	batch, err = e.Batch(ctx, batch.ID)
	require.NoError(b, err)
	require.Equal(b, engine.BatchCompleted, batch.State)
	require.Equal(b, int64(n), batch.Done)

	terminated := float64(n) / batchTook.Seconds()
	aloneRate := float64(aloneActs) / aloneTook.Seconds()
	duringRate := float64(duringActs) / duringTook.Seconds()
	b.ReportMetric(terminated, "terminated/s")
	b.ReportMetric(aloneRate, "load_acts/s_alone")
	b.ReportMetric(duringRate, "load_acts/s_batch")
	b.Logf("%s: %d instances terminated in %v (%.0f/s, %d at a time, %d per transaction); the load (%d clients) ran %.0f activities/s alone, %.0f during the batch (%.0f%%)",
		d.Name, n, batchTook.Round(time.Millisecond), terminated, parallel, perTx, clients, aloneRate, duringRate, 100*duringRate/aloneRate)
}
