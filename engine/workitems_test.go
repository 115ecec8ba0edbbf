package engine_test

import (
	"cmp"
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"gorm.io/gorm"

	"github.com/goxpdl/goxpdl/engine"
	"github.com/goxpdl/goxpdl/resource"
	"github.com/goxpdl/goxpdl/store"
	"github.com/goxpdl/goxpdl/store/dbtest"
	"github.com/goxpdl/goxpdl/timer"
	"github.com/goxpdl/goxpdl/wftype"
	"github.com/goxpdl/goxpdl/workitem"
	"github.com/goxpdl/goxpdl/xpdl/xpdltest"
)

// testOrg: alice and bob are clerks, carol manages, dave works in
// sales-east (a sub-unit of sales); the XPDL participant Approver maps to
// the role manager.
const testOrg = `
users:
  - id: alice
    roles: [clerk]
  - id: bob
    roles: [clerk]
  - id: carol
    roles: [manager]
  - id: dave
    units: [sales-east]
roles:
  - id: clerk
  - id: manager
units:
  - id: sales
  - id: sales-east
    parent: sales
participants:
  Approver: {role: manager}
`

// reviewXPDL: Enter (clerks, may set amount) -> Check (clerks, four eyes
// against Enter) -> Approve (Approver) -> Ship (the sales unit) -> Confirm
// (whoever entered).
const reviewXPDL = `<?xml version="1.0" encoding="UTF-8"?>
<Package xmlns="http://www.wfmc.org/2002/XPDL1.0" Id="review" Name="review">
  <PackageHeader><XPDLVersion>1.0</XPDLVersion><Vendor>goxpdl</Vendor><Created>2026-11-22</Created></PackageHeader>
  <Script Type="text/javascript"/>
  <Participants>
    <Participant Id="clerk"><ParticipantType Type="ROLE"/></Participant>
    <Participant Id="Approver"><ParticipantType Type="ROLE"/></Participant>
    <Participant Id="sales"><ParticipantType Type="ORGANIZATIONAL_UNIT"/></Participant>
  </Participants>
  <DataFields>
    <DataField Id="amount"><DataType><BasicType Type="INTEGER"/></DataType><InitialValue>0</InitialValue></DataField>
    <DataField Id="orderId"><DataType><BasicType Type="STRING"/></DataType></DataField>
    <DataField Id="note"><DataType><BasicType Type="STRING"/></DataType></DataField>
  </DataFields>
  <WorkflowProcesses>
    <WorkflowProcess Id="review">
      <Activities>
        <Activity Id="Enter" Name="Enter the order"><Implementation><No/></Implementation><Performer>clerk</Performer><Priority>3</Priority>
          <ExtendedAttributes><ExtendedAttribute Name="VariableToProcess_UPDATE" Value="amount"/></ExtendedAttributes></Activity>
        <Activity Id="Check"><Implementation><No/></Implementation><Performer>clerk</Performer>
          <ExtendedAttributes><ExtendedAttribute Name="SeparationOfDuties" Value="Enter"/></ExtendedAttributes></Activity>
        <Activity Id="Approve"><Implementation><No/></Implementation><Performer>Approver</Performer></Activity>
        <Activity Id="Ship"><Implementation><No/></Implementation><Performer>sales</Performer></Activity>
        <Activity Id="Confirm"><Implementation><No/></Implementation><Performer>clerk</Performer>
          <ExtendedAttributes><ExtendedAttribute Name="SamePerformerAs" Value="Enter"/></ExtendedAttributes></Activity>
      </Activities>
      <Transitions>
        <Transition Id="t1" From="Enter" To="Check"/>
        <Transition Id="t2" From="Check" To="Approve"/>
        <Transition Id="t3" From="Approve" To="Ship"/>
        <Transition Id="t4" From="Ship" To="Confirm"/>
      </Transitions>
    </WorkflowProcess>
  </WorkflowProcesses>
</Package>`

func newOrgHarness(t *testing.T, db *gorm.DB) *harness {
	t.Helper()
	org, err := resource.ParseOrg([]byte(testOrg), resource.FormatYAML)
	require.NoError(t, err)
	h := newHarness(t, db, func(c *engine.Config) { c.Directory = org }).start()
	h.deploy(reviewXPDL)
	return h
}

