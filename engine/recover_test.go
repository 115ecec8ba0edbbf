package engine_test

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"gorm.io/gorm"

	"github.com/goxpdl/goxpdl/engine"
	"github.com/goxpdl/goxpdl/store"
	"github.com/goxpdl/goxpdl/store/dbtest"
	"github.com/goxpdl/goxpdl/timer"
	"github.com/goxpdl/goxpdl/wftype"
	"github.com/goxpdl/goxpdl/xpdl/xpdltest"
)

// leaveAsKilled writes what a node killed in the middle of its work leaves
// behind: its registration with a lease still running, and a terminate
// request for instance id that it had claimed for an hour.
func leaveAsKilled(t *testing.T, st store.Store, node, owner string, id int64, now time.Time) {
	t.Helper()
	_, _, err := st.RegisterNode(t.Context(), store.RegisterNodeParams{ID: node, Owner: owner, Now: now, LeaseUntil: now.Add(3 * time.Second)})
	require.NoError(t, err)
	until := now.Add(time.Hour)
	_, err = st.InsertEvents(t.Context(), []store.Event{{
		ID: id, EventID: owner + "-terminate", ProcessInstanceID: id, Kind: string(wftype.EventTerminateRequested), Critical: true,
		CreatedAt: now, AvailableAt: now, ClaimedBy: owner, ClaimedUntil: &until,
	}})
	require.NoError(t, err)
}

func TestRecoveryTakesOverTheWorkOfKilledNodes(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, db *gorm.DB) {
		clock := timer.NewFake(epoch)
		node := func(id string) func(*engine.Config) {
			// An hour: the renewer (every 20 min) stays out of the way; Recover reaps.
			return func(c *engine.Config) { c.Clock, c.NodeID, c.NodeLease = clock, id, time.Hour }
		}
		first := newHarness(t, db, node("n1")).start()
		first.deploy(deadlineXPDL("", ""))
		a := first.startProcess("deadlines", "approval", nil)
		b := first.startProcess("deadlines", "approval", nil)
		first.item(a, "Approve")
		first.item(b, "Approve")
		require.NoError(t, first.e.Stop(t.Context()))

		// n1 is killed while it holds a's terminate request; it restarts
		// under the same NodeID: the request is processed at once, not
		// after the hour of its claim (the fake clock does not move).
		leaveAsKilled(t, first.e.Store(), "n1", "n1#killed", a, clock.Now())
		again := newHarness(t, db, node("n1")).start()
		again.awaitFinal(a)
		again.requireState(a, wftype.ProcessTerminated)

		// Node n2 dies holding b's terminate request; n1 takes it over once
		// n2's lease has run out.
		leaveAsKilled(t, again.e.Store(), "n2", "n2#killed", b, clock.Now())
		rep, err := again.e.Recover(t.Context())
		require.NoError(t, err)
		require.Empty(t, rep.ReapedNodes, "n2's lease still runs")
		require.Equal(t, int64(1), rep.PendingEvents)
		again.requireState(b, wftype.ProcessRunning)

		clock.Advance(4 * time.Second)
		rep, err = again.e.Recover(t.Context())
		require.NoError(t, err)
		require.Equal(t, []string{"n2"}, rep.ReapedNodes)
		require.Equal(t, int64(1), rep.ReleasedClaims)
		again.awaitFinal(b)
		again.requireState(b, wftype.ProcessTerminated)
		require.NoError(t, again.e.WaitQuiet(t.Context()))
		rep, err = again.e.Recover(t.Context())
		require.NoError(t, err)
		require.Zero(t, rep.PendingEvents)
	})
}

// An activity whose event comes again (its earlier attempt failed after
// the call: here a retryable error stands for a crash before the commit)
// calls its applications again with the same key, unless an application
// is declared Retryable="false": then it goes Abnormal uncalled.
func TestRedeliveredCallsRespectRetryable(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, db *gorm.DB) {
		h := newHarness(t, db)
		keys := map[string][]string{}
		var mu sync.Mutex
		failFirst := func(_ context.Context, c *engine.Call) (map[string]any, error) {
			mu.Lock()
			defer mu.Unlock()
			keys[c.Application] = append(keys[c.Application], c.IdempotencyKey)
			if len(keys[c.Application]) == 1 {
				return nil, engine.Retryable(errors.New("the commit after the call failed"))
			}
			return nil, nil
		}
		h.e.RegisterApplication("again", failFirst)
		h.e.RegisterApplication("once", failFirst)
		rec := record(h)
		h.start()
		src := xpdltest.PackageWith(`<Applications>
  <Application Id="again"/>
  <Application Id="once"><ExtendedAttributes><ExtendedAttribute Name="Retryable" Value="false"/></ExtendedAttributes></Application>
</Applications>`, xpdltest.Process("p", "", tool("A", "again")+tool("O", "once"), xpdltest.Transition("t1", "A>O")))
		h.deploy(src)
		id := h.startProcess("pkg", "", nil)
		rec.await(t, id, engine.RecordActivityAbnormal, 1)
		h.idle()

		require.Len(t, keys["again"], 2, "called again after the failed attempt")
		require.Equal(t, keys["again"][0], keys["again"][1], "with the same idempotency key")
		require.Len(t, keys["once"], 1, "not called again")
		acts, err := activitiesOf(h.ctx, h.e, id)
		require.NoError(t, err)
		for _, a := range acts {
			if a.Activity == "O" {
				require.Equal(t, wftype.ActivityAbnormal, a.State)
				require.Contains(t, a.Diagnosis, "Retryable=false")
			}
		}
	})
}

