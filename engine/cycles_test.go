package engine_test

import (
	"context"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"gorm.io/gorm"

	"github.com/goxpdl/goxpdl/engine"
	"github.com/goxpdl/goxpdl/store/dbtest"
	"github.com/goxpdl/goxpdl/wftype"
)

// cycleCase runs one cyclic process of the corpus (../shared/xpdl-corpus;
// CENSUS.md lists its cycles) to completion: the work items are completed
// as they come, with the outputs a person would give, and Bonita's test
// hooks are played by Go tool agents.
type cycleCase struct {
	file, process string
	// edit, when set, changes the file before deploying.
	edit func(src string) string
	// outputs gives the outputs of the visit-th (from 1) completed work
	// item of an activity, named by its Name (else its id).
	outputs func(activity string, visit int) map[string]any
	// loops are activities (ids) that must have run more than once: the
	// cycle was taken.
	loops []string
}

// bonitaHooks plays the hook classes of Bonita's cycle and async tests:
// the variable updates that let their loops end.
var bonitaHooks = map[string]engine.ApplicationFunc{
	"org.ow2.bonita.async.NoOpHook": func(context.Context, *engine.Call) (map[string]any, error) { return nil, nil },
	"org.ow2.bonita.async.IncrementHook": func(_ context.Context, c *engine.Call) (map[string]any, error) {
		return map[string]any{"counter": c.Params["counter"].(int64) + 1}, nil
	},
	"org.ow2.bonita.integration.cycle.HookBeforeTerminateUpdateVariable": func(context.Context, *engine.Call) (map[string]any, error) {
		return map[string]any{"cont": "deux"}, nil
	},
	"org.ow2.bonita.integration.cycle.HookBeforeTerminateUpdateVariable2": func(context.Context, *engine.Call) (map[string]any, error) {
		return map[string]any{"cont2": "deux"}, nil
	},
}

// secondVisit sets variable to "yes" from the second visit of activity
// on, and to "no" before.
func secondVisit(activity, variable string) func(string, int) map[string]any {
	return func(a string, visit int) map[string]any {
		if a != activity {
			return nil
		}
		if visit >= 2 {
			return map[string]any{variable: "yes"}
		}
		return map[string]any{variable: "no"}
	}
}

var cycleCases = []cycleCase{
	{file: "xpdl1/bonita-simpleCycle.xpdl", loops: []string{"a1", "a2"}},
	{file: "xpdl1/bonita-nestedCycle.xpdl", loops: []string{"a2", "a3"}},
	{file: "xpdl1/bonita-arbitraryCycle.xpdl", loops: []string{"a1", "a3"}},
	{file: "xpdl1/bonita-asyncCycle.xpdl", loops: []string{"A", "B", "C"}},
	{
		// Bonita's XOR join passes on the first arrival of a round and
		// drops the other: in goxpdl, a join marked Reentrant="false".
		// C then closes a race inside the loop A..C, which deploying
		// moves into a subprocess run afresh on every pass (C__race).
		file: "xpdl1/bonita-asyncJoinXorCycle.xpdl", edit: markNonReentrant("C"), loops: []string{"C__race"},
	},
	{file: "xpdl1/bonita-asyncSplitCycleJoinAnd.xpdl", loops: []string{"A", "C"}},
	{file: "xpdl1/bonita-entryXorCycle.xpdl", outputs: func(string, int) map[string]any { return map[string]any{"cont": "deux"} }},
	{file: "xpdl1/bonita-testVariablesWithCycle.xpdl", outputs: func(string, int) map[string]any { return map[string]any{"cont": "deux"} }},
	{
		file: "xpdl1/bonita-testNestedCycleNoExtraNodes.xpdl",
		outputs: func(a string, visit int) map[string]any {
			if out := secondVisit("step2", "loop1")(a, visit); out != nil {
				return out
			}
			return secondVisit("step3", "loop2")(a, visit)
		},
		loops: []string{"step0", "step1", "step2", "step3"},
	},
	{
		// The person working C picks where to go: back to B once, then on.
		file: "xpdl1/jawe-workflow_patterns.xpdl", process: "WfSP1_Arbitrary_Cycles",
		outputs: whereToGo, loops: []string{"B", "C"},
	},
	{file: "xpdl2/jawe-workflow_patterns.xpdl", process: "WfSP1_Arbitrary_Cycles", outputs: whereToGo, loops: []string{"B15", "C14"}},
	{
		// JaWE's negative test: the process declares LOOP_BLOCKED, which
		// its loop violates, so it is refused as written
		// (TestCorpusCyclesRefused); without the declaration it runs.
		// Act4's XOR split has no conditions, so its first transition
		// (to Act2, the end) is taken and the loop through Act3 and Act5
		// is never entered.
		file: "xpdl1/jawe-LoopBlocked.xpdl", process: "LOOP_BLOCKED_Test_Wor1", edit: withoutConformanceClass,
	},
	{file: "xpdl1/jawe-LoopBlocked.xpdl", process: "LOOP_BLOCKED_Test_Wor2", edit: withoutConformanceClass},
}

