package scheduler

// SetStopHook makes Stop call f once it has stopped taking events and
// begins to drain, so that a test knows the drain is under way.
func SetStopHook(s *Scheduler, f func()) { s.stopHook = f }
