package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"regexp"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/goxpdl/goxpdl/engine"
)

// TestWorkflowPatternsRunToCompletion runs every WorkflowProcess of
// JaWE's workflow_patterns.xpdl with --workitems auto, as goxpdl run does,
// and requires each to complete.
func TestWorkflowPatternsRunToCompletion(t *testing.T) {
	t.Parallel()
	file := filepath.Join(corpusDir(t), "xpdl1", "jawe-workflow_patterns.xpdl")
	src, err := os.ReadFile(file)
	require.NoError(t, err)
	ids := regexp.MustCompile(`<xpdl:WorkflowProcess [^>]*Id="([^"]+)"`).FindAllSubmatch(src, -1)
	require.Len(t, ids, 15)
	// The file's data loops WfSP1 C -> B forever; a person would change
	// whereToGo on the way, which --set does here.
	sets := map[string]setFlags{"WfSP1_Arbitrary_Cycles": {"whereToGo": "E"}}
	for _, m := range ids {
		process := string(m[1])
		t.Run(process, func(t *testing.T) {
			t.Parallel()
			var stdout, stderr bytes.Buffer
			opts := runOptions{files: []string{file}, process: process, workitems: "auto", sets: sets[process]}
			// The default second per condition is for production; a
			// loaded machine running -race takes longer to make a VM.
			opts.limits.conditionTime = time.Minute
			if process == "WfSP2_Implicit_Termination" {
				// JaWE's sample relies on Shark's silent end of a lost
				// branch (B's condition sends the token nowhere).
				opts.deadBranch = string(engine.DeadBranchEnd)
			}
			if opts.sets == nil {
				opts.sets = setFlags{}
			}
			code := runFile(context.Background(), opts, &stdout, &stderr)
			require.Equal(t, exitOK, code, "stdout: %s\nstderr: %s", stdout.String(), stderr.String())
			require.Contains(t, stdout.String(), ": Completed")
		})
	}
}
