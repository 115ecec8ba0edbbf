package engine_test

import (
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"gorm.io/gorm"

	"github.com/goxpdl/goxpdl/engine"
	"github.com/goxpdl/goxpdl/store"
	"github.com/goxpdl/goxpdl/store/dbtest"
	"github.com/goxpdl/goxpdl/timer"
	"github.com/goxpdl/goxpdl/wftype"
	"github.com/goxpdl/goxpdl/workitem"
)

// epoch is the fake clock's start in the timer tests.
var epoch = time.Date(2026, 11, 23, 9, 0, 0, 0, time.UTC)

// deadlineXPDL is an XPDL 1.0 package whose process "approval" has one
// manual activity Approve with the given Deadline elements (and extended
// attributes): done normally it goes to Done, on the exception "late" to
// Escalated, both automatic. default_deadline_time is Shark's variable.
func deadlineXPDL(deadlines, attributes string) string {
	return `<?xml version="1.0" encoding="UTF-8"?>
<Package xmlns="http://www.wfmc.org/2002/XPDL1.0" Id="deadlines" Name="deadlines">
  <PackageHeader><XPDLVersion>1.0</XPDLVersion><Vendor>goxpdl</Vendor><Created>2026-11-23</Created></PackageHeader>
  <Script Type="text/javascript"/>
  <Participants><Participant Id="clerk"><ParticipantType Type="ROLE"/></Participant></Participants>
  <WorkflowProcesses>
    <WorkflowProcess Id="approval">
      <DataFields>
        <DataField Id="default_deadline_time"><DataType><BasicType Type="INTEGER"/></DataType><InitialValue>60000</InitialValue></DataField>
      </DataFields>
      <Activities>
        <Activity Id="Approve"><Implementation><No/></Implementation><Performer>clerk</Performer>
          ` + deadlines + `
          <ExtendedAttributes>` + attributes + `</ExtendedAttributes></Activity>
        <Activity Id="Done"><Route/></Activity>
        <Activity Id="Escalated"><Route/></Activity>
      </Activities>
      <Transitions>
        <Transition Id="t1" From="Approve" To="Done"/>
        <Transition Id="t2" From="Approve" To="Escalated"><Condition Type="EXCEPTION">late</Condition></Transition>
      </Transitions>
    </WorkflowProcess>
  </WorkflowProcesses>
</Package>`
}

func deadline(execution, condition string) string {
	return `<Deadline Execution="` + execution + `"><DeadlineCondition>` + condition + `</DeadlineCondition><ExceptionName>late</ExceptionName></Deadline>`
}

// recorder keeps the records an engine publishes and lets a test wait
// for one.
type recorder struct {
	mu      sync.Mutex
	records []engine.Record
	changed chan struct{}
}

func record(h *harness) *recorder {
	rec := &recorder{changed: make(chan struct{}, 1)}
	h.t.Cleanup(h.e.Subscribe(func(r engine.Record) {
		rec.mu.Lock()
		rec.records = append(rec.records, r)
		rec.mu.Unlock()
		select {
		case rec.changed <- struct{}{}:
		default:
		}
	}))
	return rec
}

// of returns the records of type typ of instance id so far.
func (rec *recorder) of(id int64, typ string) []engine.Record {
	rec.mu.Lock()
	defer rec.mu.Unlock()
	var out []engine.Record
	for _, r := range rec.records {
		if r.Instance == id && r.Type == typ {
			out = append(out, r)
		}
	}
	return out
}

// await waits until instance id has n records of type typ.
func (rec *recorder) await(t *testing.T, id int64, typ string, n int) []engine.Record {
	t.Helper()
	for {
		if got := rec.of(id, typ); len(got) >= n {
			return got
		}
		select {
		case <-rec.changed:
		case <-t.Context().Done():
			t.Fatalf("instance %d: %d %s record(s) never came; have %d", id, n, typ, len(rec.of(id, typ)))
		}
	}
}

// timedHarness is an engine on a fake clock at epoch, with a recorder.
func timedHarness(t *testing.T, db *gorm.DB, configure ...func(*engine.Config)) (*harness, *timer.Fake, *recorder) {
	t.Helper()
	clock := timer.NewFake(epoch)
	h := newHarness(t, db, append([]func(*engine.Config){func(c *engine.Config) {
		c.Clock, c.Location = clock, time.UTC
	}}, configure...)...)
	rec := record(h)
	h.start()
	return h, clock, rec
}

