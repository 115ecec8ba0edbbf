package engine

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"runtime/debug"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/goxpdl/goxpdl/store"
	"github.com/goxpdl/goxpdl/timer"
)

// txBody is the work of one engine transaction.
type txBody func(ctx context.Context, tx store.Tx) error

// groupCommitter runs the engine's own transactions, several in one
// database transaction when they arrive together (group commit). A commit
// costs a disk flush and, on SQLite, the single write lock; runs of
// different instances that queue for it share one instead of taking
// turns. Each run keeps its own outcome: a group runs first without
// savepoints; when a member fails, the transaction is rolled back and the
// others run again, each inside a savepoint, so that one that fails is
// rolled back alone and the others commit. A member's body must therefore
// be safe to run again after a rollback (the engine's runs start from the
// database each time; an application call is repeated with the same
// idempotency key).
//
// There is no goroutine of its own. The first caller in a lane's queue
// leads: it takes what is queued behind it (up to maxGroup), runs the
// group, wakes the others with their results, and hands the lead to the
// next caller in the queue (as LevelDB's writers do). Callers queued
// while a group commits form the next group, so groups grow with load and
// a lone caller waits for nobody.
//
// SQLite admits one writer, so it gets one lane; waiting on SQLite's
// busy handler instead collapses throughput and ends in SQLITE_BUSY.
// MySQL takes several lanes, whose transactions the server runs in
// parallel.
type groupCommitter struct {
	store    store.Store
	maxGroup int
	lanes    []*commitLane
	// critical is the lane of process control (suspend, resume,
	// terminate, deadlines, recovery): on MySQL a lane of its own, which
	// never waits behind an application call; on SQLite, which has one
	// writer, the one lane, where critical requests go first and a group
	// of others yields to them between its members.
	critical *commitLane
	// clock and log report a group whose transaction took longer than
	// slowCommit: a disk that stalls on fsync, a lock held too long, or
	// an application call that hangs inside the transaction.
	clock timer.Clock
	log   *slog.Logger
	next  atomic.Uint64 // round-robin lane choice

	groups  atomic.Uint64 // database transactions committed or rolled back
	members atomic.Uint64 // engine transactions run in them
	// observe, when set, receives each database transaction as it ends
	// (Config.Observer).
	observe func(GroupCommitted)
}

// commitLane is one queue of callers and the group it is running.
type commitLane struct {
	mu    sync.Mutex
	cond  *sync.Cond
	queue []*commitRequest
	// running is how many members at the head of queue form the group
	// being run.
	running int
	// critical counts the critical requests queued and not yet running:
	// a group of normal ones on a shared lane yields to them between
	// members (runOptimistic).
	critical atomic.Int32
}

type commitRequest struct {
	ctx      context.Context
	body     txBody
	critical bool
	done     bool
	err      error
}

// slowCommit is how long a group's transaction may take before the
// committer logs a warning.
const slowCommit = 2 * time.Second

func newGroupCommitter(st store.Store, lanes, maxGroup int, clock timer.Clock, log *slog.Logger) *groupCommitter {
	g := &groupCommitter{store: st, maxGroup: maxGroup, clock: clock, log: log}
	newLane := func() *commitLane {
		l := &commitLane{}
		l.cond = sync.NewCond(&l.mu)
		return l
	}
	for range lanes {
		g.lanes = append(g.lanes, newLane())
	}
	g.critical = g.lanes[0]
	if lanes > 1 {
		g.critical = newLane()
	}
	return g
}

// stats returns the committer's counters.
func (g *groupCommitter) stats() CommitStats {
	return CommitStats{Transactions: g.groups.Load(), Runs: g.members.Load()}
}