// item returns the one open work item of an instance, for activity.
func (h *harness) item(id int64, activity string) engine.WorkItem {
	h.t.Helper()
	items := h.openItems(id)
	require.Len(h.t, items, 1)
	require.Equal(h.t, activity, items[0].Activity)
	return items[0]
}

func (h *harness) completeAs(id int64, user string, outputs map[string]any) error {
	_, err := h.e.CompleteWorkItem(h.ctx, id, engine.Completion{User: user, Outputs: outputs})
	return err
}

func TestWorkItemLifeCycle(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, db *gorm.DB) {
		h := newOrgHarness(t, db)
		id := h.startProcess("review", "", nil)

		enter := h.item(id, "Enter")
		require.Equal(t, []store.Principal{{Kind: store.PrincipalRole, ID: "clerk"}}, enter.Assignees)
		require.Equal(t, 3, enter.Priority)
		require.Equal(t, "Enter the order", enter.ActivityName)
		require.Equal(t, workitem.Offered, enter.State)

		// Only clerks may claim; the claim is atomic and the owner holds it.
		require.ErrorIs(t, h.e.ClaimWorkItem(h.ctx, enter.ID, "carol", engine.Op{}), engine.ErrNotAllowed)
		require.ErrorIs(t, h.e.ClaimWorkItem(h.ctx, enter.ID, "mallory", engine.Op{}), engine.ErrNotAllowed, "unknown user")
		require.NoError(t, h.e.ClaimWorkItem(h.ctx, enter.ID, "alice", engine.Op{}))
		require.ErrorIs(t, h.e.ClaimWorkItem(h.ctx, enter.ID, "bob", engine.Op{}), engine.ErrIllegalState, "claimed already")
		require.ErrorIs(t, h.e.StartWorkItem(h.ctx, enter.ID, "bob", engine.Op{}), engine.ErrNotAllowed, "not the owner")
		require.ErrorIs(t, h.completeAs(enter.ID, "bob", nil), engine.ErrNotAllowed, "not the owner")

		// Release and claim again, delegate, start.
		require.NoError(t, h.e.ReleaseWorkItem(h.ctx, enter.ID, "alice", engine.Op{}))
		require.Equal(t, workitem.Offered, h.item(id, "Enter").State)
		require.NoError(t, h.e.ClaimWorkItem(h.ctx, enter.ID, "bob", engine.Op{}))
		require.ErrorIs(t, h.e.DelegateWorkItem(h.ctx, enter.ID, "bob", "carol", engine.Op{}), engine.ErrNotAllowed, "carol is no clerk")
		require.NoError(t, h.e.DelegateWorkItem(h.ctx, enter.ID, "bob", "alice", engine.Op{}))
		require.Equal(t, "alice", h.item(id, "Enter").Owner)
		require.NoError(t, h.e.StartWorkItem(h.ctx, enter.ID, "alice", engine.Op{}))
		require.ErrorIs(t, h.e.StartWorkItem(h.ctx, enter.ID, "alice", engine.Op{}), engine.ErrIllegalState, "started already")

		// Bad outputs change nothing.
		require.ErrorIs(t, h.completeAs(enter.ID, "alice", map[string]any{"amount": "lots"}), engine.ErrWrongType)
		require.ErrorIs(t, h.completeAs(enter.ID, "alice", map[string]any{"note": "x"}), engine.ErrNotAllowed,
			"Enter lets its performer set amount only")
		require.ErrorIs(t, h.completeAs(enter.ID, "alice", map[string]any{"nope": 1}), engine.ErrUnknownVariable)
		require.Equal(t, workitem.Started, h.item(id, "Enter").State)

		// Completion with an idempotency key; a repeat is a no-op.
		c := engine.Completion{User: "alice", Outputs: map[string]any{"amount": 250}, IdempotencyKey: "form-1"}
		first, err := h.e.CompleteWorkItem(h.ctx, enter.ID, c)
		require.NoError(t, err)
		require.Equal(t, workitem.Completed, first.State)
		require.Equal(t, "alice", first.CompletedBy)
		again, err := h.e.CompleteWorkItem(h.ctx, enter.ID, c)
		require.NoError(t, err)
		require.Equal(t, first.ID, again.ID)
		require.Equal(t, first.Revision, again.Revision, "the repeat wrote nothing")
		c.Outputs = map[string]any{"amount": 300}
		_, err = h.e.CompleteWorkItem(h.ctx, enter.ID, c)
		require.ErrorIs(t, err, engine.ErrCompletedDifferently)
		c.IdempotencyKey = ""
		_, err = h.e.CompleteWorkItem(h.ctx, enter.ID, c)
		require.ErrorIs(t, err, engine.ErrIllegalState, "completed already")
		require.Equal(t, int64(250), h.vars(id)["amount"])

		// Four eyes: alice entered, so she may not check.
		check := h.item(id, "Check")
		require.ErrorIs(t, h.e.ClaimWorkItem(h.ctx, check.ID, "alice", engine.Op{}), engine.ErrNotAllowed)
		require.ErrorIs(t, h.completeAs(check.ID, "alice", nil), engine.ErrNotAllowed)
		users, err := h.e.EligibleUsers(h.ctx, check.ID)
		require.NoError(t, err)
		require.Equal(t, []string{"bob"}, users)
		require.NoError(t, h.completeAs(check.ID, "bob", nil), "completing an offered item claims it on the way")

		// Approver maps to the role manager.
		approve := h.item(id, "Approve")
		require.Equal(t, []store.Principal{{Kind: store.PrincipalRole, ID: "manager"}}, approve.Assignees)
		require.NoError(t, h.completeAs(approve.ID, "carol", nil))

		// The sales unit includes its sub-unit's members.
		ship := h.item(id, "Ship")
		require.Equal(t, []store.Principal{{Kind: store.PrincipalUnit, ID: "sales"}}, ship.Assignees)
		require.ErrorIs(t, h.completeAs(ship.ID, "bob", nil), engine.ErrNotAllowed)
		require.NoError(t, h.completeAs(ship.ID, "dave", nil))

		// Same performer as Enter.
		confirm := h.item(id, "Confirm")
		require.Equal(t, []store.Principal{{Kind: store.PrincipalUser, ID: "alice"}}, confirm.Assignees)
		require.ErrorIs(t, h.completeAs(confirm.ID, "bob", nil), engine.ErrNotAllowed)
		require.NoError(t, h.completeAs(confirm.ID, "alice", nil))
		h.requireState(id, wftype.ProcessCompleted)

		// The audit trail says who moved each item from what to what.
		var enterTrail []string
		for _, e := range h.history(id) {
			if e.Subject == engine.SubjectWorkItem && e.WorkItem == enter.ID {
				enterTrail = append(enterTrail, fmt.Sprintf("%s:%s>%s", e.Actor, e.From, e.To))
			}
		}
		require.Equal(t, []string{
			"engine:>Offered", "alice:Offered>Allocated", "alice:Allocated>Offered", "bob:Offered>Allocated",
			"bob:Allocated>Allocated", "alice:Allocated>Started", "alice:Started>Completed",
		}, enterTrail)

		_, err = h.e.CompleteWorkItem(h.ctx, 987654, engine.Completion{User: "alice"})
		require.ErrorIs(t, err, engine.ErrNotFound)
	})
}

