package engine_test

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"gorm.io/gorm"

	"github.com/goxpdl/goxpdl/engine"
	"github.com/goxpdl/goxpdl/store"
	"github.com/goxpdl/goxpdl/store/dbtest"
	"github.com/goxpdl/goxpdl/wftype"
	"github.com/goxpdl/goxpdl/workitem"
)

// loopXPDL is an XPDL 2.2 package id with one process "p": data fields
// (name=initial value: INTEGER, STRING when quoted, BOOLEAN for true or
// false), the activities and transitions, a participant clerk, and extra
// package-level XML (applications).
func loopXPDL(id string, fields []string, activities, transitions, extra string) string {
	var df strings.Builder
	for _, f := range fields {
		name, initial, _ := strings.Cut(f, "=")
		typ := "INTEGER"
		switch {
		case strings.HasPrefix(initial, `"`):
			typ, initial = "STRING", strings.Trim(initial, `"`)
		case initial == "true" || initial == "false":
			typ = "BOOLEAN"
		}
		fmt.Fprintf(&df, `<DataField Id="%s"><DataType><BasicType Type="%s"/></DataType><InitialValue>%s</InitialValue></DataField>`, name, typ, initial)
	}
	return `<?xml version="1.0"?>
<Package xmlns="http://www.wfmc.org/2009/XPDL2.2" Id="` + id + `"><PackageHeader><XPDLVersion>2.2</XPDLVersion></PackageHeader>
<Script Type="text/javascript"/>
<Participants><Participant Id="clerk"><ParticipantType Type="ROLE"/></Participant></Participants>` + extra + `
<WorkflowProcesses><WorkflowProcess Id="p"><DataFields>` + df.String() + `</DataFields>
<Activities>` + activities + `</Activities><Transitions>` + transitions + `</Transitions></WorkflowProcess></WorkflowProcesses></Package>`
}

var xmlEscape = strings.NewReplacer("&", "&amp;", "<", "&lt;", ">", "&gt;")

func scriptTask(id, script, extra string) string {
	return `<Activity Id="` + id + `"><Implementation><Task><TaskScript><Script ScriptGrammar="text/javascript">` +
		xmlEscape.Replace(script) + `</Script></TaskScript></Task></Implementation>` + extra + `</Activity>`
}

func userTask(id, extra string) string {
	return `<Activity Id="` + id + `"><Implementation><Task><TaskUser/></Task></Implementation><Performers><Performer>clerk</Performer></Performers>` +
		extra + `</Activity>`
}

func routeTask(id string) string {
	return `<Activity Id="` + id + `"><Implementation><No/></Implementation></Activity>`
}

// standardLoop is a Loop element of type Standard; empty arguments are
// left out.
func standardLoop(testTime, maximum, condition string) string {
	attrs := ""
	if testTime != "" {
		attrs += ` TestTime="` + testTime + `"`
	}
	if maximum != "" {
		attrs += ` LoopMaximum="` + maximum + `"`
	}
	cond := ""
	if condition != "" {
		cond = `<LoopCondition><Expression>` + xmlEscape.Replace(condition) + `</Expression></LoopCondition>`
	}
	return `<Loop LoopType="Standard"><LoopStandard` + attrs + `>` + cond + `</LoopStandard></Loop>`
}

// miLoop is a Loop element of type MultiInstance; empty ordering and flow
// condition are left out (XPDL's defaults: Parallel, All).
func miLoop(ordering, flowCondition, count, complex string) string {
	attrs := ""
	if ordering != "" {
		attrs += ` MI_Ordering="` + ordering + `"`
	}
	if flowCondition != "" {
		attrs += ` MI_FlowCondition="` + flowCondition + `"`
	}
	inner := `<MI_Condition><Expression>` + xmlEscape.Replace(count) + `</Expression></MI_Condition>`
	if complex != "" {
		inner += `<ComplexMI_FlowCondition><Expression>` + xmlEscape.Replace(complex) + `</Expression></ComplexMI_FlowCondition>`
	}
	return `<Loop LoopType="MultiInstance"><LoopMultiInstance` + attrs + `>` + inner + `</LoopMultiInstance></Loop>`
}

