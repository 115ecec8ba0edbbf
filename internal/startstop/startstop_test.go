package startstop_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/goxpdl/goxpdl/internal/startstop"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func TestStartRunsUntilStop(t *testing.T) {
	t.Parallel()
	var s startstop.Service
	ran := make(chan struct{})
	require.NoError(t, s.Start(t.Context(), func(ctx context.Context) {
		close(ran)
		<-ctx.Done()
	}))
	<-ran
	require.ErrorIs(t, s.Start(t.Context(), func(context.Context) {}), startstop.ErrStarted)
	require.NoError(t, s.Stop(t.Context()))
	require.NoError(t, s.Stop(t.Context()), "idempotent")
	require.ErrorIs(t, s.Start(t.Context(), func(context.Context) {}), startstop.ErrStopped)
}

func TestStopGivesUpWhenItsContextEnds(t *testing.T) {
	t.Parallel()
	var s startstop.Service
	release := make(chan struct{})
	require.NoError(t, s.Start(t.Context(), func(context.Context) { <-release }))
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	require.ErrorIs(t, s.Stop(ctx), context.Canceled, "the goroutine ignores its context")
	close(release)
	require.NoError(t, s.Stop(t.Context()), "and returns once it does")
}

func TestCancellingStartsContextStopsTheGoroutine(t *testing.T) {
	t.Parallel()
	var s startstop.Service
	ctx, cancel := context.WithCancel(t.Context())
	stopped := make(chan struct{})
	require.NoError(t, s.Start(ctx, func(ctx context.Context) {
		<-ctx.Done()
		close(stopped)
	}))
	cancel()
	<-stopped
	require.NoError(t, s.Stop(t.Context()))
}

func TestStopBeforeStartStopsForGood(t *testing.T) {
	t.Parallel()
	var s startstop.Service
	require.False(t, s.Running())
	require.NoError(t, s.Stop(t.Context()))
	require.ErrorIs(t, s.Start(t.Context(), func(context.Context) { t.Error("ran after Stop") }), startstop.ErrStopped)
	require.False(t, s.Running())
}