// TestWorkItemCommandsRecordTheirOp: each work-item command writes its
// Op to the history: the actor (the acting user when the Op names
// none), the reason and the host's data; a bad Op changes nothing.
func TestWorkItemCommandsRecordTheirOp(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, db *gorm.DB) {
		h := newOrgHarness(t, db)
		id := h.startProcess("review", "", nil)
		enter := h.item(id, "Enter")
		ticket := map[string]any{"ticket": "T-7"}

		require.ErrorIs(t, h.e.ClaimWorkItem(h.ctx, enter.ID, "alice", engine.Op{Data: map[string]any{"bad": func() {}}}), engine.ErrBadArgument)
		require.Equal(t, workitem.Offered, h.item(id, "Enter").State, "a bad Op changes nothing")

		require.NoError(t, h.e.ClaimWorkItem(h.ctx, enter.ID, "alice", engine.Op{Reason: "claim it"}))
		require.NoError(t, h.e.ReleaseWorkItem(h.ctx, enter.ID, "alice", engine.Op{Reason: "on leave", Data: ticket}))
		require.NoError(t, h.e.ClaimWorkItem(h.ctx, enter.ID, "bob", engine.Op{}))
		require.NoError(t, h.e.DelegateWorkItem(h.ctx, enter.ID, "bob", "alice", engine.Op{Actor: "desk", Reason: "alice knows it"}))
		require.NoError(t, h.e.StartWorkItem(h.ctx, enter.ID, "alice", engine.Op{Reason: "begun"}))
		require.NoError(t, h.e.ReassignWorkItem(h.ctx, enter.ID, "admin", []store.Principal{{Kind: store.PrincipalUser, ID: "bob"}},
			engine.Op{Reason: "alice is ill"}))
		_, err := h.e.CompleteWorkItem(h.ctx, enter.ID, engine.Completion{User: "bob", Outputs: map[string]any{"amount": 5},
			Op: engine.Op{Actor: "console:bob", Reason: "entered from paper", Data: ticket}})
		require.NoError(t, err)

		type line struct{ actor, from, to, reason, owner string }
		var got []line
		var data []map[string]any
		for _, e := range h.history(id) {
			if e.Subject == engine.SubjectWorkItem && e.WorkItem == enter.ID {
				owner, _ := e.Detail["owner"].(string)
				got = append(got, line{e.Actor, e.From, e.To, e.Reason, owner})
				data = append(data, e.Data)
			}
		}
		require.Equal(t, []line{
			{"engine", "", "Offered", "", ""},
			{"alice", "Offered", "Allocated", "claim it", "alice"},
			{"alice", "Allocated", "Offered", "on leave", ""},
			{"bob", "Offered", "Allocated", "", "bob"},
			{"desk", "Allocated", "Allocated", "alice knows it", "alice"},
			{"alice", "Allocated", "Started", "begun", ""},
			{"admin", "Started", "Offered", "alice is ill", ""},
			{"console:bob", "Offered", "Completed", "entered from paper", ""},
		}, got)
		require.Equal(t, ticket, data[2])
		require.Equal(t, ticket, data[7])
		require.Nil(t, data[1])

		// The completion's Op goes with what it moved: the activity's end.
		var activityReason string
		for _, e := range h.history(id) {
			if e.Subject == engine.SubjectActivity && e.ActivityInstance == enter.ActivityInstance && e.To == string(wftype.ActivityCompleted) {
				activityReason = e.Reason
				require.Equal(t, "console:bob", e.Actor)
			}
		}
		require.Equal(t, "entered from paper", activityReason)
	})
}

