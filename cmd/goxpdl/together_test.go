package main

import (
	"bytes"
	"context"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestBonitaSubflowsRunDeployedTogether runs the corpus's Bonita parents
// with the files their subflows' processes are in, as their tests deploy
// them (internal/corpusrun/together.go), and requires each to complete
// with its subflows. Several of those files share a package Id; alone,
// each parent is invalid.
func TestBonitaSubflowsRunDeployedTogether(t *testing.T) {
	t.Parallel()
	dir := filepath.Join(corpusDir(t), "xpdl1")
	tests := []struct {
		files []string
		hooks hookFlags
	}{
		{files: []string{"bonita-asyncSubParent.xpdl", "bonita-asyncSubChild.xpdl"}},
		{files: []string{"bonita-main_variables_proed.xpdl", "bonita-subflow_proed_variables.xpdl"}},
		{files: []string{"bonita-nestedSubflow.xpdl", "bonita-nestedSubflow-sub.xpdl", "bonita-nestedSubflow-nestedSub.xpdl"}},
		{files: []string{"bonita-nestedSubflow-sub.xpdl", "bonita-nestedSubflow-nestedSub.xpdl"}},
		{files: []string{"bonita-subflowParams.xpdl", "bonita-subflowParams-sub.xpdl"}},
		{
			files: []string{"bonita-subflowMultiInstantiation-mainCondPass.xpdl", "bonita-subflowMultiInstantiation-sub.xpdl"},
			// The Java hook's verdict once two instances of a2 passed.
			hooks: hookFlags{"org.ow2.bonita.activity.instantiation.CheckExecutionHook": `conditionVar2 = "true"`},
		},
	}
	for _, tt := range tests {
		t.Run(tt.files[0], func(t *testing.T) {
			t.Parallel()
			files := make([]string, len(tt.files))
			for i, f := range tt.files {
				files[i] = filepath.Join(dir, f)
			}
			var stdout, stderr bytes.Buffer
			code := runFile(context.Background(), runOptions{files: files[:1], workitems: "auto", sets: setFlags{}, hooks: tt.hooks}, &stdout, &stderr)
			require.Equal(t, exitProblems, code, "alone the parent is invalid: %s", stderr.String())
			require.Contains(t, stderr.String(), "SubFlow process")

			stdout.Reset()
			stderr.Reset()
			opts := runOptions{files: files, workitems: "auto", sets: setFlags{}, hooks: tt.hooks, timeout: defaultRunTimeout, trace: "jsonl"}
			code = runFile(context.Background(), opts, &stdout, &stderr)
			require.Equal(t, exitOK, code, "stderr: %s", stderr.String())
			require.Contains(t, stderr.String(), ": Completed")
			// The subflow's instance ran and completed too.
			require.GreaterOrEqual(t, bytes.Count(stdout.Bytes(), []byte(`"type":"process.completed"`)), 2, "%s", stdout.String())
		})
	}
}
