package engine_test

import (
	"cmp"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
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

// patternsDir holds one XPDL file per control-flow pattern of the
// Workflow Patterns Initiative (docs/patterns.md).
const patternsDir = "../testdata/patterns"

// patternStep is one thing the test does to a running pattern instance.
// Exactly one action (complete, send, advance, terminate, signal) is set.
type patternStep struct {
	// open, when not nil, are the activities that must have an open work
	// item before the action, in the instance or its subflow instances,
	// sorted (an activity twice for two items).
	open []string
	// complete completes the one open work item of this activity (in the
	// instance or its subflow instances), with outputs.
	complete string
	outputs  map[string]any
	// completeOldest completes the oldest open work item of this
	// activity, which may have several (the instances of a
	// multi-instance activity), with outputs.
	completeOldest string
	// send sends a message (Engine.Send) for this activity (its work
	// item, or a message event), with ttl; delivery, when set, is the Delivery.State it must get.
	// The message id is messageID(instance, step number).
	send     string
	ttl      time.Duration
	delivery engine.DeliveryState
	// advance moves the fake clock on; await, when set, is the record
	// type the test then waits for one more of (the clock moves once the
	// engine is idle).
	advance time.Duration
	await   string
	// terminate terminates the instance (Engine.Terminate).
	terminate bool
	// signal broadcasts a signal (Engine.Signal) once the engine is idle;
	// receivers is how many waiting events it must reach.
	signal    string
	receivers int
}

// patternCase drives one pattern file and says what must have happened.
type patternCase struct {
	// wcp is the pattern's number in the Workflow Patterns Initiative's
	// numbering; name completes the test case name WCPnn_name.
	wcp  int
	name string
	// file is in patternsDir; process is the WorkflowProcess to start
	// ("": the package's main process); vars are its initial values.
	file    string
	process string
	vars    map[string]any
	steps   []patternStep
	// state is the instance's final state (Running: what it is once the
	// engine is idle after the last step).
	state wftype.ProcessState
	// open are the activities with an open work item at the end, sorted.
	open []string
	// started counts the activity instances of each activity.
	started map[string]int
	// orders: for each, the activity instances of these activities, in
	// creation order, are exactly this sequence.
	orders [][]string
	// withdrawn are the activities whose work items ended Withdrawn, in
	// the instance and its subflow instances, sorted.
	withdrawn []string
	// wantVars are values variables must have at the end.
	wantVars map[string]any
	// check, when set, checks what the fields above cannot say.
	check func(t *testing.T, h *harness, id int64)
}

func (tc patternCase) testName() string { return fmt.Sprintf("WCP%02d_%s", tc.wcp, tc.name) }

// TestWorkflowPatterns is the workflow-patterns conformance suite (issue
// #7): each case deploys one file of testdata/patterns, drives it through
// work items, messages and the fake clock, and checks from the database
// which activities ran, how often, in what order where the pattern fixes
// one, which work items were withdrawn, and the final state. Patterns the
// engine does not do yet have their file but no case; docs/patterns.md
// lists them.
func TestWorkflowPatterns(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, db *gorm.DB) {
		h, clock, rec := timedHarness(t, db)
		for _, tc := range patternCases {
			t.Run(tc.testName(), func(t *testing.T) { //nolint:paralleltest // the cases share one engine and its fake clock
				require.True(t, strings.HasPrefix(tc.file, fmt.Sprintf("wcp%02d-", tc.wcp)), "file %s is not WCP-%d's", tc.file, tc.wcp)
				src, err := os.ReadFile(filepath.Join(patternsDir, tc.file))
				require.NoError(t, err)
				ph := *h
				ph.t = t
				runPattern(t, &ph, clock.Advance, rec, src, tc)
			})
		}
	})
}

func runPattern(t *testing.T, h *harness, advance func(time.Duration), rec *recorder, src []byte, tc patternCase) {
	t.Helper()
	d, err := h.e.Deploy(h.ctx, src)
	require.NoError(t, err)
	id, err := h.e.StartProcess(h.ctx, engine.StartOptions{DefinitionID: d.ID, Process: tc.process, Variables: tc.vars})
	require.NoError(t, err)
	for i, s := range tc.steps {
		if s.open != nil {
			require.Equal(t, s.open, openActivities(h, id), "step %d: open work items", i+1)
		}
		switch {
		case s.complete != "":
			wi := openItemOf(h, id, s.complete)
			_, err := h.e.CompleteWorkItem(h.ctx, wi.ID, engine.Completion{User: "clerk1", Outputs: s.outputs})
			require.NoError(t, err, "step %d: complete %s", i+1, s.complete)
		case s.completeOldest != "":
			wi := oldestItemOf(h, id, s.completeOldest)
			_, err := h.e.CompleteWorkItem(h.ctx, wi.ID, engine.Completion{User: "clerk1", Outputs: s.outputs})
			require.NoError(t, err, "step %d: complete %s", i+1, s.completeOldest)
		case s.send != "":
			d, err := h.e.Send(h.ctx, engine.Message{
				MessageID: messageID(id, i+1), Instance: id, Activity: s.send, User: "clerk1", TTL: s.ttl,
			})
			require.NoError(t, err, "step %d: send to %s", i+1, s.send)
			require.False(t, d.Duplicate)
			if s.delivery != "" {
				require.Equal(t, s.delivery, d.State, "step %d: delivery: %s", i+1, d.Reason)
			}
		case s.advance > 0 && s.await == "":
			advance(s.advance)
		case s.advance > 0:
			h.idle() // the timers are armed
			n := len(rec.of(id, s.await))
			advance(s.advance)
			rec.await(t, id, s.await, n+1)
		case s.terminate:
			require.NoError(t, h.e.Terminate(h.ctx, id, engine.Op{}), "step %d: terminate", i+1)
		case s.signal != "":
			h.idle()
			b, err := h.e.Signal(h.ctx, s.signal, engine.SignalOpts{})
			require.NoError(t, err, "step %d: signal %s", i+1, s.signal)
			require.Len(t, b.Receivers, s.receivers, "step %d: receivers of signal %s", i+1, s.signal)
		default:
			t.Fatalf("step %d does nothing", i+1)
		}
	}
	pi := h.requireState(id, tc.state)
	require.Empty(t, pi.Diagnosis)
	open := openActivities(h, id)
	if tc.open == nil {
		require.Empty(t, open, "open work items at the end")
	} else {
		require.Equal(t, tc.open, open, "open work items at the end")
	}
	require.Equal(t, tc.started, h.started(id), "activity instances per activity")
	acts, err := activitiesOf(h.ctx, h.e, id)
	require.NoError(t, err)
	for _, a := range acts {
		require.NotEqual(t, wftype.ActivityAbnormal, a.State, "activity %s: %s", a.Activity, a.Diagnosis)
	}
	for _, want := range tc.orders {
		var got []string
		for _, a := range acts {
			if slices.Contains(want, a.Activity) {
				got = append(got, a.Activity)
			}
		}
		require.Equal(t, want, got, "order of %v", want)
	}
	var withdrawn []string
	for _, wi := range treeItems(h, id, false) {
		if wi.State == workitem.Withdrawn {
			withdrawn = append(withdrawn, wi.Activity)
		}
	}
	slices.Sort(withdrawn)
	require.Equal(t, tc.withdrawn, withdrawn, "withdrawn work items")
	if len(tc.wantVars) > 0 {
		vars := h.vars(id)
		for name, want := range tc.wantVars {
			require.Equal(t, want, vars[name], "variable %s", name)
		}
	}
	if tc.check != nil {
		tc.check(t, h, id)
	}
}