func transition(id, from, to string) string {
	return `<Transition Id="` + id + `" From="` + from + `" To="` + to + `"/>`
}

// loopActivity returns the loop activity instance of activity in an
// instance and its instances, in creation order.
func loopActivity(t *testing.T, h *harness, id int64, activity string) (engine.ActivityInstance, []engine.ActivityInstance) {
	t.Helper()
	h.idle()
	acts, err := activitiesOf(h.ctx, h.e, id)
	require.NoError(t, err)
	var loop *engine.ActivityInstance
	var instances []engine.ActivityInstance
	for i, a := range acts {
		switch {
		case a.Activity != activity:
		case a.Loop == 0:
			loop = &acts[i]
		default:
			instances = append(instances, a)
		}
	}
	require.NotNil(t, loop, "loop of %s", activity)
	return *loop, instances
}

// TestLoopStandard runs standard loops over a script task that counts
// its iterations: while and do-while, LoopMaximum with and without a
// condition, loopCounter in the body and in the condition, and the
// engine's cap for loops without LoopMaximum (set to 5 here).
func TestLoopStandard(t *testing.T) {
	t.Parallel()
	body := `hits = hits + 1; seen = seen + loopCounter + ",";`
	cases := []struct {
		name      string
		loop      string
		n         int
		hits      int64
		seen      string
		abnormal  string // the loop's diagnosis when it ends Abnormal
		instances int
	}{
		{name: "WhileCounter", loop: standardLoop("Before", "", "loopCounter < n"), n: 3, hits: 3, seen: "1,2,3,"},
		{name: "WhileFalseAtFirst", loop: standardLoop("Before", "", "loopCounter < n"), n: 0, hits: 0},
		{name: "DoWhileFalseAtFirst", loop: standardLoop("After", "", "loopCounter < n"), n: 0, hits: 1, seen: "1,"},
		{name: "TestTimeDefaultsToAfter", loop: standardLoop("", "", "hits < n"), n: 0, hits: 1, seen: "1,"},
		{name: "DoWhileOverData", loop: standardLoop("After", "", "hits < n"), n: 2, hits: 2, seen: "1,2,"},
		{name: "MaximumCapsCondition", loop: standardLoop("Before", "2", "true"), n: 9, hits: 2, seen: "1,2,"},
		{name: "MaximumWithoutCondition", loop: standardLoop("", "4", ""), hits: 4, seen: "1,2,3,4,"},
		{name: "NeitherRunsOnce", loop: standardLoop("", "0", ""), hits: 1, seen: "1,"},
		{name: "ExplicitMaximumAboveCap", loop: standardLoop("Before", "7", "true"), hits: 7, seen: "1,2,3,4,5,6,7,"},
		{
			name: "CapWithoutMaximum", loop: standardLoop("Before", "", "true"), hits: 5, seen: "1,2,3,4,5,",
			abnormal: "still holds after 5 iterations",
		},
		{name: "ConditionFails", loop: standardLoop("Before", "", "nosuch > 1"), abnormal: "LoopCondition of activity Body"},
	}
	dbtest.Each(t, func(t *testing.T, db *gorm.DB) {
		h := newHarness(t, db, func(c *engine.Config) { c.MaxLoopInstances = 5 }).start()
		for i, tc := range cases {
			t.Run(tc.name, func(t *testing.T) { //nolint:paralleltest // the cases share one engine
				pkg := fmt.Sprintf("std%d", i)
				h.deploy(loopXPDL(pkg, []string{"n=0", "hits=0", `seen=""`},
					scriptTask("Body", body, tc.loop)+routeTask("Done"), transition("t1", "Body", "Done"), ""))
				id := h.startProcess(pkg, "p", map[string]any{"n": tc.n})
				loop, instances := loopActivity(t, h, id, "Body")
				vars := h.vars(id)
				require.Equal(t, tc.hits, vars["hits"])
				require.Equal(t, tc.seen, vars["seen"])
				require.Len(t, instances, int(tc.hits))
				for k, inst := range instances {
					require.Equal(t, k+1, inst.LoopIndex)
					require.Equal(t, wftype.ActivityCompleted, inst.State)
				}
				if tc.abnormal != "" {
					h.requireState(id, wftype.ProcessRunning)
					require.Equal(t, wftype.ActivityAbnormal, loop.State)
					require.Contains(t, loop.Diagnosis, tc.abnormal)
					require.Equal(t, map[string]int{"Body": 1 + int(tc.hits)}, h.started(id), "Done never ran")
					return
				}
				h.requireState(id, wftype.ProcessCompleted)
				require.Equal(t, wftype.ActivityCompleted, loop.State)
				require.Equal(t, map[string]int{"Body": 1 + int(tc.hits), "Done": 1}, h.started(id))
			})
		}
	})
}

