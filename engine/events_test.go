package engine_test

import (
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"gorm.io/gorm"

	"github.com/goxpdl/goxpdl/engine"
	"github.com/goxpdl/goxpdl/store"
	"github.com/goxpdl/goxpdl/store/dbtest"
	"github.com/goxpdl/goxpdl/wftype"
)

// messageEventsXPDL is an XPDL 2.2 package for the event tests.
//
// choice: Start -> Gate (event-based) -> Paid (message)     -> Ship      -> EndShip
//
//	-> Cancel (signal "cancel") -> Cancelled -> EndCancelled
//	-> Timeout (timer PT1H)    -> Expire    -> EndExpired
//	-> Receive (receive task)  -> Received  -> EndReceived
//
// waiter: Start -> Wait (signal "go") -> Done (user task) -> End
// thrower: Start -> Throw (throwing signal "go") -> End
// manual: Start -> Prepare (user task) -> Paid (message) -> Auto -> End
// loop: Start -> Gate (event-based) -> Tick (signal "tick") -> Count (i++) -> Again -> Gate while i < 3, else Done
//
//	-> Stop (message) -> Stopped
const messageEventsXPDL = `<?xml version="1.0" encoding="UTF-8"?>
<Package xmlns="http://www.wfmc.org/2009/XPDL2.2" Id="events" Name="events">
  <PackageHeader><XPDLVersion>2.2</XPDLVersion><Vendor>goxpdl</Vendor><Created>2026-11-24</Created></PackageHeader>
  <Script Type="text/javascript"/>
  <Participants><Participant Id="clerk"><ParticipantType Type="ROLE"/></Participant></Participants>
  <DataFields>
    <DataField Id="ref"><DataType><BasicType Type="STRING"/></DataType></DataField>
    <DataField Id="amount"><DataType><BasicType Type="INTEGER"/></DataType><InitialValue>0</InitialValue></DataField>
    <DataField Id="note"><DataType><BasicType Type="STRING"/></DataType></DataField>
    <DataField Id="i"><DataType><BasicType Type="INTEGER"/></DataType><InitialValue>0</InitialValue></DataField>
  </DataFields>
  <WorkflowProcesses>
    <WorkflowProcess Id="choice">
      <Activities>
        <Activity Id="Start"><Event><StartEvent Trigger="None"/></Event></Activity>
        <Activity Id="Gate"><Route GatewayType="Exclusive" ExclusiveType="Event"/></Activity>
        <Activity Id="Paid"><Event><IntermediateEvent Trigger="Message"><TriggerResultMessage CatchThrow="CATCH"><Message Id="paid" Name="paid"/></TriggerResultMessage></IntermediateEvent></Event></Activity>
        <Activity Id="Cancel"><Event><IntermediateEvent Trigger="Signal"><TriggerResultSignal CatchThrow="CATCH" Name="cancel"/></IntermediateEvent></Event></Activity>
        <Activity Id="Timeout"><Event><IntermediateEvent Trigger="Timer"><TriggerTimer><TimeCycle>PT1H</TimeCycle></TriggerTimer></IntermediateEvent></Event></Activity>
        <Activity Id="Receive"><Implementation><Task><TaskReceive/></Task></Implementation></Activity>
        <Activity Id="Ship"><Implementation><No/></Implementation></Activity>
        <Activity Id="Cancelled"><Implementation><No/></Implementation></Activity>
        <Activity Id="Expire"><Implementation><No/></Implementation></Activity>
        <Activity Id="Received"><Implementation><No/></Implementation></Activity>
        <Activity Id="EndShip"><Event><EndEvent Result="None"/></Event></Activity>
        <Activity Id="EndCancelled"><Event><EndEvent Result="None"/></Event></Activity>
        <Activity Id="EndExpired"><Event><EndEvent Result="None"/></Event></Activity>
        <Activity Id="EndReceived"><Event><EndEvent Result="None"/></Event></Activity>
      </Activities>
      <Transitions>
        <Transition Id="t1" From="Start" To="Gate"/>
        <Transition Id="t2" From="Gate" To="Paid"/>
        <Transition Id="t3" From="Gate" To="Cancel"/>
        <Transition Id="t4" From="Gate" To="Timeout"/>
        <Transition Id="t5" From="Gate" To="Receive"/>
        <Transition Id="t6" From="Paid" To="Ship"/>
        <Transition Id="t7" From="Cancel" To="Cancelled"/>
        <Transition Id="t8" From="Timeout" To="Expire"/>
        <Transition Id="t9" From="Receive" To="Received"/>
        <Transition Id="t10" From="Ship" To="EndShip"/>
        <Transition Id="t11" From="Cancelled" To="EndCancelled"/>
        <Transition Id="t12" From="Expire" To="EndExpired"/>
        <Transition Id="t13" From="Received" To="EndReceived"/>
      </Transitions>
    </WorkflowProcess>
    <WorkflowProcess Id="waiter">
      <Activities>
        <Activity Id="Start"><Event><StartEvent Trigger="None"/></Event></Activity>
        <Activity Id="Wait"><Event><IntermediateEvent Trigger="Signal"><TriggerResultSignal CatchThrow="CATCH" Name="go"/></IntermediateEvent></Event></Activity>
        <Activity Id="Done"><Implementation><Task><TaskUser/></Task></Implementation><Performers><Performer>clerk</Performer></Performers></Activity>
        <Activity Id="End"><Event><EndEvent Result="None"/></Event></Activity>
      </Activities>
      <Transitions>
        <Transition Id="t1" From="Start" To="Wait"/>
        <Transition Id="t2" From="Wait" To="Done"/>
        <Transition Id="t3" From="Done" To="End"/>
      </Transitions>
    </WorkflowProcess>
    <WorkflowProcess Id="thrower">
      <Activities>
        <Activity Id="Start"><Event><StartEvent Trigger="None"/></Event></Activity>
        <Activity Id="Throw"><Event><IntermediateEvent Trigger="Signal"><TriggerResultSignal CatchThrow="THROW" Name="go"/></IntermediateEvent></Event></Activity>
        <Activity Id="End"><Event><EndEvent Result="None"/></Event></Activity>
      </Activities>
      <Transitions>
        <Transition Id="t1" From="Start" To="Throw"/>
        <Transition Id="t2" From="Throw" To="End"/>
      </Transitions>
    </WorkflowProcess>
    <WorkflowProcess Id="manual">
      <Activities>
        <Activity Id="Start"><Event><StartEvent Trigger="None"/></Event></Activity>
        <Activity Id="Prepare"><Implementation><Task><TaskUser/></Task></Implementation><Performers><Performer>clerk</Performer></Performers></Activity>
        <Activity Id="Paid"><Event><IntermediateEvent Trigger="Message"><TriggerResultMessage><Message Id="paid" Name="paid"/></TriggerResultMessage></IntermediateEvent></Event></Activity>
        <Activity Id="Auto"><Implementation><No/></Implementation></Activity>
        <Activity Id="End"><Event><EndEvent Result="None"/></Event></Activity>
      </Activities>
      <Transitions>
        <Transition Id="t1" From="Start" To="Prepare"/>
        <Transition Id="t2" From="Prepare" To="Paid"/>
        <Transition Id="t3" From="Paid" To="Auto"/>
        <Transition Id="t4" From="Auto" To="End"/>
      </Transitions>
    </WorkflowProcess>
    <WorkflowProcess Id="loop">
      <Activities>
        <Activity Id="Start"><Event><StartEvent Trigger="None"/></Event></Activity>
        <Activity Id="Gate"><Route GatewayType="Exclusive" ExclusiveType="Event"/></Activity>
        <Activity Id="Tick"><Event><IntermediateEvent Trigger="Signal"><TriggerResultSignal Name="tick"/></IntermediateEvent></Event></Activity>
        <Activity Id="Stop"><Event><IntermediateEvent Trigger="Message"><TriggerResultMessage><Message Id="stop" Name="stop"/></TriggerResultMessage></IntermediateEvent></Event></Activity>
        <Activity Id="Count"><Implementation><Task><TaskScript><Script ScriptGrammar="text/javascript">i = i + 1</Script></TaskScript></Task></Implementation></Activity>
        <Activity Id="Again"><Route GatewayType="Exclusive"/></Activity>
        <Activity Id="Done"><Event><EndEvent Result="None"/></Event></Activity>
        <Activity Id="Stopped"><Event><EndEvent Result="None"/></Event></Activity>
      </Activities>
      <Transitions>
        <Transition Id="t1" From="Start" To="Gate"/>
        <Transition Id="t2" From="Gate" To="Tick"/>
        <Transition Id="t3" From="Gate" To="Stop"/>
        <Transition Id="t4" From="Tick" To="Count"/>
        <Transition Id="t5" From="Count" To="Again"/>
        <Transition Id="t6" From="Again" To="Gate"><Condition Type="CONDITION"><Expression>i &lt; 3</Expression></Condition></Transition>
        <Transition Id="t7" From="Again" To="Done"><Condition Type="OTHERWISE"/></Transition>
        <Transition Id="t8" From="Stop" To="Stopped"/>
      </Transitions>
    </WorkflowProcess>
  </WorkflowProcesses>
</Package>`

