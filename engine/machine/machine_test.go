package machine_test

import (
	"errors"
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/goxpdl/goxpdl/engine/machine"
	"github.com/goxpdl/goxpdl/wftype"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// The legal transitions, written out as docs/engine.md ("States") states
// them. Every (state, command) pair not listed here must be refused.
var legalProcess = map[string]wftype.ProcessState{
	"Initiated/schedule":  wftype.ProcessRunning,
	"Running/suspend":     wftype.ProcessSuspended,
	"Running/terminate":   wftype.ProcessTerminated,
	"Running/complete":    wftype.ProcessCompleted,
	"Running/lock":        wftype.ProcessLocking,
	"Suspended/resume":    wftype.ProcessRunning,
	"Suspended/terminate": wftype.ProcessTerminated,
	"Suspended/complete":  wftype.ProcessCompleted,
	"Suspended/lock":      wftype.ProcessLocking,
	"Locking/repair":      wftype.ProcessRunning,
	"Initiated/queue":     wftype.ProcessQueued,
	"Queued/dequeue":      wftype.ProcessInitiated,
	"Queued/terminate":    wftype.ProcessTerminated,
}

func TestProcessTransitions(t *testing.T) {
	t.Parallel()
	for _, from := range wftype.ProcessStates {
		for _, cmd := range machine.ProcessCommands {
			key := fmt.Sprintf("%s/%s", from, cmd)
			t.Run(key, func(t *testing.T) {
				t.Parallel()
				got, err := machine.NextProcessState(from, cmd)
				want, legal := legalProcess[key]
				if legal {
					require.NoError(t, err)
					require.Equal(t, want, got)
					return
				}
				require.ErrorIs(t, err, wftype.ErrIllegalState)
				require.Equal(t, from, got, "a refused command leaves the state as it was")
				var se *wftype.StateError
				require.ErrorAs(t, err, &se)
				require.Equal(t, string(cmd), se.Command)
				require.Equal(t, from.IsFinal(), errors.Is(err, wftype.ErrInstanceFinished))
			})
		}
	}
}

func TestSecondResumeIsRefused(t *testing.T) {
	t.Parallel()
	state, err := machine.NextProcessState(wftype.ProcessSuspended, machine.ProcessResume)
	require.NoError(t, err)
	_, err = machine.NextProcessState(state, machine.ProcessResume)
	require.ErrorIs(t, err, wftype.ErrIllegalState)
	require.NotErrorIs(t, err, wftype.ErrInstanceFinished)
}

// legalActivity lists the legal activity transitions while the process is
// Running.
var legalActivity = map[string]wftype.ActivityState{
	"Initiated/start":   wftype.ActivityActive,
	"Initiated/offer":   wftype.ActivityInActive,
	"Active/wait":       wftype.ActivityWaiting,
	"Active/complete":   wftype.ActivityCompleted,
	"Active/fail":       wftype.ActivityAbnormal,
	"Waiting/complete":  wftype.ActivityCompleted,
	"Waiting/fail":      wftype.ActivityAbnormal,
	"InActive/complete": wftype.ActivityCompleted,
	"InActive/fail":     wftype.ActivityAbnormal,
	"Abnormal/retry":    wftype.ActivityInitiated,
	"Abnormal/skip":     wftype.ActivityCompleted,
	"Initiated/cancel":  wftype.ActivityCompleted,
	"Active/cancel":     wftype.ActivityCompleted,
	"Waiting/cancel":    wftype.ActivityCompleted,
	"InActive/cancel":   wftype.ActivityCompleted,
	"Abnormal/cancel":   wftype.ActivityCompleted,
}

// legalWhileSuspended lists what a Suspended process still lets its
// activities do: a subprocess returning to, or failing, its parent, and
// an operator's move cancelling any open activity.
var legalWhileSuspended = map[string]wftype.ActivityState{
	"Waiting/complete": wftype.ActivityCompleted,
	"Waiting/fail":     wftype.ActivityAbnormal,
	"Initiated/cancel": wftype.ActivityCompleted,
	"Active/cancel":    wftype.ActivityCompleted,
	"Waiting/cancel":   wftype.ActivityCompleted,
	"InActive/cancel":  wftype.ActivityCompleted,
	"Abnormal/cancel":  wftype.ActivityCompleted,
}

func TestActivityTransitions(t *testing.T) {
	t.Parallel()
	for _, proc := range wftype.ProcessStates {
		for _, from := range wftype.ActivityStates {
			for _, cmd := range machine.ActivityCommands {
				key := fmt.Sprintf("%s/%s", from, cmd)
				t.Run(string(proc)+"/"+key, func(t *testing.T) {
					t.Parallel()
					got, err := machine.NextActivityState(proc, from, cmd)
					var want wftype.ActivityState
					var legal bool
					switch proc {
					case wftype.ProcessRunning:
						want, legal = legalActivity[key]
					case wftype.ProcessSuspended:
						want, legal = legalWhileSuspended[key]
					}
					if legal {
						require.NoError(t, err)
						require.Equal(t, want, got)
						return
					}
					require.ErrorIs(t, err, wftype.ErrIllegalState)
					require.Equal(t, from, got, "a refused command leaves the state as it was")
					require.Equal(t, proc.IsFinal(), errors.Is(err, wftype.ErrInstanceFinished))
				})
			}
		}
	}
}

func TestNoActivityBecomesActiveWhileSuspended(t *testing.T) {
	t.Parallel()
	for _, from := range wftype.ActivityStates {
		for _, cmd := range machine.ActivityCommands {
			got, err := machine.NextActivityState(wftype.ProcessSuspended, from, cmd)
			if err == nil {
				require.NotEqual(t, wftype.ActivityActive, got, "%s/%s", from, cmd)
			}
		}
	}
}

func TestStateErrorMessages(t *testing.T) {
	t.Parallel()
	_, err := machine.NextProcessState(wftype.ProcessCompleted, machine.ProcessSuspend)
	require.EqualError(t, err, "process: suspend refused: process instance is Completed and finished")
	_, err = machine.NextActivityState(wftype.ProcessRunning, wftype.ActivityCompleted, machine.ActivityStart)
	require.EqualError(t, err, "activity: start refused in state Completed")
}
