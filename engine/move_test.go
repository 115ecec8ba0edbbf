package engine_test

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/require"
	"gorm.io/gorm"

	"github.com/goxpdl/goxpdl/engine"
	"github.com/goxpdl/goxpdl/store"
	"github.com/goxpdl/goxpdl/store/dbtest"
	"github.com/goxpdl/goxpdl/wftype"
	"github.com/goxpdl/goxpdl/workitem"
	"github.com/goxpdl/goxpdl/xpdl/xpdltest"
)

func manual(id string) string {
	return xpdltest.Activity(id, `<Implementation><No/></Implementation><Performer>clerk</Performer>`, "", "")
}

// chainPackage is A -> B -> C, all manual, plus process "other" with
// activity X.
func chainPackage(id string) string {
	src := xpdltest.PackageWith("",
		xpdltest.Process("p", "", manual("A")+manual("B")+manual("C"), xpdltest.Transition("t1", "A>B")+xpdltest.Transition("t2", "B>C"))+
			xpdltest.Process("other", "", manual("X"), ""))
	return replaceOnce(src, `Id="pkg"`, `Id="`+id+`"`)
}

func replaceOnce(s, old, repl string) string {
	i := indexOf(s, old)
	return s[:i] + repl + s[i+len(old):]
}

func indexOf(s, sub string) int {
	for i := 0; i+len(sub) <= len(s); i++ {
		if s[i:i+len(sub)] == sub {
			return i
		}
	}
	panic("not found: " + sub)
}

// openItem returns the one open work item of an instance.
func (h *harness) openItem(id int64) engine.WorkItem {
	h.t.Helper()
	items := h.openItems(id)
	require.Len(h.t, items, 1)
	return items[0]
}

func TestJumpIsFreeFlow(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, db *gorm.DB) {
		h := newHarness(t, db).start()
		h.deploy(chainPackage("jump"))
		id := h.startProcess("jump", "p", nil)
		a := h.openItem(id)
		require.Equal(t, "A", a.Activity)
		var moved []engine.Record
		var mu sync.Mutex
		defer h.e.Subscribe(func(r engine.Record) {
			if r.Type == engine.RecordProcessMoved {
				mu.Lock()
				moved = append(moved, r)
				mu.Unlock()
			}
		})()

		require.NoError(t, h.e.Jump(h.ctx, id, "C", engine.Op{Actor: "dave", Reason: "customer skipped review"}))
		c := h.openItem(id)
		require.Equal(t, "C", c.Activity)
		wi, err := workItemsOf(h.ctx, h.e, engine.WorkItemFilter{Instance: id, ActivityInstance: a.ActivityInstance})
		require.NoError(t, err)
		require.Equal(t, workitem.Withdrawn, wi[0].State, "A's work item was withdrawn")
		actA := h.activityNamed(id, "A")
		require.Equal(t, wftype.ActivityCompleted, actA.State)
		require.Equal(t, "cancelled by dave", actA.Diagnosis)
		require.NoError(t, h.complete(c.ID, nil))
		h.requireState(id, wftype.ProcessCompleted)
		require.Equal(t, map[string]int{"A": 1, "C": 1}, h.started(id), "B never ran")
		mu.Lock()
		require.Len(t, moved, 1)
		require.Equal(t, "cancelled A, started C", moved[0].Detail)
		require.Equal(t, "dave", moved[0].User)
		mu.Unlock()
	})
}