func TestWorkItemsFollowTheProcess(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, db *gorm.DB) {
		h := newOrgHarness(t, db)
		id := h.startProcess("review", "", nil)
		enter := h.item(id, "Enter")
		require.NoError(t, h.e.ClaimWorkItem(h.ctx, enter.ID, "alice", engine.Op{}))

		require.NoError(t, h.e.Suspend(h.ctx, id, engine.Op{}))
		got := h.item(id, "Enter")
		require.Equal(t, workitem.Suspended, got.State)
		require.Equal(t, "alice", got.Owner)
		require.ErrorIs(t, h.completeAs(enter.ID, "alice", nil), engine.ErrIllegalState, "work waits while suspended")
		require.ErrorIs(t, h.e.ReleaseWorkItem(h.ctx, enter.ID, "alice", engine.Op{}), engine.ErrIllegalState)

		require.NoError(t, h.e.Resume(h.ctx, id, engine.Op{}))
		got = h.item(id, "Enter")
		require.Equal(t, workitem.Allocated, got.State, "back to the state it was suspended in")
		require.Equal(t, "alice", got.Owner)

		require.NoError(t, h.e.ReassignWorkItem(h.ctx, enter.ID, "admin", []store.Principal{{Kind: store.PrincipalUser, ID: "bob"}}, engine.Op{}))
		got = h.item(id, "Enter")
		require.Equal(t, workitem.Offered, got.State)
		require.Empty(t, got.Owner)
		require.ErrorIs(t, h.e.ClaimWorkItem(h.ctx, enter.ID, "alice", engine.Op{}), engine.ErrNotAllowed, "reassigned to bob alone")

		require.NoError(t, h.e.Terminate(h.ctx, id, engine.Op{}))
		items, err := workItemsOf(h.ctx, h.e, engine.WorkItemFilter{Instance: id})
		require.NoError(t, err)
		require.Len(t, items, 1)
		require.Equal(t, workitem.Withdrawn, items[0].State)
		require.ErrorIs(t, h.completeAs(enter.ID, "bob", nil), engine.ErrInstanceFinished, "after withdrawal")
		require.ErrorIs(t, h.e.ClaimWorkItem(h.ctx, enter.ID, "bob", engine.Op{}), engine.ErrInstanceFinished)
	})
}

