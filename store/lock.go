package store

import "time"

// Lock is a business-key lock of a process instance: held (the instance
// runs while nobody else of its scope may) or waiting (a start queued
// until the lock is free). At most one lock per ScopeKey and BusinessKey
// is held: the database keeps that, on every node. Which locks exclude
// each other across scopes is the engine's rule (engine/lock.go); the
// store keeps the rows, serialises their changes per business key
// (LocksForUpdate) and refuses a second holder of the same scope.
type Lock struct {
	// ID is the caller's (the engine's, package idgen), given at
	// insert; ids grow with time, so among the waiting locks of a key it
	// is the order they were queued in (up to the engine nodes' clock
	// skew).
	ID int64
	// ScopeKey names the lock's scope: LockScopeGlobal, or a process
	// (the engine writes "local:" and the package and process ids).
	ScopeKey string
	// BusinessKey is the key locked.
	BusinessKey string
	// ProcessInstanceID is the instance that holds the lock or waits for
	// it.
	ProcessInstanceID int64
	// Held is true for the holder, false for a waiting start.
	Held bool
	// CreatedAt is when the lock was asked for; HeldSince when it was
	// granted (nil while waiting).
	CreatedAt time.Time
	HeldSince *time.Time
}

// LockScopeGlobal is the ScopeKey of a lock over every process.
const LockScopeGlobal = "global"

// DeleteLocksParams select the locks Tx.DeleteLocks deletes: those with
// one of the IDs, or those of ProcessInstanceID (both: both must hold).
type DeleteLocksParams struct {
	IDs               []int64
	ProcessInstanceID int64
}

// ListLocksParams filter Tx.ListLocks. Zero fields do not filter. Pages
// are walked by passing the last ID of a page as AfterID of the next.
type ListLocksParams struct {
	// ScopeKey and BusinessKey, when not empty, keep only those locks.
	ScopeKey    string
	BusinessKey string
	// ProcessInstanceID, when not 0, keeps only that instance's locks.
	ProcessInstanceID int64
	// Held, when not nil, keeps only held (true) or waiting (false)
	// locks.
	Held *bool
	// AfterID keeps only locks whose ID is greater.
	AfterID int64
	// Limit, when greater than 0, is the most locks returned.
	Limit int
}
