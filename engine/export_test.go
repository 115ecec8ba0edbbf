package engine

// SetRetentionRanFunc makes e call fn after every scheduled retention
// run, with what the run deleted: a test's signal that the schedule
// fired. Call it before Start.
func SetRetentionRanFunc(e *Engine, fn func(PurgeReport, error)) { e.retention.ranFunc = fn }