// sub is h for subtest t: failures are t's.
func (h *harness) sub(t *testing.T) *harness {
	c := *h
	c.t = t
	return &c
}

// eventHarness is a started engine with a fake clock and messageEventsXPDL
// deployed.
func eventHarness(t *testing.T, db *gorm.DB) (*harness, func(time.Duration), *recorder) {
	t.Helper()
	h, clock, rec := timedHarness(t, db)
	h.deploy(messageEventsXPDL)
	return h, clock.Advance, rec
}

// activityStates maps each activity of an instance to its state and
// diagnosis (the last instance of each).
func activityStates(h *harness, id int64) map[string]string {
	h.t.Helper()
	h.idle()
	acts, err := activitiesOf(h.ctx, h.e, id)
	require.NoError(h.t, err)
	out := map[string]string{}
	for _, a := range acts {
		out[a.Activity] = string(a.State)
		if a.Diagnosis != "" {
			out[a.Activity] += ": " + a.Diagnosis
		}
	}
	return out
}

// subscriptions lists an instance's signal subscriptions by activity.
func subscriptions(h *harness, id int64) []string {
	h.t.Helper()
	h.idle()
	subs, err := h.e.Store().ListSubscriptions(h.ctx, store.ListSubscriptionsParams{ProcessInstanceID: id})
	require.NoError(h.t, err)
	var out []string
	for _, s := range subs {
		out = append(out, s.ActivityDefID+":"+s.Name)
	}
	return out
}