// do runs body in a transaction, possibly shared with other callers',
// and returns body's error, or the commit's when body succeeded and the
// commit failed. A critical body (process control) takes the critical
// lane, ahead of the other requests queued there.
func (g *groupCommitter) do(ctx context.Context, body txBody, critical bool) error {
	l := g.lanes[0]
	switch {
	case critical:
		l = g.critical
	case len(g.lanes) > 1:
		l = g.lanes[g.next.Add(1)%uint64(len(g.lanes))]
	}
	shared := critical && l == g.lanes[0]
	ctx = context.WithValue(ctx, laneKey{}, l) // for waiting
	req := &commitRequest{ctx: ctx, body: body, critical: critical}
	l.mu.Lock()
	if shared {
		// After the running group and the critical requests before it.
		i := l.running
		for i < len(l.queue) && l.queue[i].critical {
			i++
		}
		l.queue = slices.Insert(l.queue, i, req)
		l.critical.Add(1)
	} else {
		l.queue = append(l.queue, req)
	}
	for !req.done && l.queue[0] != req {
		l.cond.Wait()
	}
	if req.done {
		l.mu.Unlock()
		return req.err
	}
	// req leads: it is first in the queue. Its group is the requests of
	// its kind that follow it.
	n := 1
	for n < min(len(l.queue), g.maxGroup) && l.queue[n].critical == req.critical {
		n++
	}
	group := l.queue[:n:n]
	l.running = n
	if shared {
		l.critical.Add(-int32(n))
	}
	l.mu.Unlock()

	ran := g.run(l, group)

	l.mu.Lock()
	for _, r := range group[:ran] {
		r.done = true
	}
	// The members a yield left behind go back to the head of the queue,
	// after the critical requests that came meanwhile.
	tail := l.queue[n:]
	k := 0
	for k < len(tail) && tail[k].critical && !req.critical {
		k++
	}
	l.queue = slices.Concat(tail[:k], group[ran:], tail[k:])
	l.running = 0
	l.cond.Broadcast() // the done ones return; the new first one leads
	l.mu.Unlock()
	return req.err
}

// laneKey is the context key of the lane a body runs on.
type laneKey struct{}

// waiting reports whether requests wait in the lane of the body whose
// context is ctx (behind the group running it): a long body of its own
// (a batch's transaction) may then stop early and commit, and queue
// again behind them.
func (g *groupCommitter) waiting(ctx context.Context) bool {
	l, ok := ctx.Value(laneKey{}).(*commitLane)
	if !ok {
		return false
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.queue) > l.running
}

