package engine

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"runtime"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"gorm.io/gorm"
	"gorm.io/gorm/clause"

	"github.com/goxpdl/goxpdl/store"
	"github.com/goxpdl/goxpdl/store/dbtest"
	"github.com/goxpdl/goxpdl/store/gormstore"
	"github.com/goxpdl/goxpdl/timer"
	"github.com/goxpdl/goxpdl/wftype"
	"github.com/goxpdl/goxpdl/workitem"
	"github.com/goxpdl/goxpdl/xpdl/xpdltest"
)

// scratch is a table the group-commit tests write to.
type scratch struct {
	Key string `gorm:"primaryKey;size:64"`
}

func (scratch) TableName() string { return "goxpdl_test_scratch" }

func newScratchCommitter(t *testing.T, db *gorm.DB) *groupCommitter {
	t.Helper()
	require.NoError(t, db.Migrator().DropTable(&scratch{}))
	require.NoError(t, db.AutoMigrate(&scratch{}))
	st, err := gormstore.New(db)
	require.NoError(t, err)
	return newGroupCommitter(st, 1, maxCommitGroup, timer.Real(), slog.New(slog.DiscardHandler))
}

func insertScratch(key string) txBody {
	return func(ctx context.Context, tx store.Tx) error {
		return tx.(*gormstore.Store).DB().WithContext(ctx).Create(&scratch{Key: key}).Error
	}
}

func scratchKeys(t *testing.T, db *gorm.DB) []string {
	t.Helper()
	var keys []string
	require.NoError(t, db.Model(&scratch{}).Order(clause.OrderByColumn{Column: clause.Column{Name: "key"}}).Pluck("key", &keys).Error)
	return keys
}

func TestGroupCommitRollsBackAFailedMemberAlone(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, db *gorm.DB) {
		g := newScratchCommitter(t, db)
		errBusiness := errors.New("refused")
		group := []*commitRequest{
			{ctx: t.Context(), body: insertScratch("a")},
			{ctx: t.Context(), body: func(ctx context.Context, tx store.Tx) error {
				if err := insertScratch("b")(ctx, tx); err != nil {
					return err
				}
				return errBusiness // after its write: the write must go
			}},
			{ctx: t.Context(), body: func(ctx context.Context, tx store.Tx) error {
				if err := insertScratch("c")(ctx, tx); err != nil {
					return err
				}
				panic("bug in a run")
			}},
			{ctx: t.Context(), body: insertScratch("d")},
		}
		g.run(g.lanes[0], group)

		require.NoError(t, group[0].err)
		require.ErrorIs(t, group[1].err, errBusiness)
		require.ErrorContains(t, group[2].err, "panicked: bug in a run")
		require.NoError(t, group[3].err)
		require.Equal(t, []string{"a", "d"}, scratchKeys(t, db))
	})
}

func TestGroupCommitRunsTheOthersAgainWhenTheTransactionIsLost(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, db *gorm.DB) {
		g := newScratchCommitter(t, db)
		errLost := errors.New("deadlock victim")
		lost := 0
		group := []*commitRequest{
			{ctx: t.Context(), body: insertScratch("a")},
			{ctx: t.Context(), body: func(ctx context.Context, tx store.Tx) error {
				lost++
				// What the database does to a deadlock victim: the whole
				// transaction is rolled back, a's write with it.
				if err := tx.(*gormstore.Store).DB().WithContext(ctx).Exec("ROLLBACK").Error; err != nil {
					return err
				}
				return errLost
			}},
			{ctx: t.Context(), body: insertScratch("c")},
		}
		g.run(g.lanes[0], group)

		// a and c ran again in a new transaction and committed; the
		// victim was not run again: its error is its outcome.
		require.NoError(t, group[0].err)
		require.ErrorIs(t, group[1].err, errLost)
		require.NoError(t, group[2].err)
		require.Equal(t, 1, lost)
		require.Equal(t, []string{"a", "c"}, scratchKeys(t, db))
	})
}

