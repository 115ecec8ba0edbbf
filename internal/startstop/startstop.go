// Package startstop is the one life cycle of goxpdl's background
// goroutines: a Service is started once, runs one function on a goroutine
// it owns, and is stopped by cancelling that function's context and
// waiting for it to return.
package startstop

import (
	"context"
	"errors"
	"sync"
)

// ErrStarted is returned by Start when the Service runs already.
var ErrStarted = errors.New("already started")

// ErrStopped is returned by Start after Stop: a Service that ran is not
// started again.
var ErrStopped = errors.New("stopped")

// Service owns one goroutine between Start and Stop. The zero value is
// ready to use.
type Service struct {
	mu      sync.Mutex
	started bool
	stopped bool
	cancel  context.CancelFunc
	done    chan struct{}
}

// Start runs run on a new goroutine with a context that Stop cancels, as
// does cancelling ctx (Stop must still be called to wait for it). It
// returns ErrStarted when the Service was started before and ErrStopped
// after Stop.
func (s *Service) Start(ctx context.Context, run func(ctx context.Context)) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	switch {
	case s.stopped:
		return ErrStopped
	case s.started:
		return ErrStarted
	}
	runCtx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	s.started, s.cancel, s.done = true, cancel, done
	go func() {
		defer close(done)
		run(runCtx)
	}()
	return nil
}

// Stop cancels the goroutine's context and waits for it to return, or
// returns ctx.Err() when ctx ends first (the goroutine is told to stop all
// the same). It is idempotent; before Start it does nothing.
func (s *Service) Stop(ctx context.Context) error {
	s.mu.Lock()
	if !s.started {
		s.mu.Unlock()
		return nil
	}
	s.stopped = true
	s.cancel()
	done := s.done
	s.mu.Unlock()
	select {
	case <-done:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}