// openActivities lists the activities of the open work items of an
// instance and its subflow instances, sorted; nil when there are none.
func openActivities(h *harness, id int64) []string {
	h.t.Helper()
	var out []string
	for _, wi := range treeItems(h, id, true) {
		out = append(out, wi.Activity)
	}
	slices.Sort(out)
	return out
}

// treeItems lists the work items of an instance and of its subflow
// instances, at any depth: all of them, or only the open ones.
func treeItems(h *harness, id int64, open bool) []engine.WorkItem {
	h.t.Helper()
	filter := engine.WorkItemFilter{Instance: id}
	if open {
		filter = openItemsOf(id)
	}
	h.idle()
	items, err := workItemsOf(h.ctx, h.e, filter)
	require.NoError(h.t, err)
	for _, c := range children(h, id) {
		items = append(items, treeItems(h, c.ID, open)...)
	}
	return items
}

// openItemOf returns the one open work item of activity in an instance.
func openItemOf(h *harness, id int64, activity string) engine.WorkItem {
	h.t.Helper()
	var found []engine.WorkItem
	for _, wi := range treeItems(h, id, true) {
		if wi.Activity == activity {
			found = append(found, wi)
		}
	}
	require.Len(h.t, found, 1, "open work items of %s", activity)
	return found[0]
}

// oldestItemOf returns the oldest open work item of activity in an
// instance.
func oldestItemOf(h *harness, id int64, activity string) engine.WorkItem {
	h.t.Helper()
	var found []engine.WorkItem
	for _, wi := range h.openItems(id) {
		if wi.Activity == activity {
			found = append(found, wi)
		}
	}
	require.NotEmpty(h.t, found, "open work items of %s", activity)
	return slices.MinFunc(found, func(a, b engine.WorkItem) int { return cmp.Compare(a.ID, b.ID) })
}

