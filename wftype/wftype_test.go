package wftype_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/goxpdl/goxpdl/wftype"
)

// Every process state is exactly one of open, final and Queued.
func TestProcessStatesAreOpenFinalOrQueued(t *testing.T) {
	t.Parallel()
	for _, s := range wftype.ProcessStates {
		kinds := 0
		for _, is := range []bool{s.IsOpen(), s.IsFinal(), s == wftype.ProcessQueued} {
			if is {
				kinds++
			}
		}
		require.Equal(t, 1, kinds, "state %s", s)
	}
	require.Equal(t, []wftype.ProcessState{wftype.ProcessInitiated, wftype.ProcessRunning, wftype.ProcessSuspended},
		wftype.OpenProcessStates)
	require.False(t, wftype.ProcessState("Nonsense").IsOpen())
}
