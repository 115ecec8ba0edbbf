package engine_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"gorm.io/gorm"

	"github.com/goxpdl/goxpdl/engine"
	"github.com/goxpdl/goxpdl/script"
	"github.com/goxpdl/goxpdl/store/dbtest"
	"github.com/goxpdl/goxpdl/wftype"
	"github.com/goxpdl/goxpdl/workitem"
	"github.com/goxpdl/goxpdl/xpdl"
)

// deskXPDL has a package data field (priority), process data fields
// (decision, an enumeration; note; score) and two manual activities in
// sequence: Triage, with a 2-hour Limit, whose performer may set every
// variable, and Review, whose VariableToProcess_UPDATE attributes let
// its performer set decision and note only.
const deskXPDL = `<?xml version="1.0" encoding="UTF-8"?>
<Package xmlns="http://www.wfmc.org/2002/XPDL1.0" Id="desk" Name="desk">
  <PackageHeader><XPDLVersion>1.0</XPDLVersion><Vendor>goxpdl</Vendor><Created>2026-11-26</Created></PackageHeader>
  <Participants><Participant Id="clerk"><ParticipantType Type="ROLE"/></Participant></Participants>
  <DataFields>
    <DataField Id="priority" Name="Priority"><DataType><BasicType Type="INTEGER"/></DataType><InitialValue>3</InitialValue></DataField>
  </DataFields>
  <WorkflowProcesses>
    <WorkflowProcess Id="desk">
      <ProcessHeader DurationUnit="h"/>
      <DataFields>
        <DataField Id="decision" Name="Decision"><DataType><EnumerationType><EnumerationValue Name="approve"/><EnumerationValue Name="reject"/></EnumerationType></DataType><InitialValue>reject</InitialValue></DataField>
        <DataField Id="note"><DataType><BasicType Type="STRING"/></DataType></DataField>
        <DataField Id="score"><DataType><BasicType Type="FLOAT"/></DataType></DataField>
      </DataFields>
      <Activities>
        <Activity Id="Triage"><Limit>2</Limit><Implementation><No/></Implementation><Performer>clerk</Performer></Activity>
        <Activity Id="Review"><Implementation><No/></Implementation><Performer>clerk</Performer>
          <ExtendedAttributes>
            <ExtendedAttribute Name="VariableToProcess_UPDATE" Value="decision"/>
            <ExtendedAttribute Name="VariableToProcess_UPDATE" Value="note"/>
          </ExtendedAttributes>
        </Activity>
      </Activities>
      <Transitions><Transition Id="t1" From="Triage" To="Review"/></Transitions>
    </WorkflowProcess>
  </WorkflowProcesses>
</Package>`

