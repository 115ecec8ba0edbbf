package engine

// SetRetentionRanFunc makes e call fn after every scheduled retention
// run, with what the run deleted: a test's signal that the schedule
// fired. Call it before Start.
func SetRetentionRanFunc(e *Engine, fn func(PurgeReport, error)) { e.retention.ranFunc = fn }

// SetBulkLoadedFunc makes e call fn with each instance a grouped batch
// transaction (commandMany) loaded and its version, which fn may change
// to make the loaded copy stale. Call it before Start.
func SetBulkLoadedFunc(e *Engine, fn func(id int64, version *int64)) { e.bulkLoadedFunc = fn }