func TestConcurrentClaimsHaveOneWinner(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, db *gorm.DB) {
		h := newHarness(t, db).start() // resource.Anyone: everybody may claim
		h.deploy(reviewXPDL)
		id := h.startProcess("review", "", nil)
		enter := h.item(id, "Enter")

		const claimants = 16
		errs := make([]error, claimants)
		var wg sync.WaitGroup
		for i := range claimants {
			wg.Go(func() { errs[i] = h.e.ClaimWorkItem(h.ctx, enter.ID, fmt.Sprintf("user%02d", i), engine.Op{}) })
		}
		wg.Wait()
		winners, winner := 0, ""
		for i, err := range errs {
			if err == nil {
				winners++
				winner = fmt.Sprintf("user%02d", i)
				continue
			}
			require.True(t, errors.Is(err, engine.ErrNotAllowed) || errors.Is(err, engine.ErrIllegalState), "%v", err)
		}
		require.Equal(t, 1, winners)
		got := h.item(id, "Enter")
		require.Equal(t, workitem.Allocated, got.State)
		require.Equal(t, winner, got.Owner)
		require.Equal(t, int64(2), got.Revision, "one claim was written")
	})
}

func TestWorklists(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, db *gorm.DB) {
		h := newOrgHarness(t, db)
		var ids []int64
		for range 5 {
			ids = append(ids, h.startProcess("review", "", nil))
		}
		h.idle()
		ids2 := func(items []engine.WorkItem) []int64 {
			var out []int64
			for _, wi := range items {
				out = append(out, wi.Instance)
			}
			return out
		}
		all, err := h.e.Worklist(h.ctx, "alice", engine.WorklistFilter{})
		require.NoError(t, err)
		require.ElementsMatch(t, ids, ids2(all.WorkItems), "clerks see every Enter item")
		// Oldest first (by work item id, at equal priority): the
		// instances' items were offered concurrently, so their order is
		// the items' own, not the instances'.
		require.True(t, slices.IsSortedFunc(all.WorkItems, func(a, b engine.WorkItem) int {
			return cmp.Compare(a.ID, b.ID)
		}), "oldest first")
		ids = ids2(all.WorkItems) // the order the worklists use from here on
		require.Empty(t, all.Next)
		none, err := h.e.Worklist(h.ctx, "carol", engine.WorklistFilter{})
		require.NoError(t, err)
		require.Empty(t, none.WorkItems)

		// Pages of two with a cursor.
		var paged []int64
		q := engine.WorklistFilter{Limit: 2}
		for {
			page, err := h.e.Worklist(h.ctx, "bob", q)
			require.NoError(t, err)
			paged = append(paged, ids2(page.WorkItems)...)
			if page.Next == "" {
				break
			}
			q.After = page.Next
		}
		require.Equal(t, ids, paged)
		_, err = h.e.Worklist(h.ctx, "bob", engine.WorklistFilter{After: "garbage"})
		require.ErrorIs(t, err, engine.ErrBadFilter)

		// A claimed item leaves the others' worklists and stays in its owner's.
		first := h.item(ids[0], "Enter")
		require.NoError(t, h.e.ClaimWorkItem(h.ctx, first.ID, "alice", engine.Op{}))
		bobs, err := h.e.Worklist(h.ctx, "bob", engine.WorklistFilter{})
		require.NoError(t, err)
		require.Equal(t, ids[1:], ids2(bobs.WorkItems))
		alices, err := h.e.Worklist(h.ctx, "alice", engine.WorklistFilter{States: []workitem.State{workitem.Allocated}})
		require.NoError(t, err)
		require.Equal(t, ids[:1], ids2(alices.WorkItems))

		// Through a unit: dave sees Ship items of the sales unit.
		for _, pid := range ids[1:3] {
			require.NoError(t, h.completeAs(h.item(pid, "Enter").ID, "alice", nil))
			require.NoError(t, h.completeAs(h.item(pid, "Check").ID, "bob", nil))
			require.NoError(t, h.completeAs(h.item(pid, "Approve").ID, "carol", nil))
		}
		h.idle()
		daves, err := h.e.Worklist(h.ctx, "dave", engine.WorklistFilter{Activities: []string{"Ship"}})
		require.NoError(t, err)
		require.ElementsMatch(t, ids[1:3], ids2(daves.WorkItems), "offered concurrently: in either order")
		filtered, err := h.e.Worklist(h.ctx, "alice", engine.WorklistFilter{Activities: []string{"Check"}})
		require.NoError(t, err)
		require.Empty(t, filtered.WorkItems)
	})
}

