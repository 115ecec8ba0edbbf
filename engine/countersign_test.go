package engine_test

import (
	"context"
	"fmt"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"
	"gorm.io/gorm"

	"github.com/goxpdl/goxpdl/engine"
	"github.com/goxpdl/goxpdl/store/dbtest"
	"github.com/goxpdl/goxpdl/wftype"
	"github.com/goxpdl/goxpdl/workitem"
	"github.com/goxpdl/goxpdl/xpdl"
)

// countersignReview is a manual multi-instance activity Review whose
// instances vote with the OUT parameter approve (no data field) and may
// add a comment; its performers are reviewer1, reviewer2, ... by
// loopCounter.
func countersignReview(policy, loop string) string {
	return `<Activity Id="Review"><FormalParameters>
  <FormalParameter Id="approve" Mode="OUT"><DataType><BasicType Type="BOOLEAN"/></DataType></FormalParameter>
  <FormalParameter Id="comment" Mode="OUT"><DataType><BasicType Type="STRING"/></DataType></FormalParameter>
</FormalParameters><Implementation><Task><TaskUser/></Task></Implementation>
<Performers><Performer>'reviewer' + loopCounter</Performer></Performers>
<ExtendedAttributes><ExtendedAttribute Name="` + engine.AttrCountersign + `" Value="` + policy + `"/></ExtendedAttributes>` + loop + `</Activity>`
}

// reviewItem is the work item of the index-th instance of the loop of
// Review in instance id, in any state.
func reviewItem(t *testing.T, h *harness, id int64, index int) engine.WorkItem {
	t.Helper()
	_, instances := loopActivity(t, h, id, "Review")
	for _, in := range instances {
		if in.LoopIndex == index {
			items, err := workItemsOf(h.ctx, h.e, engine.WorkItemFilter{ActivityInstance: in.ID})
			require.NoError(t, err)
			require.Len(t, items, 1)
			return items[0]
		}
	}
	t.Fatalf("no instance %d of Review", index)
	return engine.WorkItem{}
}

// TestCountersignResultsAndHistory: each reviewer's outputs stay with
// their own instance (the formal parameters are no data fields), and
// LoopResults, the activity instances and the history show them with
// each vote; the decision goes into the result variable and the history
// entry of the loop's completion; the instance withdrawn by the early
// decision refuses a late completion.
func TestCountersignResultsAndHistory(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, db *gorm.DB) {
		h := newHarness(t, db).start()
		h.deploy(loopXPDL("cs", []string{`decision=""`},
			countersignReview("vote=approve; rule=any; result=decision", miLoop("Parallel", "", "3", ""))+routeTask("Next"),
			transition("t1", "Review", "Next"), ""))
		id := h.startProcess("cs", "p", nil)

		complete := func(index int, outputs map[string]any) error {
			_, err := h.e.CompleteWorkItem(h.ctx, reviewItem(t, h, id, index).ID,
				engine.Completion{User: fmt.Sprintf("reviewer%d", index), Outputs: outputs})
			return err
		}
		require.NoError(t, complete(2, map[string]any{"approve": false, "comment": "too early"}))
		loop, _ := loopActivity(t, h, id, "Review")
		res, err := h.e.LoopResults(h.ctx, loop.ID)
		require.NoError(t, err)
		require.Equal(t, engine.CountersignOutcome{Rule: "any", Vote: "approve", Total: 3, Completed: 1, Rejected: 1}, *res.Countersign)

		require.NoError(t, complete(3, map[string]any{"approve": true}))
		h.requireState(id, wftype.ProcessCompleted)
		require.Equal(t, map[string]any{"decision": "approved"}, h.vars(id), "approve and comment stayed with the instances")

		loop, instances := loopActivity(t, h, id, "Review")
		res, err = h.e.LoopResults(h.ctx, instances[1].ID) // an instance names its loop
		require.NoError(t, err)
		require.Equal(t, loop.ID, res.Loop.ID)
		require.Equal(t, engine.CountersignOutcome{
			Rule: "any", Vote: "approve", Total: 3, Completed: 2, Approved: 1, Rejected: 1, Withdrawn: 1, Decision: engine.DecisionApproved,
		}, *res.Countersign)
		require.Len(t, res.Instances, 3)
		require.True(t, res.Instances[0].Withdrawn)
		require.Nil(t, res.Instances[0].Outputs)
		require.Equal(t, "withdrawn: the countersign of Review was decided, approved", res.Instances[0].Diagnosis)
		require.Equal(t, engine.BallotReject, res.Instances[1].Ballot)
		require.Equal(t, map[string]any{"approve": false, "comment": "too early"}, res.Instances[1].Outputs)
		require.Equal(t, engine.BallotApprove, res.Instances[2].Ballot)
		require.Equal(t, map[string]any{"approve": true}, res.Instances[2].Outputs)
		require.Equal(t, map[string]any{"approve": false, "comment": "too early"}, instances[1].Outputs)

		var voted, decided []map[string]any
		for _, e := range h.history(id) {
			if e.Activity != "Review" || e.To != string(wftype.ActivityCompleted) {
				continue
			}
			if e.ActivityInstance == loop.ID {
				decided = append(decided, e.Detail)
			} else if e.Detail["outputs"] != nil {
				voted = append(voted, e.Detail)
			}
		}
		require.Equal(t, []map[string]any{
			{"outputs": map[string]any{"approve": false, "comment": "too early"}, "ballot": "reject"},
			{"outputs": map[string]any{"approve": true}, "ballot": "approve"},
		}, voted)
		require.Equal(t, []map[string]any{{"countersign": map[string]any{
			"rule": "any", "vote": "approve", "total": float64(3), "completed": float64(2), "approved": float64(1),
			"rejected": float64(1), "abstained": float64(0), "withdrawn": float64(1), "decision": "approved",
		}}}, decided)

		err = complete(1, map[string]any{"approve": true})
		require.ErrorIs(t, err, engine.ErrInstanceFinished, "the withdrawn item takes no late vote")
	})
}