// patternCases are the patterns the engine does today, in WCP order.
var patternCases = []patternCase{
	{
		wcp: 1, name: "Sequence", file: "wcp01-sequence.xpdl",
		steps: []patternStep{
			{open: []string{"A"}, complete: "A"},
			{open: []string{"B"}, complete: "B"},
			{open: []string{"C"}, complete: "C"},
		},
		state:   wftype.ProcessCompleted,
		started: map[string]int{"Start": 1, "A": 1, "B": 1, "C": 1, "End": 1},
		orders:  [][]string{{"Start", "A", "B", "C", "End"}},
	},
	{
		wcp: 2, name: "ParallelSplit", file: "wcp02-parallel-split.xpdl",
		steps: []patternStep{
			{open: []string{"A"}, complete: "A"},
			{open: []string{"B", "C"}, complete: "C"},
			{open: []string{"B"}, complete: "B"},
		},
		state:   wftype.ProcessCompleted,
		started: map[string]int{"Start": 1, "A": 1, "Split": 1, "B": 1, "C": 1, "EndB": 1, "EndC": 1},
		orders:  [][]string{{"A", "Split", "B", "EndB"}, {"A", "Split", "C", "EndC"}},
	},
	{
		wcp: 3, name: "Synchronization", file: "wcp03-synchronization.xpdl",
		steps: []patternStep{
			{open: []string{"B", "C"}, complete: "B"},
			{open: []string{"C"}, complete: "C"},
			{open: []string{"D"}, complete: "D"},
		},
		state:   wftype.ProcessCompleted,
		started: map[string]int{"Start": 1, "Split": 1, "B": 1, "C": 1, "Join": 1, "D": 1, "End": 1},
		orders:  [][]string{{"B", "Join", "D"}, {"C", "Join", "D"}},
	},
	{
		wcp: 4, name: "ExclusiveChoice_Condition", file: "wcp04-exclusive-choice.xpdl",
		steps: []patternStep{
			{open: []string{"Enter"}, complete: "Enter", outputs: map[string]any{"amount": 500}},
			{open: []string{"Approve"}, complete: "Approve"},
		},
		state:    wftype.ProcessCompleted,
		started:  map[string]int{"Start": 1, "Enter": 1, "Choose": 1, "Approve": 1, "EndApprove": 1},
		wantVars: map[string]any{"amount": int64(500)},
	},
	{
		wcp: 4, name: "ExclusiveChoice_Otherwise", file: "wcp04-exclusive-choice.xpdl",
		steps: []patternStep{
			{open: []string{"Enter"}, complete: "Enter", outputs: map[string]any{"amount": 50}},
		},
		state:   wftype.ProcessCompleted,
		started: map[string]int{"Start": 1, "Enter": 1, "Choose": 1, "AutoPass": 1, "EndPass": 1},
	},
	{
		wcp: 5, name: "SimpleMerge", file: "wcp05-simple-merge.xpdl",
		vars: map[string]any{"urgent": true},
		steps: []patternStep{
			{open: []string{"B"}, complete: "B"},
			{open: []string{"D"}, complete: "D"},
		},
		state:   wftype.ProcessCompleted,
		started: map[string]int{"Start": 1, "Choose": 1, "B": 1, "Merge": 1, "D": 1, "End": 1},
		orders:  [][]string{{"Choose", "B", "Merge", "D", "End"}},
	},
	{
		wcp: 6, name: "MultiChoice", file: "wcp06-multi-choice.xpdl",
		vars: map[string]any{"x": 1, "y": 1, "z": 0},
		steps: []patternStep{
			{open: []string{"B", "C"}, complete: "C"},
			{open: []string{"B"}, complete: "B"},
		},
		state:   wftype.ProcessCompleted,
		started: map[string]int{"Start": 1, "Split": 1, "B": 1, "C": 1, "EndB": 1, "EndC": 1},
	},
	{
		wcp: 7, name: "StructuredSynchronizingMerge", file: "wcp07-structured-synchronizing-merge.xpdl",
		vars: map[string]any{"x": 1, "y": 0, "z": 1},
		steps: []patternStep{
			{open: []string{"B", "D"}, complete: "B"},
			{open: []string{"D"}, complete: "D"},
			{open: []string{"E"}, complete: "E"},
		},
		state:   wftype.ProcessCompleted,
		started: map[string]int{"Start": 1, "Split": 1, "B": 1, "D": 1, "Merge": 1, "E": 1, "End": 1},
		orders:  [][]string{{"B", "D", "Merge", "E", "End"}},
	},
	{
		wcp: 8, name: "MultiMerge", file: "wcp08-multi-merge.xpdl",
		steps: []patternStep{
			{open: []string{"B", "C"}, complete: "B"},
			{open: []string{"C", "D"}, complete: "D"},
			{open: []string{"C"}, complete: "C"},
			{open: []string{"D"}, complete: "D"},
		},
		state:   wftype.ProcessCompleted,
		started: map[string]int{"Start": 1, "Split": 1, "B": 1, "C": 1, "Merge": 2, "D": 2, "End": 2},
		orders:  [][]string{{"Merge", "D", "End", "Merge", "D", "End"}},
	},
	{
		wcp: 9, name: "StructuredDiscriminator", file: "wcp09-structured-discriminator.xpdl",
		steps: []patternStep{
			{open: []string{"B", "C"}, complete: "B"},
			{open: []string{"C", "D"}, complete: "C"},
			{open: []string{"D"}, complete: "D"},
		},
		state:   wftype.ProcessCompleted,
		started: map[string]int{"Start": 1, "Split": 1, "B": 1, "C": 1, "Disc": 1, "D": 1, "End": 1},
	},
	{
		wcp: 10, name: "ArbitraryCycles", file: "wcp10-arbitrary-cycles.xpdl",
		steps: []patternStep{
			{open: []string{"A"}, complete: "A"},
			{open: []string{"B"}, complete: "B"},
			{open: []string{"C"}, complete: "C", outputs: map[string]any{"back": true}}, // C -> A
			{open: []string{"A"}, complete: "A"},
			{open: []string{"B"}, complete: "B"},
			{open: []string{"C"}, complete: "C", outputs: map[string]any{"back": false}}, // C -> D
			{open: []string{"D"}, complete: "D", outputs: map[string]any{"back": true}},  // D -> B
			{open: []string{"B"}, complete: "B"},
			{open: []string{"C"}, complete: "C", outputs: map[string]any{"back": false}},
			{open: []string{"D"}, complete: "D", outputs: map[string]any{"back": false}}, // D -> End
		},
		state:   wftype.ProcessCompleted,
		started: map[string]int{"Start": 1, "A": 2, "B": 3, "C": 3, "D": 2, "End": 1},
		orders:  [][]string{{"A", "B", "C", "A", "B", "C", "D", "B", "C", "D", "End"}},
	},
	{
		wcp: 11, name: "ImplicitTermination", file: "wcp11-implicit-termination.xpdl",
		steps: []patternStep{
			{open: []string{"B", "C"}, complete: "C"},
			{open: []string{"B"}, complete: "B"},
		},
		state:   wftype.ProcessCompleted,
		started: map[string]int{"A": 1, "B": 1, "C": 1},
	},
	{
		wcp: 12, name: "MultipleInstancesWithoutSynchronization_AsynchrSubflow", file: "wcp12-mi-without-synchronization-subflow.xpdl",
		process: "main", vars: map[string]any{"n": 3},
		state:    wftype.ProcessCompleted,
		open:     []string{"Inspect", "Inspect", "Inspect"}, // in the three subflow instances
		started:  map[string]int{"Start": 1, "Spawn": 3, "Launch": 3, "Count": 3, "More": 3, "Done": 1, "End": 1},
		orders:   [][]string{{"Launch", "Launch", "Launch", "Done", "End"}},
		wantVars: map[string]any{"i": int64(3)},
		check: func(t *testing.T, h *harness, id int64) {
			kids := children(h, id)
			require.Len(t, kids, 3, "one inspection instance per iteration")
			for _, k := range kids {
				require.Equal(t, "inspection", k.Process)
				require.Equal(t, wftype.ProcessRunning, k.State, "nobody waited for it")
				require.Equal(t, []string{"Inspect"}, openActivities(h, k.ID))
			}
			// Each instance goes on by itself.
			for _, k := range kids {
				_, err := h.e.CompleteWorkItem(h.ctx, openItemOf(h, k.ID, "Inspect").ID, engine.Completion{User: "clerk1"})
				require.NoError(t, err)
				h.requireState(k.ID, wftype.ProcessCompleted)
			}
		},
	},
	{
		wcp: 16, name: "DeferredChoice_WorkDoneFirst", file: "wcp16-deferred-choice.xpdl",
		steps: []patternStep{
			{open: []string{"Review"}, complete: "Review"},
			{open: []string{"Approve"}, complete: "Approve"},
		},
		state:   wftype.ProcessCompleted,
		started: map[string]int{"Start": 1, "Review": 1, "Approve": 1, "End": 1},
		check: func(t *testing.T, h *harness, id int64) {
			// The choice fell on the work: the boundary timer is gone.
			left, err := h.e.Store().ListTimers(h.ctx, store.ListTimersParams{ProcessInstanceID: id})
			require.NoError(t, err)
			require.Empty(t, left, "timers left behind")
		},
	},
	{
		wcp: 16, name: "DeferredChoice_TimerFirst", file: "wcp16-deferred-choice.xpdl",
		steps: []patternStep{
			{open: []string{"Review"}, advance: time.Hour, await: engine.RecordTimerFired},
			{open: []string{"Escalate"}, complete: "Escalate"},
		},
		state:     wftype.ProcessCompleted,
		started:   map[string]int{"Start": 1, "Review": 1, "Timeout": 1, "Escalate": 1, "EndLate": 1},
		withdrawn: []string{"Review"},
	},
	{
		wcp: 17, name: "InterleavedParallelRouting", file: "wcp17-interleaved-parallel-routing.xpdl",
		steps: []patternStep{
			{open: []string{"Pick"}, complete: "Pick", outputs: map[string]any{"next": "B"}},
			{open: []string{"B"}, complete: "B"},
			{open: []string{"Pick"}, complete: "Pick", outputs: map[string]any{"next": "C"}}, // not before A: asked again
			{open: []string{"Pick"}, complete: "Pick", outputs: map[string]any{"next": "A"}},
			{open: []string{"A"}, complete: "A"},
			{open: []string{"Pick"}, complete: "Pick", outputs: map[string]any{"next": "C"}},
			{open: []string{"C"}, complete: "C"},
		},
		state: wftype.ProcessCompleted,
		started: map[string]int{
			"Start": 1, "Pick": 4, "Choose": 4, "A": 1, "B": 1, "C": 1,
			"MarkA": 1, "MarkB": 1, "MarkC": 1, "Check": 3, "End": 1,
		},
		orders:   [][]string{{"B", "A", "C", "End"}},
		wantVars: map[string]any{"doneA": true, "doneB": true, "doneC": true},
	},
	{
		wcp: 19, name: "CancelTask", file: "wcp19-cancel-task.xpdl",
		steps: []patternStep{
			{open: []string{"Pack", "Pay"}, advance: time.Hour, await: engine.RecordDeadlineFired},
			{open: []string{"Pack"}, complete: "Pack"},
		},
		state:     wftype.ProcessCompleted,
		started:   map[string]int{"Order": 1, "Pay": 1, "Cancelled": 1, "Pack": 1},
		withdrawn: []string{"Pay"},
	},
	{
		wcp: 20, name: "CancelCase", file: "wcp20-cancel-case.xpdl", process: "main",
		steps: []patternStep{
			{open: []string{"B", "C", "W"}, terminate: true}, // W is the subflow's
		},
		state:     wftype.ProcessTerminated,
		started:   map[string]int{"Start": 1, "Split": 1, "B": 1, "C": 1, "Sub": 1},
		withdrawn: []string{"B", "C", "W"},
		check: func(t *testing.T, h *harness, id int64) {
			kids := children(h, id)
			require.Len(t, kids, 1)
			h.requireState(kids[0].ID, wftype.ProcessTerminated)
			items, err := workItemsOf(h.ctx, h.e, engine.WorkItemFilter{Instance: kids[0].ID})
			require.NoError(t, err)
			require.Len(t, items, 1)
			require.Equal(t, "W", items[0].Activity)
			require.Equal(t, workitem.Withdrawn, items[0].State)
		},
	},
	{
		wcp: 21, name: "StructuredLoop", file: "wcp21-structured-loop.xpdl",
		vars:     map[string]any{"n": 3},
		state:    wftype.ProcessCompleted,
		started:  map[string]int{"Start": 1, "Test": 4, "Body": 3, "Done": 1, "End": 1},
		orders:   [][]string{{"Test", "Body", "Test", "Body", "Test", "Body", "Test", "Done", "End"}},
		wantVars: map[string]any{"i": int64(3)},
	},
	{
		wcp: 21, name: "StructuredLoop_NoIteration", file: "wcp21-structured-loop.xpdl",
		vars:     map[string]any{"n": 0},
		state:    wftype.ProcessCompleted,
		started:  map[string]int{"Start": 1, "Test": 1, "Done": 1, "End": 1},
		wantVars: map[string]any{"i": int64(0)},
	},
	{
		wcp: 22, name: "Recursion", file: "wcp22-recursion.xpdl", process: "countdown",
		vars:     map[string]any{"n": 3, "calls": 0},
		state:    wftype.ProcessCompleted,
		started:  map[string]int{"Start": 1, "Dec": 1, "More": 1, "Recurse": 1, "End": 1},
		wantVars: map[string]any{"n": int64(2), "calls": int64(3)},
		check: func(t *testing.T, h *harness, id int64) {
			child := children(h, id)
			require.Len(t, child, 1)
			require.Equal(t, "countdown", child[0].Process)
			require.Equal(t, wftype.ProcessCompleted, child[0].State)
			grandchild := children(h, child[0].ID)
			require.Len(t, grandchild, 1)
			require.Equal(t, "countdown", grandchild[0].Process)
			require.Equal(t, wftype.ProcessCompleted, grandchild[0].State)
			require.Empty(t, children(h, grandchild[0].ID), "n reached 0: no fourth level")
			require.Equal(t, map[string]int{"Start": 1, "Dec": 1, "More": 1, "End": 1}, h.started(grandchild[0].ID))
			require.Equal(t, map[string]any{"n": int64(0), "calls": int64(3)}, h.vars(grandchild[0].ID))
		},
	},
	{
		wcp: 23, name: "TransientTrigger_MessageTTL", file: "wcp23-transient-trigger.xpdl",
		steps: []patternStep{
			{open: []string{"Prepare"}, send: "Dispatch", ttl: time.Minute, delivery: engine.DeliveryPending}, // too early
			{advance: 2 * time.Minute},
			{open: []string{"Prepare"}, complete: "Prepare"},
			{open: []string{"Dispatch"}, send: "Dispatch", ttl: time.Minute, delivery: engine.DeliveryApplied},
		},
		state:   wftype.ProcessCompleted,
		started: map[string]int{"Start": 1, "Prepare": 1, "Dispatch": 1, "End": 1},
		check: func(t *testing.T, h *harness, id int64) {
			d, err := h.e.Inbox(h.ctx, messageID(id, 1))
			require.NoError(t, err)
			require.Equal(t, engine.DeliveryExpired, d.State, "the early trigger was lost")
		},
	},
	{
		wcp: 24, name: "PersistentTrigger_Inbox", file: "wcp24-persistent-trigger.xpdl",
		steps: []patternStep{
			{open: []string{"Prepare"}, send: "Dispatch", delivery: engine.DeliveryPending}, // early: kept
			{advance: 24 * time.Hour},
			{open: []string{"Prepare"}, complete: "Prepare"},
		},
		state:   wftype.ProcessCompleted,
		started: map[string]int{"Start": 1, "Prepare": 1, "Dispatch": 1, "End": 1},
		check: func(t *testing.T, h *harness, id int64) {
			d, err := h.e.Inbox(h.ctx, messageID(id, 1))
			require.NoError(t, err)
			require.Equal(t, engine.DeliveryApplied, d.State, "the early trigger completed Dispatch")
		},
	},
	{
		wcp: 25, name: "CancelRegion", file: "wcp25-cancel-region.xpdl",
		steps: []patternStep{
			{open: []string{"Other", "R1", "R2"}, complete: "R1"},
			{open: []string{"Other", "R2", "R3"}, advance: time.Hour, await: engine.RecordTimerFired},
			{open: []string{"Other"}, complete: "Other"},
		},
		state: wftype.ProcessCompleted,
		started: map[string]int{
			"Start": 1, "Split": 1, "Region": 1, "R1": 1, "R2": 1, "R3": 1, "Timeout": 1, "Cancelled": 1, "EndCancelled": 1,
			"Other": 1, "EndOther": 1,
		},
		withdrawn: []string{"R2", "R3"},
	},
	{
		wcp: 29, name: "CancellingDiscriminator_RaceInALoop", file: "wcp29-cancelling-discriminator.xpdl",
		steps: []patternStep{
			{open: []string{"B", "C"}, complete: "B"},
			{open: []string{"Decide"}, complete: "Decide", outputs: map[string]any{"again": true}},
			{open: []string{"B", "C"}, complete: "C"},
			{open: []string{"Decide"}, complete: "Decide", outputs: map[string]any{"again": false}},
		},
		state: wftype.ProcessCompleted,
		// The race (Split .. Race) lies on the loop, so deploying moved it
		// into a generated subprocess that Race__race calls every pass.
		started:   map[string]int{"Start": 1, "Entry": 2, "Race__race": 2, "Decide": 2, "End": 1},
		withdrawn: []string{"B", "C"},
		check: func(t *testing.T, h *harness, id int64) {
			races := children(h, id)
			require.Len(t, races, 2, "one race per pass")
			for i, race := range races {
				require.Equal(t, "cancellingDiscriminator__race_Race", race.Process)
				require.Equal(t, wftype.ProcessCompleted, race.State, "race %d", i+1)
				require.Equal(t, map[string]int{"Split": 1, "B": 1, "C": 1, "Race": 1}, h.started(race.ID),
					"race %d: the join ran once", i+1)
			}
			for i, loser := range []string{"C", "B"} {
				acts, err := activitiesOf(h.ctx, h.e, races[i].ID)
				require.NoError(t, err)
				for _, a := range acts {
					if a.Activity == loser {
						require.Equal(t, wftype.ActivityCompleted, a.State)
						require.Contains(t, a.Diagnosis, "withdrawn: non-reentrant Race started first")
					}
				}
			}
		},
	},
	{
		wcp: 30, name: "StructuredPartialJoin", file: "wcp30-structured-partial-join.xpdl",
		steps: []patternStep{
			{open: []string{"B", "C", "E"}, complete: "B"},
			{open: []string{"C", "E"}, complete: "E"},
			{open: []string{"C", "D"}, complete: "C"},
			{open: []string{"D"}, complete: "D"},
		},
		state:   wftype.ProcessCompleted,
		started: map[string]int{"Start": 1, "Split": 1, "B": 1, "C": 1, "E": 1, "Join": 1, "D": 1, "End": 1},
	},
	{
		wcp: 33, name: "GeneralisedAndJoin", file: "wcp33-generalised-and-join.xpdl",
		steps: []patternStep{
			{open: []string{"B1", "B2", "C1", "C2"}, complete: "B1"},
			{open: []string{"B2", "C1", "C2"}, complete: "B2"}, // two arrivals wait on M -> J
			{open: []string{"C1", "C2"}, complete: "C1"},
			{open: []string{"C2", "J"}, complete: "J"},
			{open: []string{"C2"}, complete: "C2"},
			{open: []string{"J"}, complete: "J"},
		},
		state: wftype.ProcessCompleted,
		started: map[string]int{
			"Start": 1, "Split": 1, "B1": 1, "B2": 1, "C1": 1, "C2": 1, "M": 2, "N": 2, "J": 2, "End": 2,
		},
		orders: [][]string{{"M", "M", "N", "J", "End", "N", "J", "End"}},
	},
	{
		wcp: 37, name: "LocalSynchronizingMerge", file: "wcp37-local-synchronizing-merge.xpdl",
		vars: map[string]any{"x": 1, "y": 1, "z": 0},
		steps: []patternStep{
			{open: []string{"B", "C"}, complete: "B"},
			{open: []string{"C"}, complete: "C"},
			{open: []string{"E"}, complete: "E"},
			{open: []string{"F"}, complete: "F"},
		},
		state:   wftype.ProcessCompleted,
		started: map[string]int{"Start": 1, "Split": 1, "B": 1, "C": 1, "E": 1, "Merge": 1, "F": 1, "End": 1},
		orders:  [][]string{{"B", "C", "E", "Merge", "F", "End"}},
	},
	{
		wcp: 37, name: "LocalSynchronizingMerge_DirectArc", file: "wcp37-local-synchronizing-merge.xpdl",
		vars: map[string]any{"x": 1, "y": 0, "z": 1},
		steps: []patternStep{
			{open: []string{"B"}, complete: "B"}, // the direct arc arrived first and waited for B
			{open: []string{"F"}, complete: "F"},
		},
		state:   wftype.ProcessCompleted,
		started: map[string]int{"Start": 1, "Split": 1, "B": 1, "Merge": 1, "F": 1, "End": 1},
	},
	{
		wcp: 38, name: "GeneralSynchronizingMerge", file: "wcp38-general-synchronizing-merge.xpdl",
		vars: map[string]any{"x": 1, "y": 1},
		steps: []patternStep{
			{open: []string{"B", "C"}, complete: "C", outputs: map[string]any{"again": true}},
			{open: []string{"B", "C"}, complete: "B"}, // C is looping: the merge waits
			{open: []string{"C"}, complete: "C", outputs: map[string]any{"again": false}},
			{open: []string{"F"}, complete: "F"},
		},
		state:   wftype.ProcessCompleted,
		started: map[string]int{"Start": 1, "Split": 1, "B": 1, "C": 2, "Check": 2, "Merge": 1, "F": 1, "End": 1},
		orders:  [][]string{{"C", "C", "Merge", "F", "End"}},
	},
	{
		wcp: 40, name: "InterleavedRouting", file: "wcp40-interleaved-routing.xpdl",
		steps: []patternStep{
			{open: []string{"Pick"}, complete: "Pick", outputs: map[string]any{"next": "C"}},
			{open: []string{"C"}, complete: "C"},
			{open: []string{"Pick"}, complete: "Pick", outputs: map[string]any{"next": "C"}}, // done already: asked again
			{open: []string{"Pick"}, complete: "Pick", outputs: map[string]any{"next": "A"}},
			{open: []string{"A"}, complete: "A"},
			{open: []string{"Pick"}, complete: "Pick", outputs: map[string]any{"next": "B"}},
			{open: []string{"B"}, complete: "B"},
		},
		state: wftype.ProcessCompleted,
		started: map[string]int{
			"Start": 1, "Pick": 4, "Choose": 4, "A": 1, "B": 1, "C": 1,
			"MarkA": 1, "MarkB": 1, "MarkC": 1, "Check": 3, "End": 1,
		},
		orders: [][]string{{"C", "A", "B", "End"}},
	},
	{
		wcp: 43, name: "ExplicitTermination", file: "wcp43-explicit-termination.xpdl",
		steps: []patternStep{
			{open: []string{"B", "C"}, complete: "C"},
		},
		state:     wftype.ProcessCompleted,
		started:   map[string]int{"Start": 1, "Split": 1, "B": 1, "C": 1, "Stop": 1},
		withdrawn: []string{"B"},
		check:     requireEndedBy("Stop", "B"),
	},
	{
		wcp: 43, name: "ExplicitTermination_SubflowRunning", file: "wcp43-explicit-termination-subflow.xpdl", process: "main",
		steps: []patternStep{
			{open: []string{"B", "C", "W"}, complete: "C"}, // W is the subflow's
		},
		state:     wftype.ProcessCompleted,
		started:   map[string]int{"Start": 1, "Split": 1, "B": 1, "Sub": 1, "C": 1, "Stop": 1},
		withdrawn: []string{"B", "W"},
		check: func(t *testing.T, h *harness, id int64) {
			requireEndedBy("Stop", "B", "Sub")(t, h, id)
			kids := children(h, id)
			require.Len(t, kids, 1)
			h.requireState(kids[0].ID, wftype.ProcessTerminated)
		},
	},
	// Loop elements (docs/loops.md): a looping activity has one activity
	// instance for the loop and one per instance or iteration, so that
	// "started" counts them together.
	{
		wcp: 12, name: "MultipleInstancesWithoutSynchronization_LoopMultiInstance", file: "wcp12-mi-without-synchronization.xpdl",
		steps: []patternStep{
			{open: []string{"Inspect", "Inspect", "Inspect"}, completeOldest: "Inspect"},
			{open: []string{"After", "Inspect", "Inspect"}, complete: "After"}, // the first instance went on by itself
			{open: []string{"Inspect", "Inspect"}, completeOldest: "Inspect"},
			{open: []string{"After", "Inspect"}, completeOldest: "Inspect"},
			{open: []string{"After", "After"}, completeOldest: "After"},
			{open: []string{"After"}, complete: "After"},
		},
		state:   wftype.ProcessCompleted,
		started: map[string]int{"Start": 1, "Inspect": 4, "After": 3, "End": 3},
		orders:  [][]string{{"Inspect", "Inspect", "Inspect", "Inspect", "After", "End", "After", "After", "End", "End"}},
		check:   requireLoopInstances("Inspect", 3),
	},
	{
		wcp: 13, name: "MultipleInstancesWithDesignTimeKnowledge", file: "wcp13-mi-design-time-knowledge.xpdl",
		steps: []patternStep{
			{open: []string{"Review", "Review", "Review"}, completeOldest: "Review"},
			{open: []string{"Review", "Review"}, completeOldest: "Review"},
			{open: []string{"Review"}, complete: "Review"},
			{open: []string{"Decide"}, complete: "Decide"},
		},
		state:   wftype.ProcessCompleted,
		started: map[string]int{"Start": 1, "Review": 4, "Decide": 1, "End": 1},
		check:   requireLoopInstances("Review", 3),
	},
	{
		wcp: 14, name: "MultipleInstancesWithRunTimeKnowledge", file: "wcp14-mi-runtime-knowledge.xpdl",
		vars: map[string]any{"reviewers": 2},
		steps: []patternStep{
			{open: []string{"Review"}, complete: "Review"}, // sequential: one at a time
			{open: []string{"Review"}, complete: "Review"},
			{open: []string{"Decide"}, complete: "Decide"},
		},
		state:   wftype.ProcessCompleted,
		started: map[string]int{"Start": 1, "Review": 3, "Decide": 1, "End": 1},
		check:   requireLoopInstances("Review", 2),
	},
	{
		wcp: 14, name: "MultipleInstancesWithRunTimeKnowledge_None", file: "wcp14-mi-runtime-knowledge.xpdl",
		vars:    map[string]any{"reviewers": 0},
		steps:   []patternStep{{open: []string{"Decide"}, complete: "Decide"}},
		state:   wftype.ProcessCompleted,
		started: map[string]int{"Start": 1, "Review": 1, "Decide": 1, "End": 1},
		check:   requireLoopInstances("Review", 0),
	},
	{
		wcp: 21, name: "StructuredLoop_LoopStandard", file: "wcp21-structured-loop-standard.xpdl",
		vars:     map[string]any{"n": 3},
		state:    wftype.ProcessCompleted,
		started:  map[string]int{"Start": 1, "Body": 4, "Done": 1, "End": 1},
		orders:   [][]string{{"Body", "Body", "Body", "Body", "Done", "End"}},
		wantVars: map[string]any{"i": int64(3)},
		check:    requireLoopInstances("Body", 3),
	},
	{
		wcp: 21, name: "StructuredLoop_LoopStandard_NoIteration", file: "wcp21-structured-loop-standard.xpdl",
		vars:     map[string]any{"n": 0},
		state:    wftype.ProcessCompleted,
		started:  map[string]int{"Start": 1, "Body": 1, "Done": 1, "End": 1},
		wantVars: map[string]any{"i": int64(0)},
		check:    requireLoopInstances("Body", 0),
	},
	{
		wcp: 21, name: "StructuredLoop_LoopStandard_Maximum", file: "wcp21-structured-loop-standard.xpdl",
		vars:     map[string]any{"n": 50},
		state:    wftype.ProcessCompleted,
		started:  map[string]int{"Start": 1, "Body": 11, "Done": 1, "End": 1},
		wantVars: map[string]any{"i": int64(10)}, // LoopMaximum
	},
	{
		wcp: 26, name: "CancelMultipleInstanceActivity", file: "wcp26-cancel-mi-activity.xpdl",
		steps: []patternStep{
			{open: []string{"Review", "Review", "Review"}, completeOldest: "Review"},
			{open: []string{"Review", "Review"}, advance: time.Hour, await: engine.RecordTimerFired},
		},
		state:     wftype.ProcessCompleted,
		started:   map[string]int{"Start": 1, "Review": 4, "Timeout": 1, "Cancelled": 1, "EndCancelled": 1},
		withdrawn: []string{"Review", "Review"},
		check:     requireLoopInstances("Review", 3),
	},
	{
		wcp: 27, name: "CompleteMultipleInstanceActivity", file: "wcp27-complete-mi-activity.xpdl",
		steps: []patternStep{
			{open: []string{"Review", "Review", "Review"}, completeOldest: "Review"},
			{open: []string{"Review", "Review"}, advance: time.Hour, await: engine.RecordActivityOverdue},
			{open: []string{"Decide"}, complete: "Decide"},
		},
		state:     wftype.ProcessCompleted,
		started:   map[string]int{"Start": 1, "Review": 4, "Decide": 1, "End": 1},
		withdrawn: []string{"Review", "Review"},
		check:     requireLoopInstances("Review", 3),
	},
	{
		wcp: 34, name: "StaticPartialJoinForMultipleInstances", file: "wcp34-static-partial-join-mi.xpdl",
		steps: []patternStep{
			{open: []string{"Review", "Review", "Review"}, completeOldest: "Review"},
			{open: []string{"Decide", "Review", "Review"}, complete: "Decide"},
			{open: []string{"Review", "Review"}, completeOldest: "Review"}, // passes nothing on
			{open: []string{"Review"}, complete: "Review"},
		},
		state:   wftype.ProcessCompleted,
		started: map[string]int{"Start": 1, "Review": 4, "Decide": 1, "End": 1},
		orders:  [][]string{{"Review", "Review", "Review", "Review", "Decide", "End"}},
		check:   requireLoopInstances("Review", 3),
	},
	{
		wcp: 16, name: "DeferredChoice_EventGateway", file: "wcp16-deferred-choice-event-gateway.xpdl",
		steps: []patternStep{
			{advance: time.Hour, await: engine.RecordTimerFired}, // Early fires first
		},
		state:   wftype.ProcessCompleted,
		started: map[string]int{"Start": 1, "Gate": 1, "Late": 1, "Early": 1, "FollowUp": 1, "EndFollowUp": 1},
		check: func(t *testing.T, h *harness, id int64) {
			left, err := h.e.Store().ListTimers(h.ctx, store.ListTimersParams{ProcessInstanceID: id})
			require.NoError(t, err)
			require.Empty(t, left, "Late's timer is deleted with it")
			acts, err := activitiesOf(h.ctx, h.e, id)
			require.NoError(t, err)
			for _, a := range acts {
				if a.Activity == "Late" {
					require.Equal(t, "deferred choice: Early came first", a.Diagnosis)
				}
			}
		},
	},
	{
		wcp: 23, name: "TransientTrigger_SignalEvent", file: "wcp23-transient-trigger-signal-event.xpdl",
		steps: []patternStep{
			{open: []string{"Prepare"}, signal: "go", receivers: 0}, // nothing waits: lost
			{open: []string{"Prepare"}, complete: "Prepare"},
			{signal: "go", receivers: 1}, // Go waits now
			{open: []string{"Proceed"}, complete: "Proceed"},
		},
		state:   wftype.ProcessCompleted,
		started: map[string]int{"Start": 1, "Prepare": 1, "Go": 1, "Proceed": 1, "End": 1},
	},
	{
		wcp: 24, name: "PersistentTrigger_MessageEvent", file: "wcp24-persistent-trigger-message-event.xpdl",
		steps: []patternStep{
			{open: []string{"Prepare"}, send: "Paid", delivery: engine.DeliveryPending}, // early: kept
			{advance: 24 * time.Hour},
			{open: []string{"Prepare"}, complete: "Prepare"},
			{open: []string{"Ship"}, complete: "Ship"},
		},
		state:   wftype.ProcessCompleted,
		started: map[string]int{"Start": 1, "Prepare": 1, "Paid": 1, "Ship": 1, "End": 1},
		check: func(t *testing.T, h *harness, id int64) {
			d, err := h.e.Inbox(h.ctx, messageID(id, 1))
			require.NoError(t, err)
			require.Equal(t, engine.DeliveryApplied, d.State, "the early message was caught by Paid: %s", d.Reason)
		},
	},
}

