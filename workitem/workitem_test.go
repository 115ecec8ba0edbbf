package workitem_test

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/goxpdl/goxpdl/wftype"
	"github.com/goxpdl/goxpdl/workitem"
)

// The legal transitions written out; every (state, command) pair not
// listed must be refused. Resume is tested on its own.
var legal = map[string]workitem.State{
	"Offered/allocate":   workitem.Allocated,
	"Offered/complete":   workitem.Completed,
	"Offered/reassign":   workitem.Offered,
	"Offered/suspend":    workitem.Suspended,
	"Offered/withdraw":   workitem.Withdrawn,
	"Allocated/start":    workitem.Started,
	"Allocated/complete": workitem.Completed,
	"Allocated/release":  workitem.Offered,
	"Allocated/delegate": workitem.Allocated,
	"Allocated/reassign": workitem.Offered,
	"Allocated/suspend":  workitem.Suspended,
	"Allocated/withdraw": workitem.Withdrawn,
	"Started/complete":   workitem.Completed,
	"Started/release":    workitem.Offered,
	"Started/delegate":   workitem.Allocated,
	"Started/reassign":   workitem.Offered,
	"Started/suspend":    workitem.Suspended,
	"Started/withdraw":   workitem.Withdrawn,
	"Suspended/withdraw": workitem.Withdrawn,
}

func TestTransitions(t *testing.T) {
	t.Parallel()
	for _, from := range workitem.States {
		for _, cmd := range workitem.Commands {
			if cmd == workitem.Resume {
				continue
			}
			key := fmt.Sprintf("%s/%s", from, cmd)
			t.Run(key, func(t *testing.T) {
				t.Parallel()
				got, err := workitem.Next(from, cmd, "")
				if want, ok := legal[key]; ok {
					require.NoError(t, err)
					require.Equal(t, want, got)
					return
				}
				require.ErrorIs(t, err, workitem.ErrIllegal)
				require.ErrorIs(t, err, wftype.ErrIllegalState)
				require.Equal(t, from, got, "a refused command leaves the state as it was")
				var te *workitem.TransitionError
				require.ErrorAs(t, err, &te)
				require.Equal(t, cmd, te.Command)
				require.Equal(t, from, te.State)
			})
		}
	}
}

func TestResumeRestoresTheStateBeforeSuspension(t *testing.T) {
	t.Parallel()
	for _, before := range []workitem.State{workitem.Offered, workitem.Allocated, workitem.Started} {
		suspended, err := workitem.Next(before, workitem.Suspend, "")
		require.NoError(t, err)
		require.Equal(t, workitem.Suspended, suspended)
		got, err := workitem.Next(suspended, workitem.Resume, before)
		require.NoError(t, err)
		require.Equal(t, before, got)
	}
	for _, from := range workitem.States {
		if from == workitem.Suspended {
			continue
		}
		_, err := workitem.Next(from, workitem.Resume, workitem.Offered)
		require.ErrorIs(t, err, workitem.ErrIllegal, "resume of a %s item", from)
	}
	_, err := workitem.Next(workitem.Suspended, workitem.Resume, workitem.Completed)
	require.ErrorIs(t, err, workitem.ErrIllegal, "an item cannot resume into a final state")
}

func TestFinalStatesRefuseEverything(t *testing.T) {
	t.Parallel()
	for _, s := range []workitem.State{workitem.Completed, workitem.Withdrawn} {
		require.True(t, s.IsFinal())
		for _, cmd := range workitem.Commands {
			_, err := workitem.Next(s, cmd, workitem.Offered)
			require.ErrorIs(t, err, workitem.ErrIllegal)
			require.Contains(t, err.Error(), "the item is "+string(s))
		}
	}
	for _, s := range workitem.OpenStates {
		require.False(t, s.IsFinal())
	}
}

func TestOwnership(t *testing.T) {
	t.Parallel()
	owned := map[workitem.State]bool{workitem.Allocated: true, workitem.Started: true}
	for _, s := range workitem.States {
		require.Equal(t, owned[s], workitem.HasOwner(s), string(s))
	}
}
