package engine_test

import (
	"errors"
	"fmt"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"
	"gorm.io/gorm"

	"github.com/goxpdl/goxpdl/engine"
	"github.com/goxpdl/goxpdl/store"
	"github.com/goxpdl/goxpdl/store/dbtest"
	"github.com/goxpdl/goxpdl/wftype"
	"github.com/goxpdl/goxpdl/xpdl/xpdltest"
)

// lockXPDL has processes p and q, each one manual activity M (a work
// item the test completes to end the instance), and "parent", which calls
// q as a synchronous subflow.
var lockXPDL = func() string {
	manual := xpdltest.Activity("M", `<Implementation><No/></Implementation><Performer>clerk</Performer>`, "", "")
	call := xpdltest.Activity("Call", `<Implementation><SubFlow Id="q" Execution="SYNCHR"/></Implementation>`, "", "")
	return xpdltest.Package(xpdltest.Process("p", "", manual, "") + xpdltest.Process("q", "", manual, "") +
		xpdltest.Process("parent", "", call, ""))
}()

func locked(key string, scope engine.LockScope, wait bool) engine.StartOptions {
	return engine.StartOptions{Package: "pkg", Process: "p", BusinessKey: key, Lock: &engine.LockOptions{Scope: scope, Wait: wait}}
}

// finish completes the work item of instance id, which ends it.
func (h *harness) finish(id int64) {
	h.t.Helper()
	items := h.openItems(id)
	require.Len(h.t, items, 1, "instance %d", id)
	require.NoError(h.t, h.complete(items[0].ID, nil))
	h.requireState(id, wftype.ProcessCompleted)
}

// locks lists every lock, page by page.
func (h *harness) locks(f engine.LockFilter) []engine.Lock {
	h.t.Helper()
	var out []engine.Lock
	f.Limit = 2
	for {
		page, err := h.e.Locks(h.ctx, f)
		require.NoError(h.t, err)
		out = append(out, page.Locks...)
		if page.Next == 0 {
			return out
		}
		f.After = page.Next
	}
}

// awaitState waits until instance id is in state want, woken by every
// record the engine publishes (work a host transaction left in the
// outbox is not in WaitIdle's count).
func (h *harness) awaitState(id int64, want wftype.ProcessState) {
	h.t.Helper()
	wake := make(chan struct{}, 1)
	defer h.e.Subscribe(func(engine.Record) {
		select {
		case wake <- struct{}{}:
		default:
		}
	})()
	for {
		pi, err := h.e.Instance(h.ctx, id)
		require.NoError(h.t, err)
		if string(pi.State) == string(want) {
			return
		}
		select {
		case <-wake:
		case <-h.ctx.Done():
			h.t.Fatalf("instance %d never got %s: %v", id, want, h.ctx.Err())
		}
	}
}

func (h *harness) count() int {
	h.t.Helper()
	all, err := h.e.Store().ListProcessInstances(h.ctx, store.ListProcessInstancesParams{})
	require.NoError(h.t, err)
	return len(all)
}

func TestBusinessKey(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, db *gorm.DB) {
		h := newHarness(t, db).start()
		h.deploy(lockXPDL)
		var mu sync.Mutex
		started := map[int64]string{}
		defer h.e.Subscribe(func(r engine.Record) {
			if r.Type == engine.RecordProcessStarted {
				mu.Lock()
				started[r.Instance] = r.BusinessKey
				mu.Unlock()
			}
		})()

		a, err := h.e.StartProcess(h.ctx, engine.StartOptions{Package: "pkg", Process: "parent", BusinessKey: "order-7"})
		require.NoError(t, err)
		b, err := h.e.StartProcess(h.ctx, engine.StartOptions{Package: "pkg", Process: "p", BusinessKey: "order-8"})
		require.NoError(t, err)
		h.idle()
		top, err := h.e.Store().GetProcessInstance(h.ctx, a)
		require.NoError(t, err)
		require.Equal(t, "order-7", top.BusinessKey)
		kids, err := h.e.Store().ListProcessInstances(h.ctx, store.ListProcessInstancesParams{ParentInstanceID: a})
		require.NoError(t, err)
		require.Len(t, kids, 1)
		require.Equal(t, "order-7", kids[0].BusinessKey, "a subflow inherits its parent's business key")

		// Store level: the engine's instance listing takes the same
		// filter (store.ListProcessInstancesParams.BusinessKey).
		found, err := h.e.Store().ListProcessInstances(h.ctx, store.ListProcessInstancesParams{BusinessKey: "order-7"})
		require.NoError(t, err)
		require.Equal(t, []int64{a, kids[0].ID}, []int64{found[0].ID, found[1].ID})
		found, err = h.e.Store().ListProcessInstances(h.ctx, store.ListProcessInstancesParams{BusinessKey: "order-8"})
		require.NoError(t, err)
		require.Len(t, found, 1)
		require.Equal(t, b, found[0].ID)

		mu.Lock()
		require.Equal(t, map[int64]string{a: "order-7", kids[0].ID: "order-7", b: "order-8"}, started)
		mu.Unlock()

		// Bad input changes nothing.
		before := h.count()
		for _, opts := range []engine.StartOptions{
			{Package: "pkg", Process: "p", Lock: &engine.LockOptions{}},
			{Package: "pkg", Process: "p", BusinessKey: "k", Lock: &engine.LockOptions{Scope: "everywhere"}},
			{Package: "pkg", Process: "p", BusinessKey: string(make([]byte, 256))},
		} {
			_, err := h.e.StartProcess(h.ctx, opts)
			require.ErrorIs(t, err, engine.ErrBadArgument)
		}
		require.Equal(t, before, h.count())
	})
}

