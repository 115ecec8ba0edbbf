package scheduler

import (
	"context"
	"fmt"
	"log/slog"
	"math"
	"runtime"
	"time"
)

// Defaults of the normal pool's adaptation.
const (
	// DefaultNormalWorkersMax is the default Config.NormalWorkersMax
	// (raised to Config.NormalWorkers when that is larger).
	DefaultNormalWorkersMax = 128
	// DefaultAdaptInterval is the default Config.AdaptInterval.
	DefaultAdaptInterval = 500 * time.Millisecond
)

// The controller's policy. A pool counts as fully busy when its handlers
// filled at least busyFull of its capacity over the window. The process's
// CPU counts as saturated at cpuBusy of GOMAXPROCS, and growth aims at no
// more workers than keep that share busy. A grow from n to m workers must
// raise throughput by at least minGain of the proportional gain m/n-1,
// otherwise it is undone and the pool does not grow for holdSamples
// windows. A window grows the pool at most growFactor-fold.
const (
	busyFull    = 0.9
	cpuBusy     = 0.8
	minGain     = 0.25
	holdSamples = 8
	growFactor  = 2
)

// observation is what the controller saw of the normal pool over one
// sample window.
type observation struct {
	size     int           // the pool's capacity during the window
	window   time.Duration // how long the window lasted, on the Scheduler's clock
	busy     time.Duration // handler time on the pool: running handlers integrated over the window
	finished int           // handlers that returned in the window
	peak     int           // most handlers running at once in the window
	waiting  int           // mailboxes (and loose events) waiting for a worker at the end
	cpu      time.Duration // CPU time (user and system) the process used in the window; negative when unknown
	procs    int           // GOMAXPROCS
}

// adaptState is what the controller carries from one window to the next.
type adaptState struct {
	// grewFrom is the size before the last window's grow, which the next
	// window judges; 0 when the last step was no grow.
	grewFrom int
	// before is the throughput (handlers finished per second) of the
	// window that decided that grow.
	before float64
	// hold is how many more windows the pool does not grow, after a grow
	// that did not pay.
	hold int
}

// verdict says why decide chose a size; it appears in the logs.
type verdict string

const (
	keep     verdict = "keep"
	grow     verdict = "grow: work waits, the pool is busy and the CPU is not"
	revert   verdict = "undo the last grow: throughput did not follow"
	held     verdict = "keep: a grow did not pay lately"
	cpuBound verdict = "keep: the handlers use the CPU"
	shrink   verdict = "shrink: workers sat idle"
	clamped  verdict = "clamp into [min, max]"
)

// decide is the controller's policy, a pure function: from the bounds,
// what it remembered and what it observed over the last window it returns
// the normal pool's next size, what to remember, and why.
//
//   - Grow when work waited at the end of the window and the pool was
//     fully busy (the handlers filled at least busyFull of its capacity),
//     unless the process's CPU was saturated. The new size is at most
//     growFactor times the old, the old plus what waits, max, and — when
//     the process's CPU time is known — the workers that would bring the
//     CPU to cpuBusy at the CPU each busy worker used in the window:
//     handlers blocked in I/O use little CPU and justify many workers,
//     CPU-bound ones about GOMAXPROCS.
//   - Judge each grow in the next window: if the pool is still saturated
//     and throughput rose by less than minGain of the proportional gain,
//     the extra workers were waiting on something else (a lock, the
//     database, the CPU of other processes): go back and hold growth for
//     holdSamples windows.
//   - Shrink when nothing waited and fewer handlers than workers ran at
//     the peak: by half the gap between the size and the peak (at least
//     one), never below min.
func decide(minSize, maxSize int, st adaptState, o observation) (int, adaptState, verdict) {
	if o.size < minSize || o.size > maxSize {
		return min(max(o.size, minSize), maxSize), adaptState{}, clamped
	}
	if o.window <= 0 {
		return o.size, st, keep
	}
	holding := st.hold > 0
	if holding {
		st.hold--
	}
	capacity := float64(o.size) * o.window.Seconds()
	saturated := o.waiting > 0 && o.busy.Seconds() >= busyFull*capacity
	throughput := float64(o.finished) / o.window.Seconds()

	if from := st.grewFrom; from > 0 {
		before := st.before
		st.grewFrom, st.before = 0, 0
		if saturated && before > 0 && from < o.size {
			want := before * (1 + minGain*(float64(o.size)/float64(from)-1))
			if throughput < want {
				return max(from, minSize), adaptState{hold: holdSamples}, revert
			}
		}
	}

	switch {
	case saturated:
		if holding {
			return o.size, st, held
		}
		target := min(maxSize, growFactor*o.size, o.size+o.waiting)
		if o.cpu >= 0 && o.procs > 0 {
			cores := float64(o.procs) * o.window.Seconds()
			if o.cpu.Seconds() >= cpuBusy*cores {
				return o.size, st, cpuBound
			}
			if perWorker := o.cpu.Seconds() / o.busy.Seconds(); perWorker > 0 {
				target = min(target, int(math.Floor(cpuBusy*float64(o.procs)/perWorker)))
			}
		}
		switch {
		case o.size >= maxSize:
			return o.size, st, keep
		case target <= o.size:
			return o.size, st, cpuBound
		}
		return target, adaptState{grewFrom: o.size, before: throughput}, grow
	case o.waiting == 0 && o.peak < o.size && o.size > minSize:
		floor := max(o.peak, minSize)
		step := (o.size - floor + 1) / 2
		return o.size - step, st, shrink
	}
	return o.size, st, keep
}