func TestMoveRefusesWhatCannotBeConsistent(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, db *gorm.DB) {
		h := newHarness(t, db).start()
		h.deploy(chainPackage("refuse"))
		h.deploy(blockXPDL)
		id := h.startProcess("refuse", "p", nil)
		a := h.openItem(id)

		err := h.e.Jump(h.ctx, id, "X", engine.Op{})
		require.ErrorIs(t, err, engine.ErrCannotMove)
		require.Contains(t, err.Error(), "activity X belongs to process other, not to p")
		err = h.e.Jump(h.ctx, id, "Nope", engine.Op{})
		require.ErrorIs(t, err, engine.ErrCannotMove)
		require.Contains(t, err.Error(), "process p has no activity Nope")
		err = h.e.MoveInstance(h.ctx, id, engine.Move{}, engine.Op{})
		require.ErrorIs(t, err, engine.ErrCannotMove)
		err = h.e.MoveInstance(h.ctx, id, engine.Move{Cancel: []int64{987654}}, engine.Op{})
		require.ErrorIs(t, err, engine.ErrNotFound)
		err = h.e.Rollback(h.ctx, id, "B", engine.Op{})
		require.ErrorIs(t, err, engine.ErrCannotMove)
		require.Contains(t, err.Error(), "activity B has not completed in this instance")
		require.Equal(t, a.ID, h.openItem(id).ID, "nothing changed")

		// Into an activity set: move its block instead.
		set := h.startProcess("blockretry", "", nil)
		h.idle()
		err = h.e.Jump(h.ctx, set, "Check", engine.Op{})
		require.ErrorIs(t, err, engine.ErrCannotMove)
		require.Contains(t, err.Error(), "move to its block activity Blk instead")

		// A finished instance does not move.
		require.NoError(t, h.e.Terminate(h.ctx, id, engine.Op{}))
		require.ErrorIs(t, h.e.Jump(h.ctx, id, "C", engine.Op{}), engine.ErrInstanceFinished)
		// Cancel a finished activity.
		other := h.startProcess("refuse", "p", nil)
		require.NoError(t, h.complete(h.openItem(other).ID, nil))
		err = h.e.MoveInstance(h.ctx, other, engine.Move{Cancel: []int64{h.activityNamed(other, "A").ID}}, engine.Op{})
		require.ErrorIs(t, err, engine.ErrCannotMove)
		require.Contains(t, err.Error(), "only open activities are cancelled")
		err = h.e.MoveInstance(h.ctx, other, engine.Move{Cancel: []int64{a.ActivityInstance}}, engine.Op{})
		require.ErrorIs(t, err, engine.ErrWrongInstance)
	})
}

func TestRollbackGivesTheWorkBackToWhoDidIt(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, db *gorm.DB) {
		h := newHarness(t, db).start()
		h.deploy(chainPackage("rollback"))
		id := h.startProcess("rollback", "p", nil)
		_, err := h.e.CompleteWorkItem(h.ctx, h.openItem(id).ID, engine.Completion{User: "alice"})
		require.NoError(t, err)
		require.Equal(t, "B", h.openItem(id).Activity)

		require.NoError(t, h.e.Rollback(h.ctx, id, "A", engine.Op{Actor: "erin", Reason: "wrong amount"}))
		again := h.openItem(id)
		require.Equal(t, "A", again.Activity)
		require.Equal(t, []store.Principal{{Kind: store.PrincipalUser, ID: "alice"}}, again.Assignees, "back to who completed it")
		_, err = h.e.CompleteWorkItem(h.ctx, again.ID, engine.Completion{User: "alice"})
		require.NoError(t, err)
		require.NoError(t, h.complete(h.openItem(id).ID, nil))
		require.NoError(t, h.complete(h.openItem(id).ID, nil))
		h.requireState(id, wftype.ProcessCompleted)
		require.Equal(t, map[string]int{"A": 2, "B": 2, "C": 1}, h.started(id))
	})
}

