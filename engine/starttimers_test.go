package engine_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"gorm.io/gorm"

	"github.com/goxpdl/goxpdl/engine"
	"github.com/goxpdl/goxpdl/store"
	"github.com/goxpdl/goxpdl/store/dbtest"
	"github.com/goxpdl/goxpdl/timer"
	"github.com/goxpdl/goxpdl/wftype"
)

// startTimerXPDL is an XPDL 2.1 package "nightly" whose process "report"
// starts at a timer start event with the given TriggerTimer content, then
// offers the work item Write to the role clerk.
func startTimerXPDL(trigger string) string {
	return `<?xml version="1.0" encoding="UTF-8"?>
<Package xmlns="http://www.wfmc.org/2008/XPDL2.1" Id="nightly" Name="nightly">
  <PackageHeader><XPDLVersion>2.1</XPDLVersion><Vendor>goxpdl</Vendor><Created>2026-11-23</Created></PackageHeader>
  <Participants><Participant Id="clerk"><ParticipantType Type="ROLE"/></Participant></Participants>
  <WorkflowProcesses>
    <WorkflowProcess Id="report">
      <DataFields>
        <DataField Id="title"><DataType><BasicType Type="STRING"/></DataType><InitialValue>nightly report</InitialValue></DataField>
      </DataFields>
      <Activities>
        <Activity Id="Every"><Event><StartEvent Trigger="Timer"><TriggerTimer>` + trigger + `</TriggerTimer></StartEvent></Event></Activity>
        <Activity Id="Write"><Implementation><Task><TaskUser/></Task></Implementation><Performers><Performer>clerk</Performer></Performers></Activity>
        <Activity Id="End"><Event><EndEvent Result="None"/></Event></Activity>
      </Activities>
      <Transitions>
        <Transition Id="t1" From="Every" To="Write"/>
        <Transition Id="t2" From="Write" To="End"/>
      </Transitions>
    </WorkflowProcess>
  </WorkflowProcesses>
</Package>`
}

// instancesOf lists the instances of a deployment, oldest first.
func (h *harness) instancesOf(deployment int64) []engine.ProcessInstance {
	h.t.Helper()
	list, err := h.e.Instances(h.ctx, engine.InstanceFilter{DefinitionID: deployment, Limit: 1000})
	require.NoError(h.t, err)
	require.Zero(h.t, list.Next, "one page")
	return list.Instances
}

// awaitStarted waits until n process.started records were published, by
// any instance.
func (rec *recorder) awaitStarted(t *testing.T, n int) {
	t.Helper()
	for {
		rec.mu.Lock()
		got := 0
		for _, r := range rec.records {
			if r.Type == engine.RecordProcessStarted {
				got++
			}
		}
		rec.mu.Unlock()
		if got >= n {
			return
		}
		select {
		case <-rec.changed:
		case <-t.Context().Done():
			t.Fatalf("%d process.started record(s) never came; have %d", n, got)
		}
	}
}

