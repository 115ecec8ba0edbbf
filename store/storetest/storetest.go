// Package storetest is the behaviour contract of store.Store, written once
// and run against every implementation and database: gormstore calls Run
// for SQLite and for MySQL/MariaDB. When store behaviour changes, extend
// this suite rather than the tests of one backend. Where the databases
// really differ, the suite branches on store.Capabilities.
//
// Only tests import this package.
package storetest

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/goxpdl/goxpdl/store"
)

// Run runs the conformance suite. newStore must return a Store over a
// fresh, migrated, empty database of its own for every call (each test
// runs in parallel with the others) and release it in t.Cleanup.
//
// Timestamps are compared at microsecond precision in UTC, the precision
// both SQLite (text) and MySQL (DATETIME(6)) keep.
func Run(t *testing.T, newStore func(t *testing.T) store.Store) {
	t.Helper()
	h := &harness{newStore: newStore}
	t.Run("Definition", h.testDefinitions)
	t.Run("ProcessInstance", h.testProcessInstances)
	t.Run("ActivityInstance", h.testActivityInstances)
	t.Run("Variable", h.testVariables)
	t.Run("WorkItem", h.testWorkItems)
	t.Run("Worklist", h.testWorklist)
	t.Run("Inbox", h.testInbox)
	t.Run("FindByVariable", h.testFindByVariable)
	t.Run("Event", h.testEvents)
	t.Run("History", h.testHistory)
	t.Run("InTx", h.testInTx)
	t.Run("Flush", h.testFlush)
	t.Run("Savepoint", h.testSavepoint)
	t.Run("DeferredSavepoint", h.testDeferredSavepoint)
	t.Run("DatabaseFile", h.testDatabaseFile)
	t.Run("Time", h.testTime)
	t.Run("CaseSensitiveKeys", h.testCaseSensitiveKeys)
	t.Run("Timer", h.testTimers)
	t.Run("Node", h.testNodes)
	t.Run("IDNode", h.testIDNodes)
	t.Run("Subscription", h.testSubscriptions)
	t.Run("Incident", h.testIncidents)
	t.Run("Migrate", h.testMigrate)
	t.Run("Batch", h.testBatches)
	t.Run("Lock", h.testLocks)
	t.Run("Purge", h.testPurge)
	t.Run("Audit", h.testAudit)
	t.Run("Counts", h.testCounts)
	t.Run("Publication", h.testPublications)
	t.Run("CallerIDs", h.testCallerIDs)
}

type harness struct {
	newStore func(t *testing.T) store.Store
}

// bundle is what a test gets from setup: its own store and context.
type bundle struct {
	s   store.Store
	ctx context.Context
}

// setup marks t parallel and gives it a fresh store.
func (h *harness) setup(t *testing.T) bundle {
	t.Helper()
	t.Parallel()
	return bundle{s: h.newStore(t), ctx: t.Context()}
}

// t0 is the suite's "now". It has nanoseconds on purpose: the store must
// truncate them to microseconds. No test reads the wall clock.
var t0 = time.Date(2026, 3, 14, 15, 9, 26, 535897932, time.UTC)

// at returns t0 plus d.
func at(d time.Duration) time.Time { return t0.Add(d) }

// norm is t as the store returns it: UTC, microseconds.
func norm(t time.Time) time.Time { return t.UTC().Truncate(time.Microsecond) }

func normPtr(t *time.Time) *time.Time {
	if t == nil {
		return nil
	}
	v := norm(*t)
	return &v
}

func ptr[T any](v T) *T { return &v }

// newDefinition stores a definition of package "pkg".
func newDefinition(t *testing.T, b bundle) store.Definition {
	t.Helper()
	d, err := b.s.InsertDefinition(b.ctx, store.InsertDefinitionParams{
		ID:        nextID(),
		PackageID: "pkg", Name: "Package", Source: []byte("<Package/>"), CreatedAt: t0,
	})
	require.NoError(t, err)
	return d
}

// newProcessInstance stores a top-level Running instance of definition
// defID.
func newProcessInstance(t *testing.T, b bundle, defID int64) store.ProcessInstance {
	t.Helper()
	pi, err := b.s.InsertProcessInstance(b.ctx, store.ProcessInstance{
		ID:           nextID(),
		DefinitionID: defID, ProcessDefID: "main", State: "Running", CreatedAt: t0, UpdatedAt: t0,
	})
	require.NoError(t, err)
	return pi
}

// newActivityInstance stores an Initiated activity of process instance
// piID.
func newActivityInstance(t *testing.T, b bundle, piID int64, defID string) store.ActivityInstance {
	t.Helper()
	ais, err := b.s.InsertActivityInstances(b.ctx, []store.ActivityInstance{{
		ID: nextID(), ProcessInstanceID: piID, ActivityDefID: defID, State: "Initiated", CreatedAt: t0, UpdatedAt: t0,
	}})
	require.NoError(t, err)
	require.Len(t, ais, 1)
	return ais[0]
}

// lastID is the last ID nextID returned.
var lastID atomic.Int64

// nextID returns a new ID for a row whose ID is the caller's (activity
// instances, events), as the engine's allocator would: unique and
// increasing, across the suite's parallel tests.
func nextID() int64 { return lastID.Add(1) }

// event returns an unstored, available, normal event.
func event(id string, piID int64) store.Event {
	return store.Event{
		ID: nextID(), EventID: id, ProcessInstanceID: piID, Kind: "test", Payload: []byte(`{"n":1}`),
		CreatedAt: t0, AvailableAt: t0,
	}
}

func eventIDs(events []store.Event) []string {
	out := make([]string, len(events))
	for i, e := range events {
		out[i] = e.EventID
	}
	return out
}

func ids[T any](rows []T, id func(T) int64) []int64 {
	out := make([]int64, len(rows))
	for i, r := range rows {
		out[i] = id(r)
	}
	return out
}