func TestWorkItemFormOfParameters(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, db *gorm.DB) {
		h := newHarness(t, db).start()
		h.deploy(formXPDL)
		id := h.startProcess("form", "form", nil)
		h.idle()
		decide := h.item(id, "Decide")

		form, err := h.e.WorkItemForm(h.ctx, decide.ID)
		require.NoError(t, err)
		require.Equal(t, decide.ID, form.WorkItem.ID)
		require.Equal(t, []engine.FormField{
			{ID: "approved", Type: "BOOLEAN", Mode: xpdl.ModeOut, Value: false},
			{ID: "comment", Type: "STRING", Mode: xpdl.ModeOut},
		}, form.Fields, "the OUT parameters, not the IN one; approved is a data field with a value")

		// Text outputs are parsed by the parameters' types; a bad one is
		// refused naming the field, and nothing changes.
		for _, bad := range []struct {
			text map[string]string
			want error
			name string
		}{
			{map[string]string{"approved": "perhaps"}, engine.ErrWrongType, "approved"},
			{map[string]string{"reviewer": "x"}, engine.ErrUnknownVariable, "reviewer"},
		} {
			_, err := h.e.CompleteWorkItem(h.ctx, decide.ID, engine.Completion{User: "alice", TextOutputs: bad.text})
			require.ErrorIs(t, err, bad.want)
			var ve *engine.VariableError
			require.ErrorAs(t, err, &ve)
			require.Equal(t, bad.name, ve.Name)
		}
		_, err = h.e.CompleteWorkItem(h.ctx, decide.ID, engine.Completion{User: "alice", TextOutputs: map[string]string{"amount": "20"}})
		require.ErrorIs(t, err, engine.ErrNotAllowed, "an IN parameter is not the performer's to set")
		require.Equal(t, workitem.Offered, h.item(id, "Decide").State, "refused completions changed nothing")

		c := engine.Completion{User: "alice", TextOutputs: map[string]string{"approved": "yes", "comment": "fine"}, IdempotencyKey: "k1"}
		done, err := h.e.CompleteWorkItem(h.ctx, decide.ID, c)
		require.NoError(t, err)
		require.Equal(t, map[string]any{"approved": true, "comment": "fine"}, done.Result)
		h.requireState(id, wftype.ProcessCompleted)

		// A repeat with the same key compares the parsed values.
		again, err := h.e.CompleteWorkItem(h.ctx, decide.ID, engine.Completion{User: "alice", Outputs: map[string]any{"approved": true},
			TextOutputs: map[string]string{"comment": "fine"}, IdempotencyKey: "k1"})
		require.NoError(t, err)
		require.Equal(t, done.Revision, again.Revision)
		_, err = h.e.CompleteWorkItem(h.ctx, decide.ID, engine.Completion{User: "alice", TextOutputs: map[string]string{"approved": "no"}, IdempotencyKey: "k1"})
		require.ErrorIs(t, err, engine.ErrCompletedDifferently)

		_, err = h.e.WorkItemForm(h.ctx, decide.ID)
		require.ErrorIs(t, err, wftype.ErrIllegalState, "a completed item has no form")
		_, err = h.e.WorkItemForm(h.ctx, 424242)
		require.ErrorIs(t, err, engine.ErrNotFound)
	})
}

func TestWorkItemFormOfDataFields(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, db *gorm.DB) {
		h := newHarness(t, db).start()
		h.deploy(deskXPDL)
		id := h.startProcess("desk", "desk", nil)
		h.idle()
		triage := h.item(id, "Triage")

		form, err := h.e.WorkItemForm(h.ctx, triage.ID)
		require.NoError(t, err)
		require.Equal(t, []engine.FormField{
			{ID: "priority", Name: "Priority", Type: "INTEGER", Value: int64(3)},
			{ID: "decision", Name: "Decision", Type: "ENUMERATION", Values: []string{"approve", "reject"}, Value: "reject"},
			{ID: "note", Type: "STRING", Value: ""},
			{ID: "score", Type: "FLOAT", Value: float64(0)},
		}, form.Fields, "every variable, package's first")

		for name, text := range map[string]string{"priority": "high", "decision": "maybe", "score": "1,5"} {
			_, err := h.e.CompleteWorkItem(h.ctx, triage.ID, engine.Completion{User: "alice",
				TextOutputs: map[string]string{"note": "ok", name: text}})
			require.ErrorIs(t, err, engine.ErrWrongType, name)
			require.Contains(t, err.Error(), `"`+name+`"`, "the error names the field")
		}
		require.Empty(t, h.vars(id)["note"], "nothing changed")
		_, err = h.e.CompleteWorkItem(h.ctx, triage.ID, engine.Completion{User: "alice",
			TextOutputs: map[string]string{"priority": "5", "score": "1.5", "decision": "approve"}, Outputs: map[string]any{"priority": 7}})
		require.NoError(t, err)
		h.idle()
		vars := h.vars(id)
		require.Equal(t, int64(7), vars["priority"], "a typed output wins over a text one")
		require.InDelta(t, 1.5, vars["score"], 0)
		require.Equal(t, "approve", vars["decision"])

		review := h.item(id, "Review")
		form, err = h.e.WorkItemForm(h.ctx, review.ID)
		require.NoError(t, err)
		ids := make([]string, len(form.Fields))
		for i, f := range form.Fields {
			ids[i] = f.ID
		}
		require.Equal(t, []string{"decision", "note"}, ids, "only what VariableToProcess_UPDATE names")
	})
}