// TestCountersignLateVoteWhileRunning: a vote for an instance withdrawn
// by the decision is refused while the process goes on, and changes
// nothing.
func TestCountersignLateVoteWhileRunning(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, db *gorm.DB) {
		h := newHarness(t, db).start()
		h.deploy(loopXPDL("late", []string{`decision=""`},
			countersignReview("vote=approve; result=decision", miLoop("", "All", "2", ""))+userTask("Next", ""),
			transition("t1", "Review", "Next"), ""))
		id := h.startProcess("late", "p", nil)
		_, err := h.e.CompleteWorkItem(h.ctx, reviewItem(t, h, id, 1).ID, engine.Completion{User: "reviewer1", Outputs: map[string]any{"approve": false}})
		require.NoError(t, err)
		late := reviewItem(t, h, id, 2)
		require.Equal(t, workitem.Withdrawn, late.State)
		_, err = h.e.CompleteWorkItem(h.ctx, late.ID, engine.Completion{User: "reviewer2", Outputs: map[string]any{"approve": true}})
		var te *workitem.TransitionError
		require.ErrorAs(t, err, &te)
		require.Equal(t, workitem.Withdrawn, te.State)
		require.Equal(t, map[string]any{"decision": "rejected"}, h.vars(id))
		require.Equal(t, []string{"Next"}, openActivities(h, id))
	})
}

