package engine_test

import (
	"context"
	"io"
	"log/slog"
	"os"
	"slices"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/goxpdl/goxpdl/engine"
	"github.com/goxpdl/goxpdl/store/dbtest"
	"github.com/goxpdl/goxpdl/xpdl/xpdltest"
)

// BenchmarkCriticalLatency measures how long the host's process-control
// commands (Terminate, Suspend) take on an idle engine and on one whose
// normal pool is saturated by slow applications (each call sleeps
// GOXPDL_BENCH_SLOW_MS, default 200 ms), and reports p50 and p99 of
// each and the ratio loaded/idle of the p99s (paper §2.2: critical work
// is never delayed by normal work; the target is a ratio of at most 10).
// GOXPDL_BENCH_CRITICAL scales it: that many commands of each kind and
// twice that many slow instances (default 10 for bench-smoke; `make
// bench-critical` runs 40).
func BenchmarkCriticalLatency(b *testing.B) {
	n := benchEnvInt(b, "GOXPDL_BENCH_CRITICAL", 10)
	slow := time.Duration(benchEnvInt(b, "GOXPDL_BENCH_SLOW_MS", 200)) * time.Millisecond
	for _, d := range dbtest.Dialects {
		b.Run(d.Name, func(b *testing.B) {
			for range b.N {
				benchCriticalOnce(b, d, n, slow)
			}
		})
	}
}

func benchEnvInt(b *testing.B, name string, def int) int {
	s := os.Getenv(name)
	if s == "" {
		return def
	}
	n, err := strconv.Atoi(s)
	require.NoError(b, err, name)
	return n
}

// criticalXPDL: "slow" calls the application slow and then waits for a
// person; "wait" only waits for a person (the instances the commands act
// on).
var criticalXPDL = xpdltest.PackageWith(`<Applications><Application Id="slow"/></Applications>`,
	xpdltest.Process("slow", "",
		xpdltest.Activity("Call", `<Implementation><Tool Id="slow"/></Implementation>`, "", "")+
			xpdltest.Activity("Review", `<Implementation><No/></Implementation><Performer>clerk</Performer>`, "", ""),
		xpdltest.Transition("t1", "Call>Review"))+
		xpdltest.Process("wait", "",
			xpdltest.Activity("Review", `<Implementation><No/></Implementation><Performer>clerk</Performer>`, "", ""), ""))

func benchCriticalOnce(b *testing.B, d dbtest.Dialect, n int, slow time.Duration) {
	b.StopTimer()
	db := d.Open(b)
	e, err := engine.New(engine.Config{
		DB: db, Logger: slog.New(slog.NewTextHandler(io.Discard, nil)),
		NormalWorkers: 8, NormalWorkersMax: 8, PollInterval: 20 * time.Millisecond,
	})
	require.NoError(b, err)
	e.RegisterApplication("slow", func(context.Context, *engine.Call) (map[string]any, error) {
		time.Sleep(slow) // a slow application holds its worker and its transaction
		return nil, nil
	})
	ctx := b.Context()
	require.NoError(b, e.Start(ctx))
	defer func() { require.NoError(b, e.Stop(context.Background())) }()
	_, err = e.Deploy(ctx, []byte(criticalXPDL))
	require.NoError(b, err)

	waiting := func(k int) []int64 {
		ids := make([]int64, k)
		for i := range ids {
			ids[i], err = e.StartProcess(ctx, engine.StartOptions{Package: "pkg", Process: "wait"})
			require.NoError(b, err)
		}
		require.NoError(b, e.WaitIdle(ctx))
		return ids
	}
	measure := func(ids []int64, loaded bool) (suspend, terminate []time.Duration) {
		for _, id := range ids {
			if st := e.Stats().Scheduler; loaded && st.NormalRunning+st.NormalWaiting+st.CriticalRunning+st.CriticalWaiting == 0 {
				b.Logf("%s: the load ran out after %d commands (raise GOXPDL_BENCH_CRITICAL for more)", d.Name, len(terminate))
				break
			}
			t0 := time.Now()
			require.NoError(b, e.Suspend(ctx, id, engine.Op{}))
			suspend = append(suspend, time.Since(t0))
			t0 = time.Now()
			require.NoError(b, e.Terminate(ctx, id, engine.Op{}))
			terminate = append(terminate, time.Since(t0))
		}
		return suspend, terminate
	}

	idleIDs := waiting(n)
	loadIDs := waiting(n)
	b.StartTimer()
	idleSuspend, idleTerminate := measure(idleIDs, false)

	// The load: 2n instances calling the slow application at once.
	var wg sync.WaitGroup
	for range 2 * n {
		wg.Go(func() {
			_, err := e.StartProcess(ctx, engine.StartOptions{Package: "pkg", Process: "slow"})
			require.NoError(b, err)
		})
	}
	wg.Wait()
	for st := e.Stats().Scheduler; st.NormalRunning+st.CriticalRunning == 0; st = e.Stats().Scheduler { // the first calls are under way
		time.Sleep(time.Millisecond)
	}
	loadSuspend, loadTerminate := measure(loadIDs, true)
	b.StopTimer()
	require.NoError(b, e.WaitIdle(ctx))

	report := func(name string, idle, loaded []time.Duration) {
		ip50, ip99 := percentiles(idle)
		lp50, lp99 := percentiles(loaded)
		b.ReportMetric(float64(ip99.Microseconds())/1000, name+"_idle_p99_ms")
		b.ReportMetric(float64(lp99.Microseconds())/1000, name+"_loaded_p99_ms")
		b.ReportMetric(float64(lp99)/float64(max(ip99, time.Microsecond)), name+"_p99_ratio")
		b.Logf("%s %s: idle p50 %v p99 %v; loaded p50 %v p99 %v; p99 loaded/idle %.1f",
			d.Name, name, ip50, ip99, lp50, lp99, float64(lp99)/float64(max(ip99, time.Microsecond)))
	}
	report("suspend", idleSuspend, loadSuspend)
	report("terminate", idleTerminate, loadTerminate)
}

// percentiles returns p50 and p99 of ds (nearest rank).
func percentiles(ds []time.Duration) (p50, p99 time.Duration) {
	s := slices.Clone(ds)
	slices.Sort(s)
	at := func(q float64) time.Duration {
		i := int(q*float64(len(s))+0.5) - 1
		return s[min(max(i, 0), len(s)-1)]
	}
	return at(0.50), at(0.99)
}