func TestGroupCommitRunsConcurrentCallersExactlyOnce(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, db *gorm.DB) {
		g := newScratchCommitter(t, db)
		const callers = 40
		errs := make([]error, callers)
		var wg sync.WaitGroup
		for i := range callers {
			wg.Go(func() {
				errs[i] = g.do(t.Context(), insertScratch(fmt.Sprintf("k%02d", i)), false)
			})
		}
		wg.Wait()
		for i, err := range errs {
			require.NoError(t, err, "caller %d", i)
		}
		require.Len(t, scratchKeys(t, db), callers)
		require.Equal(t, uint64(callers), g.members.Load())
		require.LessOrEqual(t, g.groups.Load(), uint64(callers))
	})
}

// A cached instance that changed underneath (another node, a host's
// transaction) makes the run conflict on the instance's version and retry
// from the database; the result is the same as without the cache.
func TestStaleCachedInstanceIsFencedByItsVersion(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, db *gorm.DB) {
		e, err := New(Config{DB: db, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
		require.NoError(t, err)
		ctx := t.Context()
		_, err = e.Deploy(ctx, []byte(xpdltest.Package(xpdltest.Process("p", "",
			xpdltest.Activity("M", `<Implementation><No/></Implementation><Performer>clerk</Performer>`, "", "")+
				xpdltest.Activity("A", `<Route/>`, "", ""),
			xpdltest.Transition("t1", "M>A")))))
		require.NoError(t, err)
		id, err := e.StartProcess(ctx, StartOptions{Package: "pkg"})
		require.NoError(t, err)
		require.NoError(t, e.Start(ctx))
		t.Cleanup(func() { require.NoError(t, e.Stop(context.Background())) })
		require.NoError(t, e.WaitIdle(ctx))

		snap, ok := e.instances.get(id)
		require.True(t, ok, "the run that offered M cached the instance")
		// Someone else changes the instance.
		require.NoError(t, db.Exec("UPDATE goxpdl_process_instances SET version = version + 1 WHERE id = ?", id).Error)

		var m int64
		for _, a := range snap.acts {
			if a.ActivityDefID == "M" {
				m = a.ID
			}
		}
		until := e.now().Add(time.Minute)
		evID, err := e.ids.Next(ctx)
		require.NoError(t, err)
		evs, err := e.store.InsertEvents(ctx, []store.Event{{
			ID: evID, EventID: "again", ProcessInstanceID: id, Kind: evActivityStart, Payload: mustJSON(payload{Activity: m}),
			CreatedAt: e.now(), AvailableAt: until, ClaimedBy: e.owner, ClaimedUntil: &until,
		}})
		require.NoError(t, err)
		require.NoError(t, e.handle(ctx, evs[0]))
		require.Equal(t, uint64(1), e.Stats().Conflicts)
		fresh, ok := e.instances.get(id)
		require.True(t, ok)
		require.Equal(t, snap.pi.Version+2, fresh.pi.Version, "the retry read the bumped version and wrote the next")

		items, err := e.WorkItems(ctx, WorkItemFilter{Instance: id, States: workitem.OpenStates})
		require.NoError(t, err)
		require.Len(t, items.WorkItems, 1)
		_, err = e.CompleteWorkItem(ctx, items.WorkItems[0].ID, Completion{User: "clerk1"})
		require.NoError(t, err)
		require.NoError(t, e.WaitIdle(ctx))
		inst, err := e.Instance(ctx, id)
		require.NoError(t, err)
		require.Equal(t, wftype.ProcessCompleted, inst.State)
	})
}

// TestGroupCommitWarnsOfASlowTransaction: a transaction that takes longer
// than slowCommit is logged, with how many members it had; a quick one
// is not.
func TestGroupCommitWarnsOfASlowTransaction(t *testing.T) {
	t.Parallel()
	st, err := gormstore.New(dbtest.OpenSQLiteMemory(t))
	require.NoError(t, err)
	clock := timer.NewFake(time.Date(2026, 11, 22, 9, 0, 0, 0, time.UTC))
	var logged bytes.Buffer
	g := newGroupCommitter(st, 1, maxCommitGroup, clock, slog.New(slog.NewTextHandler(&logged, nil)))

	require.NoError(t, g.do(t.Context(), func(context.Context, store.Tx) error { return nil }, false))
	require.Empty(t, logged.String(), "a quick transaction is not logged")

	require.NoError(t, g.do(t.Context(), func(context.Context, store.Tx) error {
		clock.Advance(slowCommit + time.Second) // the disk stalls
		return nil
	}, false))
	require.Contains(t, logged.String(), `msg="slow engine transaction" members=1 took=3s`)
}