// CompleteWorkItemTx: the host's write and the completion commit or roll
// back together.
func TestCompleteWorkItemInTheHostsTransaction(t *testing.T) {
	t.Parallel()
	type invoice struct {
		ID     int64 `gorm:"primaryKey"`
		Amount int64
	}
	dbtest.Each(t, func(t *testing.T, db *gorm.DB) {
		require.NoError(t, db.Migrator().DropTable(&invoice{}))
		require.NoError(t, db.AutoMigrate(&invoice{}))
		h := newOrgHarness(t, db)
		id := h.startProcess("review", "", nil)
		enter := h.item(id, "Enter")
		errRollback := errors.New("host changed its mind")

		err := db.Transaction(func(tx *gorm.DB) error {
			if err := tx.Create(&invoice{Amount: 99}).Error; err != nil {
				return err
			}
			if _, err := h.e.CompleteWorkItemTx(h.ctx, tx, enter.ID, engine.Completion{User: "alice", Outputs: map[string]any{"amount": 99}}); err != nil {
				return err
			}
			return errRollback
		})
		require.ErrorIs(t, err, errRollback)
		var n int64
		require.NoError(t, db.Model(&invoice{}).Count(&n).Error)
		require.Zero(t, n)
		require.Equal(t, workitem.Offered, h.item(id, "Enter").State, "the completion rolled back with the host")
		require.Equal(t, int64(0), h.vars(id)["amount"])

		// What follows the host's commit comes through the outbox poller.
		checkOffered := make(chan struct{})
		var once sync.Once
		defer h.e.Subscribe(func(r engine.Record) {
			if r.Instance == id && r.Type == engine.RecordWorkItemCreated && r.Activity == "Check" {
				once.Do(func() { close(checkOffered) })
			}
		})()
		require.NoError(t, db.Transaction(func(tx *gorm.DB) error {
			if err := tx.Create(&invoice{Amount: 99}).Error; err != nil {
				return err
			}
			_, err := h.e.CompleteWorkItemTx(h.ctx, tx, enter.ID, engine.Completion{User: "alice", Outputs: map[string]any{"amount": 99}})
			return err
		}))
		require.NoError(t, db.Model(&invoice{}).Count(&n).Error)
		require.Equal(t, int64(1), n)
		select {
		case <-checkOffered:
		case <-h.ctx.Done():
			t.Fatal("the process never moved on after the host's commit")
		}
		require.Equal(t, "Check", h.item(id, "Check").Activity, "the process moved on after the host's commit")
		require.Equal(t, int64(99), h.vars(id)["amount"])
	})
}

