package script

import (
	"testing"

	"github.com/dop251/goja"
	"github.com/stretchr/testify/require"

	"github.com/goxpdl/goxpdl/timer"
)

// The watchdog's rule, one reading at a time: an evaluation's first
// reading is its baseline, and it is interrupted once the heap is more
// than the budget above that.
func TestWatchdogJudgesGrowthSinceTheFirstReading(t *testing.T) {
	t.Parallel()
	var heap uint64
	w := newWatchdog(1000, sampleInterval, timer.NewFake(timer.Real().Now()), func() uint64 { return heap })
	w.running = true // the test samples; no goroutine

	early, late := goja.New(), goja.New()
	heap = 5000
	a := w.watch(early)
	require.True(t, w.sample())
	require.True(t, a.seen)
	require.Equal(t, uint64(5000), a.base, "the first reading is the baseline")

	heap = 6000 // exactly the budget above: still within it
	b := w.watch(late)
	require.True(t, w.sample())
	require.False(t, a.fired)
	require.Equal(t, uint64(6000), b.base, "what the heap held before an evaluation was first seen is not its")

	heap = 6001
	require.True(t, w.sample())
	require.True(t, a.fired, "1001 bytes over the baseline of the first")
	require.False(t, b.fired, "1 byte over that of the second")
	_, err := early.RunString("1")
	var interrupted *goja.InterruptedError
	require.ErrorAs(t, err, &interrupted)
	require.Equal(t, w.over, interrupted.Value())
	require.ErrorIs(t, w.over, ErrMemoryBudget)

	heap = 100 // the collector freed what the host had: nobody's fault, nobody's credit
	require.True(t, w.sample())
	require.False(t, b.fired)

	require.True(t, w.unwatch(a), "unwatch reports the interrupt")
	require.False(t, w.unwatch(b))
	require.False(t, w.sample(), "no evaluation left: the goroutine would end")
	require.False(t, w.running)
}
