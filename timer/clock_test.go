package timer_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/goxpdl/goxpdl/timer"
)

var t0 = time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)

func TestFakeFiresInDueOrderOnlyWhenReached(t *testing.T) {
	t.Parallel()
	c := timer.NewFake(t0)
	late := c.NewTimer(2 * time.Second)
	early := c.NewTimer(time.Second)
	require.Equal(t, 2, c.Waiters())

	c.Advance(999 * time.Millisecond)
	select {
	case <-early.C():
		t.Fatal("fired early")
	default:
	}
	c.Advance(time.Millisecond)
	require.Equal(t, t0.Add(time.Second), <-early.C())
	require.Equal(t, 1, c.Waiters())

	c.Set(t0) // never backwards
	require.Equal(t, t0.Add(time.Second), c.Now())
	c.Set(t0.Add(time.Minute))
	require.Equal(t, t0.Add(2*time.Second), <-late.C(), "a timer fires with its due time")
	require.Zero(t, c.Waiters())
}

func TestFakeStopAndImmediate(t *testing.T) {
	t.Parallel()
	c := timer.NewFake(t0)
	tm := c.NewTimer(time.Second)
	require.True(t, tm.Stop())
	require.False(t, tm.Stop())
	c.Advance(time.Hour)
	select {
	case <-tm.C():
		t.Fatal("a stopped timer fired")
	default:
	}

	now := c.NewTimer(0)
	require.Equal(t, c.Now(), <-now.C())
	require.False(t, now.Stop())
}

func TestFakeTimerAdded(t *testing.T) {
	t.Parallel()
	c := timer.NewFake(t0)
	added := c.TimerAdded()
	done := make(chan time.Time)
	go func() { done <- <-c.NewTimer(time.Minute).C() }()
	<-added
	c.Advance(time.Minute)
	require.Equal(t, t0.Add(time.Minute), <-done)
}

func TestRealClock(t *testing.T) {
	t.Parallel()
	c := timer.Real()
	tm := c.NewTimer(time.Hour)
	require.True(t, tm.Stop())
	require.False(t, c.Now().IsZero())
}