// queued waits until n requests are queued on lane l.
func queued(l *commitLane, n int) {
	for {
		l.mu.Lock()
		got := len(l.queue)
		l.mu.Unlock()
		if got >= n {
			return
		}
		runtime.Gosched()
	}
}

// On the shared lane (SQLite's) a critical request goes ahead of the
// normal ones queued before it, and a group of normal ones yields to it
// between two members.
func TestGroupCommitCriticalGoesFirst(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, db *gorm.DB) {
		g := newScratchCommitter(t, db)
		lane := g.lanes[0]
		var mu sync.Mutex
		var order []string
		body := func(key string, wait chan struct{}) txBody {
			return func(ctx context.Context, tx store.Tx) error {
				mu.Lock()
				order = append(order, key)
				mu.Unlock()
				if wait != nil {
					<-wait
				}
				return insertScratch(key)(ctx, tx)
			}
		}
		release := make(chan struct{})
		var wg sync.WaitGroup
		wg.Go(func() { require.NoError(t, g.do(t.Context(), body("a", release), false)) })
		queued(lane, 1)
		wg.Go(func() { require.NoError(t, g.do(t.Context(), body("b", nil), false)) })
		queued(lane, 2)
		wg.Go(func() { require.NoError(t, g.do(t.Context(), body("c", nil), false)) })
		queued(lane, 3)
		wg.Go(func() { require.NoError(t, g.do(t.Context(), body("x", nil), true)) })
		queued(lane, 4)
		close(release)
		wg.Wait()
		require.Equal(t, []string{"a", "x", "b", "c"}, order, "x waited for the running a only")
		require.Equal(t, []string{"a", "b", "c", "x"}, scratchKeys(t, db))

		// A running group of normal requests stops between members when a
		// critical one waits, and commits what ran.
		group := []*commitRequest{
			{ctx: t.Context(), body: func(ctx context.Context, tx store.Tx) error {
				lane.critical.Add(1) // a critical request arrives meanwhile
				return insertScratch("d")(ctx, tx)
			}},
			{ctx: t.Context(), body: insertScratch("e")},
		}
		require.Equal(t, 1, g.run(lane, group))
		lane.critical.Add(-1)
		require.NoError(t, group[0].err)
		require.Equal(t, []string{"a", "b", "c", "d", "x"}, scratchKeys(t, db), "e is left for a later group")
	})
}

func TestGroupCommitIsObserved(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, db *gorm.DB) {
		g := newScratchCommitter(t, db)
		clock := timer.NewFake(time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC))
		g.clock = clock
		var seen []GroupCommitted
		g.observe = func(o GroupCommitted) { seen = append(seen, o) }
		slow := func(key string) txBody {
			return func(ctx context.Context, tx store.Tx) error {
				clock.Advance(time.Second)
				return insertScratch(key)(ctx, tx)
			}
		}

		g.run(g.lanes[0], []*commitRequest{{ctx: t.Context(), body: slow("a")}, {ctx: t.Context(), body: slow("b")}})
		require.Equal(t, []GroupCommitted{{Members: 2, Duration: 2 * time.Second}}, seen)

		seen = nil
		g.run(g.lanes[0], []*commitRequest{
			{ctx: t.Context(), body: slow("c")},
			{ctx: t.Context(), body: func(context.Context, store.Tx) error { return errors.New("refused") }},
			{ctx: t.Context(), body: slow("d")},
		})
		require.Equal(t, []GroupCommitted{
			{Members: 2, Duration: time.Second, Failed: true}, // c, then the failure: rolled back
			{Members: 2, Duration: 2 * time.Second},           // c and d again, each in a savepoint
		}, seen)

		seen = nil
		g.run(g.critical, []*commitRequest{{ctx: t.Context(), body: slow("e"), critical: true}})
		require.Equal(t, []GroupCommitted{{Members: 1, Critical: true, Duration: time.Second}}, seen)
		require.Equal(t, []string{"a", "b", "c", "d", "e"}, scratchKeys(t, db))
	})
}

