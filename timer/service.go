package timer

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync/atomic"
	"time"

	"github.com/goxpdl/goxpdl/internal/startstop"
	"github.com/goxpdl/goxpdl/store"
)

// Service defaults.
const (
	// DefaultBatchSize is how many timers one transaction fires at most.
	DefaultBatchSize = 500
	// MaxDispatchDelay bounds how long FireDue holds back the events of
	// timers it fired while more due timers wait to be fired.
	MaxDispatchDelay = time.Second
	// DefaultMaxWait is the longest the service sleeps between looks at
	// the database, for timers armed where it cannot hear of them (by
	// another node, or in a host's transaction).
	DefaultMaxWait = time.Second
)

// Errors of the service's life cycle, those of every background service
// of goxpdl (eventbus.ErrStarted and ErrStopped are the same values).
var (
	// ErrStarted is returned by Start when the Service was started before.
	ErrStarted = startstop.ErrStarted
	// ErrStopped is returned by Start after Stop: a Service is not
	// restarted.
	ErrStopped = startstop.ErrStopped
)

// FireFunc turns timers that fired into work, inside tx, the transaction
// that moved them to fired: usually events in the outbox. Whatever it
// returns as after runs once tx has committed (to dispatch the events).
// An error rolls the firing back; the timers fire again later.
type FireFunc func(ctx context.Context, tx store.Tx, fired []store.Timer) (after func(), err error)

// ServiceConfig configures a Service.
type ServiceConfig struct {
	// Store holds the timers; required.
	Store store.Store
	// Clock is the time source; required (Real() in production).
	Clock Clock
	// Fire receives every batch of fired timers; required.
	Fire FireFunc
	// Transact runs fn in a transaction; default Store.InTx. The engine
	// passes its own, so that firing shares its commit path.
	Transact func(ctx context.Context, fn func(ctx context.Context, tx store.Tx) error) error
	// BatchSize is the most timers fired per transaction; default
	// DefaultBatchSize.
	BatchSize int
	// MaxWait is the longest sleep between looks; default DefaultMaxWait.
	MaxWait time.Duration
	// Logger receives the service's logs; default slog.Default().
	Logger *slog.Logger
}

// ServiceStats are a Service's counters.
type ServiceStats struct {
	// Fired counts the timers fired by this service.
	Fired uint64
	// Rounds counts the transactions that fired at least one timer.
	Rounds uint64
	// Errors counts failed rounds (retried on the next look).
	Errors uint64
	// Busy says a round is in progress: from the first look for due
	// timers to the hand-over of what fired (FireDue). A caller that
	// waits for the engine to go quiet checks it after the timers and
	// before the scheduler.
	Busy bool
	// MaxLateness is the largest FiredAt - DueAt seen.
	MaxLateness time.Duration
	// Lateness counts the fired timers by FiredAt - DueAt: Lateness[i]
	// those not later than LatenessBounds[i] (and later than the bound
	// before), the last entry those later than every bound.
	Lateness [len(LatenessBounds) + 1]uint64
}

// LatenessBounds are the upper bounds of ServiceStats.Lateness's buckets.
var LatenessBounds = [...]time.Duration{
	10 * time.Millisecond, 50 * time.Millisecond, 100 * time.Millisecond, 250 * time.Millisecond,
	500 * time.Millisecond, time.Second, 2 * time.Second, 5 * time.Second,
}

// LatenessQuantile returns the upper bound of the bucket holding the q
// quantile (0 < q <= 1) of the lateness, and false when nothing fired or
// it lies beyond the last bound.
func (st ServiceStats) LatenessQuantile(q float64) (time.Duration, bool) {
	var total uint64
	for _, n := range st.Lateness {
		total += n
	}
	if total == 0 {
		return 0, false
	}
	rank := uint64(q * float64(total))
	if rank < 1 {
		rank = 1
	}
	var seen uint64
	for i, n := range st.Lateness[:len(LatenessBounds)] {
		if seen += n; seen >= rank {
			return LatenessBounds[i], true
		}
	}
	return 0, false
}

// Service fires durable timers: it sleeps until the earliest pending
// timer is due (or MaxWait, or an Armed call for an earlier one), then
// moves every due timer to fired and hands it to Fire in the same
// transaction, a batch at a time. A timer never fires before its DueAt
// by the Clock; it fires once: FireDueTimers hands each row to one
// caller, and the outbox event Fire writes is processed at least once
// under the outbox's lease. Timers overdue at Start (after downtime) fire
// at once, oldest first.
//
// It owns one goroutine between Start and Stop.
type Service struct {
	cfg ServiceConfig
	log *slog.Logger

	wake    chan struct{} // a pending wake-up; capacity 1
	planned atomic.Int64  // UnixNano of the planned wake-up; 0 when none

	fired, rounds, errs atomic.Uint64
	busy                atomic.Int32
	maxLate             atomic.Int64
	lateness            [len(LatenessBounds) + 1]atomic.Uint64

	life startstop.Service
}