func TestSynchronousDeadline(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, db *gorm.DB) {
		h, clock, rec := timedHarness(t, db)
		h.deploy(deadlineXPDL(deadline("SYNCHR", "PT0.2S"), ""))
		id := h.startProcess("deadlines", "approval", nil)
		item := h.item(id, "Approve")
		timers, err := timersOf(h.ctx, h.e, id)
		require.NoError(t, err)
		require.Len(t, timers, 1)
		require.Equal(t, epoch.Add(200*time.Millisecond), timers[0].DueAt)

		clock.Advance(199 * time.Millisecond)
		h.idle()
		require.Empty(t, rec.of(id, engine.RecordDeadlineFired), "never early")

		clock.Advance(time.Millisecond)
		h.awaitFinal(id)
		fired := rec.of(id, engine.RecordDeadlineFired)
		require.Len(t, fired, 1)
		require.Equal(t, "SYNCHR", fired[0].State)
		require.Equal(t, "late", fired[0].Detail)
		require.Equal(t, "Approve", fired[0].Activity)
		require.Equal(t, epoch.Add(200*time.Millisecond), *fired[0].Due)
		require.Equal(t, map[string]int{"Approve": 1, "Escalated": 1}, h.started(id), "the exception path, not Done")
		items, err := workItemsOf(h.ctx, h.e, engine.WorkItemFilter{Instance: id})
		require.NoError(t, err)
		require.Equal(t, item.ID, items[0].ID)
		require.Equal(t, workitem.Withdrawn, items[0].State)
		h.requireState(id, wftype.ProcessCompleted)
		timers, err = timersOf(h.ctx, h.e, id)
		require.NoError(t, err)
		require.Empty(t, timers, "a finished process keeps no timers")
	})
}

func TestAsynchronousDeadlineRunsTheExceptionPathAlongside(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, db *gorm.DB) {
		h, clock, rec := timedHarness(t, db)
		h.deploy(deadlineXPDL(deadline("ASYNCHR", "30 s"), ""))
		id := h.startProcess("deadlines", "approval", nil)
		item := h.item(id, "Approve")
		clock.Advance(30 * time.Second)
		rec.await(t, id, engine.RecordDeadlineFired, 1)
		h.idle()
		require.Equal(t, "ASYNCHR", rec.of(id, engine.RecordDeadlineFired)[0].State)
		require.Equal(t, map[string]int{"Approve": 1, "Escalated": 1}, h.started(id))
		h.requireState(id, wftype.ProcessRunning)
		require.Equal(t, item.ID, h.item(id, "Approve").ID, "the activity goes on")

		require.NoError(t, h.complete(item.ID, nil))
		h.awaitFinal(id)
		require.Equal(t, map[string]int{"Approve": 1, "Escalated": 1, "Done": 1}, h.started(id))
		h.requireState(id, wftype.ProcessCompleted)
	})
}

func TestDeadlineExpressions(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name, condition string
		after           time.Duration
	}{
		{"milliseconds", "5000", 5 * time.Second},
		{"ISO 8601", "PT0.2S", 200 * time.Millisecond},
		{"number and unit", "3 days", 72 * time.Hour},
		{"Shark JavaScript returning a Date",
			"var d=new java.util.Date();\nd.setTime(shark_activity_created_time.getTime()+default_deadline_time);\nd;", time.Minute},
		{"JavaScript returning milliseconds", "default_deadline_time * 2", 2 * time.Minute},
	}
	dbtest.Each(t, func(t *testing.T, db *gorm.DB) {
		h, _, _ := timedHarness(t, db)
		for _, tt := range tests {
			t.Run(tt.name, func(t *testing.T) { //nolint:paralleltest // the cases share one engine and clock
				h.deploy(deadlineXPDL(deadline("SYNCHR", tt.condition), ""))
				id := h.startProcess("deadlines", "approval", nil)
				h.idle()
				timers, err := timersOf(h.ctx, h.e, id)
				require.NoError(t, err)
				require.Len(t, timers, 1)
				require.Equal(t, epoch.Add(tt.after), timers[0].DueAt)
			})
		}
		t.Run("a script error leaves the activity Abnormal", func(t *testing.T) { //nolint:paralleltest // shares the engine and clock
			h.deploy(deadlineXPDL(deadline("SYNCHR", "no_such_variable + 1"), ""))
			id := h.startProcess("deadlines", "approval", nil)
			h.idle()
			acts, err := activitiesOf(h.ctx, h.e, id)
			require.NoError(t, err)
			require.Equal(t, wftype.ActivityAbnormal, acts[0].State)
			require.Contains(t, acts[0].Diagnosis, "deadline 1 of activity Approve")
			require.Empty(t, h.openItems(id), "no work item was offered")
		})
	})
}

