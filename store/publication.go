package store

import (
	"context"
	"time"
)

// Publications is the publication outbox: the engine's records waiting
// for its sink (engine.Config.Publish, docs/sinks.md), written in the
// transaction of the step that made them, read in order per process
// instance and deleted once published; and the leases that give one
// engine node at a time the right to publish them. Tx embeds it.
type Publications interface {
	// InsertPublications writes records to the outbox, all or none once
	// the caller has rolled back after an error (see InsertHistory), with
	// the IDs the caller gave them (positive and unique; an ID of 0 or
	// less is refused). ErrDuplicate when an ID, or a
	// (ProcessInstanceID, Version, Seq), is stored already, possibly
	// reported by a later statement, Flush or the commit (see Flush).
	InsertPublications(ctx context.Context, pubs []Publication) error
	// ListPublications returns a batch of waiting publications: those of
	// the process instances whose oldest waiting publications (by ID)
	// come first, each instance's in (Version, Seq) order, the instances
	// one after another in ID order, at most params.Limit in all. For
	// each instance the batch holds a prefix of its waiting publications
	// in that order: the caller publishes them in it.
	ListPublications(ctx context.Context, params ListPublicationsParams) ([]Publication, error)
	// DeletePublications deletes the publications params.IDs (those that
	// do not exist are left out) if params.Owner holds the lease
	// params.Lease at params.Now (AcquireLease), in one transaction;
	// otherwise it returns ErrLeaseLost and deletes nothing.
	DeletePublications(ctx context.Context, params DeletePublicationsParams) error
	// CountPublications counts the waiting publications, stopping at
	// limit when it is greater than 0, and tells when the first of them
	// (in ID order) was created.
	CountPublications(ctx context.Context, limit int64) (PublicationBacklog, error)

	// AcquireLease gives params.Owner the lease params.Name until
	// params.Until if nobody holds it at params.Now (its holder's Until
	// is not after Now) or params.Owner holds it already (a renewal),
	// and returns the lease as stored. When another owner holds it the
	// lease is returned as stored with ErrLeaseLost. Of concurrent
	// callers, one wins. ReleaseClaims releases the leases of the owner
	// it names (its node stopped or died).
	AcquireLease(ctx context.Context, params AcquireLeaseParams) (Lease, error)
	// ReleaseLease gives up the lease name if owner holds it; nothing
	// happens otherwise.
	ReleaseLease(ctx context.Context, name, owner string) error
}

// Publication is one record of the engine waiting in the publication
// outbox.
type Publication struct {
	// ID identifies the record for good (the published message's ID);
	// set by the caller (the engine's id allocator, package idgen).
	ID int64
	// ProcessInstanceID is the instance the record is about.
	ProcessInstanceID int64
	// Version is the version of the instance that the step making the
	// record committed (its optimistic version: a later step of the
	// instance commits a greater one), and Seq the record's place among
	// that step's records: together they order an instance's records.
	Version int64
	Seq     int
	// Type is the record's type and ProcessDefID the XPDL
	// WorkflowProcess id, for the message's headers and topic.
	Type         string
	ProcessDefID string
	// Payload is the record as JSON.
	Payload []byte
	// CreatedAt is when the step happened.
	CreatedAt time.Time
}

// ListPublicationsParams are the arguments of Tx.ListPublications.
type ListPublicationsParams struct {
	// Limit is the most publications returned; must be greater than 0.
	Limit int
}

// DeletePublicationsParams are the arguments of Tx.DeletePublications.
type DeletePublicationsParams struct {
	// IDs are the publications to delete.
	IDs []int64
	// Lease, Owner and Now fence the delete: Owner must hold the lease
	// named Lease at Now.
	Lease string
	Owner string
	Now   time.Time
}

// PublicationBacklog is what Tx.CountPublications returns.
type PublicationBacklog struct {
	// Count is how many publications wait (at most the limit asked for).
	Count int64
	// Oldest is the CreatedAt of the first waiting publication in ID
	// order; zero when none waits.
	Oldest time.Time
}

// Lease is a named lease one owner holds at a time (Tx.AcquireLease).
type Lease struct {
	// Name names what the lease is for.
	Name string
	// Owner holds it ("" once released).
	Owner string
	// Until is when it runs out unless renewed.
	Until time.Time
}

// AcquireLeaseParams are the arguments of Tx.AcquireLease.
type AcquireLeaseParams struct {
	// Name is the lease; Owner who takes or renews it; both required.
	Name  string
	Owner string
	// Now is the current time by the caller's clock; Until when the
	// lease runs out, after Now.
	Now   time.Time
	Until time.Time
}
