package scheduler

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// TestDecide table-tests the controller's policy with bounds 4..64 on a
// machine of two cores and one-second windows.
func TestDecide(t *testing.T) {
	t.Parallel()
	const (
		minSize = 4
		maxSize = 64
	)
	// saturated is a window in which size handlers were busy throughout
	// and work still waits; cpu is the process's CPU time in it.
	saturated := func(size int, cpu time.Duration, finished int) observation {
		return observation{
			size: size, window: time.Second, busy: time.Duration(size) * time.Second,
			finished: finished, peak: size, waiting: 100, cpu: cpu, procs: 2,
		}
	}
	idle := func(size, peak int) observation {
		return observation{
			size: size, window: time.Second, busy: time.Duration(peak) * time.Second / 2,
			finished: peak, peak: peak, cpu: 10 * time.Millisecond, procs: 2,
		}
	}
	with := func(o observation, f func(*observation)) observation { f(&o); return o }

	tests := []struct {
		name    string
		st      adaptState
		obs     observation
		want    int
		wantSt  adaptState
		wantWhy verdict
	}{
		{
			name: "I/O-bound handlers and waiting work: grow twofold",
			obs:  saturated(8, 40*time.Millisecond, 160),
			want: 16, wantSt: adaptState{grewFrom: 8, before: 160}, wantWhy: grow,
		},
		{
			name: "growth stops at what waits",
			obs:  with(saturated(8, 40*time.Millisecond, 160), func(o *observation) { o.waiting = 3 }),
			want: 11, wantSt: adaptState{grewFrom: 8, before: 160}, wantWhy: grow,
		},
		{
			name: "growth stops at max",
			obs:  saturated(48, 40*time.Millisecond, 960),
			want: 64, wantSt: adaptState{grewFrom: 48, before: 960}, wantWhy: grow,
		},
		{
			name: "at max: keep",
			obs:  saturated(64, 40*time.Millisecond, 1280),
			want: 64, wantWhy: keep,
		},
		{
			name: "CPU-bound handlers saturate the CPU: no growth",
			obs:  saturated(8, 1900*time.Millisecond, 400),
			want: 8, wantWhy: cpuBound,
		},
		{
			name: "CPU-bound handlers, CPU not saturated (other processes use it): no growth past the cores",
			obs:  with(saturated(4, 3*time.Second, 300), func(o *observation) { o.procs = 4 }),
			want: 4, wantWhy: cpuBound,
		},
		{
			name: "each worker uses a core and cores are free: grow to about GOMAXPROCS",
			obs:  with(saturated(4, 4*time.Second, 400), func(o *observation) { o.procs = 8 }),
			want: 6, wantSt: adaptState{grewFrom: 4, before: 400}, wantWhy: grow,
		},
		{
			name: "handlers half the time on the CPU: grow to the workers that keep 80% of the cores busy",
			obs:  with(saturated(8, 4*time.Second, 160), func(o *observation) { o.procs = 8 }),
			want: 12, wantSt: adaptState{grewFrom: 8, before: 160}, wantWhy: grow,
		},
		{
			name: "CPU time unknown: grow, and leave it to the throughput check",
			obs:  saturated(8, -1, 160),
			want: 16, wantSt: adaptState{grewFrom: 8, before: 160}, wantWhy: grow,
		},
		{
			name: "a grow that paid: grow again",
			st:   adaptState{grewFrom: 8, before: 160},
			obs:  saturated(16, 40*time.Millisecond, 320),
			want: 32, wantSt: adaptState{grewFrom: 16, before: 320}, wantWhy: grow,
		},
		{
			name: "a grow that did not pay: undo it and hold",
			st:   adaptState{grewFrom: 8, before: 160},
			obs:  saturated(16, 40*time.Millisecond, 190),
			want: 8, wantSt: adaptState{hold: holdSamples}, wantWhy: revert,
		},
		{
			name: "nothing finished before the grow: it cannot be judged and stands",
			st:   adaptState{grewFrom: 8},
			obs:  saturated(16, 40*time.Millisecond, 0),
			want: 32, wantSt: adaptState{grewFrom: 16}, wantWhy: grow,
		},
		{
			name: "the backlog is gone after a grow: it stands, nothing else changes",
			st:   adaptState{grewFrom: 8, before: 160},
			obs:  idle(16, 16),
			want: 16, wantWhy: keep,
		},
		{
			name: "holding after a grow that did not pay",
			st:   adaptState{hold: 3},
			obs:  saturated(8, 40*time.Millisecond, 160),
			want: 8, wantSt: adaptState{hold: 2}, wantWhy: held,
		},
		{
			name: "the last window of a hold",
			st:   adaptState{hold: 1},
			obs:  saturated(8, 40*time.Millisecond, 160),
			want: 8, wantWhy: held,
		},
		{
			name: "busy but not full: keep",
			obs:  with(saturated(8, 40*time.Millisecond, 160), func(o *observation) { o.busy = 6 * time.Second }),
			want: 8, wantWhy: keep,
		},
		{
			name: "idle workers: shrink by half the gap to the peak",
			obs:  idle(16, 6),
			want: 11, wantWhy: shrink,
		},
		{
			name: "idle workers: one at a time near the floor",
			obs:  idle(5, 0),
			want: 4, wantWhy: shrink,
		},
		{
			name: "never below min",
			obs:  idle(4, 0),
			want: 4, wantWhy: keep,
		},
		{
			name: "every worker was busy at the peak: no shrink",
			obs:  idle(16, 16),
			want: 16, wantWhy: keep,
		},
		{
			name: "work waits with workers free (between two submits): no shrink",
			obs:  with(idle(16, 6), func(o *observation) { o.waiting = 1 }),
			want: 16, wantWhy: keep,
		},
		{
			name: "above max: clamp",
			obs:  saturated(100, 40*time.Millisecond, 160),
			want: 64, wantWhy: clamped,
		},
		{
			name: "below min: clamp",
			st:   adaptState{hold: 5},
			obs:  idle(2, 0),
			want: 4, wantWhy: clamped,
		},
		{
			name: "an empty window: keep",
			st:   adaptState{grewFrom: 8, before: 160},
			obs:  with(saturated(16, 0, 0), func(o *observation) { o.window = 0 }),
			want: 16, wantSt: adaptState{grewFrom: 8, before: 160}, wantWhy: keep,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got, st, why := decide(minSize, maxSize, tt.st, tt.obs)
			require.Equal(t, tt.want, got)
			require.Equal(t, tt.wantSt, st)
			require.Equal(t, tt.wantWhy, why)
		})
	}
}

