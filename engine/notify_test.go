package engine_test

import (
	"context"
	"errors"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"
	"gorm.io/gorm"

	"github.com/goxpdl/goxpdl/engine"
	"github.com/goxpdl/goxpdl/store/dbtest"
	"github.com/goxpdl/goxpdl/wftype"
)

// notifications collects what Config.Notify receives; fail decides
// whether a delivery attempt fails.
type notifications struct {
	mu        sync.Mutex
	fail      func(n engine.Notification) bool
	attempts  map[string]int // by EventID
	delivered []engine.Notification
	arrived   chan engine.Notification
}

func newNotifications(fail func(engine.Notification) bool) *notifications {
	return &notifications{fail: fail, attempts: map[string]int{}, arrived: make(chan engine.Notification, 64)}
}

func (ns *notifications) notify(_ context.Context, n engine.Notification) error {
	ns.mu.Lock()
	defer ns.mu.Unlock()
	ns.attempts[n.EventID]++
	if ns.fail != nil && ns.fail(n) {
		return errors.New("mail server down")
	}
	ns.delivered = append(ns.delivered, n)
	ns.arrived <- n
	return nil
}

// await returns the first delivered notification of type typ.
func (ns *notifications) await(t *testing.T, typ string) engine.Notification {
	t.Helper()
	for {
		select {
		case n := <-ns.arrived:
			if n.Type == typ {
				return n
			}
		case <-t.Context().Done():
			t.Fatalf("no %s notification arrived", typ)
		}
	}
}

func TestWorkItemChangesAreDurableNotifications(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, db *gorm.DB) {
		allocationsFailed := 0
		ns := newNotifications(func(n engine.Notification) bool {
			if n.Type == engine.RecordWorkItemAllocated && allocationsFailed < 2 {
				allocationsFailed++
				return true
			}
			return false
		})
		h := newHarness(t, db, func(c *engine.Config) { c.Notify = ns.notify }).start()
		h.deploy(formXPDL)
		id := h.startProcess("form", "form", nil)
		h.idle()
		item := h.item(id, "Decide")
		require.NoError(t, h.e.ClaimWorkItem(h.ctx, item.ID, "alice", engine.Op{}))
		require.NoError(t, h.e.StartWorkItem(h.ctx, item.ID, "alice", engine.Op{}))
		_, err := h.e.CompleteWorkItem(h.ctx, item.ID, engine.Completion{User: "alice", Outputs: map[string]any{"approved": true}})
		require.NoError(t, err)
		h.requireState(id, wftype.ProcessCompleted) // a failing host callback does not hold the process up

		allocated := ns.await(t, engine.RecordWorkItemAllocated)
		ns.mu.Lock()
		defer ns.mu.Unlock()
		require.Equal(t, 3, ns.attempts[allocated.EventID], "two failures, then the same notification again")
		got := map[string]engine.Notification{}
		for _, n := range ns.delivered {
			require.NotContains(t, got, n.Type, "each change is delivered once it succeeds")
			got[n.Type] = n
		}
		require.Len(t, got, 4)
		require.Equal(t, []string{"role:clerk"}, got[engine.RecordWorkItemCreated].Assignees)
		for typ, want := range map[string][2]string{
			engine.RecordWorkItemAllocated: {"Offered", "Allocated"},
			engine.RecordWorkItemStarted:   {"Allocated", "Started"},
			engine.RecordWorkItemCompleted: {"Started", "Completed"},
		} {
			n := got[typ]
			require.Equal(t, want, [2]string{n.From, n.State}, typ)
			require.Equal(t, "alice", n.User, typ)
			require.Equal(t, item.ID, n.WorkItem, typ)
			require.Equal(t, id, n.Instance, typ)
			require.Equal(t, "Decide", n.Activity, typ)
		}
	})
}

func TestNotificationsOutliveTheEngine(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, db *gorm.DB) {
		down := newNotifications(func(engine.Notification) bool { return true })
		first := newHarness(t, db, func(c *engine.Config) {
			c.Notify = down.notify
			c.NotifyTypes = []string{engine.RecordProcessCompleted}
		})
		require.NoError(t, first.e.Start(first.ctx))
		first.deploy(formXPDL)
		id := first.startProcess("form", "form", nil)
		first.idle()
		_, err := first.e.CompleteWorkItem(first.ctx, first.item(id, "Decide").ID, engine.Completion{User: "bob"})
		require.NoError(t, err)
		first.requireState(id, wftype.ProcessCompleted)
		require.NoError(t, first.e.Stop(context.Background()))
		down.mu.Lock()
		require.Empty(t, down.delivered)
		require.NotEmpty(t, down.attempts, "the first engine tried")
		down.mu.Unlock()

		// A new engine on the same database delivers what the first one
		// could not; it asked for process.completed only.
		up := newNotifications(nil)
		newHarness(t, db, func(c *engine.Config) {
			c.Notify = up.notify
			c.NotifyTypes = []string{engine.RecordProcessCompleted}
		}).start()
		n := up.await(t, engine.RecordProcessCompleted)
		require.Equal(t, id, n.Instance)
		up.mu.Lock()
		defer up.mu.Unlock()
		require.Len(t, up.delivered, 1, "only the types asked for")
	})
}