// mayChain reports whether a transaction running on the lane may go on
// with a chain (chain.go): no critical request (process control, on
// SQLite's one lane) waits for the lane and, unless inGroups, the
// transaction is alone on it (one request, none waiting). With inGroups
// the members of a group chain too: each instance's next steps join the
// group's commit instead of waiting for groups of their own, and the
// requests queued behind the group wait at most for every member's
// ChainSteps. That pays where a savepoint costs nothing until something
// is sent (store.Capabilities.DeferredSavepoints); elsewhere each
// chained step's savepoint is round trips of its own, which a group
// shares the commit to save.
func (l *commitLane) mayChain(inGroups bool) bool {
	if l.critical.Load() > 0 {
		return false
	}
	if inGroups {
		return true
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.running <= 1 && len(l.queue) <= l.running
}

// run executes a group in one database transaction and sets each
// member's err. It returns how many members ran: fewer than the group
// when a group of normal requests yielded to a critical one (the others
// are left for a later group).
func (g *groupCommitter) run(l *commitLane, group []*commitRequest) int {
	g.groups.Add(1)
	g.members.Add(uint64(len(group)))
	critical := group[0].critical
	began := g.clock.Now()
	defer func() {
		if took := g.clock.Now().Sub(began); took > slowCommit {
			g.log.Warn("slow engine transaction", "members", len(group), "took", took.Round(time.Millisecond))
		}
	}()
	if len(group) == 1 {
		r := group[0]
		r.err = g.store.InTx(r.ctx, func(ctx context.Context, tx store.Tx) error {
			return callBody(ctx, tx, r.body, true)
		})
		g.observed(1, critical, began, r.err != nil)
		return 1
	}
	// The group's transaction must not end with its leader's context:
	// the others' work is in it.
	ctx := context.WithoutCancel(group[0].ctx)
	yield := func() bool { return !critical && l.critical.Load() > 0 }
	failed, ran, err := g.runOptimistic(ctx, group, yield)
	if failed == noneFailed {
		if err != nil {
			for _, r := range group[:ran] {
				r.err = err
			}
		}
		g.observed(ran, critical, began, err != nil)
		return ran
	}
	// A member failed and took the transaction with it. Its error is its
	// outcome; the others run again, each in a savepoint of its own so
	// that a second failure cannot cost a third transaction. When a write
	// the store held back failed, whose it was is not known: they all run
	// again so.
	members := ran
	if failed >= 0 {
		members = failed + 1
	}
	g.observed(members, critical, began, true)
	g.groups.Add(1)
	rest := make([]*commitRequest, 0, ran)
	for i, r := range group[:ran] {
		if i != failed {
			r.err = nil
			rest = append(rest, r)
		}
	}
	again := g.clock.Now()
	failedAgain := g.runIsolated(ctx, rest)
	g.observed(len(rest), critical, again, failedAgain)
	return ran
}

// The member runOptimistic reports failed: none, or one whose
// index is not known (a write held back failed).
const (
	noneFailed    = -1
	unknownFailed = -2
)

// observed reports one database transaction of members engine
// transactions, begun at began, to the observer.
func (g *groupCommitter) observed(members int, critical bool, began time.Time, failed bool) {
	if g.observe != nil {
		g.observe(GroupCommitted{Members: members, Critical: critical, Duration: g.clock.Now().Sub(began), Failed: failed})
	}
}

// runOptimistic runs the group's members one after another in one
// transaction without savepoints, which on SQLite would copy every page a
// member touches into a statement journal. The writes a store holds back
// (a pipelined MySQL transaction, store.Tx.Flush) are sent once, for the
// whole group, at its end: the members' writes of one kind then go as one
// statement. When a member fails, it stops, rolls the transaction back
// and returns that member's index (its err is set), or unknownFailed
// when a held write failed, which may be an earlier member's; otherwise it
// returns noneFailed and the transaction's error. It also returns how many
// members ran: between members it asks yield whether to stop there and
// commit what ran (a critical request waits on the shared lane, SQLite's,
// and the next member may call a slow application).
func (g *groupCommitter) runOptimistic(ctx context.Context, group []*commitRequest, yield func() bool) (failed, ran int, err error) {
	failed, ran = noneFailed, len(group)
	err = g.store.InTx(ctx, func(ctx context.Context, tx store.Tx) error {
		for i, r := range group {
			if i > 0 && yield() {
				ran = i
				break
			}
			if r.err = callBody(r.ctx, tx, r.body, false); r.err != nil {
				failed = i
				if i > 0 && errors.Is(r.err, store.ErrHeldWrite) {
					failed, r.err = unknownFailed, nil
				}
				return errGroupMemberFailed
			}
		}
		if err := tx.Flush(ctx); err != nil {
			failed = unknownFailed
			return err
		}
		return nil
	})
	if failed != noneFailed {
		err = nil
	}
	return failed, ran, err
}

// errGroupMemberFailed rolls back the transaction of a group one of
// whose members failed.
var errGroupMemberFailed = errors.New("engine: a member of the group failed")

// runIsolated runs the members in one transaction, each in a savepoint,
// so that one that fails is rolled back alone and the others commit. It
// reports whether the transaction failed as a whole.
func (g *groupCommitter) runIsolated(ctx context.Context, group []*commitRequest) bool {
	err := g.store.InTx(ctx, func(ctx context.Context, tx store.Tx) error {
		for _, r := range group {
			// Roll the member back alone when it fails. When that fails
			// the database has already rolled the whole transaction back
			// (a deadlock, an interrupted statement, a lost connection):
			// the group fails and every member tries again.
			failed, err := tx.Savepoint(ctx, func(_ context.Context, tx store.Tx) error {
				return callBody(r.ctx, tx, r.body, true)
			})
			r.err = failed
			if err != nil && failed != nil {
				return fmt.Errorf("%w (after a member failed: %w)", err, failed)
			} else if err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		for _, r := range group {
			if r.err == nil {
				r.err = err
			}
		}
	}
	return err != nil
}

// callBody runs body, turning a panic into an error so that one run's
// bug cannot strand the callers queued behind it, and then sends the
// writes the store held back (store.Tx.Flush), so that their errors are
// this member's and not the next one's.
func callBody(ctx context.Context, tx store.Tx, body txBody, flush bool) (err error) {
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("engine transaction panicked: %v\n%s", p, debug.Stack())
		}
	}()
	if err := body(ctx, tx); err != nil || !flush {
		return err
	}
	return tx.Flush(ctx)
}
