package gormstore

import (
	"context"
	"database/sql"
	"strings"
	"sync"

	"gorm.io/gorm"

	"github.com/goxpdl/goxpdl/store/sqlitedialect"
)

// writeGate queues the transactions of one SQLite database file within
// this process, first come first served.
//
// SQLite has one writer at a time, and our transactions take the write
// lock at BEGIN (IMMEDIATE). Without the gate, transactions that find the
// lock taken wait in SQLite's busy handler, which sleeps and polls (up to
// 100 ms a try) and is not fair: under load a background transaction (a
// timer firing, a poll, a lease renewal) can lose every round for
// busy_timeout and fail with SQLITE_BUSY. Waiting on a channel instead
// costs no polling, serves waiters in order and honours ctx. Only one
// process writes a file the engine uses (recovery.LockFile), so a gate in
// the process is enough; a host's own transactions on the same pool that
// do not go through a Store still fall back on busy_timeout.
type writeGate chan struct{}

// writeGates holds one gate per SQLite file pool (*sql.DB).
var writeGates sync.Map

// gateFor returns the gate of db's pool when db is a pool over a SQLite
// file, nil otherwise: MySQL has row locks, an in-memory database one
// connection that serialises everything already, and a transaction holds
// the lock.
func gateFor(db *gorm.DB) writeGate {
	d, ok := db.Dialector.(*sqlitedialect.Dialector)
	if !ok || strings.HasPrefix(d.DSN, MemoryPath) {
		return nil
	}
	pool, ok := db.Statement.ConnPool.(*sql.DB)
	if !ok {
		return nil
	}
	g, _ := writeGates.LoadOrStore(pool, make(writeGate, 1))
	return g.(writeGate)
}

// enter waits for the gate, or for ctx. A nil gate is always open.
func (g writeGate) enter(ctx context.Context) error {
	if g == nil {
		return nil
	}
	select {
	case g <- struct{}{}:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// leave opens the gate for the next waiter.
func (g writeGate) leave() {
	if g != nil {
		<-g
	}
}

// writing waits for the gate of a Store over a SQLite file pool before a
// write statement that runs outside a transaction (an autocommit write
// takes SQLite's write lock like a transaction does), and returns the
// func that opens it again. Over a transaction or MySQL it does nothing.
func (s *Store) writing(ctx context.Context) (func(), error) {
	if s.gate == nil {
		return func() {}, nil
	}
	if err := s.gate.enter(ctx); err != nil {
		return nil, err
	}
	return s.gate.leave, nil
}
