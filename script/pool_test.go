package script_test

import (
	"context"
	"runtime"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/goxpdl/goxpdl/script"
)

// Idle VMs survive garbage collections, and no more than IdleVMs are kept.
func TestIdleVMsOutliveGarbageCollection(t *testing.T) {
	t.Parallel()
	ev := script.New(script.Config{IdleVMs: 2})
	eval := func() {
		ok, err := ev.Condition(context.Background(), `amount > 1`, map[string]any{"amount": 2})
		require.NoError(t, err)
		require.True(t, ok)
	}
	eval()
	for range 3 {
		runtime.GC()
	}
	eval()
	require.EqualValues(t, 1, script.VMsMade(ev))

	// Four at once make up to four VMs; at most two are kept.
	var start, done sync.WaitGroup
	start.Add(1)
	for range 4 {
		done.Go(func() {
			start.Wait()
			_, err := ev.Eval(context.Background(), `let n = 0; for (let i = 0; i < 20000; i++) n += i; n`, nil)
			require.NoError(t, err)
		})
	}
	start.Done()
	done.Wait()
	made := script.VMsMade(ev)
	require.LessOrEqual(t, script.IdleCount(ev), 2)
	require.GreaterOrEqual(t, script.IdleCount(ev), 1)
	for range 2 {
		eval()
	}
	require.Equal(t, made, script.VMsMade(ev), "sequential evaluations reuse the kept VMs")
}
