package store

import "time"

// AuditEntry is one operator command in the audit log: who gave it,
// what it was, what it was given on, why, and what came of it. The
// engine writes one for every command that carries an Op (engine/audit.go).
// Entries name process instances without belonging to them: purging an
// instance keeps the entries that name it.
type AuditEntry struct {
	// ID is the caller's (the engine's, package idgen), given at
	// insert; it orders the entries as written (ids grow with time).
	ID int64
	// At is when the entry was written (the engine's clock).
	At time.Time
	// Actor is who gave the command.
	Actor string
	// Action names the command ("instance.suspend", "batch.start").
	Action string
	// TargetKind and TargetID name what the command was given on (an
	// "instance" and its id, a "lock" and its business key); TargetID
	// is "" when the command was refused before it was known.
	TargetKind string
	TargetID   string
	// InstanceID is the process instance the command was about, when
	// there is one (the instance of a retried activity too); nil
	// otherwise.
	InstanceID *int64
	// Reason and Data (JSON; nil for none) are the operator's.
	Reason string
	Data   []byte
	// Result is "ok", "refused" or "failed"; Error is the refusal or
	// failure ("" for ok); Detail is what the engine adds (a deployed
	// version, a purge's counts).
	Result string
	Error  string
	Detail string
}

// ListAuditParams filter Tx.ListAudit. Zero fields do not filter; the
// fields given must all hold.
type ListAuditParams struct {
	// Actor keeps the entries of this actor.
	Actor string
	// Actions and Results, when not empty, keep entries with one of
	// these actions and one of these results.
	Actions []string
	Results []string
	// TargetKind and TargetID keep the entries with this target kind and
	// this target id.
	TargetKind string
	TargetID   string
	// InstanceID keeps the entries about this process instance.
	InstanceID int64
	// From keeps the entries written at or after it, Before those
	// written before it.
	From   *time.Time
	Before *time.Time
	// BeforeID keeps the entries whose ID is smaller: the last ID of a
	// page walks to the next (older) one.
	BeforeID int64
	// Limit, when greater than 0, is the most entries returned.
	Limit int
}