// TestCountersignRefusedAtDeploy: a policy the engine cannot run refuses
// the deployment with a *CountersignError naming the activity and the
// key at fault, matching ErrBadCountersign and xpdl.ErrInvalid; nothing
// is stored.
func TestCountersignRefusedAtDeploy(t *testing.T) {
	t.Parallel()
	mi := miLoop("", "", "2", "")
	cases := []struct {
		name, policy, loop, key string
		fields                  []string
		noParams                bool
	}{
		{name: "UnknownKey", policy: "vote=approve; quorum=2", loop: mi, key: "quorum"},
		{name: "NotKeyValue", policy: "vote=approve; all", loop: mi},
		{name: "Twice", policy: "vote=approve; rule=all; rule=any", loop: mi, key: "rule"},
		{name: "Empty", policy: "vote=approve; result=", loop: mi, key: "result"},
		{name: "NoVote", policy: "rule=all", loop: mi, key: "vote"},
		{name: "BadRule", policy: "vote=approve; rule=most", loop: mi, key: "rule"},
		{name: "ZeroCount", policy: "vote=approve; rule=0", loop: mi, key: "rule"},
		{name: "ZeroPercent", policy: "vote=approve; rule=0%", loop: mi, key: "rule"},
		{name: "OverPercent", policy: "vote=approve; rule=101%", loop: mi, key: "rule"},
		{name: "EmptyVoteValue", policy: "vote=approve; approve=yes,,ok", loop: mi, key: "approve"},
		{name: "ApprovesAndRejects", policy: "vote=approve; approve=yes; reject=no,YES", loop: mi, key: "reject"},
		{name: "NoLoop", policy: "vote=approve"},
		{name: "StandardLoop", policy: "vote=approve", loop: standardLoop("", "2", "")},
		{name: "ConditionWithoutComplex", policy: "vote=approve; rule=condition", loop: mi, key: "rule"},
		{name: "CountUnderComplex", policy: "vote=approve; rule=2", loop: miLoop("", "Complex", "2", "true"), key: "rule"},
		{name: "UnderOne", policy: "vote=approve; rule=any", loop: miLoop("", "One", "2", ""), key: "rule"},
		{name: "UnderNone", policy: "vote=approve", loop: miLoop("", "None", "2", ""), key: "rule"},
		{name: "VoteNotOut", policy: "vote=verdict", loop: mi, key: "vote"},
		{name: "VoteNoVariable", policy: "vote=verdict", loop: mi, key: "vote", noParams: true},
		{name: "ResultUnknown", policy: "vote=approve; result=outcome", loop: mi, key: "result"},
		{name: "ResultInteger", policy: "vote=approve; result=n", loop: mi, key: "result", fields: []string{"n=0"}},
	}
	dbtest.Each(t, func(t *testing.T, db *gorm.DB) {
		h := newHarness(t, db).start()
		for _, tc := range cases {
			t.Run(tc.name, func(t *testing.T) { //nolint:paralleltest // the cases share one engine
				act := countersignReview(tc.policy, tc.loop)
				if tc.noParams {
					act = userTask("Review", `<ExtendedAttributes><ExtendedAttribute Name="`+engine.AttrCountersign+`" Value="`+tc.policy+`"/></ExtendedAttributes>`+tc.loop)
				}
				_, err := h.e.Deploy(h.ctx, []byte(loopXPDL("bad", tc.fields, act, "", "")))
				require.ErrorIs(t, err, engine.ErrBadCountersign)
				require.ErrorIs(t, err, xpdl.ErrInvalid)
				var ce *engine.CountersignError
				require.ErrorAs(t, err, &ce)
				require.Equal(t, "Review", ce.Activity)
				require.Equal(t, "p", ce.Process)
				require.Equal(t, tc.policy, ce.Policy)
				require.Equal(t, tc.key, ce.Key)
				deps, err := h.e.Deployments(h.ctx)
				require.NoError(t, err)
				require.Empty(t, deps, "nothing is stored")
			})
		}
		// Two policies on one activity: which one would hold is unclear.
		twice := `<Activity Id="Review"><Implementation><Task><TaskUser/></Task></Implementation><Performers><Performer>clerk</Performer></Performers>
<ExtendedAttributes><ExtendedAttribute Name="goxpdl.Countersign" Value="vote=n"/><ExtendedAttribute Name="goxpdl.Countersign" Value="vote=n; rule=any"/></ExtendedAttributes>` + mi + `</Activity>`
		_, err := h.e.Deploy(h.ctx, []byte(loopXPDL("twice", []string{"n=0"}, twice, "", "")))
		require.ErrorIs(t, err, engine.ErrBadCountersign)
	})
}