// A deadline that sets no time (an empty DeadlineDuration, schema-valid,
// or "None") deploys (with a warning of the validator) and arms nothing: the activity waits
// for its work item however long it takes.
func TestEmptyDeadlineIsNotArmed(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, db *gorm.DB) {
		h, clock, rec := timedHarness(t, db)
		h.deploy(deadlineXPDL(deadline("SYNCHR", "")+deadline("ASYNCHR", "None"), ""))
		id := h.startProcess("deadlines", "approval", nil)
		item := h.item(id, "Approve")
		timers, err := timersOf(h.ctx, h.e, id)
		require.NoError(t, err)
		require.Empty(t, timers)

		clock.Advance(365 * 24 * time.Hour)
		h.idle()
		require.Empty(t, rec.of(id, engine.RecordDeadlineFired))
		require.Equal(t, item.ID, h.item(id, "Approve").ID, "still waiting for its work item")
		require.NoError(t, h.complete(item.ID, nil))
		h.awaitFinal(id)
		require.Equal(t, map[string]int{"Approve": 1, "Done": 1}, h.started(id))
	})
}

func TestCompletedWorkCancelsItsDeadline(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, db *gorm.DB) {
		h, clock, rec := timedHarness(t, db)
		h.deploy(deadlineXPDL(deadline("SYNCHR", "PT1M"), ""))
		id := h.startProcess("deadlines", "approval", nil)
		require.NoError(t, h.complete(h.item(id, "Approve").ID, nil))
		h.awaitFinal(id)
		timers, err := timersOf(h.ctx, h.e, id)
		require.NoError(t, err)
		require.Empty(t, timers)
		clock.Advance(time.Hour)
		require.NoError(t, h.e.Stop(context.Background())) // waits for a firing in progress
		require.Empty(t, rec.of(id, engine.RecordDeadlineFired))
		require.Equal(t, map[string]int{"Approve": 1, "Done": 1}, h.started(id))
	})
}

func TestSuspendedProcessKeepsTheTimeItsTimersHadLeft(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, db *gorm.DB) {
		h, clock, rec := timedHarness(t, db)
		h.deploy(deadlineXPDL(deadline("SYNCHR", "PT10S"), ""))
		id := h.startProcess("deadlines", "approval", nil)
		h.idle()
		clock.Advance(4 * time.Second)
		require.NoError(t, h.e.Suspend(h.ctx, id, engine.Op{}))
		timers, err := timersOf(h.ctx, h.e, id)
		require.NoError(t, err)
		require.Equal(t, engine.TimerPaused, timers[0].State)

		clock.Advance(time.Hour)
		h.idle()
		require.Empty(t, rec.of(id, engine.RecordDeadlineFired), "a suspended process's timers do not fire")

		require.NoError(t, h.e.Resume(h.ctx, id, engine.Op{}))
		timers, err = timersOf(h.ctx, h.e, id)
		require.NoError(t, err)
		require.Equal(t, engine.TimerPending, timers[0].State)
		require.Equal(t, clock.Now().Add(6*time.Second), timers[0].DueAt, "6 s were left")
		clock.Advance(6 * time.Second)
		h.awaitFinal(id)
		require.Len(t, rec.of(id, engine.RecordDeadlineFired), 1)
		require.Equal(t, map[string]int{"Approve": 1, "Escalated": 1}, h.started(id))
	})
}

