package timer_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/goxpdl/goxpdl/timer"
)

func TestPeriodicRunsAtOnceThenEveryInterval(t *testing.T) {
	t.Parallel()
	clock := timer.NewFake(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	runs := make(chan struct{}, 10)
	p := timer.NewPeriodic(clock, time.Minute, func(context.Context) { runs <- struct{}{} })
	added := clock.TimerAdded()
	p.Start(t.Context())
	<-runs // at once
	<-added
	clock.Advance(time.Minute)
	<-runs // after the interval
	p.Now()
	<-runs // asked for
	require.NoError(t, p.Stop(t.Context()))
	require.NoError(t, p.Stop(t.Context()), "Stop is idempotent")
	require.Empty(t, runs, "no run after Stop")
}

func TestPeriodicStoppedBeforeStartNeverRuns(t *testing.T) {
	t.Parallel()
	clock := timer.NewFake(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	p := timer.NewPeriodic(clock, time.Minute, func(context.Context) { t.Error("ran after Stop") })
	require.NoError(t, p.Stop(t.Context()), "Stop before Start")
	p.Start(t.Context()) // does nothing: a stopped Periodic stays stopped
	require.NoError(t, p.Stop(t.Context()))
}

// Busy covers every moment a run is to be made: going, asked for, or due
// on the clock before the goroutine has woken for it.
func TestPeriodicBusy(t *testing.T) {
	t.Parallel()
	clock := timer.NewFake(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	ran := make(chan struct{}, 10)
	gate := make(chan struct{})
	p := timer.NewPeriodic(clock, time.Minute, func(context.Context) {
		ran <- struct{}{}
		<-gate
	})
	require.False(t, p.Busy(), "before Start")
	added := clock.TimerAdded()
	p.Start(t.Context())
	<-ran
	require.True(t, p.Busy(), "running")
	gate <- struct{}{}
	<-added // the next run is armed, and the run over
	require.False(t, p.Busy(), "between runs")
	clock.Advance(time.Minute - time.Nanosecond)
	require.False(t, p.Busy(), "before the interval has passed")
	clock.Advance(time.Nanosecond)
	require.True(t, p.Busy(), "due, whether or not the run has begun")
	<-ran
	p.Now() // asked for while a run is going: another run follows
	added = clock.TimerAdded()
	gate <- struct{}{}
	<-added
	require.True(t, p.Busy(), "asked for")
	<-ran
	added = clock.TimerAdded()
	gate <- struct{}{}
	<-added
	require.False(t, p.Busy(), "done")
	require.NoError(t, p.Stop(t.Context()))
	require.False(t, p.Busy(), "after Stop")
	require.Empty(t, ran)
}
