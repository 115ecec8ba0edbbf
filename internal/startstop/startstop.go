// Package startstop is the one life cycle of goxpdl's background
// goroutines: a Service is started once, runs one function on a goroutine
// it owns, and is stopped by cancelling that function's context and
// waiting for it to return. The event bus's poller, the timer service,
// timer.Periodic and timer.Calendar, the scheduler's feeders and
// controller, and a node's lease renewer (recovery.Membership) are each
// one Service (docs/architecture.md, "Goroutines and their owners").
//
// The rules are those every owner of a goroutine in goxpdl keeps: Start
// runs the goroutine once; Stop is idempotent, safe before Start, and
// waits until the goroutine has returned (or its own ctx ends); a
// stopped Service is not started again.
package startstop

import (
	"context"
	"errors"
	"sync"
)

// ErrStarted is returned by Start when the Service runs already.
var ErrStarted = errors.New("already started")

// ErrStopped is returned by Start after Stop (also a Stop before any
// Start): a Service that was stopped is not started again.
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

// Running reports whether the goroutine was started and Stop has not been
// called yet (it may have returned by itself meanwhile, or be returning
// after its Start's ctx ended).
func (s *Service) Running() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.started && !s.stopped
}

// Stop cancels the goroutine's context and waits for it to return, or
// returns ctx.Err() when ctx ends first (the goroutine is told to stop all
// the same). It is idempotent. Before Start it only marks the Service
// stopped, so that a later Start returns ErrStopped.
func (s *Service) Stop(ctx context.Context) error {
	s.mu.Lock()
	s.stopped = true
	if s.cancel != nil {
		s.cancel()
	}
	done := s.done
	s.mu.Unlock()
	if done == nil {
		return nil
	}
	select {
	case <-done:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}