// A transaction run again in the same delivery (here a conflict: the
// application moves the instance's version on, as another node's commit
// would; the same holds for a group commit replayed after another member
// failed) counts as a redelivery: an application declared
// Retryable="false" is not called a second time.
func TestRerunDoesNotRepeatNonRetryableCalls(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, db *gorm.DB) {
		h := newHarness(t, db)
		calls := 0
		var mu sync.Mutex
		h.e.RegisterApplication("once", func(_ context.Context, c *engine.Call) (map[string]any, error) {
			mu.Lock()
			defer mu.Unlock()
			calls++
			if calls == 1 { // the instance changes underneath this transaction
				return nil, c.Tx.Exec("UPDATE goxpdl_process_instances SET version = version + 1 WHERE id = ?", c.ProcessInstanceID).Error
			}
			return nil, nil
		})
		h.start()
		h.deploy(xpdltest.PackageWith(`<Applications>
  <Application Id="once"><ExtendedAttributes><ExtendedAttribute Name="Retryable" Value="false"/></ExtendedAttributes></Application>
</Applications>`, xpdltest.Process("p", "", tool("O", "once"), "")))
		id := h.startProcess("pkg", "", nil)
		require.NoError(t, h.e.WaitQuiet(h.ctx))
		require.Equal(t, 1, calls, "not called again when the transaction ran again")
		acts, err := activitiesOf(h.ctx, h.e, id)
		require.NoError(t, err)
		require.Len(t, acts, 1)
		require.Equal(t, wftype.ActivityAbnormal, acts[0].State)
		require.ErrorContains(t, errors.New(acts[0].Diagnosis), "Retryable=false")
	})
}

// Recovery's second phase: an instance whose pending event was lost (here
// deleted by hand in the transaction that wrote it) is moved on by
// Recover, exactly once, with a history entry saying so.
func TestRecoverSendsLostEvents(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, db *gorm.DB) {
		h := newHarness(t, db, func(c *engine.Config) { c.RescueInterval = -1 })
		rec := record(h)
		h.start()
		h.deploy(xpdltest.Graph("A B", "A>B"))
		var id int64
		require.NoError(t, h.e.Transaction(h.ctx, db, func(tx *gorm.DB) error {
			var err error
			if id, err = h.e.StartProcessTx(h.ctx, tx, engine.StartOptions{Package: "pkg"}); err != nil {
				return err
			}
			return tx.Exec("DELETE FROM goxpdl_events WHERE process_instance_id = ?", id).Error
		}))
		require.NoError(t, h.e.WaitQuiet(h.ctx))
		require.Equal(t, wftype.ProcessInitiated, h.instance(id).State, "nothing moves it")

		rep, err := h.e.Recover(h.ctx)
		require.NoError(t, err)
		require.Equal(t, 1, rep.Rescued)
		h.requireState(id, wftype.ProcessCompleted)
		again, err := h.e.Recover(h.ctx)
		require.NoError(t, err)
		require.Zero(t, again.Rescued, "nothing is lost any more")
		require.NoError(t, h.e.WaitQuiet(h.ctx))

		require.Len(t, rec.of(id, engine.RecordProcessRecovered), 1)
		require.Equal(t, "re-sent process.schedule", rec.of(id, engine.RecordProcessRecovered)[0].Detail)
		recovered := 0
		for _, entry := range h.history(id) {
			if entry.Detail["recovered"] != nil {
				recovered++
				require.Equal(t, "recovery", entry.Actor)
			}
		}
		require.Equal(t, 1, recovered)
		require.Equal(t, map[string]int{"A": 1, "B": 1}, h.started(id), "each activity ran once")
	})
}
