package engine_test

import (
	"context"
	"database/sql"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"gorm.io/gorm"

	"github.com/goxpdl/goxpdl/engine"
	"github.com/goxpdl/goxpdl/store/dbtest"
	"github.com/goxpdl/goxpdl/timer"
	"github.com/goxpdl/goxpdl/wftype"
	"github.com/goxpdl/goxpdl/xpdl/xpdltest"
)

var errOutage = errors.New("simulated outage: connection refused")

// failWhile makes every statement on db fail while down is set, as a
// database that went away would: GORM's own statements through its
// callbacks, the store's plain SQL and commits through db's connection
// pool.
func failWhile(t *testing.T, db *gorm.DB, down *atomic.Bool) {
	t.Helper()
	fail := func(tx *gorm.DB) {
		if down.Load() {
			_ = tx.AddError(errOutage)
		}
	}
	cb := db.Callback()
	require.NoError(t, cb.Create().Before("gorm:create").Register("test:outage", fail))
	require.NoError(t, cb.Query().Before("gorm:query").Register("test:outage", fail))
	require.NoError(t, cb.Update().Before("gorm:update").Register("test:outage", fail))
	require.NoError(t, cb.Delete().Before("gorm:delete").Register("test:outage", fail))
	require.NoError(t, cb.Raw().Before("gorm:raw").Register("test:outage", fail))
	require.NoError(t, cb.Row().Before("gorm:row").Register("test:outage", fail))
	pool, err := db.DB()
	require.NoError(t, err)
	wrapped := &outagePool{DB: pool, down: down}
	db.ConnPool = wrapped
	db.Statement.ConnPool = wrapped
}

// outagePool is a connection pool whose statements, transactions and
// commits fail while down is set.
type outagePool struct {
	*sql.DB
	down *atomic.Bool
}

func (p *outagePool) GetDBConn() (*sql.DB, error) { return p.DB, nil }

func (p *outagePool) ExecContext(ctx context.Context, query string, args ...any) (sql.Result, error) {
	if p.down.Load() {
		return nil, errOutage
	}
	return p.DB.ExecContext(ctx, query, args...)
}

func (p *outagePool) QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error) {
	if p.down.Load() {
		return nil, errOutage
	}
	return p.DB.QueryContext(ctx, query, args...)
}

func (p *outagePool) BeginTx(ctx context.Context, opts *sql.TxOptions) (gorm.ConnPool, error) {
	if p.down.Load() {
		return nil, errOutage
	}
	tx, err := p.DB.BeginTx(ctx, opts)
	if err != nil {
		return nil, err
	}
	return &outageTx{Tx: tx, down: p.down}, nil
}

// outageTx is a transaction of an outagePool.
type outageTx struct {
	*sql.Tx
	down *atomic.Bool
}

func (tx *outageTx) ExecContext(ctx context.Context, query string, args ...any) (sql.Result, error) {
	if tx.down.Load() {
		return nil, errOutage
	}
	return tx.Tx.ExecContext(ctx, query, args...)
}

func (tx *outageTx) QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error) {
	if tx.down.Load() {
		return nil, errOutage
	}
	return tx.Tx.QueryContext(ctx, query, args...)
}

func (tx *outageTx) Commit() error {
	if tx.down.Load() {
		_ = tx.Rollback()
		return errOutage
	}
	return tx.Tx.Commit()
}

// An event whose processing fails while the database is away, so that
// not even its retry can be recorded, is tried again from memory once the
// database is back: the instance moves on long before the event's claim
// (30 s) would have run out.
func TestAnOutageIsRetriedFromMemory(t *testing.T) {
	t.Parallel()
	src := xpdltest.PackageWith(`<Applications><Application Id="charge"/></Applications>`,
		xpdltest.Process("p", "",
			xpdltest.Activity("Charge", `<Implementation><Tool Id="charge"/></Implementation>`, "", "")+
				xpdltest.Activity("Done", "<Route/>", "", ""),
			xpdltest.Transition("t1", "Charge>Done")))
	dbtest.Each(t, func(t *testing.T, db *gorm.DB) {
		var down atomic.Bool
		failWhile(t, db, &down)
		clock := timer.NewFake(time.Date(2026, 11, 23, 9, 0, 0, 0, time.UTC))
		h := newHarness(t, db, func(c *engine.Config) { c.Clock = clock })
		var calls atomic.Int32
		h.e.RegisterApplication("charge", func(context.Context, *engine.Call) (map[string]any, error) {
			if calls.Add(1) == 1 {
				down.Store(true) // the database goes away under the call
			}
			return nil, nil
		})
		h.start()
		h.deploy(src)
		id := h.startProcess("pkg", "", nil)
		require.NoError(t, h.e.WaitIdle(h.ctx)) // the handler failed and gave the event up
		require.Positive(t, h.e.Stats().Scheduler.EventsFailed)
		down.Store(false)

		// Well under the 30 s claim, the event comes back from memory.
		ctx, cancel := context.WithTimeout(h.ctx, time.Minute) // a hang guard, not a timing assertion
		defer cancel()
		for step := 0; ; step++ {
			require.Less(t, step, 200, "not completed within 10 s of clock time")
			pi, err := h.e.Instance(ctx, id)
			require.NoError(t, err)
			if pi.State == wftype.ProcessCompleted {
				break
			}
			armed := clock.TimerAdded()
			clock.Advance(50 * time.Millisecond)
			select {
			case <-armed:
			case <-ctx.Done():
				t.Fatal("no timer was armed again")
			}
		}
		require.Positive(t, h.e.Stats().Bus.Redelivered)
		require.Equal(t, int32(2), calls.Load(), "the call was repeated once, with the same key")
	})
}