// withoutConformanceClass removes a package's GraphConformance
// declaration.
func withoutConformanceClass(src string) string {
	return regexp.MustCompile(`<(xpdl:)?ConformanceClass[^>]*/>`).ReplaceAllString(src, "")
}

// markNonReentrant adds Reentrant="false" to an activity's extended
// attributes.
func markNonReentrant(activity string) func(string) string {
	re := regexp.MustCompile(`(?s)(<Activity Id="` + activity + `"[^>]*>.*?<ExtendedAttributes>)`)
	return func(src string) string {
		return re.ReplaceAllString(src, `${1}<ExtendedAttribute Name="Reentrant" Value="false"/>`)
	}
}

// whereToGo is the choice of the person working WfSP1's C: B on the
// first visit, then E (on to the end).
func whereToGo(activity string, visit int) map[string]any {
	if activity != "C" {
		return nil
	}
	if visit == 1 {
		return map[string]any{"whereToGo": "B"}
	}
	return map[string]any{"whereToGo": "E"}
}

// TestCorpusCycles runs the cyclic processes of the corpus (issue #7):
// Bonita's cycle tests, JaWE's LoopBlocked and workflow_patterns. Left
// out: bonita-cycleDetection, whose cycle a8-a9 has no exit at all (it
// tests Bonita's cycle detector, not a process that can end).
func TestCorpusCycles(t *testing.T) {
	t.Parallel()
	corpus := filepath.Join("..", "..", "shared", "xpdl-corpus")
	if dir := os.Getenv("GOXPDL_CORPUS"); dir != "" {
		corpus = dir
	}
	if _, err := os.Stat(filepath.Join(corpus, "xpdl1")); err != nil {
		t.Skipf("xpdl corpus not found at %s (set GOXPDL_CORPUS); skipping", corpus)
	}
	dbtest.Each(t, func(t *testing.T, db *gorm.DB) {
		h := newHarness(t, db, func(c *engine.Config) { c.NoOpUnboundApplications = true })
		for class, fn := range bonitaHooks {
			h.e.RegisterToolAgent(class, fn)
		}
		h.start()
		for _, tc := range cycleCases {
			t.Run(strings.TrimSuffix(tc.file, ".xpdl")+"/"+tc.process, func(t *testing.T) { //nolint:paralleltest // one engine
				src, err := os.ReadFile(filepath.Join(corpus, tc.file))
				require.NoError(t, err)
				text := string(src)
				if tc.edit != nil {
					text = tc.edit(text)
				}
				// A cycle the data never leaves keeps the engine busy for
				// ever; this bound turns that into a failure.
				ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
				defer cancel()
				ch := *h
				ch.t, ch.ctx = t, ctx
				runCycle(t, &ch, text, tc)
			})
		}
	})
}

func runCycle(t *testing.T, h *harness, src string, tc cycleCase) {
	t.Helper()
	d, err := h.e.Deploy(h.ctx, []byte(src))
	require.NoError(t, err)
	id, err := h.e.StartProcess(h.ctx, engine.StartOptions{DefinitionID: d.ID, Process: tc.process})
	require.NoError(t, err)
	visits := map[string]int{}
	for step := 0; ; step++ {
		require.Less(t, step, 200, "still running after 200 work items: %v", h.started(id))
		items := treeItems(h, id, true)
		if len(items) == 0 {
			break
		}
		wi := items[0]
		name := wi.Activity
		if wi.ActivityName != "" {
			name = wi.ActivityName
		}
		visits[name]++
		var out map[string]any
		if tc.outputs != nil {
			out = tc.outputs(name, visits[name])
		}
		_, err := h.e.CompleteWorkItem(h.ctx, wi.ID, engine.Completion{User: "admin", Outputs: out})
		require.NoError(t, err, "complete %s", wi.Activity)
	}
	pi := h.requireState(id, wftype.ProcessCompleted)
	require.Empty(t, pi.Diagnosis)
	started := h.started(id)
	for _, a := range tc.loops {
		require.Greater(t, started[a], 1, "activity %s ran once: the cycle was not taken (%v)", a, started)
	}
}

// TestCorpusCyclesRefused: JaWE's LoopBlocked, as written, is refused.
func TestCorpusCyclesRefused(t *testing.T) {
	t.Parallel()
	path := filepath.Join("..", "..", "shared", "xpdl-corpus", "xpdl1", "jawe-LoopBlocked.xpdl")
	src, err := os.ReadFile(path)
	if err != nil {
		t.Skipf("xpdl corpus not found (%v); skipping", err)
	}
	h := newHarness(t, dbtest.OpenSQLite(t))
	_, err = h.e.Deploy(h.ctx, src)
	require.ErrorContains(t, err, "declared LOOP_BLOCKED but has a loop")
}
