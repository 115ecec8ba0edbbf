package engine_test

import (
	"testing"

	"github.com/stretchr/testify/require"
	"gorm.io/gorm"

	"github.com/goxpdl/goxpdl/engine"
	"github.com/goxpdl/goxpdl/store/dbtest"
	"github.com/goxpdl/goxpdl/wftype"
	"github.com/goxpdl/goxpdl/workitem"
)

// setPeopleXPDL has its only manual activity and its only message
// receiver inside an ActivitySet: Blk runs set S, Review (clerk) -> Reply
// (receive task) when answer is "yes", otherwise -> Done.
const setPeopleXPDL = `<?xml version="1.0" encoding="UTF-8"?>
<Package xmlns="http://www.wfmc.org/2009/XPDL2.2" Id="setpeople" Name="setpeople">
  <PackageHeader><XPDLVersion>2.2</XPDLVersion><Vendor>goxpdl</Vendor><Created>2026-11-22</Created></PackageHeader>
  <Script Type="text/javascript"/>
  <Participants><Participant Id="clerk"><ParticipantType Type="ROLE"/></Participant></Participants>
  <WorkflowProcesses>
    <WorkflowProcess Id="p">
      <DataFields><DataField Id="answer"><DataType><BasicType Type="STRING"/></DataType></DataField></DataFields>
      <ActivitySets><ActivitySet Id="S"><Activities>
        <Activity Id="Review"><Implementation><No/></Implementation><Performer>clerk</Performer>
          <TransitionRestrictions><TransitionRestriction><Split Type="XOR"/></TransitionRestriction></TransitionRestrictions>
        </Activity>
        <Activity Id="Reply"><Implementation><Task><TaskReceive/></Task></Implementation></Activity>
        <Activity Id="Done"><Route/></Activity>
      </Activities><Transitions>
        <Transition Id="s1" From="Review" To="Reply"><Condition Type="CONDITION">answer == "yes"</Condition></Transition>
        <Transition Id="s2" From="Review" To="Done"><Condition Type="OTHERWISE"/></Transition>
      </Transitions></ActivitySet></ActivitySets>
      <Activities>
        <Activity Id="Blk"><BlockActivity ActivitySetId="S"/></Activity>
      </Activities>
    </WorkflowProcess>
  </WorkflowProcesses>
</Package>`

// An instance that ends takes its open work items and the messages
// waiting for it along, also when the activities they are for are in an
// activity set (the engine looks for them only in processes that have
// such activities somewhere): when it is terminated, and when it
// completes without reaching the receiver a message came early for.
func TestEndCleansUpAfterActivitySets(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, db *gorm.DB) {
		h := newHarness(t, db).start()
		h.deploy(setPeopleXPDL)

		t.Run("Terminated", func(t *testing.T) { //nolint:paralleltest // the subtests share one engine
			id := h.startProcess("setpeople", "p", nil)
			items := h.openItems(id)
			require.Len(t, items, 1)
			require.Equal(t, "Review", items[0].Activity)
			early, err := h.e.Send(h.ctx, engine.Message{MessageID: "terminated", Instance: id, Activity: "Reply"})
			require.NoError(t, err)
			require.Equal(t, engine.DeliveryPending, early.State, "kept until Reply is reached")

			require.NoError(t, h.e.Terminate(h.ctx, id, engine.Op{}))
			h.requireState(id, wftype.ProcessTerminated)
			items, err = workItemsOf(h.ctx, h.e, engine.WorkItemFilter{Instance: id})
			require.NoError(t, err)
			require.Len(t, items, 1)
			require.Equal(t, workitem.Withdrawn, items[0].State)
			d, err := h.e.Inbox(h.ctx, "terminated")
			require.NoError(t, err)
			require.Equal(t, engine.DeliveryExpired, d.State)
		})

		t.Run("Completed", func(t *testing.T) { //nolint:paralleltest // the subtests share one engine
			id := h.startProcess("setpeople", "p", nil)
			items := h.openItems(id)
			require.Len(t, items, 1)
			early, err := h.e.Send(h.ctx, engine.Message{MessageID: "completed", Instance: id, Activity: "Reply"})
			require.NoError(t, err)
			require.Equal(t, engine.DeliveryPending, early.State)

			require.NoError(t, h.complete(items[0].ID, map[string]any{"answer": "no"}))
			h.requireState(id, wftype.ProcessCompleted)
			d, err := h.e.Inbox(h.ctx, "completed")
			require.NoError(t, err)
			require.Equal(t, engine.DeliveryExpired, d.State, "Reply was never reached")
		})
	})
}