func TestWithdrawWhileNoSuccessorIsTakenUp(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, db *gorm.DB) {
		h := newHarness(t, db).start()
		h.deploy(chainPackage("withdraw"))
		id := h.startProcess("withdraw", "p", nil)
		a := h.openItem(id)
		_, err := h.e.CompleteWorkItem(h.ctx, a.ID, engine.Completion{User: "alice"})
		require.NoError(t, err)

		require.ErrorIs(t, h.e.Withdraw(h.ctx, a.ID, "bob", engine.Op{}), engine.ErrNotAllowed, "only who completed it takes it back")
		require.NoError(t, h.e.Withdraw(h.ctx, a.ID, "alice", engine.Op{Reason: "forgot the attachment"}))
		back := h.openItem(id)
		require.Equal(t, "A", back.Activity)
		require.Equal(t, []store.Principal{{Kind: store.PrincipalUser, ID: "alice"}}, back.Assignees)
		require.Equal(t, wftype.ActivityCompleted, h.activityNamed(id, "B").State, "the successor was cancelled")

		// Once the successor is taken up, it is too late.
		_, err = h.e.CompleteWorkItem(h.ctx, back.ID, engine.Completion{User: "alice"})
		require.NoError(t, err)
		require.NoError(t, h.e.ClaimWorkItem(h.ctx, h.openItem(id).ID, "bob", engine.Op{}))
		err = h.e.Withdraw(h.ctx, back.ID, "alice", engine.Op{})
		require.ErrorIs(t, err, engine.ErrCannotMove)
		require.Contains(t, err.Error(), "successor B has been taken up")
		require.Equal(t, "B", h.openItem(id).Activity, "nothing changed")
	})
}

func TestMoveRepairsALockingInstance(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, db *gorm.DB) {
		h := newHarness(t, db).start()
		h.deploy(toolPackage("repair", xpdltest.Activity("A", "<Route/>", "", "")+xpdltest.Activity("B", "<Route/>", "", "")+
			xpdltest.Activity("C", "<Route/>", "", ""),
			xpdltest.Transition("t1", "A>B?x > 1")+xpdltest.Transition("t2", "B>C")))
		id := h.startProcess("repair", "", nil)
		h.requireState(id, wftype.ProcessLocking)
		h.awaitIncident(id, engine.CauseLocking)

		require.NoError(t, h.e.MoveInstance(h.ctx, id, engine.Move{Start: []string{"B"}, Variables: engine.Values{Variables: map[string]any{"x": 2}}},
			engine.Op{Actor: "frank", Reason: "x was mistyped"}))
		h.requireState(id, wftype.ProcessCompleted)
		require.Equal(t, int64(2), h.vars(id)["x"])
		require.Equal(t, map[string]int{"A": 1, "B": 1, "C": 1}, h.started(id))
		page, err := h.e.Incidents(h.ctx, engine.IncidentFilter{Instance: id, States: []engine.IncidentState{engine.IncidentResolved}})
		require.NoError(t, err)
		require.Len(t, page.Incidents, 1)
		require.Equal(t, "moved", page.Incidents[0].Resolution)
		require.Equal(t, "frank", page.Incidents[0].ResolvedBy)
	})
}

// TestJumpRacesTheInstancesOwnStep jumps while an application of the
// instance runs: whichever commits first, the other works on what it
// left (the version fence), and the instance ends where the jump sent it,
// with nothing done twice.
func TestJumpRacesTheInstancesOwnStep(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, db *gorm.DB) {
		h := newHarness(t, db)
		entered, release := make(chan struct{}), make(chan struct{})
		var calls atomic.Int64
		h.e.RegisterApplication("double", func(context.Context, *engine.Call) (map[string]any, error) {
			if calls.Add(1) == 1 {
				close(entered)
				<-release
			}
			return nil, nil
		})
		h.start()
		h.deploy(toolPackage("race2", tool("Work", "double", "x", "x")+manual("Next")+manual("Elsewhere"),
			xpdltest.Transition("t1", "Work>Next")))
		id := h.startProcess("race2", "", nil)
		<-entered
		done := make(chan error, 1)
		go func() { done <- h.e.Jump(h.ctx, id, "Elsewhere", engine.Op{Actor: "op"}) }()
		close(release)
		require.NoError(t, <-done)
		h.idle()
		items := h.openItems(id)
		require.Len(t, items, 1, "one open work item: the jump's")
		require.Equal(t, "Elsewhere", items[0].Activity)
		require.NoError(t, h.complete(items[0].ID, nil))
		h.requireState(id, wftype.ProcessCompleted)
		require.LessOrEqual(t, calls.Load(), int64(2), "the blocked call, and at most its retry after losing to the jump")
	})
}