// TestLoopInstanceOutputsAutomatic: instances that run by themselves keep
// their outputs too: a script task the variables it changed, an
// application its OUT parameters. A countersign over an application's
// votes decides in the instance that settles it: the instances not yet
// run are withdrawn and never call the application.
func TestLoopInstanceOutputsAutomatic(t *testing.T) {
	t.Parallel()
	apps := `<Applications><Application Id="check"><FormalParameters>
  <FormalParameter Id="k" Mode="IN"><DataType><BasicType Type="INTEGER"/></DataType></FormalParameter>
  <FormalParameter Id="ok" Mode="OUT"><DataType><BasicType Type="BOOLEAN"/></DataType></FormalParameter>
</FormalParameters></Application></Applications>`
	check := `<Activity Id="Check"><Implementation><Task><TaskApplication Id="check"><ActualParameters><ActualParameter>loopCounter</ActualParameter><ActualParameter>ok</ActualParameter></ActualParameters></TaskApplication></Task></Implementation>
<ExtendedAttributes><ExtendedAttribute Name="goxpdl.Countersign" Value="vote=ok; rule=all; result=passed"/></ExtendedAttributes>` +
		miLoop("Parallel", "", "4", "") + `</Activity>`
	dbtest.Each(t, func(t *testing.T, db *gorm.DB) {
		h := newHarness(t, db)
		var mu sync.Mutex
		var called []int64
		h.e.RegisterApplication("check", func(_ context.Context, c *engine.Call) (map[string]any, error) {
			k := c.Params["k"].(int64)
			mu.Lock()
			called = append(called, k)
			mu.Unlock()
			return map[string]any{"ok": k != 2}, nil
		})
		h.start()

		h.deploy(loopXPDL("scripted", []string{"score=0", `note=""`},
			scriptTask("Score", "score = loopCounter * 10; note = 'n' + loopCounter;", miLoop("Parallel", "", "3", ""))+routeTask("Done"),
			transition("t1", "Score", "Done"), ""))
		id := h.startProcess("scripted", "p", nil)
		h.requireState(id, wftype.ProcessCompleted)
		loop, _ := loopActivity(t, h, id, "Score")
		res, err := h.e.LoopResults(h.ctx, loop.ID)
		require.NoError(t, err)
		require.Nil(t, res.Countersign)
		require.Len(t, res.Instances, 3)
		for i, in := range res.Instances {
			require.Equal(t, i+1, in.Index)
			require.Equal(t, map[string]any{"score": float64(10 * (i + 1)), "note": fmt.Sprintf("n%d", i+1)}, in.Outputs)
		}

		h.deploy(loopXPDL("checked", []string{"ok=false", "passed=false"}, check+routeTask("Done"), transition("t1", "Check", "Done"),
			apps))
		id = h.startProcess("checked", "p", nil)
		h.requireState(id, wftype.ProcessCompleted)
		mu.Lock()
		require.Equal(t, []int64{1, 2}, called, "the decision withdrew instances 3 and 4 before they ran")
		mu.Unlock()
		loop, _ = loopActivity(t, h, id, "Check")
		res, err = h.e.LoopResults(h.ctx, loop.ID)
		require.NoError(t, err)
		require.Equal(t, engine.CountersignOutcome{
			Rule: "all", Vote: "ok", Total: 4, Completed: 2, Approved: 1, Rejected: 1, Withdrawn: 2, Decision: engine.DecisionRejected,
		}, *res.Countersign)
		require.Equal(t, map[string]any{"ok": true}, res.Instances[0].Outputs)
		require.Equal(t, map[string]any{"ok": false}, res.Instances[1].Outputs)
		require.True(t, res.Instances[2].Withdrawn)
		require.True(t, res.Instances[3].Withdrawn)
		require.Equal(t, false, h.vars(id)["passed"])
	})
}

// TestLoopResultsRefusals: an activity instance of no loop is a bad
// argument, an unknown one not found.
func TestLoopResultsRefusals(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, db *gorm.DB) {
		h := newHarness(t, db).start()
		h.deploy(loopXPDL("plain", nil, userTask("Work", ""), "", ""))
		id := h.startProcess("plain", "p", nil)
		h.idle()
		acts, err := activitiesOf(h.ctx, h.e, id)
		require.NoError(t, err)
		require.Len(t, acts, 1)
		_, err = h.e.LoopResults(h.ctx, acts[0].ID)
		require.ErrorIs(t, err, engine.ErrBadArgument)
		_, err = h.e.LoopResults(h.ctx, acts[0].ID+1000)
		require.ErrorIs(t, err, engine.ErrNotFound)
		require.NotErrorIs(t, err, engine.ErrBadArgument)
	})
}