func TestLockLocal(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, db *gorm.DB) {
		h := newHarness(t, db).start()
		h.deploy(lockXPDL)
		holder, err := h.e.StartProcess(h.ctx, locked("acct-1", engine.LockLocal, false))
		require.NoError(t, err)

		before := h.count()
		_, err = h.e.StartProcess(h.ctx, locked("acct-1", "", false)) // "" is local
		require.ErrorIs(t, err, engine.ErrLocked)
		le, ok := errors.AsType[*engine.LockedError](err)
		require.True(t, ok)
		require.Equal(t, engine.LockedError{
			Key:    engine.LockKey{Scope: engine.LockLocal, Package: "pkg", Process: "p", BusinessKey: "acct-1"},
			Holder: holder,
		}, *le)
		require.Contains(t, err.Error(), fmt.Sprintf("process instance %d", holder))
		require.Equal(t, before, h.count(), "a refused start creates nothing")

		// A new version of the package is the same process.
		h.deploy(lockXPDL)
		_, err = h.e.StartProcess(h.ctx, locked("acct-1", engine.LockLocal, false))
		require.ErrorIs(t, err, engine.ErrLocked)

		// Not locked: another process, another key, a start without a
		// lock. A global lock is excluded by the local one.
		other := locked("acct-1", engine.LockLocal, false)
		other.Process = "q"
		inQ, err := h.e.StartProcess(h.ctx, other)
		require.NoError(t, err)
		_, err = h.e.StartProcess(h.ctx, locked("acct-2", engine.LockLocal, false))
		require.NoError(t, err)
		_, err = h.e.StartProcess(h.ctx, engine.StartOptions{Package: "pkg", Process: "p", BusinessKey: "acct-1"})
		require.NoError(t, err)
		_, err = h.e.StartProcess(h.ctx, locked("acct-1", engine.LockGlobal, false))
		require.ErrorIs(t, err, engine.ErrLocked)

		// An idempotent start is not refused by its own lock.
		opts := locked("acct-3", engine.LockLocal, false)
		opts.IdempotencyKey = "start-acct-3"
		first, err := h.e.StartProcess(h.ctx, opts)
		require.NoError(t, err)
		again, err := h.e.StartProcess(h.ctx, opts)
		require.NoError(t, err)
		require.Equal(t, first, again)

		held := h.locks(engine.LockFilter{Scope: engine.LockLocal, Package: "pkg", Process: "p"})
		require.Len(t, held, 3)
		require.Equal(t, holder, held[0].Instance)
		require.Equal(t, engine.LockHeld, held[0].State)
		require.NotNil(t, held[0].HeldSince)
		require.Len(t, h.locks(engine.LockFilter{BusinessKey: "acct-1"}), 2)
		require.Len(t, h.locks(engine.LockFilter{Instance: inQ}), 1)
		_, err = h.e.Locks(h.ctx, engine.LockFilter{Scope: engine.LockLocal})
		require.ErrorIs(t, err, engine.ErrBadFilter)

		// The lock goes with the instance's end, in its transaction.
		h.finish(holder)
		require.Empty(t, h.locks(engine.LockFilter{Instance: holder}))
		next, err := h.e.StartProcess(h.ctx, locked("acct-1", engine.LockLocal, false))
		require.NoError(t, err)
		h.requireState(next, wftype.ProcessRunning)
		require.NoError(t, h.e.Terminate(h.ctx, next, engine.Op{}))
		h.requireState(next, wftype.ProcessTerminated)
		_, err = h.e.StartProcess(h.ctx, locked("acct-1", engine.LockLocal, false))
		require.NoError(t, err, "terminated, the holder let go")
	})
}

