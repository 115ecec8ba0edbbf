package store

import "time"

// MigrateProcessInstanceParams are the arguments of
// Tx.MigrateProcessInstance.
type MigrateProcessInstanceParams struct {
	// ID is the process instance to move to another definition.
	ID int64
	// ExpectedVersion is the version the migration was planned from.
	ExpectedVersion int64
	// DefinitionID and ProcessDefID are the definition and process the
	// instance runs from now on.
	DefinitionID int64
	ProcessDefID string
	// Tokens is the instance's navigation state, renamed for the new
	// definition.
	Tokens []byte
	// Activities maps activity instances of the process instance to
	// their XPDL activity ids in the new definition; their work items,
	// worklist entries, subscriptions and inbox messages follow.
	Activities map[int64]string
	// Renamed maps old XPDL activity ids to new ones, for the inbox
	// messages kept for activities that have not started yet.
	Renamed map[string]string
	// UpdatedAt is the time of the change.
	UpdatedAt time.Time
}