// On MySQL and SQLite the members' writes wait for the end of the group and go as
// one statement of each kind (store/gormstore's coalesce.go). When one of
// them is refused there, whose it was is not known: every member runs
// again in a savepoint of its own, and only the one whose write was
// refused fails. On PostgreSQL the refused write fails at once, in its member.
func TestGroupCommitFindsTheMemberWhoseHeldWriteFailed(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, db *gorm.DB) {
		st, err := gormstore.New(db)
		require.NoError(t, err)
		require.NoError(t, st.Migrate(t.Context()))
		t0 := time.Date(2026, 11, 27, 6, 0, 0, 0, time.UTC)
		for id := int64(1); id <= 3; id++ {
			_, err := st.InsertProcessInstance(t.Context(), store.ProcessInstance{ID: id, DefinitionID: 1, ProcessDefID: "p", State: "Running", CreatedAt: t0, UpdatedAt: t0})
			require.NoError(t, err)
		}
		g := newGroupCommitter(st, 1, maxCommitGroup, timer.Real(), slog.New(slog.DiscardHandler))
		runs := map[int64]int{}
		update := func(id, expected int64) txBody {
			return func(ctx context.Context, tx store.Tx) error {
				runs[id]++
				_, err := tx.UpdateProcessInstance(ctx, store.UpdateProcessInstanceParams{ID: id, ExpectedVersion: expected, FromState: "Running", State: "Running", Diagnosis: "moved", UpdatedAt: t0})
				return err
			}
		}
		group := []*commitRequest{
			{ctx: t.Context(), body: update(1, 1)},
			{ctx: t.Context(), body: update(2, 5)}, // stale
			{ctx: t.Context(), body: update(3, 1)},
		}
		require.Equal(t, 3, g.run(g.lanes[0], group))

		require.NoError(t, group[0].err)
		require.ErrorIs(t, group[1].err, store.ErrConflict)
		require.ErrorContains(t, group[1].err, "process instance 2")
		require.NoError(t, group[2].err)
		for id, want := range map[int64]int64{1: 2, 2: 1, 3: 2} {
			pi, err := st.GetProcessInstance(t.Context(), id)
			require.NoError(t, err)
			require.Equal(t, want, pi.Version, "instance %d", id)
		}
		if d := st.Capabilities().Dialect; d == store.DialectMySQL || d == store.DialectSQLite {
			// The store holds the writes (gormstore's pipeline): the
			// refusal comes at the group's end.
			require.Equal(t, map[int64]int{1: 2, 2: 2, 3: 2}, runs, "the group, then each alone")
		} else {
			require.Equal(t, map[int64]int{1: 2, 2: 1, 3: 1}, runs, "the group up to the failed member, then the others alone")
		}
	})
}

// Who may chain on a lane (commitLane.mayChain): with deferred
// savepoints the members of a group chain as a transaction alone does;
// without them only a transaction alone on the lane does; and nobody
// while process control waits for the lane.
func TestGroupCommitChains(t *testing.T) {
	t.Parallel()
	l := &commitLane{}
	normal := func() *commitRequest { return &commitRequest{} }
	l.queue, l.running = []*commitRequest{normal()}, 1
	require.True(t, l.mayChain(false), "alone")
	require.True(t, l.mayChain(true))

	l.queue, l.running = []*commitRequest{normal(), normal(), normal()}, 3
	require.False(t, l.mayChain(false), "a group of three")
	require.True(t, l.mayChain(true), "a group of three, with deferred savepoints")

	l.queue, l.running = []*commitRequest{normal(), normal()}, 1
	require.False(t, l.mayChain(false), "one waits behind")
	require.True(t, l.mayChain(true))

	l.queue = append(l.queue, &commitRequest{critical: true})
	l.critical.Add(1)
	require.False(t, l.mayChain(false), "process control waits")
	require.False(t, l.mayChain(true), "process control waits")
}
