package recovery_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"
	"gorm.io/gorm"

	"github.com/goxpdl/goxpdl/recovery"
	"github.com/goxpdl/goxpdl/store"
	"github.com/goxpdl/goxpdl/store/dbtest"
	"github.com/goxpdl/goxpdl/store/gormstore"
	"github.com/goxpdl/goxpdl/timer"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

var epoch = time.Date(2026, 11, 23, 9, 0, 0, 0, time.UTC)

func newStore(t *testing.T, db *gorm.DB) *gormstore.Store {
	t.Helper()
	st, err := gormstore.New(db)
	require.NoError(t, err)
	require.NoError(t, st.Migrate(t.Context()))
	return st
}

func member(t *testing.T, st store.Store, clock timer.Clock, id, owner string, configure ...func(*recovery.MembershipConfig)) *recovery.Membership {
	t.Helper()
	cfg := recovery.MembershipConfig{Store: st, Clock: clock, NodeID: id, Owner: owner, Lease: 3 * time.Second}
	for _, c := range configure {
		c(&cfg)
	}
	m, err := recovery.NewMembership(cfg)
	require.NoError(t, err)
	return m
}

// lastEventID is the last ID claimedEvent gave an event.
var lastEventID atomic.Int64

// claimedEvent stores an event for instance pid claimed by owner for an
// hour: without a takeover nobody else could claim it before then.
func claimedEvent(t *testing.T, st store.Store, owner string, pid int64) {
	t.Helper()
	until := epoch.Add(time.Hour)
	_, err := st.InsertEvents(t.Context(), []store.Event{{
		ID: lastEventID.Add(1), EventID: owner + "-" + time.Duration(pid).String(), ProcessInstanceID: pid, Kind: "k",
		CreatedAt: epoch, AvailableAt: epoch, ClaimedBy: owner, ClaimedUntil: &until,
	}})
	require.NoError(t, err)
}

func claimable(t *testing.T, st store.Store, now time.Time) []int64 {
	t.Helper()
	evs, err := st.ClaimEvents(t.Context(), store.ClaimEventsParams{Owner: "probe", Now: now, LeaseUntil: now.Add(time.Second), Limit: 100})
	require.NoError(t, err)
	var pids []int64
	for _, ev := range evs {
		pids = append(pids, ev.ProcessInstanceID)
	}
	return pids
}

