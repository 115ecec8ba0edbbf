package main

import (
	"errors"
	"flag"
	"io"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/goxpdl/goxpdl/engine"
	"github.com/goxpdl/goxpdl/wftype"
)

// Flags may come before, between and after the positional arguments;
// "--" ends the flags.
func TestParseInterleaved(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		args []string
		pos  []string
		to   string
		sets []string
	}{
		{args: []string{"1", "--to", "B"}, pos: []string{"1"}, to: "B"},
		{args: []string{"--to=B", "1", "2"}, pos: []string{"1", "2"}, to: "B"},
		{args: []string{"1", "--cancel", "3", "2", "--to", "B", "--cancel=4"}, pos: []string{"1", "2"}, to: "B", sets: []string{"3", "4"}},
		{args: []string{"--to", "B", "--", "--not-a-flag", "1"}, pos: []string{"--not-a-flag", "1"}, to: "B"},
		{args: nil, pos: nil},
	} {
		fs := flag.NewFlagSet("t", flag.ContinueOnError)
		fs.SetOutput(io.Discard)
		to := fs.String("to", "", "")
		var cancels listFlags
		fs.Var(&cancels, "cancel", "")
		pos, err := parseInterleaved(fs, tc.args)
		require.NoError(t, err, tc.args)
		require.Equal(t, tc.pos, pos, tc.args)
		require.Equal(t, tc.to, *to, tc.args)
		require.Equal(t, tc.sets, []string(cancels), tc.args)
	}
	fs := flag.NewFlagSet("t", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	_, err := parseInterleaved(fs, []string{"1", "--nosuch"})
	require.Error(t, err)
}

// A state refusal is said with the ids of the command, and keeps
// matching the engine's sentinels; other errors are left as they are.
func TestExplain(t *testing.T) {
	t.Parallel()
	err := explain(&wftype.StateError{Subject: "activity", State: "Running", Command: "retry"}, 3, 12)
	require.EqualError(t, err, "activity instance 12 is Running: retry refused")
	require.ErrorIs(t, err, engine.ErrIllegalState)
	require.True(t, refused(err))

	err = explain(&wftype.StateError{Subject: "process", State: "Completed", Command: "suspend", Finished: true}, 3, 0)
	require.EqualError(t, err, "process instance 3 is Completed (finished): suspend refused")
	require.ErrorIs(t, err, engine.ErrInstanceFinished)

	plain := errors.New("disk full")
	require.Equal(t, plain, explain(plain, 3, 12))
	require.False(t, refused(plain))
	require.NoError(t, explain(nil, 3, 12))
}