// TestLoopMultiInstanceAutomatic runs multi-instance script tasks: each
// instance sees its number and the number of instances, parallel and
// sequential instances all run, MI_FlowCondition All routes the loop once
// and None routes every instance; an MI_Condition that gives no count,
// or too many, leaves the loop Abnormal.
func TestLoopMultiInstanceAutomatic(t *testing.T) {
	t.Parallel()
	body := `sum = sum + loopCounter; total = numberOfInstances;`
	cases := []struct {
		name     string
		loop     string
		n        int
		sum      int64
		after    int
		abnormal string
	}{
		{name: "ParallelAll", loop: miLoop("Parallel", "All", "n", ""), n: 4, sum: 10, after: 1},
		{name: "SequentialAll", loop: miLoop("Sequential", "", "n + 1", ""), n: 2, sum: 6, after: 1},
		{name: "DefaultsParallelAll", loop: miLoop("", "", "3", ""), sum: 6, after: 1},
		{name: "ParallelNone", loop: miLoop("Parallel", "None", "n", ""), n: 3, sum: 6, after: 3},
		{name: "SequentialOne", loop: miLoop("Sequential", "One", "n", ""), n: 3, sum: 6, after: 1},
		{name: "NoInstances", loop: miLoop("Parallel", "None", "n", ""), n: 0, after: 1},
		{name: "NotACount", loop: miLoop("", "", "'many'", ""), abnormal: "not a number of instances"},
		{name: "Negative", loop: miLoop("", "", "n - 1", ""), n: 0, abnormal: "not a number of instances"},
		{name: "Fraction", loop: miLoop("", "", "n / 2", ""), n: 3, abnormal: "not a number of instances"},
		{name: "AboveCap", loop: miLoop("", "", "n", ""), n: 6, abnormal: "Config.MaxLoopInstances 5"},
	}
	dbtest.Each(t, func(t *testing.T, db *gorm.DB) {
		h := newHarness(t, db, func(c *engine.Config) { c.MaxLoopInstances = 5 }).start()
		for i, tc := range cases {
			t.Run(tc.name, func(t *testing.T) { //nolint:paralleltest // the cases share one engine
				pkg := fmt.Sprintf("mi%d", i)
				h.deploy(loopXPDL(pkg, []string{"n=0", "sum=0", "total=0"},
					scriptTask("Each", body, tc.loop)+routeTask("After"), transition("t1", "Each", "After"), ""))
				id := h.startProcess(pkg, "p", map[string]any{"n": tc.n})
				loop, instances := loopActivity(t, h, id, "Each")
				if tc.abnormal != "" {
					h.requireState(id, wftype.ProcessRunning)
					require.Equal(t, wftype.ActivityAbnormal, loop.State)
					require.Contains(t, loop.Diagnosis, tc.abnormal)
					require.Empty(t, instances)
					return
				}
				h.requireState(id, wftype.ProcessCompleted)
				vars := h.vars(id)
				require.Equal(t, tc.sum, vars["sum"])
				var want []int
				for k := range instances {
					want = append(want, k+1)
				}
				var got []int
				for _, inst := range instances {
					got = append(got, inst.LoopIndex)
				}
				require.Equal(t, want, got)
				if len(instances) > 0 {
					require.Equal(t, int64(len(instances)), vars["total"])
				}
				require.Equal(t, tc.after, h.started(id)["After"])
			})
		}
	})
}

