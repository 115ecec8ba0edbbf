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