func TestWorkItemFiltersByActivityDueAndWorklist(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, db *gorm.DB) {
		h, clock, _ := timedHarness(t, db)
		h.deploy(deskXPDL)
		a := h.startProcess("desk", "desk", nil)
		h.idle()
		clock.Advance(time.Hour)
		b := h.startProcess("desk", "desk", nil)
		h.idle()
		itemA, itemB := h.item(a, "Triage"), h.item(b, "Triage")
		require.NotNil(t, itemA.DueAt, "the activity's Limit is its work item's due time")
		require.Equal(t, epoch.Add(2*time.Hour), *itemA.DueAt)
		require.NoError(t, h.completeAs(itemB.ID, "alice", nil))
		h.idle()
		review := h.item(b, "Review")
		require.Nil(t, review.DueAt, "no deadline, no limit")
		require.Equal(t, epoch.Add(time.Hour), h.e.Now())

		list := func(f engine.WorkItemFilter) []int64 {
			t.Helper()
			f.States = workitem.OpenStates
			page, err := h.e.WorkItems(h.ctx, f)
			require.NoError(t, err)
			var out []int64
			for _, wi := range page.WorkItems {
				out = append(out, wi.ID)
			}
			return out
		}
		require.Equal(t, []int64{itemA.ID}, list(engine.WorkItemFilter{Activity: "Triage"}))
		require.Equal(t, []int64{review.ID}, list(engine.WorkItemFilter{Activity: "Review"}))
		now := h.e.Now()
		require.Empty(t, list(engine.WorkItemFilter{DueBefore: &now}))
		clock.Advance(90 * time.Minute)
		now = h.e.Now()
		require.Equal(t, []int64{itemA.ID}, list(engine.WorkItemFilter{DueBefore: &now}), "overdue now")

		clerks := engine.Principal{Kind: engine.PrincipalRole, ID: "clerk"}
		require.Equal(t, []int64{itemA.ID, review.ID}, list(engine.WorkItemFilter{VisibleTo: &clerks}))
		require.NoError(t, h.e.ClaimWorkItem(h.ctx, review.ID, "bob", engine.Op{}))
		require.Equal(t, []int64{itemA.ID}, list(engine.WorkItemFilter{VisibleTo: &clerks}), "a claimed item leaves the role's worklist")
		require.Equal(t, []int64{review.ID}, list(engine.WorkItemFilter{VisibleTo: &engine.Principal{Kind: engine.PrincipalUser, ID: "bob"}}))

		for _, bad := range []engine.WorkItemFilter{
			{VisibleTo: &engine.Principal{Kind: "group", ID: "x"}},
			{VisibleTo: &engine.Principal{Kind: engine.PrincipalRole}},
		} {
			_, err := h.e.WorkItems(h.ctx, bad)
			require.ErrorIs(t, err, engine.ErrBadFilter)
		}
	})
}

func TestInstanceFilterIDsAndABatchOnASelection(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, db *gorm.DB) {
		h := newHarness(t, db).start()
		h.deploy(deskXPDL)
		ids := h.startN(4, "desk", "desk")
		require.Equal(t, []int64{ids[1], ids[3]}, h.allInstances(engine.InstanceFilter{IDs: []int64{ids[3], ids[1], 999999}}))
		require.Equal(t, []int64{ids[3]}, h.allInstances(engine.InstanceFilter{IDs: []int64{ids[1], ids[3]}, After: ids[1]}))

		b, err := h.e.StartBatch(h.ctx, engine.BatchRequest{Action: engine.BatchSuspend,
			Filter: engine.InstanceFilter{IDs: []int64{ids[0], ids[2]}}, Op: engine.Op{Actor: "alice", Reason: "selected"}})
		require.NoError(t, err)
		require.Equal(t, int64(2), b.Total)
		require.Equal(t, []int64{ids[0], ids[2]}, b.Filter.IDs, "the selection is kept with the batch")
		b = h.awaitBatch(b.ID)
		require.Equal(t, engine.BatchCompleted, b.State)
		require.Equal(t, int64(2), b.Done)
		h.requireStates([]int64{ids[0], ids[2]}, wftype.ProcessSuspended)
		h.requireStates([]int64{ids[1], ids[3]}, wftype.ProcessRunning)

		tooMany := make([]int64, engine.MaxFilterIDs+1)
		for i := range tooMany {
			tooMany[i] = int64(i + 1)
		}
		for _, bad := range []engine.InstanceFilter{{IDs: tooMany}, {IDs: []int64{ids[0], 0}}, {IDs: []int64{-3}}} {
			_, err := h.e.Instances(h.ctx, bad)
			require.ErrorIs(t, err, engine.ErrBadFilter)
			_, err = h.e.StartBatch(h.ctx, engine.BatchRequest{Action: engine.BatchTerminate, Filter: bad})
			require.ErrorIs(t, err, engine.ErrBadFilter)
		}
		page, err := h.e.Batches(h.ctx, engine.BatchFilter{})
		require.NoError(t, err)
		require.Len(t, page.Batches, 1, "refused batches were not started")
	})
}