// TestLoopComplexFlowCondition: the flow goes on when
// ComplexMI_FlowCondition first holds (here: two of three reviews done),
// once; the last review passes nothing on. When the condition never
// holds (a single review), the flow goes on once every instance is done.
func TestLoopComplexFlowCondition(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, db *gorm.DB) {
		h := newHarness(t, db).start()
		h.deploy(loopXPDL("complex", []string{"n=3"},
			userTask("Review", miLoop("Parallel", "Complex", "n", "numberOfCompletedInstances >= 2 && numberOfActiveInstances >= 0"))+userTask("Decide", ""),
			transition("t1", "Review", "Decide"), ""))

		id := h.startProcess("complex", "p", nil)
		require.Equal(t, []string{"Review", "Review", "Review"}, openActivities(h, id))
		require.NoError(t, h.complete(oldestItemOf(h, id, "Review").ID, nil))
		require.Equal(t, []string{"Review", "Review"}, openActivities(h, id))
		require.NoError(t, h.complete(oldestItemOf(h, id, "Review").ID, nil))
		require.Equal(t, []string{"Decide", "Review"}, openActivities(h, id))
		require.NoError(t, h.complete(oldestItemOf(h, id, "Review").ID, nil))
		require.Equal(t, []string{"Decide"}, openActivities(h, id))
		require.NoError(t, h.complete(oldestItemOf(h, id, "Decide").ID, nil))
		h.requireState(id, wftype.ProcessCompleted)
		require.Equal(t, map[string]int{"Review": 4, "Decide": 1}, h.started(id))

		one := h.startProcess("complex", "p", map[string]any{"n": 1})
		require.NoError(t, h.complete(oldestItemOf(h, one, "Review").ID, nil))
		require.Equal(t, []string{"Decide"}, openActivities(h, one), "the condition never held: the loop routes when done")
	})
}

// TestLoopInstanceException: an instance whose application raises an
// exception ends the loop: the other instances are withdrawn and the
// loop takes its EXCEPTION transition. The instances' tool parameters see
// loopCounter.
func TestLoopInstanceException(t *testing.T) {
	t.Parallel()
	apps := `<Applications><Application Id="probe"><FormalParameters>
  <FormalParameter Id="k" Mode="IN"><DataType><BasicType Type="INTEGER"/></DataType></FormalParameter>
</FormalParameters></Application></Applications>`
	tool := `<Activity Id="Probe"><Implementation><Task><TaskApplication Id="probe"><ActualParameters><ActualParameter>loopCounter</ActualParameter></ActualParameters></TaskApplication></Task></Implementation>` +
		miLoop("Sequential", "All", "4", "") + `</Activity>`
	dbtest.Each(t, func(t *testing.T, db *gorm.DB) {
		h := newHarness(t, db)
		var mu sync.Mutex
		var seen []int64
		h.e.RegisterApplication("probe", func(_ context.Context, c *engine.Call) (map[string]any, error) {
			k := c.Params["k"].(int64)
			mu.Lock()
			seen = append(seen, k)
			mu.Unlock()
			if k == 2 {
				return nil, &engine.ApplicationException{Name: "Broken"}
			}
			return nil, nil
		})
		h.start()
		h.deploy(loopXPDL("exc", nil, tool+routeTask("After")+routeTask("Handler"),
			transition("t1", "Probe", "After")+
				`<Transition Id="t2" From="Probe" To="Handler"><Condition Type="EXCEPTION">Broken</Condition></Transition>`, apps))
		id := h.startProcess("exc", "p", nil)
		h.requireState(id, wftype.ProcessCompleted)
		mu.Lock()
		require.Equal(t, []int64{1, 2}, seen, "sequential: the third never started")
		mu.Unlock()
		require.Equal(t, map[string]int{"Probe": 3, "Handler": 1}, h.started(id))
		loop, instances := loopActivity(t, h, id, "Probe")
		require.Equal(t, wftype.ActivityCompleted, loop.State)
		require.Len(t, instances, 2)
		require.Equal(t, "exception Broken", instances[1].Diagnosis)
	})
}

