package scheduler

import "time"

// SetStopHook makes Stop call f once it has stopped taking events and
// begins to drain, so that a test knows the drain is under way.
func SetStopHook(s *Scheduler, f func()) { s.stopHook = f }

// SetCPUFunc makes the controller read the process's CPU time from f;
// call it before Start.
func SetCPUFunc(s *Scheduler, f func() (time.Duration, bool)) { s.cpuFunc = f }

// SetAdaptHook makes the controller call f after each sample with the
// normal pool's size before and after it; call it before Start.
func SetAdaptHook(s *Scheduler, f func(from, to int)) { s.adaptHook = f }
