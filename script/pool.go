package script

import (
	goruntime "runtime"
	"sync"
)

// DefaultIdleVMs returns Config.IdleVMs's default: four VMs per processor
// Go may run on, and no fewer than eight.
func DefaultIdleVMs() int { return max(8, 4*goruntime.GOMAXPROCS(0)) }

// vmPool keeps VMs between evaluations.
type vmPool interface {
	Get() any
	Put(x any)
}

// idleVMs is a vmPool of at most max VMs, safe for concurrent use. Unlike
// a sync.Pool it keeps them across garbage collections: a VM takes
// milliseconds to make (the preludes run, the builtins are frozen), an
// evaluation on a pooled one microseconds, and a sync.Pool empties at
// every other collection, which an engine under load runs many times a
// second. The last VM put back is the first taken (its memory is the
// likeliest to be in cache); one put back to a full pool is dropped.
type idleVMs struct {
	mu  sync.Mutex
	vms []any
	max int
}

func newIdleVMs(n int) *idleVMs { return &idleVMs{max: n, vms: make([]any, 0, n)} }

// Get takes a VM, or returns nil when none is idle.
func (p *idleVMs) Get() any {
	p.mu.Lock()
	defer p.mu.Unlock()
	n := len(p.vms)
	if n == 0 {
		return nil
	}
	x := p.vms[n-1]
	p.vms[n-1] = nil
	p.vms = p.vms[:n-1]
	return x
}

// Put keeps x for a later Get unless max VMs are already idle.
func (p *idleVMs) Put(x any) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if len(p.vms) < p.max {
		p.vms = append(p.vms, x)
	}
}