func TestLockGlobal(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, db *gorm.DB) {
		h := newHarness(t, db).start()
		h.deploy(lockXPDL)
		holder, err := h.e.StartProcess(h.ctx, locked("user-9", engine.LockGlobal, false))
		require.NoError(t, err)
		for _, scope := range []engine.LockScope{engine.LockGlobal, engine.LockLocal} {
			opts := locked("user-9", scope, false)
			opts.Process = "q"
			_, err := h.e.StartProcess(h.ctx, opts)
			le, ok := errors.AsType[*engine.LockedError](err)
			require.True(t, ok, "%s: %v", scope, err)
			require.Equal(t, holder, le.Holder)
			require.Equal(t, engine.LockKey{Scope: engine.LockGlobal, BusinessKey: "user-9"}, le.Key)
		}
		_, err = h.e.StartProcess(h.ctx, locked("user-10", engine.LockGlobal, false))
		require.NoError(t, err)

		// Waiting: a global start queues behind a local holder, and a
		// local start of another process, which the holder would let
		// through, does not overtake it.
		local, err := h.e.StartProcess(h.ctx, locked("user-11", engine.LockLocal, false))
		require.NoError(t, err)
		global, err := h.e.StartProcess(h.ctx, locked("user-11", engine.LockGlobal, true))
		require.NoError(t, err)
		opts := locked("user-11", engine.LockLocal, true)
		opts.Process = "q"
		behind, err := h.e.StartProcess(h.ctx, opts)
		require.NoError(t, err)
		h.requireState(global, wftype.ProcessQueued)
		h.requireState(behind, wftype.ProcessQueued)

		h.finish(local)
		h.requireState(global, wftype.ProcessRunning)
		h.requireState(behind, wftype.ProcessQueued)
		h.finish(global)
		h.requireState(behind, wftype.ProcessRunning)
	})
}

func TestLockWaitQueue(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, db *gorm.DB) {
		h := newHarness(t, db).start()
		h.deploy(lockXPDL)
		holder, err := h.e.StartProcess(h.ctx, locked("acct-1", engine.LockLocal, true))
		require.NoError(t, err)
		h.requireState(holder, wftype.ProcessRunning)

		var queued []int64
		for range 3 {
			id, err := h.e.StartProcess(h.ctx, locked("acct-1", engine.LockLocal, true))
			require.NoError(t, err)
			pi := h.requireState(id, wftype.ProcessQueued)
			require.Contains(t, pi.Diagnosis, fmt.Sprintf("held by process instance %d", holder))
			require.Empty(t, h.openItems(id), "a queued instance does nothing")
			queued = append(queued, id)
		}
		all := h.locks(engine.LockFilter{BusinessKey: "acct-1"})
		require.Len(t, all, 4)
		require.Equal(t, []engine.LockState{engine.LockHeld, engine.LockWaiting, engine.LockWaiting, engine.LockWaiting},
			[]engine.LockState{all[0].State, all[1].State, all[2].State, all[3].State})
		require.Equal(t, []int64{all[1].Instance, all[2].Instance, all[3].Instance}, queued)
		require.Len(t, h.locks(engine.LockFilter{State: engine.LockWaiting}), 3)
		require.ErrorIs(t, h.e.Suspend(h.ctx, queued[0], engine.Op{}), engine.ErrIllegalState)

		// Terminating a queued instance takes it out of the queue.
		require.NoError(t, h.e.Terminate(h.ctx, queued[1], engine.Op{}))
		h.requireState(queued[1], wftype.ProcessTerminated)
		require.Len(t, h.locks(engine.LockFilter{BusinessKey: "acct-1"}), 3)

		// The holder's end starts the first in the queue, as a new start.
		h.finish(holder)
		h.requireState(queued[0], wftype.ProcessRunning)
		require.Len(t, h.openItems(queued[0]), 1)
		h.requireState(queued[2], wftype.ProcessQueued)
		var path []string
		for _, e := range h.history(queued[0]) {
			if e.Subject == store.SubjectProcess {
				path = append(path, e.From+">"+e.To)
			}
		}
		require.Equal(t, []string{">Initiated", "Initiated>Queued", "Queued>Initiated", "Initiated>Running"}, path)

		h.finish(queued[0])
		h.requireState(queued[2], wftype.ProcessRunning)
		h.finish(queued[2])
		require.Empty(t, h.locks(engine.LockFilter{}))
	})
}