// The out-of-order problem: a completion that arrives before its activity
// waits is kept and applied when the activity gets there.
func TestCorrelationInbox(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, db *gorm.DB) {
		h := newOrgHarness(t, db)
		id := h.startProcess("review", "", map[string]any{"orderId": "A-42"})
		h.idle()

		// Approve's completion arrives while Enter is still open.
		d, err := h.e.Send(h.ctx, engine.Message{MessageID: "m1", Instance: id, Activity: "Approve", User: "carol"})
		require.NoError(t, err)
		require.Equal(t, engine.DeliveryPending, d.State)
		again, err := h.e.Send(h.ctx, engine.Message{MessageID: "m1", Instance: id, Activity: "Approve", User: "carol"})
		require.NoError(t, err)
		require.True(t, again.Duplicate)
		require.Equal(t, engine.DeliveryPending, again.State)

		// By data: the instance whose orderId is A-42, for Ship.
		byData, err := h.e.Send(h.ctx, engine.Message{
			MessageID: "m2", Match: &engine.Match{Process: "review", Variable: "orderId", Value: "A-42"},
			Activity: "Ship", User: "dave",
		})
		require.NoError(t, err)
		require.Equal(t, engine.DeliveryPending, byData.State)
		require.Equal(t, id, byData.Instance)

		require.NoError(t, h.completeAs(h.item(id, "Enter").ID, "alice", nil))
		require.NoError(t, h.completeAs(h.item(id, "Check").ID, "bob", nil))
		// Approve and Ship completed themselves from the inbox.
		confirm := h.item(id, "Confirm")
		require.Equal(t, "Confirm", confirm.Activity)
		for _, m := range []string{"m1", "m2"} {
			got, err := h.e.Inbox(h.ctx, m)
			require.NoError(t, err)
			require.Equal(t, engine.DeliveryApplied, got.State, m)
		}

		// A message for an activity the instance will never reach again
		// expires with the reason when the instance ends.
		late, err := h.e.Send(h.ctx, engine.Message{MessageID: "m3", Instance: id, Activity: "Check", User: "bob"})
		require.NoError(t, err)
		require.Equal(t, engine.DeliveryPending, late.State)
		require.NoError(t, h.completeAs(confirm.ID, "alice", nil))
		h.requireState(id, wftype.ProcessCompleted)
		got, err := h.e.Inbox(h.ctx, "m3")
		require.NoError(t, err)
		require.Equal(t, engine.DeliveryExpired, got.State)
		require.Contains(t, got.Reason, "before reaching activity Check")

		// After the end: expired at once. Bad messages: refused, nothing kept.
		after, err := h.e.Send(h.ctx, engine.Message{MessageID: "m4", Instance: id, Activity: "Check", User: "bob"})
		require.NoError(t, err)
		require.Equal(t, engine.DeliveryExpired, after.State)
		_, err = h.e.Send(h.ctx, engine.Message{MessageID: "m5", Instance: id, Activity: "Nowhere"})
		require.ErrorIs(t, err, engine.ErrNotFound)
		_, err = h.e.Send(h.ctx, engine.Message{MessageID: "m6", Activity: "Check"})
		require.ErrorIs(t, err, engine.ErrBadArgument)
		_, err = h.e.Inbox(h.ctx, "m5")
		require.ErrorIs(t, err, engine.ErrNotFound)
	})
}

// A Shark-style performer: an expression over the variables naming the
// user (or participant) who gets the item.
func TestPerformerExpression(t *testing.T) {
	t.Parallel()
	src := xpdltest.Package(xpdltest.Process("p",
		`<DataFields><DataField Id="reviewer"><DataType><BasicType Type="STRING"/></DataType></DataField></DataFields>`,
		xpdltest.Activity("ByVariable", `<Implementation><No/></Implementation><Performer>reviewer</Performer>`, "", "")+
			xpdltest.Activity("ByScript", `<Implementation><No/></Implementation><Performer>s == "x" ? "clerk" : "nobody"</Performer>`, "", ""),
		xpdltest.Transition("t1", "ByVariable>ByScript")))
	dbtest.Each(t, func(t *testing.T, db *gorm.DB) {
		h := newOrgHarness(t, db)
		h.deploy(src)
		id := h.startProcess("pkg", "", map[string]any{"reviewer": "carol", "s": "x"})
		wi := h.item(id, "ByVariable")
		require.Equal(t, []store.Principal{{Kind: store.PrincipalUser, ID: "carol"}}, wi.Assignees)
		require.ErrorIs(t, h.completeAs(wi.ID, "alice", nil), engine.ErrNotAllowed)
		require.NoError(t, h.completeAs(wi.ID, "carol", nil))
		wi = h.item(id, "ByScript")
		require.Equal(t, []store.Principal{{Kind: store.PrincipalRole, ID: "clerk"}}, wi.Assignees, "the script named the clerk participant")
	})
}