// loadMeter integrates the normal pool's load between two samples. It is
// guarded by Scheduler.mu.
type loadMeter struct {
	since    time.Time     // the window's start
	last     time.Time     // when the running count last changed
	busy     time.Duration // running handlers integrated from since to last
	finished int
	peak     int
}

// advance integrates the running count up to now.
func (m *loadMeter) advance(now time.Time, running int) {
	if now.After(m.last) {
		m.busy += time.Duration(running) * now.Sub(m.last)
		m.last = now
	}
}

// take closes the window at now and starts the next one.
func (m *loadMeter) take(now time.Time, running, waiting int) observation {
	m.advance(now, running)
	o := observation{
		window:   now.Sub(m.since),
		busy:     m.busy,
		finished: m.finished,
		peak:     max(m.peak, running),
		waiting:  waiting,
	}
	*m = loadMeter{since: now, last: now, peak: running}
	return o
}

// adaptive reports whether the normal pool is resized at run time.
func (s *Scheduler) adaptive() bool { return s.normalMin < s.normalMax }

// meterLocked records that a handler of pool p starts (delta 1) or
// returns (delta -1); call it before changing s.running[p].
func (s *Scheduler) meterLocked(p pool, delta int) {
	if p != normal || !s.adaptive() {
		return
	}
	s.meter.advance(s.clock.Now(), s.running[normal])
	if delta < 0 {
		s.meter.finished++
	}
	s.meter.peak = max(s.meter.peak, s.running[normal]+delta)
}

// adapt is the controller's goroutine: every adaptEvery it samples the
// normal pool and resizes it. Started by Start when the pool is adaptive,
// stopped by Stop or a hard stop (both cancel ctx).
func (s *Scheduler) adapt(ctx context.Context) {
	cpu, cpuOK := s.cpuFunc()
	var st adaptState
	for {
		t := s.clock.NewTimer(s.adaptEvery)
		select {
		case <-t.C():
		case <-ctx.Done():
			t.Stop()
			return
		}
		now := s.clock.Now()
		cpuNow, ok := s.cpuFunc()
		s.mu.Lock()
		o := s.meter.take(now, s.running[normal], s.waiting[normal])
		o.size = s.workers[normal]
		s.mu.Unlock()
		o.cpu, o.procs = -1, runtime.GOMAXPROCS(0)
		if ok && cpuOK {
			o.cpu = max(cpuNow-cpu, 0)
		}
		cpu, cpuOK = cpuNow, ok

		var size int
		var why verdict
		size, st, why = decide(s.normalMin, s.normalMax, st, o)
		if size != o.size {
			s.pools[normal].Tune(size)
			s.mu.Lock()
			s.workers[normal] = size
			s.mu.Unlock()
			s.logger.Debug("scheduler: normal pool resized",
				slog.Int("from", o.size), slog.Int("to", size), slog.String("why", string(why)),
				slog.Int("waiting", o.waiting), slog.Int("peak", o.peak), slog.Int("finished", o.finished),
				slog.Duration("window", o.window), slog.Duration("busy", o.busy), slog.Duration("cpu", o.cpu))
		}
		if s.adaptHook != nil {
			s.adaptHook(o.size, size)
		}
	}
}

// normalSizes resolves the normal pool's starting size and bounds from
// cfg; see Config.
func normalSizes(cfg Config) (start, lo, hi int, err error) {
	for _, f := range []struct {
		name string
		v    int
	}{{"NormalWorkers", cfg.NormalWorkers}, {"NormalWorkersMin", cfg.NormalWorkersMin}, {"NormalWorkersMax", cfg.NormalWorkersMax}} {
		if f.v < 0 {
			return 0, 0, 0, &ConfigError{Field: f.name, Msg: fmt.Sprintf("is %d, want >= 0", f.v)}
		}
	}
	if cfg.NormalWorkersMin > 0 && cfg.NormalWorkersMax > 0 && cfg.NormalWorkersMin > cfg.NormalWorkersMax {
		return 0, 0, 0, &ConfigError{Field: "NormalWorkersMin",
			Msg: fmt.Sprintf("is %d, more than NormalWorkersMax %d", cfg.NormalWorkersMin, cfg.NormalWorkersMax)}
	}
	start = cfg.NormalWorkers
	if start == 0 {
		start = DefaultNormalWorkers
		if cfg.NormalWorkersMax > 0 {
			start = min(start, cfg.NormalWorkersMax)
		}
		start = max(start, cfg.NormalWorkersMin)
	}
	lo, hi = cfg.NormalWorkersMin, cfg.NormalWorkersMax
	if lo == 0 {
		lo = start
	}
	if hi == 0 {
		hi = max(DefaultNormalWorkersMax, start)
	}
	if start < lo || start > hi {
		return 0, 0, 0, &ConfigError{Field: "NormalWorkers",
			Msg: fmt.Sprintf("is %d, outside NormalWorkersMin..NormalWorkersMax (%d..%d)", start, lo, hi)}
	}
	return start, lo, hi, nil
}