func TestReleaseLock(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, db *gorm.DB) {
		h := newHarness(t, db).start()
		h.deploy(lockXPDL)
		holder, err := h.e.StartProcess(h.ctx, locked("acct-1", engine.LockGlobal, false))
		require.NoError(t, err)
		waiter, err := h.e.StartProcess(h.ctx, locked("acct-1", engine.LockGlobal, true))
		require.NoError(t, err)
		h.requireState(waiter, wftype.ProcessQueued)

		key := engine.LockKey{Scope: engine.LockGlobal, BusinessKey: "acct-1"}
		require.ErrorIs(t, h.e.ReleaseLock(h.ctx, engine.LockKey{Scope: engine.LockGlobal, BusinessKey: "acct-2"}, engine.Op{}), engine.ErrNotFound)
		require.ErrorIs(t, h.e.ReleaseLock(h.ctx, engine.LockKey{Scope: engine.LockLocal, BusinessKey: "acct-1"}, engine.Op{}), engine.ErrBadArgument)
		require.ErrorIs(t, h.e.ReleaseLock(h.ctx, key, engine.Op{Data: map[string]any{"f": func() {}}}), engine.ErrBadArgument)

		op := engine.Op{Actor: "alice", Reason: "order cancelled upstream", Data: map[string]any{"ticket": "T-1"}}
		require.NoError(t, h.e.Transaction(h.ctx, db, func(tx *gorm.DB) error {
			return h.e.ReleaseLockTx(h.ctx, tx, key, op)
		}))
		h.awaitState(waiter, wftype.ProcessRunning)
		h.requireState(holder, wftype.ProcessRunning) // it runs on, without the lock
		all := h.locks(engine.LockFilter{})
		require.Len(t, all, 1)
		require.Equal(t, waiter, all[0].Instance)

		var released *engine.HistoryEntry
		for _, e := range h.history(holder) {
			if e.From == e.To && e.Reason != "" {
				released = &e
			}
		}
		require.NotNil(t, released)
		require.Equal(t, "alice", released.Actor)
		require.Equal(t, "order cancelled upstream", released.Reason)
		require.Equal(t, map[string]any{"ticket": "T-1"}, released.Data)
		require.Contains(t, released.Diagnosis, "released by alice")

		// The holder's end now frees nothing of the new holder's.
		h.finish(holder)
		require.Len(t, h.locks(engine.LockFilter{Instance: waiter, State: engine.LockHeld}), 1)
		require.NoError(t, h.e.ReleaseLock(h.ctx, key, op))
		require.ErrorIs(t, h.e.ReleaseLock(h.ctx, key, op), engine.ErrNotFound)
	})
}

// Two engines on one database start the same key at once: the database
// decides, on both dialects. Without waiting exactly one start wins and
// the others are refused naming it; with waiting every start gets an
// instance, one runs and the others queue, and they then run one at a
// time in the order they queued.
func TestLockRace(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, db *gorm.DB) {
		nodes := []*harness{
			newHarness(t, db, func(c *engine.Config) { c.NodeID = "a" }).start(),
			newHarness(t, db, func(c *engine.Config) { c.NodeID = "b" }).start(),
		}
		h := nodes[0]
		h.deploy(lockXPDL)
		const n = 6
		race := func(opts engine.StartOptions) ([]int64, []error) {
			ids, errs := make([]int64, n), make([]error, n)
			var wg sync.WaitGroup
			for i := range n {
				wg.Go(func() { ids[i], errs[i] = nodes[i%2].e.StartProcess(h.ctx, opts) })
			}
			wg.Wait()
			return ids, errs
		}

		ids, errs := race(locked("k1", engine.LockLocal, false))
		var winner int64
		for i, err := range errs {
			if err == nil {
				require.Zero(t, winner, "two starts won")
				winner = ids[i]
			}
		}
		require.NotZero(t, winner)
		for _, err := range errs {
			if err != nil {
				le, ok := errors.AsType[*engine.LockedError](err)
				require.True(t, ok, "%v", err)
				require.Equal(t, winner, le.Holder)
			}
		}
		require.Equal(t, 1, h.count())

		ids, errs = race(locked("k2", engine.LockGlobal, true))
		for _, err := range errs {
			require.NoError(t, err)
		}
		for range n {
			for _, node := range nodes {
				node.idle()
			}
			var running []int64
			for _, id := range ids {
				pi := h.instance(id)
				if string(pi.State) == string(wftype.ProcessRunning) {
					running = append(running, id)
				}
			}
			require.Len(t, running, 1, "one holder at a time")
			queue := h.locks(engine.LockFilter{BusinessKey: "k2"})
			require.Equal(t, running[0], queue[0].Instance, "the oldest lock holds")
			h.finish(running[0])
		}
		require.Empty(t, h.locks(engine.LockFilter{BusinessKey: "k2"}))
	})
}

