package timer_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/goxpdl/goxpdl/timer"
)

func TestCalendarRunsAtTheScheduleTimes(t *testing.T) {
	t.Parallel()
	start := time.Date(2026, 1, 1, 0, 10, 0, 0, time.UTC)
	clock := timer.NewFake(start)
	sched, err := timer.ParseCron("@hourly", time.UTC)
	require.NoError(t, err)
	runs := make(chan time.Time, 10)
	c := timer.NewCalendar(clock, sched, func(context.Context) { runs <- clock.Now() })
	stopped := timer.NewCalendar(clock, sched, func(context.Context) { t.Error("ran after Stop") })
	require.NoError(t, stopped.Stop(t.Context()), "Stop before Start")
	stopped.Start(t.Context()) // does nothing, and leaves no timer armed

	added := clock.TimerAdded()
	c.Start(t.Context())
	c.Start(t.Context()) // a second Start does nothing
	<-added
	require.Empty(t, runs, "no run at Start")
	clock.Advance(49 * time.Minute)
	require.Empty(t, runs, "not before the schedule's time")

	added = clock.TimerAdded()
	clock.Advance(time.Minute) // 01:00
	require.Equal(t, start.Add(50*time.Minute), <-runs)
	<-added

	// A jump over several times runs once, then goes on with the
	// schedule's next time after the jump.
	added = clock.TimerAdded()
	clock.Advance(3 * time.Hour) // 04:00
	require.Equal(t, start.Add(50*time.Minute+3*time.Hour), <-runs)
	<-added
	require.Empty(t, runs)

	require.NoError(t, c.Stop(t.Context()))
	require.NoError(t, c.Stop(t.Context()), "Stop is idempotent")
	clock.Advance(time.Hour)
	require.Empty(t, runs, "no run after Stop")
}

// A run in progress has its ctx cancelled by Stop, which waits for it.
func TestCalendarStopCancelsARun(t *testing.T) {
	t.Parallel()
	clock := timer.NewFake(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	sched, err := timer.ParseCron("@every 1m", time.UTC)
	require.NoError(t, err)
	running, ended := make(chan struct{}), make(chan struct{})
	c := timer.NewCalendar(clock, sched, func(ctx context.Context) {
		close(running)
		<-ctx.Done()
		close(ended)
	})
	added := clock.TimerAdded()
	c.Start(t.Context())
	<-added
	clock.Advance(time.Minute)
	<-running
	require.NoError(t, c.Stop(t.Context()))
	select {
	case <-ended:
	default:
		t.Fatal("Stop returned before the run ended")
	}
}