// requireLoopInstances checks that activity ran as one loop activity
// instance with n instances, numbered 1 to n, that name it.
func requireLoopInstances(activity string, n int) func(t *testing.T, h *harness, id int64) {
	return func(t *testing.T, h *harness, id int64) {
		t.Helper()
		acts, err := activitiesOf(h.ctx, h.e, id)
		require.NoError(t, err)
		var loop *engine.ActivityInstance
		var index []int
		for i, a := range acts {
			switch {
			case a.Activity != activity:
			case a.Loop == 0:
				require.Nil(t, loop, "one loop of %s", activity)
				loop = &acts[i]
			default:
				require.NotNil(t, loop, "the loop comes first")
				require.Equal(t, loop.ID, a.Loop)
				index = append(index, a.LoopIndex)
			}
		}
		require.NotNil(t, loop)
		require.Equal(t, wftype.ActivityCompleted, loop.State)
		want := []int{}
		for i := range n {
			want = append(want, i+1)
		}
		require.Equal(t, want, append([]int{}, index...))
	}
}

// messageID is the id of the message a case's step (numbered from 1)
// sends to an instance.
func messageID(instance int64, step int) string { return fmt.Sprintf("wcp-%d-%d", instance, step) }

// children lists the subflow instances a process instance started.
func children(h *harness, id int64) []engine.ProcessInstance {
	h.t.Helper()
	h.idle()
	kids, err := h.e.Instances(h.ctx, engine.InstanceFilter{Parent: id, Limit: 1000})
	require.NoError(h.t, err)
	require.Zero(h.t, kids.Next, "one page")
	return kids.Instances
}

// requireEndedBy checks that the activities were ended by the Terminate
// end event stop: Completed, with a diagnosis naming it.
func requireEndedBy(stop string, activities ...string) func(t *testing.T, h *harness, id int64) {
	return func(t *testing.T, h *harness, id int64) {
		t.Helper()
		acts, err := activitiesOf(h.ctx, h.e, id)
		require.NoError(t, err)
		for _, a := range acts {
			if slices.Contains(activities, a.Activity) {
				require.Equal(t, wftype.ActivityCompleted, a.State, a.Activity)
				require.Equal(t, "ended by terminate end event "+stop, a.Diagnosis, a.Activity)
			}
		}
	}
}
