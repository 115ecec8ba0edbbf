package xpdl_test

import (
	"encoding/json"
	"errors"
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/goxpdl/goxpdl/xpdl"
)

func TestRewriteProblems(t *testing.T) {
	t.Parallel()
	require.Nil(t, xpdl.RewriteProblems(nil))

	race := &xpdl.RaceRegionError{File: "f.xpdl", Pos: xpdl.Pos{Line: 7, Col: 3}, Process: "p", Split: "s", Join: "j", Leaving: []string{"t9"}}
	ps := xpdl.RewriteProblems(errors.Join(fmt.Errorf("deploy p: %w", race), errors.New("something else")))
	require.Len(t, ps, 2, "one problem per joined error")
	require.Equal(t, "race-region", ps[0].Code)
	require.Equal(t, 7, ps[0].Line)
	require.Equal(t, []string{"j", "s", "t9"}, ps[0].IDs)
	require.Equal(t, "rewrite", ps[1].Code)
	require.True(t, ps.HasErrors())
}

func TestExplainJSON(t *testing.T) {
	t.Parallel()
	pkg, err := xpdl.Load("testdata/orders.xpdl", nil)
	require.NoError(t, err)
	rewritten, steps, err := xpdl.Rewrite(pkg)
	require.NoError(t, err)
	b, err := json.Marshal(xpdl.Explain(rewritten, steps))
	require.NoError(t, err)
	var back map[string]any
	require.NoError(t, json.Unmarshal(b, &back))
	require.Equal(t, []any{}, back["rewrites"], `"rewrites": [] rather than null`)
	procs, ok := back["processes"].([]any)
	require.True(t, ok)
	require.Len(t, procs, len(pkg.Processes))
	first, ok := procs[0].(map[string]any)
	require.True(t, ok)
	require.Contains(t, first, "activities", "the flow's fields sit in the process's object")
	require.Contains(t, first, "transitions")
}
