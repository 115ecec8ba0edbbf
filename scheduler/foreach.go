package scheduler

import (
	"sync"
	"sync/atomic"
)

// ForEach calls fn(i) for every i in [0, n), on up to parallel goroutines
// at once (one, the caller's, when parallel <= 1), and returns when every
// call has returned: the caller owns the goroutines for the length of the
// call. The engine's batch runner gives a chunk's instances their
// commands this way (engine/batch.go). fn must not panic.
func ForEach(n, parallel int, fn func(i int)) {
	if parallel <= 1 || n <= 1 {
		for i := range n {
			fn(i)
		}
		return
	}
	var next atomic.Int64
	var wg sync.WaitGroup
	for range min(parallel, n) {
		wg.Go(func() {
			for i := int(next.Add(1) - 1); i < n; i = int(next.Add(1) - 1) {
				fn(i)
			}
		})
	}
	wg.Wait()
}
