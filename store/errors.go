package store

import "errors"

// ErrNotFound means the row asked for does not exist: no definition,
// instance, work item or event with that id, or no definition at all for a
// package.
var ErrNotFound = errors.New("store: not found")

// ErrConflict means a concurrent writer won a race. An update named an
// ExpectedVersion (or ExpectedState) that the row no longer has, or the
// database aborted the transaction because of a concurrent one (a MySQL
// deadlock, a stale SQLite snapshot). The caller should reload the row and
// retry; when the error came out of a transaction, retry the whole
// transaction.
var ErrConflict = errors.New("store: conflict")

// ErrDuplicate means a row with the same unique key already exists, for
// example an outbox event whose EventID was inserted before. Duplicate
// detection is how at-least-once producers stay exactly-once.
var ErrDuplicate = errors.New("store: duplicate")

// ErrLeaseLost means the caller no longer holds what it claimed: an
// event's claim was released or taken by another node (MarkEventsProcessed
// with an Owner), or a node's registration was taken over (RenewNode). The
// caller must roll its transaction back and drop the work: someone else
// has it, or has done it.
var ErrLeaseLost = errors.New("store: lease lost")

// ErrNotSupported means the database cannot do what was asked (see
// Capabilities).
var ErrNotSupported = errors.New("store: not supported by this database")

// ErrExhausted means a bounded resource is all in use: every node number
// of the id allocator is leased (AcquireIDNode).
var ErrExhausted = errors.New("store: exhausted")

// ErrHeldWrite marks the error of a write that the store held back and
// sent later, with another statement, Flush or the commit (a pipelined
// transaction of package gormstore, on MySQL or SQLite): the write may be an earlier
// caller's in the same transaction, not the one that got the error.
// errors.Is finds the write's own error (ErrConflict, ErrLeaseLost, …)
// in it as well.
var ErrHeldWrite = errors.New("store: a write held back failed")