// TestDecideConverges runs the policy against a simple model of a pool:
// I/O-bound handlers grow it to max and a backlog that is gone shrinks
// it back to min; CPU-bound handlers on two cores never grow it; handlers
// that queue on one lock grow it once, undo that and hold.
func TestDecideConverges(t *testing.T) {
	t.Parallel()
	const (
		minSize = 4
		maxSize = 64
		procs   = 2
	)
	// window models one second of a pool of size workers with a backlog:
	// each handler takes 50 ms of which cpuShare on the CPU; at most
	// limit handlers make progress at once (the cores, or a lock).
	window := func(size int, cpuShare float64, limit int) observation {
		active := min(size, limit)
		finished := active * 20
		return observation{
			size: size, window: time.Second, busy: time.Duration(size) * time.Second,
			finished: finished, peak: size, waiting: 1000,
			cpu:   time.Duration(float64(active) * cpuShare * float64(time.Second)),
			procs: procs,
		}
	}
	run := func(cpuShare float64, limit, windows int) []int {
		size, st := 8, adaptState{}
		sizes := []int{size}
		for range windows {
			size, st, _ = decide(minSize, maxSize, st, window(size, cpuShare, limit))
			sizes = append(sizes, size)
		}
		return sizes
	}

	require.Equal(t, []int{8, 16, 32, 64, 64}, run(0.01, 1<<20, 4), "I/O-bound")
	require.Equal(t, []int{8, 8, 8}, run(1, procs, 2), "CPU-bound")
	require.Equal(t, []int{8, 16, 8, 8}, run(0.01, 8, 3), "bound by a lock of 8")

	size, st := 64, adaptState{}
	var sizes []int
	for range 8 {
		size, st, _ = decide(minSize, maxSize, st, observation{size: size, window: time.Second, procs: procs})
		sizes = append(sizes, size)
	}
	require.Equal(t, []int{34, 19, 11, 7, 5, 4, 4, 4}, sizes, "idle")
}
