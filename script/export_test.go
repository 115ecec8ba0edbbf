package script

import (
	"sync"

	"github.com/goxpdl/goxpdl/timer"
)

// SampleInterval is how often the watchdog reads the heap.
const SampleInterval = sampleInterval

// NewWatched returns an Evaluator whose watchdog runs on clock and reads
// the heap from heap, so that a test decides when it samples and what it
// sees.
func NewWatched(cfg Config, clock timer.Clock, heap func() uint64) *Evaluator {
	return newEvaluator(cfg, clock, heap)
}

// NewOneVM returns an Evaluator that keeps at most one VM between
// evaluations, and always hands that one out again (a sync.Pool may drop
// what it is given), so that a test sees the second of two sequential
// evaluations run on the VM of the first whenever the first left it
// fit for reuse.
func NewOneVM(cfg Config) *Evaluator {
	e := newEvaluator(cfg, timer.Real(), readHeap)
	e.pool = new(oneSlot)
	return e
}

// VMsMade returns how many VMs e has made.
func VMsMade(e *Evaluator) int64 { return e.made.Load() }

// oneSlot is a pool of at most one VM, safe for concurrent use.
type oneSlot struct {
	mu sync.Mutex
	x  any
}

func (p *oneSlot) Get() any {
	p.mu.Lock()
	defer p.mu.Unlock()
	x := p.x
	p.x = nil
	return x
}

func (p *oneSlot) Put(x any) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.x = x
}

// MakeVM makes a VM as a pool miss would, and drops it.
func MakeVM(e *Evaluator) { _ = e.runtime() }

// IdleCount returns how many VMs e keeps idle now.
func IdleCount(e *Evaluator) int {
	p := e.pool.(*idleVMs)
	p.mu.Lock()
	defer p.mu.Unlock()
	return len(p.vms)
}
