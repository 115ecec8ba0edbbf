package script

import "github.com/goxpdl/goxpdl/timer"

// SampleInterval is how often the watchdog reads the heap.
const SampleInterval = sampleInterval

// NewWatched returns an Evaluator whose watchdog runs on clock and reads
// the heap from heap, so that a test decides when it samples and what it
// sees.
func NewWatched(cfg Config, clock timer.Clock, heap func() uint64) *Evaluator {
	return newEvaluator(cfg, clock, heap)
}