func TestOverdueTimersFireAfterDowntime(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, db *gorm.DB) {
		clock := timer.NewFake(epoch)
		first := newHarness(t, db, func(c *engine.Config) { c.Clock = clock })
		require.NoError(t, first.e.Start(first.ctx))
		first.deploy(deadlineXPDL(deadline("SYNCHR", "PT1M"), ""))
		id := first.startProcess("deadlines", "approval", nil)
		first.idle()
		require.NoError(t, first.e.Stop(context.Background()))

		clock.Advance(24 * time.Hour) // the engine was down when the deadline passed
		second := newHarness(t, db, func(c *engine.Config) { c.Clock = clock }).start()
		second.awaitFinal(id)
		require.Equal(t, map[string]int{"Approve": 1, "Escalated": 1}, second.started(id))
	})
}

// eventsXPDL is an XPDL 2.1 process: Start -> Wait (a timer event of
// PT30S) -> Review (a user task with an interrupting boundary timer of
// PT1H leading to TooLate) -> End.
const eventsXPDL = `<?xml version="1.0" encoding="UTF-8"?>
<Package xmlns="http://www.wfmc.org/2008/XPDL2.1" Id="events" Name="events">
  <PackageHeader><XPDLVersion>2.1</XPDLVersion><Vendor>goxpdl</Vendor><Created>2026-11-23</Created></PackageHeader>
  <Participants><Participant Id="clerk"><ParticipantType Type="ROLE"/></Participant></Participants>
  <WorkflowProcesses>
    <WorkflowProcess Id="events">
      <Activities>
        <Activity Id="Start"><Event><StartEvent Trigger="None"/></Event></Activity>
        <Activity Id="Wait"><Event><IntermediateEvent Trigger="Timer"><TriggerTimer><TimeCycle>PT30S</TimeCycle></TriggerTimer></IntermediateEvent></Event></Activity>
        <Activity Id="Review"><Implementation><Task><TaskUser/></Task></Implementation><Performers><Performer>clerk</Performer></Performers></Activity>
        <Activity Id="Timeout"><Event><IntermediateEvent Trigger="Timer" Target="Review"><TriggerTimer><TimeDate>PT1H</TimeDate></TriggerTimer></IntermediateEvent></Event></Activity>
        <Activity Id="TooLate"><Implementation><No/></Implementation></Activity>
        <Activity Id="End"><Event><EndEvent Result="None"/></Event></Activity>
        <Activity Id="End2"><Event><EndEvent Result="None"/></Event></Activity>
      </Activities>
      <Transitions>
        <Transition Id="t1" From="Start" To="Wait"/>
        <Transition Id="t2" From="Wait" To="Review"/>
        <Transition Id="t3" From="Review" To="End"/>
        <Transition Id="t4" From="Timeout" To="TooLate"/>
        <Transition Id="t5" From="TooLate" To="End2"/>
      </Transitions>
    </WorkflowProcess>
  </WorkflowProcesses>
</Package>`

func TestTimerEvents(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, db *gorm.DB) {
		h, clock, rec := timedHarness(t, db)
		h.deploy(eventsXPDL)

		t.Run("intermediate timer, then the boundary timer interrupts", func(t *testing.T) { //nolint:paralleltest // the cases share one engine and clock
			id := h.startProcess("events", "", nil)
			h.idle()
			require.Equal(t, map[string]int{"Start": 1, "Wait": 1}, h.started(id), "the boundary event is no start activity")
			clock.Advance(30 * time.Second)
			rec.await(t, id, engine.RecordTimerFired, 1)
			item := h.item(id, "Review")
			clock.Advance(time.Hour)
			h.awaitFinal(id)
			fired := rec.of(id, engine.RecordTimerFired)
			require.Len(t, fired, 2)
			require.Equal(t, "Timeout", fired[1].Activity)
			require.Equal(t, "on Review", fired[1].Detail)
			require.Equal(t, map[string]int{"Start": 1, "Wait": 1, "Review": 1, "Timeout": 1, "TooLate": 1, "End2": 1}, h.started(id))
			items, err := workItemsOf(h.ctx, h.e, engine.WorkItemFilter{Instance: id})
			require.NoError(t, err)
			require.Equal(t, item.ID, items[0].ID)
			require.Equal(t, workitem.Withdrawn, items[0].State)
			h.requireState(id, wftype.ProcessCompleted)
		})

		t.Run("work done in time cancels the boundary timer", func(t *testing.T) { //nolint:paralleltest // the cases share one engine and clock
			id := h.startProcess("events", "", nil)
			h.idle()
			clock.Advance(30 * time.Second)
			rec.await(t, id, engine.RecordTimerFired, 1)
			require.NoError(t, h.complete(h.item(id, "Review").ID, nil))
			h.awaitFinal(id)
			require.Equal(t, map[string]int{"Start": 1, "Wait": 1, "Review": 1, "End": 1}, h.started(id))
			timers, err := timersOf(h.ctx, h.e, id)
			require.NoError(t, err)
			require.Empty(t, timers)
		})
	})
}

