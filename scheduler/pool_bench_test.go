package scheduler_test

import (
	"context"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/goxpdl/goxpdl/scheduler"
	"github.com/goxpdl/goxpdl/store"
)

// BenchmarkPoolAdapt compares a fixed normal pool of 8 workers with the
// adaptive one (starting at 8, bounds 8..128, sampled every 50 ms) on two
// loads, each a backlog of events of distinct instances: I/O-bound
// handlers that block for 50 ms without using the CPU, and CPU-bound
// handlers that compute for a few milliseconds. It reports throughput
// (tasks/s), the largest pool size reached (peak-workers) and, for the
// adaptive pool, its throughput over the fixed pool's (x-fixed8), and
// logs the pool's size over time.
// "make bench-pool" runs it; docs/engine.md has figures.
func BenchmarkPoolAdapt(b *testing.B) {
	loads := []struct {
		name  string
		tasks int
		body  func()
	}{
		// A real blocking sleep, not the injectable clock: the point is a
		// worker that is held while the CPU is free, as in a remote call.
		{"io", 240, func() { time.Sleep(50 * time.Millisecond) }},
		{"cpu", 200, burnCPU},
	}
	pools := []struct {
		name string
		cfg  scheduler.Config
	}{
		{"fixed8", scheduler.Config{NormalWorkers: 8, NormalWorkersMin: 8, NormalWorkersMax: 8}},
		{"adaptive", scheduler.Config{NormalWorkers: 8, NormalWorkersMin: 8, NormalWorkersMax: 128, AdaptInterval: 50 * time.Millisecond}},
	}
	for _, load := range loads {
		perS := make(map[string]float64)
		for _, p := range pools {
			b.Run(load.name+"/"+p.name, func(b *testing.B) {
				var (
					elapsed time.Duration
					peak    int
				)
				for range b.N {
					res := runPoolLoad(b, p.cfg, load.tasks, load.body)
					elapsed += res.elapsed
					peak = max(peak, res.peak)
					b.Logf("pool size over time (ms:workers): %s", res.timeline)
				}
				perS[p.name] = float64(b.N*load.tasks) / elapsed.Seconds()
				b.ReportMetric(perS[p.name], "tasks/s")
				b.ReportMetric(float64(peak), "peak-workers")
				if fixed := perS["fixed8"]; p.name != "fixed8" && fixed > 0 {
					b.ReportMetric(perS[p.name]/fixed, "x-fixed8")
				}
			})
		}
	}
}

type poolLoadResult struct {
	elapsed  time.Duration
	peak     int
	timeline string
}

// runPoolLoad handles tasks events of distinct instances, each running
// body, on a new Scheduler configured by cfg, and watches the normal
// pool's size every 5 ms while they run.
func runPoolLoad(b *testing.B, cfg scheduler.Config, tasks int, body func()) poolLoadResult {
	b.Helper()
	ctx := context.Background()
	cfg.Handler = func(context.Context, store.Event) error { body(); return nil }
	cfg.Logger = slog.New(slog.DiscardHandler)
	s, err := scheduler.New(cfg)
	if err != nil {
		b.Fatal(err)
	}
	evs := make([]store.Event, tasks)
	for i := range evs {
		evs[i] = store.Event{ID: int64(i + 1), EventID: fmt.Sprint(i + 1), ProcessInstanceID: int64(i + 1), Kind: "bench"}
	}
	if err := s.Start(ctx); err != nil {
		b.Fatal(err)
	}
	begin := time.Now()
	s.Deliver(evs)

	var (
		res      poolLoadResult
		timeline strings.Builder
		watching sync.WaitGroup
		done     = make(chan struct{})
	)
	watching.Go(func() {
		tick := time.NewTicker(5 * time.Millisecond)
		defer tick.Stop()
		last := 0
		for {
			if n := s.Stats().NormalWorkers; n != last {
				fmt.Fprintf(&timeline, " %d:%d", time.Since(begin).Milliseconds(), n)
				last, res.peak = n, max(res.peak, n)
			}
			select {
			case <-tick.C:
			case <-done:
				return
			}
		}
	})
	if err := s.WaitIdle(ctx); err != nil {
		b.Fatal(err)
	}
	res.elapsed = time.Since(begin)
	close(done)
	watching.Wait()
	if err := s.Stop(ctx); err != nil {
		b.Fatal(err)
	}
	res.timeline = strings.TrimSpace(timeline.String())
	return res
}

// cpuSink keeps burnCPU's result alive.
var cpuSink atomic.Uint64

// burnCPU computes for a few milliseconds (a fixed amount of work, not of
// time) without blocking.
func burnCPU() {
	x := uint64(88172645463325252)
	for range 2_000_000 {
		x ^= x << 13
		x ^= x >> 7
		x ^= x << 17
	}
	cpuSink.Add(x)
}
