//go:build !unix && !windows

package scheduler

import "time"

// processCPU reports that the process's CPU time is unknown here; the
// controller then relies on the throughput check alone.
func processCPU() (time.Duration, bool) { return 0, false }
