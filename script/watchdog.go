package script

import (
	"fmt"
	"runtime/metrics"
	"sync"
	"time"

	"github.com/dop251/goja"
	"github.com/dustin/go-humanize"

	"github.com/goxpdl/goxpdl/timer"
)

// sampleInterval is how often the watchdog reads the heap while
// evaluations run. A reading costs under a microsecond; a script
// allocating as fast as memory can be written gains a few megabytes in
// one interval.
const sampleInterval = time.Millisecond

// heapMetrics are what readHeap sums: the bytes of heap objects (live, and
// dead but not yet swept) and of goroutine stacks.
var heapMetrics = []string{"/memory/classes/heap/objects:bytes", "/memory/classes/heap/stacks:bytes"}

// readHeap returns the process's heap in use, in bytes, from
// runtime/metrics (which, unlike runtime.ReadMemStats, does not stop the
// world). Large allocations show at once; small ones a span at a time.
func readHeap() uint64 {
	samples := make([]metrics.Sample, len(heapMetrics))
	for i, name := range heapMetrics {
		samples[i].Name = name
	}
	metrics.Read(samples)
	var sum uint64
	for _, s := range samples {
		if s.Value.Kind() == metrics.KindUint64 {
			sum += s.Value.Uint64()
		}
	}
	return sum
}

// watchdog keeps evaluations to the memory budget (see the package
// documentation). Its goroutine runs while at least one evaluation is
// watched and ends when none is; it is started again by the next watch.
type watchdog struct {
	budget   uint64
	interval time.Duration
	clock    timer.Clock
	heap     func() uint64
	over     *limitError // what an evaluation over budget is interrupted with

	mu      sync.Mutex
	watched map[*watch]struct{}
	running bool          // the goroutine runs (or is about to)
	idle    chan struct{} // the last watched evaluation ended; capacity 1
}

// watch is one evaluation under the watchdog.
type watch struct {
	vm    *goja.Runtime
	base  uint64 // the heap at the first reading during the evaluation
	seen  bool   // base is set
	fired bool   // the watchdog interrupted vm
}

func newWatchdog(budget uint64, interval time.Duration, clock timer.Clock, heap func() uint64) *watchdog {
	return &watchdog{
		budget: budget, interval: interval, clock: clock, heap: heap,
		over: &limitError{kind: ErrMemoryBudget, detail: fmt.Sprintf(
			"the heap grew by more than %s while it ran (MemoryBudget)", bytesText(int64(budget)))},
		watched: make(map[*watch]struct{}),
		idle:    make(chan struct{}, 1),
	}
}

// detail is the message of an evaluation over budget.
func (w *watchdog) detail() string { return w.over.detail }

// watch puts vm's evaluation under the watchdog, starting its goroutine
// if it does not run. The caller must unwatch it before vm runs anything
// else.
func (w *watchdog) watch(vm *goja.Runtime) *watch {
	x := &watch{vm: vm}
	w.mu.Lock()
	defer w.mu.Unlock()
	w.watched[x] = struct{}{}
	if !w.running {
		w.running = true
		go w.run()
	}
	return x
}

// unwatch ends x's watch: the watchdog touches x's VM no more. It reports
// whether the watchdog interrupted it.
func (w *watchdog) unwatch(x *watch) (fired bool) {
	w.mu.Lock()
	delete(w.watched, x)
	last := len(w.watched) == 0
	w.mu.Unlock()
	if last {
		select {
		case w.idle <- struct{}{}: // the goroutine ends without waiting out its interval
		default:
		}
	}
	return x.fired // written under mu before the delete, read after it
}

// run is the watchdog's goroutine: it reads the heap every interval and
// returns when a reading finds no evaluation to watch.
func (w *watchdog) run() {
	for {
		t := w.clock.NewTimer(w.interval)
		select {
		case <-t.C():
		case <-w.idle:
			t.Stop()
		}
		if !w.sample() {
			return
		}
	}
}

// sample reads the heap once and checks every watched evaluation against
// it. It reports false, and marks the goroutine stopped, when there is
// none.
func (w *watchdog) sample() bool {
	heap := w.heap()
	w.mu.Lock()
	defer w.mu.Unlock()
	if len(w.watched) == 0 {
		w.running = false
		return false
	}
	for x := range w.watched {
		switch {
		case !x.seen:
			x.base, x.seen = heap, true
		case !x.fired && heap > x.base && heap-x.base > w.budget:
			x.fired = true
			x.vm.Interrupt(w.over)
		}
	}
	return true
}

// bytesText writes a size in binary units, e.g. "64 MiB".
func bytesText(n int64) string {
	if n < 0 {
		return "unlimited"
	}
	return humanize.IBytes(uint64(n))
}
