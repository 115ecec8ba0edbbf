// Package store defines how goxpdl persists its state: the row types, the
// Store and Tx interfaces and the sentinel errors callers branch on. It
// imports no database code, so the pure layers and the drivers can depend
// on it; the GORM implementation for SQLite and MySQL/MariaDB lives in
// store/gormstore and the behaviour contract every implementation must meet
// in store/storetest.
//
// # Caller's obligations
//
//   - Time: the store never reads a clock. Every timestamp (CreatedAt,
//     UpdatedAt, EndedAt, AvailableAt, the "now" of a claim, ...) is passed
//     in by the caller, which takes it from the engine's injectable clock.
//     Timestamps are kept in UTC with microsecond precision: finer parts are
//     truncated on write and times are returned in UTC, so compare them with
//     time.Time.Equal.
//   - Byte slices: an empty slice and a nil slice are stored alike and both
//     read back as nil.
//   - Concurrency: process instances, activity instances and work items
//     carry a Version. Updates
//     name the version they were computed from (ExpectedVersion) and fail
//     with ErrConflict when another writer got there first; reload and
//     retry. Outbox events are handed out by ClaimEvents under a lease.
//   - Transactions: InTx runs a function in one database transaction, and
//     the Tx it receives has every data method. A Tx must not be used after
//     the function returns.
//
// # Errors
//
// Methods wrap ErrNotFound, ErrConflict and ErrDuplicate with the operation
// and the id, for example "get process instance 42: store: not found";
// test for them with errors.Is.
package store