// timerCount counts an instance's timers.
func timerCount(h *harness, id int64) int {
	h.t.Helper()
	h.idle()
	timers, err := h.e.Store().ListTimers(h.ctx, store.ListTimersParams{ProcessInstanceID: id})
	require.NoError(h.t, err)
	return len(timers)
}

const (
	waiting   = string(wftype.ActivityWaiting)
	completed = string(wftype.ActivityCompleted)
)

// choiceLost is the state of a rival the winner withdrew.
func choiceLost(winner string) string {
	return completed + ": deferred choice: " + winner + " came first"
}

// TestEventGateway: the event-based gateway arms a message event, a
// signal event, a timer event and a receive task at once; whichever
// fires first decides, and the others are withdrawn in that transaction.
func TestEventGateway(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, db *gorm.DB) {
		h, advance, rec := eventHarness(t, db)
		start := func(h *harness, vars map[string]any) int64 {
			h.t.Helper()
			id := h.startProcess("events", "choice", vars)
			h.idle()
			return id
		}
		armed := func(h *harness, id int64) {
			t := h.t
			t.Helper()
			states := activityStates(h, id)
			for _, a := range []string{"Paid", "Cancel", "Timeout", "Receive"} {
				require.Equal(t, waiting, states[a], a)
			}
			require.Equal(t, 1, timerCount(h, id))
			require.Equal(t, []string{"Cancel:cancel"}, subscriptions(h, id))
		}
		decided := func(h *harness, id int64, winner, next string) {
			t := h.t
			t.Helper()
			h.requireState(id, wftype.ProcessCompleted)
			states := activityStates(h, id)
			for _, a := range []string{"Paid", "Cancel", "Timeout", "Receive"} {
				want := choiceLost(winner)
				if a == winner {
					want = completed
				}
				require.Equal(t, want, states[a], a)
			}
			require.Equal(t, completed, states[next])
			require.Len(t, states, 8, "Start, Gate, the four rivals, the winner's successor and its end: %v", states)
			require.Zero(t, timerCount(h, id), "timers left")
			require.Empty(t, subscriptions(h, id), "subscriptions left")
		}

		t.Run("MessageWins", func(t *testing.T) { //nolint:paralleltest // the subtests share one engine, its fake clock and its instances
			h := h.sub(t)
			id := start(h, nil)
			armed(h, id)
			d, err := h.e.Send(h.ctx, engine.Message{MessageID: "gw-paid", Instance: id, Activity: "Paid", Outputs: map[string]any{"amount": 7}})
			require.NoError(t, err)
			require.Equal(t, engine.DeliveryApplied, d.State, d.Reason)
			decided(h, id, "Paid", "Ship")
			require.Equal(t, int64(7), h.vars(id)["amount"])
			require.Len(t, rec.of(id, engine.RecordMessageApplied), 1)
		})

		t.Run("SignalWins", func(t *testing.T) { //nolint:paralleltest // the subtests share one engine, its fake clock and its instances
			h := h.sub(t)
			id := start(h, nil)
			armed(h, id)
			b, err := h.e.Signal(h.ctx, "cancel", engine.SignalOpts{Instance: id})
			require.NoError(t, err)
			require.Len(t, b.Receivers, 1)
			require.Equal(t, engine.Receiver{Instance: id, Activity: "Cancel", ActivityInstance: b.Receivers[0].ActivityInstance}, b.Receivers[0])
			decided(h, id, "Cancel", "Cancelled")
			// The message that comes too late finds the instance finished.
			d, err := h.e.Send(h.ctx, engine.Message{MessageID: "gw-late", Instance: id, Activity: "Paid"})
			require.NoError(t, err)
			require.Equal(t, engine.DeliveryExpired, d.State)
		})

		t.Run("TimerWins", func(t *testing.T) { //nolint:paralleltest // the subtests share one engine, its fake clock and its instances
			h := h.sub(t)
			id := start(h, nil)
			armed(h, id)
			advance(time.Hour)
			rec.await(t, id, engine.RecordTimerFired, 1)
			decided(h, id, "Timeout", "Expire")
		})

		t.Run("ReceiveTaskWins", func(t *testing.T) { //nolint:paralleltest // the subtests share one engine, its fake clock and its instances
			h := h.sub(t)
			id := start(h, nil)
			armed(h, id)
			d, err := h.e.Send(h.ctx, engine.Message{MessageID: "gw-receive", Instance: id, Activity: "Receive", Outputs: map[string]any{"note": "got it"}})
			require.NoError(t, err)
			require.Equal(t, engine.DeliveryApplied, d.State, d.Reason)
			decided(h, id, "Receive", "Received")
			require.Equal(t, "got it", h.vars(id)["note"])
		})

		t.Run("InALoop", func(t *testing.T) { //nolint:paralleltest // the subtests share one engine, its fake clock and its instances
			h := h.sub(t)
			id := h.startProcess("events", "loop", nil)
			for n := range 3 {
				h.idle()
				require.Equal(t, []string{"Tick:tick"}, subscriptions(h, id), "round %d", n+1)
				sent, err := h.e.Signal(h.ctx, "tick", engine.SignalOpts{Instance: id})
				require.NoError(t, err)
				require.Len(t, sent.Receivers, 1, "round %d: only this round's Tick waits", n+1)
			}
			h.requireState(id, wftype.ProcessCompleted)
			require.Equal(t, map[string]int{"Start": 1, "Gate": 3, "Tick": 3, "Stop": 3, "Count": 3, "Again": 3, "Done": 1}, h.started(id))
			acts, err := activitiesOf(h.ctx, h.e, id)
			require.NoError(t, err)
			for _, a := range acts {
				if a.Activity == "Stop" {
					require.Equal(t, choiceLost("Tick"), string(a.State)+": "+a.Diagnosis)
				}
			}
			require.Equal(t, int64(3), h.vars(id)["i"])
			require.Empty(t, subscriptions(h, id))
		})

		t.Run("EarlyMessageWinsAtOnce", func(t *testing.T) { //nolint:paralleltest // the subtests share one engine, its fake clock and its instances
			h := h.sub(t)
			// Correlated by data before the instance exists: kept, and
			// taken as the gateway arms Paid.
			d, err := h.e.Send(h.ctx, engine.Message{
				MessageID: "gw-early", Match: &engine.Match{Process: "choice", Variable: "ref", Value: "R-1"}, Activity: "Paid",
			})
			require.NoError(t, err)
			require.Equal(t, engine.DeliveryPending, d.State)
			id := start(h, map[string]any{"ref": "R-1"})
			decided(h, id, "Paid", "Ship")
			got, err := h.e.Inbox(h.ctx, "gw-early")
			require.NoError(t, err)
			require.Equal(t, engine.DeliveryApplied, got.State)
			require.Equal(t, id, got.Instance)
		})
	})
}