func TestLimits(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, db *gorm.DB) {
		h, clock, rec := timedHarness(t, db)
		// Timed completion: Approve's Limit of 2 (hours, the process's
		// DurationUnit) completes it along its normal transition.
		src := deadlineXPDL("", `<ExtendedAttribute Name="OnLimit" Value="complete"/>`)
		src = strings.Replace(src, `<Activity Id="Approve">`, `<Activity Id="Approve"><Limit>2</Limit>`, 1)
		src = strings.Replace(src, `<WorkflowProcess Id="approval">`,
			`<WorkflowProcess Id="approval"><ProcessHeader DurationUnit="h"><Limit>3</Limit></ProcessHeader>`, 1)
		h.deploy(src)
		id := h.startProcess("deadlines", "approval", nil)
		item := h.item(id, "Approve")
		clock.Advance(2 * time.Hour)
		h.awaitFinal(id)
		require.Len(t, rec.of(id, engine.RecordActivityOverdue), 1)
		require.Equal(t, map[string]int{"Approve": 1, "Done": 1}, h.started(id))
		items, err := workItemsOf(h.ctx, h.e, engine.WorkItemFilter{Instance: id})
		require.NoError(t, err)
		require.Equal(t, item.ID, items[0].ID)
		require.Equal(t, workitem.Withdrawn, items[0].State)

		// The process Limit only reports, by default.
		plain := strings.Replace(src, `<ExtendedAttribute Name="OnLimit" Value="complete"/>`, "", 1)
		plain = strings.Replace(plain, `<Limit>2</Limit>`, "", 1)
		h.deploy(plain)
		id = h.startProcess("deadlines", "approval", nil)
		h.idle()
		clock.Advance(3 * time.Hour)
		rec.await(t, id, engine.RecordProcessOverdue, 1)
		h.requireState(id, wftype.ProcessRunning)
	})
}

func TestRemindersAndEscalation(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, db *gorm.DB) {
		h, clock, rec := timedHarness(t, db)
		// Every working day at 9:00, from the next day on; after the
		// second reminder the work goes to the role manager.
		h.deploy(deadlineXPDL("", `<ExtendedAttribute Name="Reminder" Value="cron=0 9 * * 1-5; after=PT1H; escalate=2; to=role:manager; max=3"/>`))
		id := h.startProcess("deadlines", "approval", nil) // Monday 23 November 2026, 9:00
		item := h.item(id, "Approve")
		require.Equal(t, []store.Principal{{Kind: store.PrincipalRole, ID: "clerk"}}, item.Assignees)

		clock.Advance(24 * time.Hour) // Tuesday 9:00
		first := rec.await(t, id, engine.RecordActivityReminder, 1)
		require.Equal(t, "1", first[0].Detail)
		require.Equal(t, epoch.Add(24*time.Hour), first[0].Time)
		h.idle()
		require.Empty(t, rec.of(id, engine.RecordActivityEscalated))

		clock.Advance(24 * time.Hour) // Wednesday 9:00: second reminder, escalation
		rec.await(t, id, engine.RecordActivityEscalated, 1)
		h.idle()
		escalated := h.item(id, "Approve")
		require.Equal(t, item.ID, escalated.ID)
		require.Equal(t, []store.Principal{{Kind: store.PrincipalRole, ID: "manager"}}, escalated.Assignees)

		clock.Advance(3 * 24 * time.Hour) // Saturday 9:00; the third came on Thursday
		rec.await(t, id, engine.RecordActivityReminder, 3)
		h.idle()
		timers, err := timersOf(h.ctx, h.e, id)
		require.NoError(t, err)
		for _, tm := range timers {
			require.NotEqual(t, engine.TimerPending, tm.State, "max=3: no fourth reminder is armed")
		}
		require.Len(t, rec.of(id, engine.RecordActivityReminder), 3)
	})
}