func TestTimerStartEvents(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, db *gorm.DB) {
		h, clock, rec := timedHarness(t, db)

		// Three times, an hour apart, from the deployment on.
		v1 := h.deploy(startTimerXPDL(`<TimeCycle>R3/PT1H</TimeCycle>`))
		armed, err := h.deploymentTimers(v1.ID)
		require.NoError(t, err)
		require.Len(t, armed, 1)
		require.Equal(t, "Every", armed[0].Key)
		requireSameTime(t, epoch.Add(time.Hour), armed[0].DueAt)
		require.Empty(t, h.instancesOf(v1.ID), "the deployment starts nothing before the timer")

		t.Run("the timer creates an instance that begins past its start event", func(t *testing.T) { //nolint:paralleltest // the cases share one engine and clock
			clock.Advance(time.Hour)
			rec.awaitStarted(t, 1)
			// process.started is published before the events that offer the
			// instance's work are dispatched: wait for the offer itself.
			var id int64
			h.await(0, "offer the timer-started instance's work", func(ctx context.Context) (bool, error) {
				list, err := h.e.Instances(ctx, engine.InstanceFilter{DefinitionID: v1.ID, Limit: 2})
				if err != nil || len(list.Instances) != 1 {
					return false, err
				}
				id = list.Instances[0].ID
				items, err := workItemsOf(ctx, h.e, openItemsOf(id))
				return len(items) == 1, err
			})
			item := h.item(id, "Write")
			require.Equal(t, []store.Principal{{Kind: store.PrincipalRole, ID: "clerk"}}, item.Assignees)
			require.Equal(t, map[string]int{"Every": 1, "Write": 1}, h.started(id))
			require.Equal(t, "nightly report", h.vars(id)["title"])
			fired := rec.await(t, id, engine.RecordTimerFired, 1)
			require.Equal(t, "Every", fired[0].Activity)
			require.NotNil(t, fired[0].Due)
			requireSameTime(t, epoch.Add(time.Hour), *fired[0].Due)

			next, err := h.deploymentTimers(v1.ID)
			require.NoError(t, err)
			require.Len(t, next, 1, "the cycle goes on")
			requireSameTime(t, epoch.Add(2*time.Hour), next[0].DueAt)
			require.Equal(t, 1, next[0].Count)

			require.NoError(t, h.complete(item.ID, nil))
			h.requireState(id, wftype.ProcessCompleted)
		})

		t.Run("after downtime the missed occurrences start one instance", func(t *testing.T) { //nolint:paralleltest // the cases share one engine and clock
			// 2 h 30 min later the second (at 2 h) and the third (at 3 h)
			// occurrences have passed: one instance stands for both, and
			// R3 is used up.
			clock.Advance(2*time.Hour + 30*time.Minute)
			rec.awaitStarted(t, 2)
			h.idle()
			require.Len(t, h.instancesOf(v1.ID), 2)
			left, err := h.deploymentTimers(v1.ID)
			require.NoError(t, err)
			require.Empty(t, left)
			clock.Advance(24 * time.Hour)
			h.idle()
			require.Len(t, h.instancesOf(v1.ID), 2, "nothing more")
		})

		t.Run("a new version replaces the schedule", func(t *testing.T) { //nolint:paralleltest // the cases share one engine and clock
			again := h.deploy(startTimerXPDL(`<TimeCycle>R/PT1H</TimeCycle>`))
			ids := make([]int64, 0, 2)
			for _, d := range []int64{v1.ID, again.ID} {
				timers, err := h.deploymentTimers(d)
				require.NoError(t, err)
				for _, tm := range timers {
					ids = append(ids, tm.Deployment)
				}
			}
			require.Equal(t, []int64{again.ID}, ids)

			at := clock.Now().Add(90 * time.Minute).UTC()
			v3 := h.deploy(startTimerXPDL(`<TimeDate>` + at.Format(time.RFC3339) + `</TimeDate>`))
			old, err := h.deploymentTimers(again.ID)
			require.NoError(t, err)
			require.Empty(t, old, "version 2's hourly timer is gone before it fired")
			clock.Advance(time.Hour)
			h.idle()
			require.Empty(t, h.instancesOf(again.ID))
			clock.Advance(30 * time.Minute)
			rec.awaitStarted(t, 3)
			require.Len(t, h.instancesOf(v3.ID), 1)
			left, err := h.deploymentTimers(v3.ID)
			require.NoError(t, err)
			require.Empty(t, left, "a TimeDate fires once")
		})

		t.Run("a start event without a time arms nothing", func(t *testing.T) { //nolint:paralleltest // the cases share one engine and clock
			d := h.deploy(strings.Replace(startTimerXPDL(""), `Id="nightly"`, `Id="bizagi-style"`, 1))
			timers, err := h.deploymentTimers(d.ID)
			require.NoError(t, err)
			require.Empty(t, timers)
		})

		t.Run("a time that cannot be worked out refuses the deployment", func(t *testing.T) { //nolint:paralleltest // the cases share one engine and clock
			before, err := h.e.Deployments(h.ctx)
			require.NoError(t, err)
			for _, trigger := range []string{
				`<TimeCycle>every now and then</TimeCycle>`,
				`<TimeDate>throw new Error("no date")</TimeDate>`,
			} {
				_, err := h.e.Deploy(h.ctx, []byte(startTimerXPDL(trigger)))
				require.ErrorIs(t, err, engine.ErrBadTimer, trigger)
			}
			_, err = h.e.Deploy(h.ctx, []byte(startTimerXPDL(`<TimeCycle>R0/PT1H</TimeCycle>`)))
			require.ErrorIs(t, err, timer.ErrBadSchedule)
			// A timer that repeats more often than Config.MinTimerCycle
			// (one second): a start event's, a boundary event's, a
			// reminder's. Once, or a second apart, is fine.
			for trigger, want := range map[string]string{
				`<TimeCycle>R/PT0.001S</TimeCycle>`: `the TimeCycle of activity Every in process report, "R/PT0.001S", repeats every 1ms, more often than Config.MinTimerCycle (1s)`,
				`<TimeCycle>PT0.5S</TimeCycle>`:     `"PT0.5S", repeats every 500ms`,
				`<TimeCycle>R5/PT0.1S</TimeCycle>`:  `"R5/PT0.1S", repeats every 100ms`,
			} {
				_, err := h.e.Deploy(h.ctx, []byte(startTimerXPDL(trigger)))
				require.ErrorIs(t, err, engine.ErrBadTimer, trigger)
				require.ErrorContains(t, err, want)
			}
			_, err = h.e.Deploy(h.ctx, []byte(strings.Replace(boundaryCycleXPDL, "R2/PT1H", "R/PT0.01S", 1)))
			require.ErrorContains(t, err, `the TimeCycle of activity Nudge in process nudges, "R/PT0.01S", repeats every 10ms`)
			_, err = h.e.Deploy(h.ctx, []byte(strings.Replace(startTimerXPDL(`<TimeCycle>R/PT1H</TimeCycle>`),
				`<Activity Id="Write">`, `<Activity Id="Write"><ExtendedAttributes><ExtendedAttribute Name="Reminder" Value="every=PT0.2S"/></ExtendedAttributes>`, 1)))
			require.ErrorIs(t, err, engine.ErrBadTimer)
			require.ErrorContains(t, err, `the Reminder policy of activity Write in process report, "every=PT0.2S", repeats every 200ms`)
			after, err := h.e.Deployments(h.ctx)
			require.NoError(t, err)
			require.Equal(t, before, after, "nothing was deployed")
		})
	})
}