// TestLoopMultiInstanceSubflow: each instance of a SYNCHR SubFlow
// activity starts its own child, and the loop completes when both
// children have.
func TestLoopMultiInstanceSubflow(t *testing.T) {
	t.Parallel()
	src := `<?xml version="1.0"?>
<Package xmlns="http://www.wfmc.org/2009/XPDL2.2" Id="misub"><PackageHeader><XPDLVersion>2.2</XPDLVersion></PackageHeader>
<Script Type="text/javascript"/>
<Participants><Participant Id="clerk"><ParticipantType Type="ROLE"/></Participant></Participants>
<WorkflowProcesses>
<WorkflowProcess Id="main"><Activities>
  <Activity Id="Call"><Implementation><SubFlow Id="child" Execution="SYNCHR"/></Implementation>` + miLoop("Parallel", "All", "2", "") + `</Activity>
  ` + routeTask("After") + `
</Activities><Transitions>` + transition("t1", "Call", "After") + `</Transitions></WorkflowProcess>
<WorkflowProcess Id="child"><Activities>` + userTask("Work", "") + `</Activities></WorkflowProcess>
</WorkflowProcesses></Package>`
	dbtest.Each(t, func(t *testing.T, db *gorm.DB) {
		h := newHarness(t, db).start()
		h.deploy(src)
		id := h.startProcess("misub", "main", nil)
		h.await(id, "start both children", func(ctx context.Context) (bool, error) {
			kids, err := h.e.Instances(ctx, engine.InstanceFilter{Parent: id, Limit: 10})
			return len(kids.Instances) == 2, err
		})
		kids := children(h, id)
		require.Len(t, kids, 2)
		_, instances := loopActivity(t, h, id, "Call")
		require.Len(t, instances, 2)
		var waiting, parents []int64
		for i, k := range kids {
			require.Equal(t, wftype.ActivityWaiting, instances[i].State)
			waiting = append(waiting, instances[i].ID)
			parents = append(parents, k.ParentActivity)
		}
		require.ElementsMatch(t, waiting, parents, "each instance waits for its own child")
		require.NoError(t, h.complete(h.item(kids[0].ID, "Work").ID, nil))
		h.requireState(id, wftype.ProcessRunning)
		require.NoError(t, h.complete(h.item(kids[1].ID, "Work").ID, nil))
		h.requireState(id, wftype.ProcessCompleted)
		require.Equal(t, map[string]int{"Call": 3, "After": 1}, h.started(id))
	})
}

// TestLoopSurvivesRestart: a multi-instance activity's progress is in the
// database: an engine started afresh on it finishes the loop.
func TestLoopSurvivesRestart(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, db *gorm.DB) {
		first := newHarness(t, db).start()
		first.deploy(loopXPDL("restart", nil,
			userTask("Review", miLoop("Parallel", "All", "3", ""))+userTask("Decide", ""), transition("t1", "Review", "Decide"), ""))
		id := first.startProcess("restart", "p", nil)
		require.NoError(t, first.complete(oldestItemOf(first, id, "Review").ID, nil))
		require.NoError(t, first.e.Stop(t.Context()))

		again := newHarness(t, db).start()
		require.Equal(t, []string{"Review", "Review"}, openActivities(again, id))
		require.NoError(t, again.complete(oldestItemOf(again, id, "Review").ID, nil))
		require.NoError(t, again.complete(oldestItemOf(again, id, "Review").ID, nil))
		require.Equal(t, []string{"Decide"}, openActivities(again, id))
		loop, _ := loopActivity(t, again, id, "Review")
		row, err := again.e.Store().GetActivityInstance(again.ctx, loop.ID) // the loop's bookkeeping is the engine's own
		require.NoError(t, err)
		require.JSONEq(t, `{"n":3,"started":3,"completed":3}`, string(row.LoopState))
	})
}

