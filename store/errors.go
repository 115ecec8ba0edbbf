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