// boundaryCycleXPDL is an XPDL 2.2 process: Review (a user task) with a
// non-interrupting boundary timer Nudge that repeats R2/PT1H and leads to
// the automatic activity Remind.
const boundaryCycleXPDL = `<?xml version="1.0" encoding="UTF-8"?>
<Package xmlns="http://www.wfmc.org/2009/XPDL2.2" Id="nudges" Name="nudges">
  <PackageHeader><XPDLVersion>2.2</XPDLVersion><Vendor>goxpdl</Vendor><Created>2026-11-23</Created></PackageHeader>
  <Participants><Participant Id="clerk"><ParticipantType Type="ROLE"/></Participant></Participants>
  <WorkflowProcesses>
    <WorkflowProcess Id="nudges">
      <Activities>
        <Activity Id="Start"><Event><StartEvent Trigger="None"/></Event></Activity>
        <Activity Id="Review"><Implementation><Task><TaskUser/></Task></Implementation><Performers><Performer>clerk</Performer></Performers></Activity>
        <Activity Id="Nudge"><Event><IntermediateEvent Trigger="Timer" Target="Review" Interrupting="false"><TriggerTimer><TimeCycle>R2/PT1H</TimeCycle></TriggerTimer></IntermediateEvent></Event></Activity>
        <Activity Id="Remind"><Implementation><No/></Implementation></Activity>
        <Activity Id="End"><Event><EndEvent Result="None"/></Event></Activity>
        <Activity Id="Reminded"><Event><EndEvent Result="None"/></Event></Activity>
      </Activities>
      <Transitions>
        <Transition Id="t1" From="Start" To="Review"/>
        <Transition Id="t2" From="Review" To="End"/>
        <Transition Id="t3" From="Nudge" To="Remind"/>
        <Transition Id="t4" From="Remind" To="Reminded"/>
      </Transitions>
    </WorkflowProcess>
  </WorkflowProcesses>
</Package>`

func TestNonInterruptingBoundaryCycleRepeats(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, db *gorm.DB) {
		h, clock, rec := timedHarness(t, db)
		h.deploy(boundaryCycleXPDL)
		id := h.startProcess("nudges", "", nil)
		item := h.item(id, "Review")

		clock.Advance(time.Hour)
		rec.await(t, id, engine.RecordTimerFired, 1)
		h.idle()
		require.Equal(t, 1, h.started(id)["Remind"])
		clock.Advance(time.Hour)
		rec.await(t, id, engine.RecordTimerFired, 2)
		h.idle()
		require.Equal(t, 2, h.started(id)["Remind"])
		require.Equal(t, item.ID, h.item(id, "Review").ID, "the review goes on")

		timers, err := timersOf(h.ctx, h.e, id)
		require.NoError(t, err)
		require.Empty(t, timers, "R2: no third occurrence is armed")
		require.NoError(t, h.complete(item.ID, nil))
		h.requireState(id, wftype.ProcessCompleted)
		require.Equal(t, map[string]int{"Start": 1, "Review": 1, "Nudge": 2, "Remind": 2, "Reminded": 2, "End": 1}, h.started(id))
	})
}

func requireSameTime(t *testing.T, want, got time.Time) {
	t.Helper()
	if !want.Equal(got) {
		t.Fatalf("time: want %s, got %s", want, got)
	}
}

// deploymentTimers lists the start timers of a deployment.
func (h *harness) deploymentTimers(deployment int64) ([]engine.Timer, error) {
	page, err := h.e.Timers(h.ctx, engine.TimerFilter{Deployment: deployment, Kinds: []engine.TimerKind{engine.TimerStart}})
	return page.Timers, err
}