func TestSettingsAndIncident(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, db *gorm.DB) {
		h := newHarness(t, db, func(c *engine.Config) {
			c.NodeID, c.CriticalWorkers, c.NormalWorkersMin, c.NormalWorkersMax = "node-a", 3, 2, 6
			c.Retention = engine.Retention{MaxAge: 48 * time.Hour}
		}).start()
		s := h.e.Settings()
		require.Equal(t, "node-a", s.NodeID)
		require.True(t, strings.HasPrefix(s.Run, "node-a#"), s.Run)
		require.Equal(t, 3, s.CriticalWorkers)
		require.Equal(t, 16, s.NormalWorkers, "the default, as the pool starts")
		require.Equal(t, 2, s.NormalWorkersMin)
		require.Equal(t, 6, s.NormalWorkersMax)
		require.Equal(t, 20*time.Millisecond, s.PollInterval)
		require.Equal(t, time.Second, s.TimerPollInterval)
		require.Equal(t, engine.DefaultBatchChunk, s.BatchChunk)
		require.Equal(t, 1, s.BatchParallel)
		require.Equal(t, engine.DeadBranchLock, s.DeadBranch)
		require.Equal(t, engine.DefaultScriptTimeout, s.ScriptTimeout)
		require.Equal(t, engine.DefaultConditionTimeout, s.ConditionTimeout)
		require.Equal(t, script.Limits{MemoryBudget: script.DefaultMemoryBudget, MaxCallStackDepth: script.DefaultMaxCallStackDepth,
			MaxResultBytes: script.DefaultMaxResultBytes, MaxResultTotalBytes: script.DefaultMaxResultTotalBytes}, s.ScriptLimits, "the defaults, applied")
		require.Equal(t, "memory 64 MiB, call depth 1024, result 1.0 MiB (all together 4.0 MiB)", s.ScriptLimits.String())
		require.Equal(t, engine.RetentionSettings{On: true, MaxAge: 48 * time.Hour, Schedule: "@hourly", BatchSize: engine.DefaultPurgeBatch}, s.Retention)
		require.Empty(t, s.NotifyTypes, "no Notify")
		require.Contains(t, []string{"sqlite", "mysql", "postgres"}, s.Database)

		h.e.RegisterApplication("risky", func(_ context.Context, _ *engine.Call) (map[string]any, error) {
			return nil, errors.New("card declined")
		})
		h.deploy(filterXPDL)
		q := h.startProcess("pkg", "q", nil)
		inc := h.awaitIncident(q, engine.CauseApplication)
		got, err := h.e.Incident(h.ctx, inc.ID)
		require.NoError(t, err)
		require.Equal(t, inc.ID, got.ID)
		require.Equal(t, q, got.Instance)
		require.Equal(t, "q", got.Process)
		require.Equal(t, engine.IncidentOpen, got.State)
		_, err = h.e.Incident(h.ctx, 424242)
		require.ErrorIs(t, err, engine.ErrNotFound)
	})
}