func TestMembership(t *testing.T) {
	t.Parallel()
	for _, d := range dbtest.Dialects {
		t.Run(d.Name, func(t *testing.T) {
			t.Parallel()
			ctx := t.Context()

			t.Run("a restarted node takes its previous run's claims back at once", func(t *testing.T) {
				t.Parallel()
				st := newStore(t, d.Open(t))
				clock := timer.NewFake(epoch)
				first := member(t, st, clock, "n1", "n1#run1")
				_, err := first.Join(ctx)
				require.NoError(t, err)
				claimedEvent(t, st, "n1#run1", 1)
				// run1 is killed: it never leaves. run2 starts a second later.
				clock.Advance(time.Second)
				second := member(t, st, clock, "n1", "n1#run2")
				rep, err := second.Join(ctx)
				require.NoError(t, err)
				require.Equal(t, "n1#run1", rep.Replaced)
				require.Equal(t, int64(2), rep.Node.Epoch)
				require.Equal(t, int64(1), rep.Released)
				require.Equal(t, []int64{1}, claimable(t, st, clock.Now()), "the event is free long before its claim's hour")
				require.NoError(t, second.Leave(ctx))
				require.NoError(t, first.Leave(ctx)) // its renewer stops; its row is not its own any more
			})

			t.Run("a silent node is taken over when its lease ends", func(t *testing.T) {
				t.Parallel()
				st := newStore(t, d.Open(t))
				clock := timer.NewFake(epoch)
				dead := member(t, st, clock, "n2", "n2#a")
				_, err := dead.Join(ctx)
				require.NoError(t, err)
				require.NoError(t, dead.Leave(ctx))                        // stop its renewer...
				_, _, err = st.RegisterNode(ctx, store.RegisterNodeParams{ // ...and bring its row back, as a killed node leaves it
					ID: "n2", Owner: "n2#b", Now: clock.Now(), LeaseUntil: clock.Now().Add(3 * time.Second),
				})
				require.NoError(t, err)
				claimedEvent(t, st, "n2#b", 2)

				// live renews every 10 s, so the Advance below does not wake its
				// renewer, which would reap n2 before the explicit Reap does.
				live := member(t, st, clock, "n3", "n3#a", func(c *recovery.MembershipConfig) { c.Lease = 30 * time.Second })
				rep, err := live.Join(ctx)
				require.NoError(t, err)
				require.Empty(t, rep.Reaped, "n2's lease still runs")
				clock.Advance(4 * time.Second)
				nodes, released, err := live.Reap(ctx)
				require.NoError(t, err)
				require.Equal(t, []string{"n2"}, nodes)
				require.Equal(t, int64(1), released)
				require.Equal(t, []int64{2}, claimable(t, st, clock.Now()))
				list, err := st.ListNodes(ctx)
				require.NoError(t, err)
				require.Len(t, list, 1)
				require.Equal(t, "n3", list[0].ID)
				require.NoError(t, live.Leave(ctx))
				list, err = st.ListNodes(ctx)
				require.NoError(t, err)
				require.Empty(t, list, "a node that leaves removes its row")
			})

			t.Run("the older of two runs of one NodeID stops", func(t *testing.T) {
				t.Parallel()
				st := newStore(t, d.Open(t))
				clock := timer.NewFake(epoch)
				stopped := make(chan struct{})
				older := member(t, st, clock, "n4", "n4#old", func(c *recovery.MembershipConfig) { c.Replaced = func() { close(stopped) } })
				_, err := older.Join(ctx)
				require.NoError(t, err)
				newer := member(t, st, clock, "n4", "n4#new")
				_, err = newer.Join(ctx)
				require.NoError(t, err)
				// The older run's next renewal finds the row taken.
				for waiting := true; waiting; {
					armed := clock.TimerAdded()
					clock.Advance(time.Second)
					select {
					case <-stopped:
						waiting = false
					case <-armed: // a renewal ran and waits again
					}
				}
				list, err := st.ListNodes(ctx)
				require.NoError(t, err)
				require.Equal(t, "n4#new", list[0].Owner, "the older run did not take the row back")
				require.NoError(t, older.Leave(ctx))
				require.NoError(t, newer.Leave(ctx))
			})

			t.Run("two survivors reaping one dead node both succeed and release its claims once", func(t *testing.T) {
				t.Parallel()
				st := newStore(t, d.Open(t))
				clock := timer.NewFake(epoch)
				a := member(t, st, clock, "a", "a#1", func(c *recovery.MembershipConfig) { c.Lease = time.Hour })
				b := member(t, st, clock, "b", "b#1", func(c *recovery.MembershipConfig) { c.Lease = time.Hour })
				for round := range 5 {
					dead := fmt.Sprintf("dead%d", round)
					_, _, err := st.RegisterNode(ctx, store.RegisterNodeParams{ID: dead, Owner: dead + "#1", Now: clock.Now(), LeaseUntil: clock.Now().Add(time.Second)})
					require.NoError(t, err)
					for pid := range int64(50) {
						claimedEvent(t, st, dead+"#1", 1000*int64(round)+pid)
					}
					clock.Advance(2 * time.Second)
					var wg sync.WaitGroup
					var reaped [2][]string
					var released [2]int64
					var errs [2]error
					for i, m := range []*recovery.Membership{a, b} {
						wg.Go(func() { reaped[i], released[i], errs[i] = m.Reap(ctx) })
					}
					wg.Wait()
					require.NoError(t, errors.Join(errs[:]...))
					require.Len(t, append(reaped[0], reaped[1]...), 1, "one of them reaped %s", dead)
					require.Equal(t, int64(50), released[0]+released[1])
				}
			})

			t.Run("a reap chosen as a deadlock victim is tried again", func(t *testing.T) {
				t.Parallel()
				st := newStore(t, d.Open(t))
				clock := timer.NewFake(epoch)
				_, _, err := st.RegisterNode(ctx, store.RegisterNodeParams{ID: "dead", Owner: "dead#1", Now: epoch, LeaseUntil: epoch.Add(time.Second)})
				require.NoError(t, err)
				claimedEvent(t, st, "dead#1", 9)
				victim := &deadlockOnce{Store: st}
				victim.left.Store(1)
				m := member(t, victim, clock, "live", "live#1", func(c *recovery.MembershipConfig) { c.Lease = time.Hour })
				clock.Advance(2 * time.Second)
				nodes, released, err := m.Reap(ctx)
				require.NoError(t, err)
				require.Equal(t, []string{"dead"}, nodes)
				require.Equal(t, int64(1), released)
				require.Equal(t, int32(1), victim.rolledBack.Load(), "the first attempt was rolled back as a deadlock victim")
			})

			t.Run("a process that owns the database file reaps every other node at once", func(t *testing.T) {
				t.Parallel()
				st := newStore(t, d.Open(t))
				clock := timer.NewFake(epoch)
				_, _, err := st.RegisterNode(ctx, store.RegisterNodeParams{ID: "gone", Owner: "gone#1", Now: epoch, LeaseUntil: epoch.Add(time.Hour)})
				require.NoError(t, err)
				claimedEvent(t, st, "gone#1", 3)
				m := member(t, st, clock, "n5", "n5#a", func(c *recovery.MembershipConfig) { c.OthersDead = true })
				rep, err := m.Join(ctx)
				require.NoError(t, err)
				require.Equal(t, []string{"gone"}, rep.Reaped)
				require.Contains(t, claimable(t, st, clock.Now()), int64(3))
				require.NoError(t, m.Leave(context.Background()))
			})
		})
	}
}

// deadlockOnce rolls back its next left transactions after their work,
// as InnoDB does to a deadlock victim.
type deadlockOnce struct {
	store.Store
	left, rolledBack atomic.Int32
}

func (s *deadlockOnce) InTx(ctx context.Context, fn func(ctx context.Context, tx store.Tx) error) error {
	if s.left.Add(-1) < 0 {
		return s.Store.InTx(ctx, fn)
	}
	victim := fmt.Errorf("Error 1213: Deadlock found when trying to get lock: %w", store.ErrConflict)
	err := s.Store.InTx(ctx, func(ctx context.Context, tx store.Tx) error {
		if err := fn(ctx, tx); err != nil {
			return err
		}
		s.rolledBack.Add(1)
		return victim
	})
	return err
}