// A message whose time to live runs out before its activity is reached
// expires with the reason instead of completing it.
func TestInboxMessageTimeToLive(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, db *gorm.DB) {
		org, err := resource.ParseOrg([]byte(testOrg), resource.FormatYAML)
		require.NoError(t, err)
		clock := timer.NewFake(time.Date(2026, 11, 22, 9, 0, 0, 0, time.UTC))
		h := newHarness(t, db, func(c *engine.Config) { c.Directory, c.Clock = org, clock }).start()
		h.deploy(reviewXPDL)
		id := h.startProcess("review", "", nil)
		h.idle()
		d, err := h.e.Send(h.ctx, engine.Message{MessageID: "ttl", Instance: id, Activity: "Check", User: "bob", TTL: time.Hour})
		require.NoError(t, err)
		require.Equal(t, engine.DeliveryPending, d.State)
		clock.Advance(2 * time.Hour)
		require.NoError(t, h.completeAs(h.item(id, "Enter").ID, "alice", nil))
		check := h.item(id, "Check")
		require.Equal(t, workitem.Offered, check.State, "the expired message did not complete Check")
		got, err := h.e.Inbox(h.ctx, "ttl")
		require.NoError(t, err)
		require.Equal(t, engine.DeliveryExpired, got.State)
		require.Contains(t, got.Reason, "time to live")
	})
}

// formXPDL is an XPDL 2.2 user task whose formal parameters say what its
// performer hands back: approved (a data field), comment (not one, so it
// stays in the item's result), and amount, which the performer only reads.
const formXPDL = `<?xml version="1.0" encoding="UTF-8"?>
<Package xmlns="http://www.wfmc.org/2009/XPDL2.2" Id="form" Name="form">
  <PackageHeader><XPDLVersion>2.2</XPDLVersion><Vendor>goxpdl</Vendor><Created>2026-11-22</Created></PackageHeader>
  <Participants><Participant Id="clerk"><ParticipantType Type="ROLE"/></Participant></Participants>
  <WorkflowProcesses>
    <WorkflowProcess Id="form">
      <DataFields>
        <DataField Id="approved"><DataType><BasicType Type="BOOLEAN"/></DataType><InitialValue>false</InitialValue></DataField>
        <DataField Id="amount"><DataType><BasicType Type="INTEGER"/></DataType><InitialValue>10</InitialValue></DataField>
      </DataFields>
      <Activities>
        <Activity Id="Decide">
          <FormalParameters>
            <FormalParameter Id="approved" Mode="OUT"><DataType><BasicType Type="BOOLEAN"/></DataType></FormalParameter>
            <FormalParameter Id="comment" Mode="OUT"><DataType><BasicType Type="STRING"/></DataType></FormalParameter>
            <FormalParameter Id="amount" Mode="IN"><DataType><BasicType Type="INTEGER"/></DataType></FormalParameter>
          </FormalParameters>
          <Implementation><Task><TaskUser/></Task></Implementation>
          <Performers><Performer>clerk</Performer></Performers>
        </Activity>
      </Activities>
    </WorkflowProcess>
  </WorkflowProcesses>
</Package>`

func TestCompletionOutputsFollowTheActivitysFormalParameters(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, db *gorm.DB) {
		h := newHarness(t, db).start()
		h.deploy(formXPDL)
		id := h.startProcess("form", "form", nil)
		h.idle()
		decide := h.item(id, "Decide")

		for _, bad := range []struct {
			outputs map[string]any
			want    error
		}{
			{map[string]any{"approved": "perhaps"}, engine.ErrWrongType},
			{map[string]any{"comment": 42}, engine.ErrWrongType},
			{map[string]any{"amount": 20}, engine.ErrNotAllowed},    // IN only
			{map[string]any{"reviewer": "x"}, engine.ErrNotAllowed}, // not a parameter
		} {
			require.ErrorIs(t, h.completeAs(decide.ID, "alice", bad.outputs), bad.want, "%v", bad.outputs)
		}
		require.Equal(t, workitem.Offered, h.item(id, "Decide").State, "refused completions changed nothing")

		done, err := h.e.CompleteWorkItem(h.ctx, decide.ID, engine.Completion{
			User: "alice", Outputs: map[string]any{"approved": true, "comment": "fine by me"},
		})
		require.NoError(t, err)
		require.Equal(t, map[string]any{"approved": true, "comment": "fine by me"}, done.Result)
		h.requireState(id, wftype.ProcessCompleted)
		require.Equal(t, map[string]any{"approved": true, "amount": int64(10)}, h.vars(id))
	})
}