// TestSignal: a signal reaches the events waiting for it when it is sent,
// in every instance or one; it is lost for the rest.
func TestSignal(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, db *gorm.DB) {
		h, _, rec := eventHarness(t, db)
		a := h.startProcess("events", "waiter", nil)
		b := h.startProcess("events", "waiter", nil)
		suspended := h.startProcess("events", "waiter", nil)
		h.idle()
		require.NoError(t, h.e.Suspend(h.ctx, suspended, engine.Op{}))

		t.Run("Broadcast", func(t *testing.T) { //nolint:paralleltest // the subtests share one engine, its fake clock and its instances
			h := h.sub(t)
			sent, err := h.e.Signal(h.ctx, "go", engine.SignalOpts{Variables: map[string]any{"note": "hello", "undeclared": 1}})
			require.NoError(t, err)
			var got []int64
			for _, r := range sent.Receivers {
				require.Equal(t, "Wait", r.Activity)
				got = append(got, r.Instance)
			}
			require.ElementsMatch(t, []int64{a, b, suspended}, got)
			for _, id := range []int64{a, b} {
				require.Equal(t, []string{"Done"}, openActivities(h, id))
				require.Equal(t, "hello", h.vars(id)["note"])
				require.Len(t, rec.of(id, engine.RecordSignalCaught), 1)
				require.Empty(t, subscriptions(h, id))
			}
			// The suspended instance was not listening: lost for it.
			require.Equal(t, waiting, activityStates(h, suspended)["Wait"])
			require.NoError(t, h.e.Resume(h.ctx, suspended, engine.Op{}))
			require.Equal(t, waiting, activityStates(h, suspended)["Wait"])
		})

		t.Run("OneInstance", func(t *testing.T) { //nolint:paralleltest // the subtests share one engine, its fake clock and its instances
			h := h.sub(t)
			later := h.startProcess("events", "waiter", nil)
			h.idle()
			sent, err := h.e.Signal(h.ctx, "go", engine.SignalOpts{Instance: suspended})
			require.NoError(t, err)
			require.Len(t, sent.Receivers, 1)
			require.Equal(t, []string{"Done"}, openActivities(h, suspended))
			require.Equal(t, waiting, activityStates(h, later)["Wait"], "only the instance named")
		})

		t.Run("NothingWaits", func(t *testing.T) { //nolint:paralleltest // the subtests share one engine, its fake clock and its instances
			h := h.sub(t)
			sent, err := h.e.Signal(h.ctx, "nobody-listens", engine.SignalOpts{})
			require.NoError(t, err)
			require.Empty(t, sent.Receivers)
			sent, err = h.e.Signal(h.ctx, "go", engine.SignalOpts{Instance: a})
			require.NoError(t, err)
			require.Empty(t, sent.Receivers, "a waits no more")
		})

		t.Run("Idempotent", func(t *testing.T) { //nolint:paralleltest // the subtests share one engine, its fake clock and its instances
			h := h.sub(t)
			id := h.startProcess("events", "waiter", nil)
			h.idle()
			first, err := h.e.Signal(h.ctx, "go", engine.SignalOpts{Instance: id, SignalID: "sig-1"})
			require.NoError(t, err)
			require.Len(t, first.Receivers, 1)
			require.False(t, first.Duplicate)
			require.Equal(t, []string{"Done"}, openActivities(h, id))
			require.NoError(t, h.complete(openItemOf(h, id, "Done").ID, nil))
			again, err := h.e.Signal(h.ctx, "go", engine.SignalOpts{Instance: id, SignalID: "sig-1"})
			require.NoError(t, err)
			require.True(t, again.Duplicate)
			require.Equal(t, first.Receivers, again.Receivers)
			require.Equal(t, "go", again.Name)
			d, err := h.e.Inbox(h.ctx, "sig-1")
			require.NoError(t, err)
			require.Equal(t, engine.DeliveryApplied, d.State)

			// Concurrent sends of one id: one signal, the others duplicates.
			other := h.startProcess("events", "waiter", nil)
			h.idle()
			sent := make([]engine.Broadcast, 6)
			var wg sync.WaitGroup
			for i := range sent {
				wg.Go(func() {
					b, err := h.e.Signal(h.ctx, "go", engine.SignalOpts{Instance: other, SignalID: "sig-2"})
					assert.NoError(t, err)
					sent[i] = b
				})
			}
			wg.Wait()
			firsts := 0
			for _, b := range sent {
				require.Len(t, b.Receivers, 1)
				if !b.Duplicate {
					firsts++
				}
			}
			require.Equal(t, 1, firsts)
			h.idle()
			require.Len(t, rec.of(other, engine.RecordSignalCaught), 1)
		})

		t.Run("BadInput", func(t *testing.T) { //nolint:paralleltest // the subtests share one engine, its fake clock and its instances
			h := h.sub(t)
			_, err := h.e.Signal(h.ctx, " ", engine.SignalOpts{})
			require.ErrorIs(t, err, engine.ErrBadArgument)
			_, err = h.e.Signal(h.ctx, "go", engine.SignalOpts{Instance: 987654})
			require.ErrorIs(t, err, engine.ErrNotFound)
			finished := h.startProcess("events", "waiter", nil)
			h.idle()
			require.NoError(t, h.e.Terminate(h.ctx, finished, engine.Op{}))
			require.Empty(t, subscriptions(h, finished), "a finished instance's subscriptions go with it")
			_, err = h.e.Signal(h.ctx, "go", engine.SignalOpts{Instance: finished})
			require.ErrorIs(t, err, engine.ErrInstanceFinished)
			_, err = h.e.Send(h.ctx, engine.Message{MessageID: "a-message", Instance: b, Activity: "Done", User: "clerk1"})
			require.NoError(t, err)
			_, err = h.e.Signal(h.ctx, "go", engine.SignalOpts{SignalID: "a-message"})
			require.ErrorIs(t, err, engine.ErrBadArgument, "a message's id")
			_, err = h.e.SignalTx(h.ctx, nil, "", engine.SignalOpts{})
			require.ErrorIs(t, err, engine.ErrBadArgument, "a nil tx is the engine's own; the signal is still checked")
		})

		t.Run("WrongVariableType", func(t *testing.T) { //nolint:paralleltest // the subtests share one engine, its fake clock and its instances
			h := h.sub(t)
			id := h.startProcess("events", "waiter", nil)
			h.idle()
			_, err := h.e.Signal(h.ctx, "go", engine.SignalOpts{Instance: id, Variables: map[string]any{"note": 5}})
			require.NoError(t, err)
			state := activityStates(h, id)["Wait"]
			require.Contains(t, state, string(wftype.ActivityAbnormal)+": signal go: ")
			require.Contains(t, state, `variable "note"`)
			require.Empty(t, subscriptions(h, id))
		})

		t.Run("ThrowEvent", func(t *testing.T) { //nolint:paralleltest // the subtests share one engine, its fake clock and its instances
			h := h.sub(t)
			w1 := h.startProcess("events", "waiter", nil)
			w2 := h.startProcess("events", "waiter", nil)
			h.idle()
			thrower := h.startProcess("events", "thrower", nil)
			h.requireState(thrower, wftype.ProcessCompleted)
			thrown := rec.of(thrower, engine.RecordSignalThrown)
			require.Len(t, thrown, 1)
			require.Equal(t, "go", thrown[0].Detail)
			require.Equal(t, []string{"Done"}, openActivities(h, w1))
			require.Equal(t, []string{"Done"}, openActivities(h, w2))
		})

		t.Run("HostTransaction", func(t *testing.T) { //nolint:paralleltest // the subtests share one engine, its fake clock and its instances
			h := h.sub(t)
			errRollback := errors.New("host rolls back")
			id := h.startProcess("events", "waiter", nil)
			h.idle()
			rollback := h.e.Transaction(h.ctx, db, func(tx *gorm.DB) error {
				sent, err := h.e.SignalTx(h.ctx, tx, "go", engine.SignalOpts{Instance: id})
				require.NoError(t, err)
				require.Len(t, sent.Receivers, 1)
				return errRollback
			})
			require.ErrorIs(t, rollback, errRollback)
			h.idle()
			require.Equal(t, waiting, activityStates(h, id)["Wait"], "nothing was sent")
			// Engine.Transaction commits and tells the engine, which then
			// polls the outbox for the signal's event (a nudge; this
			// engine's fake clock does not tick the poller).
			require.NoError(t, h.e.Transaction(h.ctx, db, func(tx *gorm.DB) error {
				_, err := h.e.SignalTx(h.ctx, tx, "go", engine.SignalOpts{Instance: id})
				return err
			}))
			rec.await(t, id, engine.RecordSignalCaught, 1) // through the outbox poller
			require.Equal(t, []string{"Done"}, openActivities(h, id))
		})
	})
}

