package store

import "time"

// Batch is a bulk operation over the process instances a filter selects
// (suspend, resume, terminate, retry, migrate), run in chunks in the
// background by one engine node at a time. The store keeps its progress
// so that a restart continues where it stopped.
type Batch struct {
	// ID is the caller's (the engine's, package idgen), given at
	// insert.
	ID int64
	// Action names the operation (the engine's BatchAction values).
	Action string
	// Filter is the JSON of the engine's instance filter; Params the
	// JSON of the action's arguments (nil when it has none).
	Filter []byte
	Params []byte
	// Actor, Reason and Data (JSON, nil when none) are the operator's
	// command, given to every instance's command.
	Actor  string
	Reason string
	Data   []byte
	// State is BatchRunning, BatchPaused, BatchCancelled, BatchCompleted
	// or BatchFailed.
	State string
	// Total is how many instances the filter selected when the batch
	// was created.
	Total int64
	// MaxInstanceID bounds the selection: instances created after the
	// batch (a greater ID) are never selected.
	MaxInstanceID int64
	// Cursor is the ID of the last instance processed; the next chunk
	// starts after it.
	Cursor int64
	// Done, Skipped and Failed count the instances processed: the
	// command was applied, refused because it no longer applied (the
	// instance had moved to another state), or failed.
	Done, Skipped, Failed int64
	// Error says why a Failed batch stopped; "" otherwise.
	Error string
	// Note is who made the last operator's state change (pause, resume,
	// cancel) and why.
	Note string
	// Owner is the engine run (its node owner) working on the batch; ""
	// when none.
	Owner string
	// CreatedAt, UpdatedAt and EndedAt (nil until it is Cancelled,
	// Completed or Failed) are its times.
	CreatedAt time.Time
	UpdatedAt time.Time
	EndedAt   *time.Time
}

// Batch states.
const (
	// BatchRunning: the batch waits for or is in the hands of a runner.
	BatchRunning = "running"
	// BatchPaused: an operator paused it; no runner takes it.
	BatchPaused = "paused"
	// BatchCancelled: an operator cancelled it; final.
	BatchCancelled = "cancelled"
	// BatchCompleted: every selected instance was processed; final.
	BatchCompleted = "completed"
	// BatchFailed: it could not go on (Error says why); final.
	BatchFailed = "failed"
)

// BatchFailure is an instance a batch skipped or failed on, with why.
type BatchFailure struct {
	// ID is the caller's (the engine's, package idgen), given with
	// BatchProgressParams.Failures.
	ID int64
	// BatchID and ProcessInstanceID say which batch and instance.
	BatchID           int64
	ProcessInstanceID int64
	// Skipped is true when the command was refused because it no longer
	// applied, false when it failed.
	Skipped bool
	// Error is the refusal or failure.
	Error string
	// At is when it happened.
	At time.Time
}

// ListBatchesParams filter Tx.ListBatches. Zero fields do not filter.
type ListBatchesParams struct {
	// States, when not empty, keeps only batches in these states.
	States []string
	// Actions, when not empty, keeps only batches of these actions.
	Actions []string
	// AfterID keeps only batches whose ID is greater.
	AfterID int64
	// Limit, when greater than 0, is the most batches returned.
	Limit int
}

// ClaimBatchParams are the arguments of Tx.ClaimBatch.
type ClaimBatchParams struct {
	// Owner is the engine run taking the batch; required.
	Owner string
	// Now is the time of the claim.
	Now time.Time
}

// BatchProgressParams are the arguments of Tx.UpdateBatchProgress: what
// one chunk did.
type BatchProgressParams struct {
	// ID is the batch; Owner must still hold it.
	ID    int64
	Owner string
	// Cursor is the ID of the last instance the chunk processed.
	Cursor int64
	// Done, Skipped and Failed are added to the batch's counts.
	Done, Skipped, Failed int64
	// Failures are stored with the batch, each with the ID the caller
	// gave it (0 or less is refused).
	Failures []BatchFailure
	// Finish, when not empty, ends a Running batch in that state
	// (BatchCompleted or BatchFailed) with Error; the owner lets go.
	Finish string
	Error  string
	// Now is the time of the update.
	Now time.Time
}

// SetBatchStateParams are the arguments of Tx.SetBatchState.
type SetBatchStateParams struct {
	// ID is the batch.
	ID int64
	// From are the states the batch may be in; To is the new state. A
	// final To sets EndedAt.
	From []string
	To   string
	// Note is recorded as the batch's Note.
	Note string
	// Now is the time of the change.
	Now time.Time
}

// ListBatchFailuresParams filter Tx.ListBatchFailures.
type ListBatchFailuresParams struct {
	// BatchID is the batch; required.
	BatchID int64
	// AfterID keeps only failures whose ID is greater.
	AfterID int64
	// Limit, when greater than 0, is the most failures returned.
	Limit int
}