// TestLoopRemindersReachInstances: a reminder policy on a multi-instance
// user task reminds of the loop and escalates every open instance's work
// item.
func TestLoopRemindersReachInstances(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, db *gorm.DB) {
		h, clock, rec := timedHarness(t, db)
		h.deploy(loopXPDL("remind", nil,
			userTask("Review", `<ExtendedAttributes><ExtendedAttribute Name="Reminder" Value="every=PT1H; escalate=1; to=role:manager; max=1"/></ExtendedAttributes>`+
				miLoop("Parallel", "All", "3", "")), "", ""))
		id := h.startProcess("remind", "p", nil)
		require.NoError(t, h.complete(oldestItemOf(h, id, "Review").ID, nil))
		clock.Advance(time.Hour)
		rec.await(t, id, engine.RecordActivityReminder, 1)
		rec.await(t, id, engine.RecordActivityEscalated, 2)
		items, err := workItemsOf(h.ctx, h.e, openItemsOf(id))
		require.NoError(t, err)
		require.Len(t, items, 2)
		for _, wi := range items {
			require.Equal(t, []store.Principal{{Kind: store.PrincipalRole, ID: "manager"}}, wi.Assignees)
			require.Equal(t, workitem.Offered, wi.State)
		}
	})
}

// TestLoopInActivitySet: loops inside an ActivitySet run in the
// transaction of the step that started the block, and the block
// completes once they have: a standard loop, then a parallel
// multi-instance loop whose every instance passes the flow on.
func TestLoopInActivitySet(t *testing.T) {
	t.Parallel()
	src := `<?xml version="1.0"?>
<Package xmlns="http://www.wfmc.org/2009/XPDL2.2" Id="blockloop"><PackageHeader><XPDLVersion>2.2</XPDLVersion></PackageHeader>
<Script Type="text/javascript"/>
<WorkflowProcesses><WorkflowProcess Id="p">
<DataFields>
  <DataField Id="i"><DataType><BasicType Type="INTEGER"/></DataType><InitialValue>0</InitialValue></DataField>
  <DataField Id="tail"><DataType><BasicType Type="INTEGER"/></DataType><InitialValue>0</InitialValue></DataField>
</DataFields>
<ActivitySets><ActivitySet Id="S"><Activities>
  ` + scriptTask("Count", "i = i + 1;", standardLoop("Before", "", "loopCounter < 3")) + `
  ` + scriptTask("Fan", "var x = loopCounter;", miLoop("Parallel", "None", "2", "")) + `
  ` + scriptTask("Tail", "tail = tail + 1;", "") + `
</Activities><Transitions>` + transition("s1", "Count", "Fan") + transition("s2", "Fan", "Tail") + `</Transitions></ActivitySet></ActivitySets>
<Activities>
  <Activity Id="Blk"><BlockActivity ActivitySetId="S"/></Activity>
  ` + routeTask("After") + `
</Activities><Transitions>` + transition("t1", "Blk", "After") + `</Transitions>
</WorkflowProcess></WorkflowProcesses></Package>`
	dbtest.Each(t, func(t *testing.T, db *gorm.DB) {
		h := newHarness(t, db).start()
		h.deploy(src)
		id := h.startProcess("blockloop", "p", nil)
		h.requireState(id, wftype.ProcessCompleted)
		require.Equal(t, map[string]any{"i": int64(3), "tail": int64(2)}, h.vars(id))
		require.Equal(t, map[string]int{"Blk": 1, "Count": 4, "Fan": 3, "Tail": 2, "After": 1}, h.started(id))
	})
}