// NewService returns a Service, or an error naming a missing field.
func NewService(cfg ServiceConfig) (*Service, error) {
	switch {
	case cfg.Store == nil:
		return nil, errors.New("timer: ServiceConfig.Store is required")
	case cfg.Clock == nil:
		return nil, errors.New("timer: ServiceConfig.Clock is required")
	case cfg.Fire == nil:
		return nil, errors.New("timer: ServiceConfig.Fire is required")
	case cfg.BatchSize < 0 || cfg.MaxWait < 0:
		return nil, fmt.Errorf("timer: negative BatchSize %d or MaxWait %v", cfg.BatchSize, cfg.MaxWait)
	}
	cfg.BatchSize = cmp.Or(cfg.BatchSize, DefaultBatchSize)
	cfg.MaxWait = cmp.Or(cfg.MaxWait, DefaultMaxWait)
	if cfg.Transact == nil {
		cfg.Transact = cfg.Store.InTx
	}
	s := &Service{cfg: cfg, log: cfg.Logger, wake: make(chan struct{}, 1)}
	if s.log == nil {
		s.log = slog.Default()
	}
	return s, nil
}

// Start starts the service's goroutine, which fires what is due at once.
// Cancelling ctx stops it as Stop does (Stop must still be called to wait
// for it). It returns ErrStarted when called twice and ErrStopped after
// Stop.
func (s *Service) Start(ctx context.Context) error {
	if err := s.life.Start(ctx, s.run); err != nil {
		return fmt.Errorf("timer: service: %w", err)
	}
	return nil
}

// Stop stops the goroutine and waits for it, including a firing in
// progress, or until ctx ends. It is idempotent and safe before Start
// (which then returns ErrStopped).
func (s *Service) Stop(ctx context.Context) error { return s.life.Stop(ctx) }

// Armed tells the service that a timer due at due was committed, so that
// it wakes up in time when it planned to sleep longer.
func (s *Service) Armed(due time.Time) {
	planned := s.planned.Load()
	if planned != 0 && due.UnixNano() >= planned {
		return
	}
	select {
	case s.wake <- struct{}{}:
	default:
	}
}

// Stats returns the service's counters.
func (s *Service) Stats() ServiceStats {
	st := ServiceStats{
		Fired: s.fired.Load(), Rounds: s.rounds.Load(), Errors: s.errs.Load(),
		MaxLateness: time.Duration(s.maxLate.Load()), Busy: s.busy.Load() > 0,
	}
	for i := range s.lateness {
		st.Lateness[i] = s.lateness[i].Load()
	}
	return st
}

func (s *Service) run(ctx context.Context) {
	for ctx.Err() == nil {
		s.planned.Store(0) // wake-ups during a round count
		if err := s.FireDue(ctx); err != nil && ctx.Err() == nil {
			s.errs.Add(1)
			s.log.WarnContext(ctx, "timer: firing failed; retrying", slog.Any("error", err))
		}
		wait := s.cfg.MaxWait
		next, ok, err := s.cfg.Store.NextTimerDue(ctx)
		if err != nil && ctx.Err() == nil {
			s.log.WarnContext(ctx, "timer: reading the next due time failed", slog.Any("error", err))
		}
		now := s.cfg.Clock.Now()
		if ok {
			wait = min(wait, max(next.Sub(now), 0))
		}
		s.planned.Store(now.Add(wait).UnixNano())
		t := s.cfg.Clock.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
		case <-s.wake:
			t.Stop()
		case <-t.C():
		}
	}
}

// observe counts one timer that fired late late.
func (s *Service) observe(late time.Duration) {
	for cur := s.maxLate.Load(); int64(late) > cur && !s.maxLate.CompareAndSwap(cur, int64(late)); cur = s.maxLate.Load() {
	}
	i := 0
	for i < len(LatenessBounds) && late > LatenessBounds[i] {
		i++
	}
	s.lateness[i].Add(1)
}

// FireDue fires every timer due now, a batch per transaction, until none
// is left; the service's goroutine calls it, and so may a caller that
// wants overdue timers fired before it goes on (recovery, tests).
//
// The work each batch hands on (FireFunc's after, which dispatches the
// fired timers' events) runs once every due timer has fired, or once
// firing has gone on for MaxDispatchDelay: a burst of timers due at the
// same instant is moved to the outbox first, so that processing the
// first batch's events does not hold up the firing of the rest.
func (s *Service) FireDue(ctx context.Context) error {
	s.busy.Add(1)
	defer s.busy.Add(-1) // after handOn: runs last
	var pending []func()
	var since time.Time
	handOn := func() {
		for _, after := range pending {
			after()
		}
		pending = pending[:0]
	}
	defer handOn() // what committed is handed on, whatever happens next
	for ctx.Err() == nil {
		now := s.cfg.Clock.Now()
		var fired []store.Timer
		var after func()
		err := s.cfg.Transact(ctx, func(ctx context.Context, tx store.Tx) error {
			var err error
			fired, err = tx.FireDueTimers(ctx, store.FireDueTimersParams{Now: now, Limit: s.cfg.BatchSize})
			if err != nil || len(fired) == 0 {
				return err
			}
			after, err = s.cfg.Fire(ctx, tx, fired)
			return err
		})
		if errors.Is(err, store.ErrConflict) {
			continue // another firer took some of these; look again
		}
		if err != nil {
			return err
		}
		if len(fired) == 0 {
			return nil
		}
		if after != nil {
			if len(pending) == 0 {
				since = now
			}
			pending = append(pending, after)
		}
		s.rounds.Add(1)
		s.fired.Add(uint64(len(fired)))
		for _, t := range fired {
			s.observe(now.Sub(t.DueAt))
		}
		if len(fired) < s.cfg.BatchSize {
			return nil
		}
		if len(pending) > 0 && s.cfg.Clock.Now().Sub(since) >= MaxDispatchDelay {
			handOn()
		}
	}
	return ctx.Err()
}
