package store

import "time"

// IDNode is one of the node numbers of the engine's id allocator
// (package idgen): every id the engine gives a row carries the number of
// the allocator that made it, so that allocators sharing a database never
// make the same id. A number is leased: its holder renews the lease while
// it runs, and a number whose lease ran out is free for another
// allocator. ReservedUntil is how far the holder may have gone: its ids
// carry times before it, so the next holder of the number starts there.
type IDNode struct {
	// Number is the node number, from 0.
	Number int
	// Owner identifies the allocator holding the number; "" for none
	// (released).
	Owner string
	// LeaseUntil is when the number is free again unless renewed.
	LeaseUntil time.Time
	// ReservedUntil bounds the times of the ids made with the number
	// so far: all are before it.
	ReservedUntil time.Time
}

// AcquireIDNodeParams are the arguments of Tx.AcquireIDNode.
type AcquireIDNodeParams struct {
	// Owner identifies the allocator; required.
	Owner string
	// Now is the caller's time: a number whose lease ends at or before
	// it is free.
	Now time.Time
	// LeaseUntil is when the acquired number's lease ends; after Now.
	LeaseUntil time.Time
	// Numbers is how many numbers there are (0 to Numbers-1); at least 1.
	Numbers int
	// Reserve is how far past the start of its ids the acquired number
	// is reserved (IDNode.ReservedUntil = From + Reserve); positive.
	Reserve time.Duration
}

// RenewIDNodeParams are the arguments of Tx.RenewIDNode.
type RenewIDNodeParams struct {
	// Number and Owner name the lease.
	Number int
	Owner  string
	// LeaseUntil is the lease's new end.
	LeaseUntil time.Time
	// ReservedUntil is the new bound of the ids' times; a value before
	// the stored one leaves the stored one.
	ReservedUntil time.Time
}

// ReleaseIDNodeParams are the arguments of Tx.ReleaseIDNode.
type ReleaseIDNodeParams struct {
	// Number and Owner name the lease.
	Number int
	Owner  string
	// Now ends the lease: the number is free from then on.
	Now time.Time
	// ReservedUntil is the bound of the times of the ids the owner made;
	// a value before the stored one leaves the stored one.
	ReservedUntil time.Time
}