// The holder's end and a waiting start race: whichever commits first,
// the start never stays queued behind a holder that is gone.
func TestLockEndRacesQueuedStart(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, db *gorm.DB) {
		a := newHarness(t, db, func(c *engine.Config) { c.NodeID = "a" }).start()
		b := newHarness(t, db, func(c *engine.Config) { c.NodeID = "b" }).start()
		a.deploy(lockXPDL)
		for round := range 5 {
			key := fmt.Sprintf("k%d", round)
			holder, err := a.e.StartProcess(a.ctx, locked(key, engine.LockLocal, true))
			require.NoError(t, err)
			items := a.openItems(holder)
			require.Len(t, items, 1)
			var next int64
			var wg sync.WaitGroup
			wg.Go(func() { require.NoError(t, a.complete(items[0].ID, nil)) })
			wg.Go(func() {
				var err error
				next, err = b.e.StartProcess(b.ctx, locked(key, engine.LockLocal, true))
				require.NoError(t, err)
			})
			wg.Wait()
			a.requireState(holder, wftype.ProcessCompleted)
			b.idle()
			a.requireState(next, wftype.ProcessRunning)
			all := a.locks(engine.LockFilter{BusinessKey: key})
			require.Len(t, all, 1)
			require.Equal(t, next, all[0].Instance)
			require.Equal(t, engine.LockHeld, all[0].State)
		}
	})
}

// In the host's transaction a lock is taken if and only if the
// transaction commits, and a refusal leaves the transaction usable.
func TestLockInHostTransaction(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, db *gorm.DB) {
		h := newHarness(t, db).start()
		h.deploy(lockXPDL)
		errRollback := errors.New("host rolls back")
		require.ErrorIs(t, db.Transaction(func(tx *gorm.DB) error {
			_, err := h.e.StartProcessTx(h.ctx, tx, locked("acct-1", engine.LockLocal, false))
			require.NoError(t, err)
			return errRollback
		}), errRollback)
		require.Empty(t, h.locks(engine.LockFilter{}))

		var holder, queued int64
		require.NoError(t, h.e.Transaction(h.ctx, db, func(tx *gorm.DB) error {
			var err error
			if holder, err = h.e.StartProcessTx(h.ctx, tx, locked("acct-1", engine.LockLocal, false)); err != nil {
				return err
			}
			_, err = h.e.StartProcessTx(h.ctx, tx, locked("acct-1", engine.LockLocal, false))
			le, ok := errors.AsType[*engine.LockedError](err)
			require.True(t, ok, "%v", err)
			require.Equal(t, holder, le.Holder)
			// The idempotent repeat of a queued start is the same start.
			opts := locked("acct-1", engine.LockLocal, true)
			opts.IdempotencyKey = "second"
			if queued, err = h.e.StartProcessTx(h.ctx, tx, opts); err != nil {
				return err
			}
			again, err := h.e.StartProcessTx(h.ctx, tx, opts)
			require.Equal(t, queued, again)
			return err
		}))
		h.awaitState(holder, wftype.ProcessRunning)
		h.requireState(queued, wftype.ProcessQueued)
		require.Len(t, h.locks(engine.LockFilter{}), 2)
		h.finish(holder)
		h.awaitState(queued, wftype.ProcessRunning)
	})
}

// A Locking instance is not dead (paper §2.1): it keeps its lock until
// an operator repairs it or releases the lock.
func TestLockingInstanceKeepsItsLock(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, db *gorm.DB) {
		h := newHarness(t, db).start()
		h.deploy(xpdltest.Graph("A B", "A>B?x > 1")) // x is 0: the branch is lost
		stuck, err := h.e.StartProcess(h.ctx, locked("acct-1", engine.LockLocal, false))
		require.NoError(t, err)
		h.requireState(stuck, wftype.ProcessLocking)
		_, err = h.e.StartProcess(h.ctx, locked("acct-1", engine.LockLocal, false))
		require.ErrorIs(t, err, engine.ErrLocked)

		key := engine.LockKey{Scope: engine.LockLocal, Package: "pkg", Process: "p", BusinessKey: "acct-1"}
		require.NoError(t, h.e.ReleaseLock(h.ctx, key, engine.Op{Actor: "ops", Reason: "abandoned"}))
		h.requireState(stuck, wftype.ProcessLocking)
		next, err := h.e.StartProcess(h.ctx, locked("acct-1", engine.LockLocal, false))
		require.NoError(t, err)
		require.NotEqual(t, stuck, next)
	})
}
