package store

import "time"

// MaxPurgeLimit is the largest PurgeProcessInstancesParams.Limit.
const MaxPurgeLimit = 5000

// PurgeProcessInstancesParams are the arguments of
// Tx.PurgeProcessInstances. The filter selects top-level instances (and
// orphans, whose parent is gone); their subflow instances go with them.
type PurgeProcessInstancesParams struct {
	// States are the final states whose instances may be deleted;
	// required. The store does not know which states are final: the
	// caller names them (the engine: Completed and Terminated).
	States []string
	// EndedBefore is the cutoff: only instances whose EndedAt is before
	// it are deleted, their subflow instances included; required.
	EndedBefore time.Time
	// PackageID, when not empty, keeps only instances of definitions of
	// that package (any version).
	PackageID string
	// ProcessDefID, when not empty, keeps only instances of that XPDL
	// WorkflowProcess.
	ProcessDefID string
	// Exclude leaves out the instances of these scopes: how a caller
	// applies one age to everything but the processes that have their
	// own.
	Exclude []ProcessScope
	// Limit is the most top-level instances deleted; required, 1 to
	// MaxPurgeLimit.
	Limit int
}

// ProcessScope names the instances of a package, or of one process of
// it.
type ProcessScope struct {
	// PackageID is the XPDL Package id; required.
	PackageID string
	// ProcessDefID, when not empty, narrows the scope to that
	// WorkflowProcess of the package.
	ProcessDefID string
}

// PurgeResult says what Tx.PurgeProcessInstances deleted.
type PurgeResult struct {
	// Instances counts the process instances deleted, subflow instances
	// included; 0 when nothing (more) matched.
	Instances int64
	// Rows counts the rows deleted in every table, the instances' own
	// included.
	Rows int64
}