// TestMessageEvent: a message for a catching Message event completes it
// when it waits, waits for it otherwise, and is refused when it cannot
// apply.
func TestMessageEvent(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, db *gorm.DB) {
		h, _, _ := eventHarness(t, db)
		waitingAtPaid := func(h *harness) int64 {
			t := h.t
			t.Helper()
			id := h.startProcess("events", "manual", nil)
			require.NoError(t, h.complete(openItemOf(h, id, "Prepare").ID, nil))
			require.Equal(t, waiting, activityStates(h, id)["Paid"])
			return id
		}

		t.Run("Refused", func(t *testing.T) { //nolint:paralleltest // the subtests share one engine, its fake clock and its instances
			h := h.sub(t)
			id := waitingAtPaid(h)
			for name, tc := range map[string]struct {
				msg  engine.Message
				want error
			}{
				"wrong type":       {engine.Message{Activity: "Paid", Outputs: map[string]any{"amount": "many"}}, engine.ErrWrongType},
				"unknown variable": {engine.Message{Activity: "Paid", Outputs: map[string]any{"amount": 1, "nope": 1}}, engine.ErrUnknownVariable},
				"no receiver":      {engine.Message{Activity: "Auto"}, engine.ErrNoReceiver},
				"unknown activity": {engine.Message{Activity: "Nowhere"}, engine.ErrNotFound},
			} {
				tc.msg.MessageID, tc.msg.Instance = "refused-"+name, id
				_, err := h.e.Send(h.ctx, tc.msg)
				require.ErrorIs(t, err, tc.want, name)
				_, err = h.e.Inbox(h.ctx, tc.msg.MessageID)
				require.ErrorIs(t, err, engine.ErrNotFound, "%s: nothing kept", name)
			}
			require.Equal(t, waiting, activityStates(h, id)["Paid"])
			require.Equal(t, int64(0), h.vars(id)["amount"], "no variable set")

			d, err := h.e.Send(h.ctx, engine.Message{MessageID: "ok", Instance: id, Activity: "Paid", Outputs: map[string]any{"amount": 3}})
			require.NoError(t, err)
			require.Equal(t, engine.DeliveryApplied, d.State)
			require.Equal(t, "caught by activity Paid", d.Reason)
			again, err := h.e.Send(h.ctx, engine.Message{MessageID: "ok", Instance: id, Activity: "Paid", Outputs: map[string]any{"amount": 3}})
			require.NoError(t, err)
			require.True(t, again.Duplicate)
			h.requireState(id, wftype.ProcessCompleted)
			require.Equal(t, int64(3), h.vars(id)["amount"])
			require.Equal(t, map[string]int{"Start": 1, "Prepare": 1, "Paid": 1, "Auto": 1, "End": 1}, h.started(id))
		})

		t.Run("EarlyMessageThatCannotApplyExpires", func(t *testing.T) { //nolint:paralleltest // the subtests share one engine, its fake clock and its instances
			h := h.sub(t)
			id := h.startProcess("events", "manual", nil)
			h.idle()
			d, err := h.e.Send(h.ctx, engine.Message{MessageID: "early-bad", Instance: id, Activity: "Paid", Outputs: map[string]any{"amount": 1.5}})
			require.NoError(t, err)
			require.Equal(t, engine.DeliveryPending, d.State)
			require.NoError(t, h.complete(openItemOf(h, id, "Prepare").ID, nil))
			require.Equal(t, waiting, activityStates(h, id)["Paid"], "the message could not complete it")
			got, err := h.e.Inbox(h.ctx, "early-bad")
			require.NoError(t, err)
			require.Equal(t, engine.DeliveryExpired, got.State)
			require.Contains(t, got.Reason, `variable "amount"`)
		})

		t.Run("WaitsThroughSuspension", func(t *testing.T) { //nolint:paralleltest // the subtests share one engine, its fake clock and its instances
			h := h.sub(t)
			id := waitingAtPaid(h)
			require.NoError(t, h.e.Suspend(h.ctx, id, engine.Op{}))
			d, err := h.e.Send(h.ctx, engine.Message{MessageID: "while-suspended", Instance: id, Activity: "Paid"})
			require.NoError(t, err)
			require.Equal(t, engine.DeliveryPending, d.State)
			require.Equal(t, waiting, activityStates(h, id)["Paid"])
			require.NoError(t, h.e.Resume(h.ctx, id, engine.Op{}))
			h.requireState(id, wftype.ProcessCompleted)
			got, err := h.e.Inbox(h.ctx, "while-suspended")
			require.NoError(t, err)
			require.Equal(t, engine.DeliveryApplied, got.State)
		})
	})
}
