package scheduler

import (
	"cmp"
	"container/list"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"runtime/debug"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/panjf2000/ants/v2"

	"github.com/goxpdl/goxpdl/eventbus"
	"github.com/goxpdl/goxpdl/internal/startstop"
	"github.com/goxpdl/goxpdl/store"
	"github.com/goxpdl/goxpdl/timer"
)

// Defaults of Config.
const (
	// DefaultCriticalWorkers is the default Config.CriticalWorkers.
	DefaultCriticalWorkers = 4
	// DefaultNormalWorkers is the default Config.NormalWorkers, the size
	// the normal pool starts at.
	DefaultNormalWorkers = 16
)

// ErrStarted is returned by Start when the Scheduler has been started
// before.
var ErrStarted = errors.New("scheduler: already started")

// ErrStopped is returned by Start when the Scheduler has been stopped; a
// Scheduler is not restarted.
var ErrStopped = errors.New("scheduler: stopped")

// Handler handles one event. It returns nil when the event is applied
// (and marked processed in the outbox), or an error to leave it for the
// bus to deliver again. ctx is cancelled only on a hard stop.
type Handler func(ctx context.Context, ev store.Event) error

// Config is the long-lived configuration of a Scheduler.
type Config struct {
	// Handler handles each event; required.
	Handler Handler
	// CriticalWorkers is the size of the critical pool, which runs process
	// control (terminate, suspend, resume), deadlines and recovery;
	// default DefaultCriticalWorkers. The critical pool keeps this size:
	// it is never resized.
	CriticalWorkers int
	// NormalWorkers is the size the normal pool starts at; it runs
	// activity work and application calls. Default DefaultNormalWorkers,
	// lowered to NormalWorkersMax or raised to NormalWorkersMin when one
	// of them excludes it; set explicitly, it must lie between them.
	NormalWorkers int
	// NormalWorkersMin is the smallest the controller shrinks the normal
	// pool to; default NormalWorkers.
	NormalWorkersMin int
	// NormalWorkersMax is the largest the controller grows the normal
	// pool to; default DefaultNormalWorkersMax, or NormalWorkers when
	// that is larger. When it equals NormalWorkersMin the pool is fixed
	// and no controller runs.
	NormalWorkersMax int
	// AdaptInterval is how often the controller samples the normal pool's
	// load and resizes it; default DefaultAdaptInterval.
	AdaptInterval time.Duration
	// Clock times the controller's samples; default timer.Real().
	Clock timer.Clock
	// Logger receives handler failures and panics; default slog.Default().
	Logger *slog.Logger
}

// ConfigError reports a Config that New refuses.
type ConfigError struct {
	// Field names the offending field of Config.
	Field string
	// Msg says what is wrong with it.
	Msg string
}

func (e *ConfigError) Error() string {
	return fmt.Sprintf("scheduler: config: %s %s", e.Field, e.Msg)
}

// Stats is a snapshot of a Scheduler's counters and queues.
type Stats struct {
	// EventsProcessed counts the events whose Handler returned nil.
	EventsProcessed uint64
	// EventsFailed counts the events whose Handler returned an error or
	// panicked.
	EventsFailed uint64
	// EventsDuplicate counts the deliveries dropped as duplicates.
	EventsDuplicate uint64
	// EventsDropped counts the events given up unhandled: delivered while
	// stopping or after, left queued by a hard stop, or without an ID.
	EventsDropped uint64
	// QueueDepth is the number of events queued and not yet handled.
	QueueDepth int
	// CriticalRunning is the number of handlers running on the critical
	// pool.
	CriticalRunning int
	// CriticalWaiting is the number of mailboxes (and events without a
	// process instance) waiting for a worker of the critical pool.
	CriticalWaiting int
	// NormalRunning is the number of handlers running on the normal pool.
	NormalRunning int
	// NormalWaiting is the number of mailboxes (and events without a
	// process instance) waiting for a worker of the normal pool.
	NormalWaiting int
	// Mailboxes is the number of process instances with queued events.
	Mailboxes int
	// CriticalWorkers is the size of the critical pool (fixed).
	CriticalWorkers int
	// NormalWorkers is the current size of the normal pool.
	NormalWorkers int
	// NormalWorkersMin and NormalWorkersMax bound NormalWorkers; they
	// are equal when the pool is fixed.
	NormalWorkersMin, NormalWorkersMax int
}

type lifecycle int

const (
	stateNew lifecycle = iota
	stateRunning
	stateStopping
	stateStopped
)

// Scheduler runs a Handler for each delivered event: one at a time and in
// ID order per process instance, in parallel across instances, on the
// critical or the normal pool. Its methods are safe for concurrent use.
type Scheduler struct {
	handler Handler
	logger  *slog.Logger
	clock   timer.Clock

	// The normal pool's bounds and the controller's settings; the
	// current sizes are in workers, guarded by mu.
	normalMin, normalMax int
	adaptEvery           time.Duration
	cpuFunc              func() (time.Duration, bool) // the process's CPU time so far
	adapter              startstop.Service            // the controller's goroutine
	adaptHook            func(from, to int)           // tests only: called after each sample

	processed, failed, duplicates, dropped atomic.Uint64

	wake     [numPools]chan struct{}     // a feeder has work; capacity 1
	stopped  chan struct{}               // closed when Stop has finished
	feeders  [numPools]startstop.Service // one goroutine per pool
	stopHook func()                      // tests only: called when Stop begins to drain

	mu      sync.Mutex
	state   lifecycle
	workers [numPools]int // the pools' current sizes
	meter   loadMeter     // the normal pool's load since the last sample
	pools   [numPools]*ants.Pool
	ctx     context.Context // the handlers' ctx, derived from Start's
	cancel  context.CancelFunc

	mailboxes   map[int64]*mailbox
	idle        list.List // idle mailboxes, most recently used first
	looseIDs    map[int64]struct{}
	looseRecent recentIDs
	runq        [numPools]runQueue
	waiting     [numPools]int // live run queue entries, and entries being submitted
	running     [numPools]int // handlers running
	queued      int           // events queued, not yet handled
	nonEmpty    int           // mailboxes with queued events
	dropping    bool          // a hard stop: queued work is given up
	idleCh      chan struct{} // closed while nothing is queued or running
	isIdle      bool
}

// The Scheduler takes events off the bus.
var _ eventbus.Sink = (*Scheduler)(nil)

// New returns a Scheduler. It returns a *ConfigError when Handler is
// missing, a pool size or AdaptInterval is negative, or the normal pool's
// sizes contradict each other; zero values take their defaults.
func New(cfg Config) (*Scheduler, error) {
	switch {
	case cfg.Handler == nil:
		return nil, &ConfigError{Field: "Handler", Msg: "is required"}
	case cfg.CriticalWorkers < 0:
		return nil, &ConfigError{Field: "CriticalWorkers", Msg: fmt.Sprintf("is %d, want >= 0", cfg.CriticalWorkers)}
	case cfg.AdaptInterval < 0:
		return nil, &ConfigError{Field: "AdaptInterval", Msg: fmt.Sprintf("is %s, want >= 0", cfg.AdaptInterval)}
	}
	start, lo, hi, err := normalSizes(cfg)
	if err != nil {
		return nil, err
	}
	s := &Scheduler{
		handler:     cfg.Handler,
		logger:      cfg.Logger,
		clock:       cfg.Clock,
		normalMin:   lo,
		normalMax:   hi,
		adaptEvery:  cmp.Or(cfg.AdaptInterval, DefaultAdaptInterval),
		cpuFunc:     processCPU,
		stopped:     make(chan struct{}),
		mailboxes:   make(map[int64]*mailbox),
		looseIDs:    make(map[int64]struct{}),
		looseRecent: newRecentIDs(recentLoose),
		idleCh:      make(chan struct{}),
		isIdle:      true,
	}
	close(s.idleCh)
	if s.logger == nil {
		s.logger = slog.Default()
	}
	if s.clock == nil {
		s.clock = timer.Real()
	}
	s.workers[critical] = cmp.Or(cfg.CriticalWorkers, DefaultCriticalWorkers)
	s.workers[normal] = start
	for p := range numPools {
		s.wake[p] = make(chan struct{}, 1)
	}
	return s, nil
}

// Deliver queues events in their instances' mailboxes and returns at once;
// it never waits for a pool. Duplicates of events queued, running or
// lately handled are dropped. Events delivered before Start wait for it;
// events delivered once Stop has begun are dropped (logged), to come back
// through the bus after their lease. Deliver implements eventbus.Sink.
func (s *Scheduler) Deliver(events []store.Event) {
	if len(events) == 0 {
		return
	}
	var refused, noID int
	s.mu.Lock()
	if s.state >= stateStopping || s.dropping || (s.ctx != nil && s.ctx.Err() != nil) {
		refused = len(events)
	} else {
		for _, ev := range events {
			switch {
			case ev.ID <= 0:
				noID++
			case ev.ProcessInstanceID == 0:
				s.deliverLooseLocked(ev)
			default:
				s.deliverLocked(ev)
			}
		}
		s.updateIdleLocked()
	}
	s.mu.Unlock()

	if refused > 0 {
		s.dropped.Add(uint64(refused))
		s.logger.Warn("scheduler: stopping; events dropped, the bus delivers them again after their lease",
			slog.Int("events", refused))
	}
	if noID > 0 {
		s.dropped.Add(uint64(noID))
		s.logger.Error("scheduler: events without an ID dropped; deliver stored events only", slog.Int("events", noID))
	}
}

// Queued returns how many events of the process instance wait in its
// mailbox, not counting the one being handled. The engine asks before it
// processes an event of an instance in the transaction of the step that
// sent it (a chain): only when nothing else waits, so that events are
// still handled in the order a mailbox would have handed them out.
func (s *Scheduler) Queued(instance int64) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	if mb := s.mailboxes[instance]; mb != nil {
		return len(mb.events)
	}
	return 0
}

// CriticalWaiting returns how many mailboxes wait for a worker of the
// critical pool. A chain that runs in a critical worker (the steps after
// an instance's process.schedule) stops when another waits, so that
// process control is not kept waiting behind an instance's steps.
func (s *Scheduler) CriticalWaiting() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.waiting[critical]
}

// deliverLocked queues an event of a process instance in its mailbox.
func (s *Scheduler) deliverLocked(ev store.Event) {
	mb := s.mailboxes[ev.ProcessInstanceID]
	if mb == nil {
		mb = &mailbox{instance: ev.ProcessInstanceID, recent: newRecentIDs(recentPerMailbox)}
		s.mailboxes[ev.ProcessInstanceID] = mb
	}
	if mb.holds(ev.ID) {
		s.duplicates.Add(1)
		return
	}
	if mb.idle != nil {
		s.idle.Remove(mb.idle)
		mb.idle = nil
	}
	if len(mb.events) == 0 {
		s.nonEmpty++
	}
	mb.insert(ev)
	s.queued++
	s.scheduleLocked(mb)
}

// deliverLooseLocked queues an event without a process instance on its
// own.
func (s *Scheduler) deliverLooseLocked(ev store.Event) {
	if _, ok := s.looseIDs[ev.ID]; ok || s.looseRecent.has(ev.ID) {
		s.duplicates.Add(1)
		return
	}
	s.looseIDs[ev.ID] = struct{}{}
	s.queued++
	p := poolOf(ev)
	s.waiting[p]++
	s.runq[p].push(entry{ev: ev})
	s.signal(p)
}

// scheduleLocked puts a mailbox with queued events in the run queue of
// its head's pool, unless it is already there or busy.
func (s *Scheduler) scheduleLocked(mb *mailbox) {
	want := poolOf(mb.events[0])
	switch mb.sched {
	case schedBusy:
		return // run requeues it when the running event is done
	case schedQueued:
		if mb.pool == want {
			return
		}
		s.waiting[mb.pool]-- // its entry there goes stale
	case schedNone:
	}
	mb.sched, mb.pool = schedQueued, want
	mb.ticket++
	s.waiting[want]++
	s.runq[want].push(entry{mb: mb, ticket: mb.ticket})
	s.signal(want)
}

// retireLocked keeps an idle mailbox (nothing queued or running) for its
// memory of handled IDs, dropping the least recently used beyond the
// bound.
func (s *Scheduler) retireLocked(mb *mailbox) {
	if mb.idle != nil {
		return
	}
	if len(mb.recent.ring) == 0 {
		delete(s.mailboxes, mb.instance) // nothing to remember
		return
	}
	mb.idle = s.idle.PushFront(mb)
	for s.idle.Len() > idleMailboxesKept {
		old, _ := s.idle.Remove(s.idle.Back()).(*mailbox)
		old.idle = nil
		delete(s.mailboxes, old.instance)
	}
}

// signal tells the feeder of pool p that there is work.
func (s *Scheduler) signal(p pool) {
	select {
	case s.wake[p] <- struct{}{}:
	default:
	}
}

// updateIdleLocked opens or closes idleCh as work comes and goes.
func (s *Scheduler) updateIdleLocked() {
	idle := s.queued == 0 && s.running[critical] == 0 && s.running[normal] == 0
	switch {
	case idle && !s.isIdle:
		close(s.idleCh)
		s.isIdle = true
	case !idle && s.isIdle:
		s.idleCh = make(chan struct{})
		s.isIdle = false
	}
}

// Start creates the two pools and starts their feeders; events delivered
// so far start to run. Handlers receive a ctx derived from ctx, which is
// cancelled on a hard stop; cancelling ctx is itself a hard stop (the
// handlers' ctx is cancelled and no further event is started), and Stop
// must still be called to release the pools. Start returns ErrStarted when
// called twice and ErrStopped after Stop.
func (s *Scheduler) Start(ctx context.Context) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	switch s.state {
	case stateNew:
	case stateStopped:
		return ErrStopped
	default:
		return ErrStarted
	}
	for p := range numPools {
		pl, err := ants.NewPool(s.workers[p],
			ants.WithLogger(antsLogger{s.logger}),
			ants.WithPanicHandler(s.poolPanic),
		)
		if err != nil {
			for _, started := range s.pools[:p] {
				started.Release()
			}
			return fmt.Errorf("scheduler: start the %s pool: %w", p, err)
		}
		s.pools[p] = pl
	}
	s.ctx, s.cancel = context.WithCancel(ctx)
	s.state = stateRunning
	// The goroutines run on the handlers' ctx: the hard stop (Start's ctx,
	// or Stop's cancel) ends them too. Neither Service was started
	// before (state was stateNew), so their Start cannot fail.
	for p := range numPools {
		_ = s.feeders[p].Start(s.ctx, func(ctx context.Context) { s.feed(ctx, p) })
	}
	if s.adaptive() {
		now := s.clock.Now()
		s.meter = loadMeter{since: now, last: now}
		_ = s.adapter.Start(s.ctx, s.adapt)
	}
	return nil
}

// Stop stops the Scheduler gracefully: it takes no new events, lets what
// is queued and running finish, releases both pools and waits for every
// goroutine it started. When ctx ends before the drain has finished, Stop
// gives up: it drops the queued events (the bus delivers them again after
// their lease), cancels the running handlers' ctx, waits for them to
// return, releases the pools and returns ctx.Err(); a handler that ignores
// its ctx holds Stop up. After a hard stop by Start's ctx, Stop does the
// same but returns nil.
//
// Stop is idempotent and safe before Start; a concurrent or later call
// waits for the first to finish (or for its own ctx to end). A stopped
// Scheduler cannot be started again.
func (s *Scheduler) Stop(ctx context.Context) error {
	s.mu.Lock()
	switch s.state {
	case stateNew:
		s.state = stateStopped
		s.dropQueuedLocked()
		s.mu.Unlock()
		close(s.stopped)
		return nil
	case stateStopping, stateStopped:
		s.mu.Unlock()
		select {
		case <-s.stopped:
			return nil
		case <-ctx.Done():
			return ctx.Err()
		}
	case stateRunning:
	}
	s.state = stateStopping
	idle := s.idleCh
	s.mu.Unlock()
	if s.stopHook != nil {
		s.stopHook()
	}

	var err error
	select {
	case <-idle:
	case <-s.ctx.Done(): // Start's ctx: a hard stop was asked for already
	case <-ctx.Done():
		select {
		case <-idle: // drained just in time
		default:
			err = ctx.Err()
		}
	}

	s.mu.Lock()
	s.dropQueuedLocked()
	s.mu.Unlock()
	// The handlers' ctx ends the feeders and the controller too. The
	// controller is waited for first: no Tune once the pools are released.
	s.cancel()
	_ = s.adapter.Stop(context.Background())
	for p, pl := range s.pools {
		// Waits for the running handlers and the pool's own goroutines.
		if rerr := pl.ReleaseContext(context.Background()); rerr != nil {
			s.logger.Error("scheduler: release pool", slog.String("pool", pool(p).String()), slog.Any("error", rerr))
		}
	}
	for p := range s.feeders {
		// Waits: a feeder blocked in Submit returns once its pool is
		// released.
		_ = s.feeders[p].Stop(context.Background())
	}

	s.mu.Lock()
	s.state = stateStopped
	s.mu.Unlock()
	close(s.stopped)
	return err
}

// dropQueuedLocked gives up every queued event (a hard stop, or Stop
// before Start). Running handlers are left to finish.
func (s *Scheduler) dropQueuedLocked() {
	s.dropping = true
	var n int
	for _, mb := range s.mailboxes {
		if len(mb.events) > 0 {
			n += len(mb.events)
			mb.events = nil
			s.nonEmpty--
		}
		if mb.sched == schedQueued {
			mb.sched = schedNone
			s.waiting[mb.pool]--
		}
		if mb.sched == schedNone && mb.current == 0 {
			s.retireLocked(mb)
		}
	}
	for p := range numPools {
		q := &s.runq[p]
		for _, e := range q.items[q.head:] {
			if e.mb == nil {
				delete(s.looseIDs, e.ev.ID)
				s.waiting[p]--
				n++
			}
		}
		q.clear()
	}
	s.queued -= n
	s.dropped.Add(uint64(n))
	s.updateIdleLocked()
	if n > 0 {
		s.logger.Warn("scheduler: hard stop; queued events dropped, the bus delivers them again after their lease",
			slog.Int("events", n))
	}
}

// WaitIdle returns nil once nothing is queued or running, or ctx.Err()
// when ctx ends first. Events that handlers deliver while they run keep
// the Scheduler busy: it is idle only when they are done too.
func (s *Scheduler) WaitIdle(ctx context.Context) error {
	s.mu.Lock()
	idle := s.idleCh
	s.mu.Unlock()
	select {
	case <-idle:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// Backlog returns how many delivered events are queued and not yet
// handled (Stats' QueueDepth). It implements eventbus.BacklogSink: the
// bus leaves normal events in the outbox while the backlog is at its
// bound, so that a burst waits there rather than in memory.
func (s *Scheduler) Backlog() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.queued
}

// Stats returns a snapshot of the counters and queues.
func (s *Scheduler) Stats() Stats {
	s.mu.Lock()
	defer s.mu.Unlock()
	return Stats{
		EventsProcessed: s.processed.Load(),
		EventsFailed:    s.failed.Load(),
		EventsDuplicate: s.duplicates.Load(),
		EventsDropped:   s.dropped.Load(),
		QueueDepth:      s.queued,
		CriticalRunning: s.running[critical],
		CriticalWaiting: s.waiting[critical],
		NormalRunning:   s.running[normal],
		NormalWaiting:   s.waiting[normal],
		Mailboxes:       s.nonEmpty,

		CriticalWorkers:  s.workers[critical],
		NormalWorkers:    s.workers[normal],
		NormalWorkersMin: s.normalMin,
		NormalWorkersMax: s.normalMax,
	}
}

// feed is the feeder of pool p: it takes entries off the pool's run queue
// and submits them, waiting while the pool is busy.
func (s *Scheduler) feed(ctx context.Context, p pool) {
	for ctx.Err() == nil {
		s.mu.Lock()
		e, ok := s.takeLocked(p)
		s.mu.Unlock()
		if !ok {
			select {
			case <-s.wake[p]:
			case <-ctx.Done():
				return
			}
			continue
		}
		if err := s.pools[p].Submit(func() { s.run(p, e) }); err != nil {
			s.abandon(p, e, err)
		}
	}
}

// takeLocked pops the next live entry of pool p's run queue.
func (s *Scheduler) takeLocked(p pool) (entry, bool) {
	for {
		e, ok := s.runq[p].pop()
		if !ok {
			return entry{}, false
		}
		if e.mb == nil {
			return e, true
		}
		if e.mb.sched != schedQueued || e.mb.ticket != e.ticket {
			continue // the mailbox moved to the other pool
		}
		e.mb.sched = schedBusy
		return e, true
	}
}

// abandon gives up an entry the pool refused (it was released by a hard
// stop).
func (s *Scheduler) abandon(p pool, e entry, err error) {
	s.mu.Lock()
	s.waiting[p]--
	var n int
	if mb := e.mb; mb != nil {
		if n = len(mb.events); n > 0 {
			mb.events = nil
			s.nonEmpty--
		}
		mb.sched = schedNone
		s.retireLocked(mb)
	} else {
		delete(s.looseIDs, e.ev.ID)
		n = 1
	}
	s.queued -= n
	s.dropped.Add(uint64(n))
	s.updateIdleLocked()
	s.mu.Unlock()
	if n > 0 {
		s.logger.Warn("scheduler: pool refused work; events dropped, the bus delivers them again after their lease",
			slog.String("pool", p.String()), slog.Int("events", n), slog.Any("error", err))
	}
}

// run is the task submitted to pool p: it handles the head of a mailbox,
// or an event without a process instance, and requeues the mailbox when
// more is queued.
func (s *Scheduler) run(p pool, e entry) {
	s.mu.Lock()
	s.waiting[p]--
	mb, ev := e.mb, e.ev
	switch {
	case mb != nil && len(mb.events) == 0: // dropped by a hard stop
		mb.sched = schedNone
		s.retireLocked(mb)
		s.mu.Unlock()
		return
	case mb == nil && s.dropping:
		delete(s.looseIDs, ev.ID)
		s.queued--
		s.dropped.Add(1)
		s.updateIdleLocked()
		s.mu.Unlock()
		return
	case mb != nil:
		ev = mb.pop()
		if len(mb.events) == 0 {
			s.nonEmpty--
		}
		mb.current = ev.ID
	}
	s.queued--
	s.meterLocked(p, 1)
	s.running[p]++
	s.mu.Unlock()

	err := s.handle(p, ev)

	s.mu.Lock()
	defer s.mu.Unlock()
	s.meterLocked(p, -1)
	s.running[p]--
	if err == nil {
		s.processed.Add(1)
	} else {
		s.failed.Add(1)
	}
	if mb == nil {
		delete(s.looseIDs, ev.ID)
		if err == nil {
			s.looseRecent.add(ev.ID)
		}
	} else {
		mb.current = 0
		if err == nil {
			mb.recent.add(ev.ID)
		}
		mb.sched = schedNone
		if len(mb.events) > 0 {
			s.scheduleLocked(mb)
		} else {
			s.retireLocked(mb)
		}
	}
	s.updateIdleLocked()
}

// handle calls the Handler, turning a panic into an error; both are
// logged.
func (s *Scheduler) handle(p pool, ev store.Event) (err error) {
	attrs := func(extra ...slog.Attr) []any {
		args := []any{
			slog.Int64("event", ev.ID), slog.String("event_id", ev.EventID),
			slog.Int64("instance", ev.ProcessInstanceID), slog.String("kind", ev.Kind),
			slog.String("pool", p.String()),
		}
		for _, a := range extra {
			args = append(args, a)
		}
		return args
	}
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("scheduler: handler panicked: %v", r)
			s.logger.Error("scheduler: handler panicked; the event comes back after its lease",
				attrs(slog.Any("panic", r), slog.String("stack", string(debug.Stack())))...)
		}
	}()
	if err := s.handler(s.ctx, ev); err != nil {
		s.logger.Warn("scheduler: handler failed; the event comes back after its lease", attrs(slog.Any("error", err))...)
		return err
	}
	return nil
}

// poolPanic reports a panic that escaped a task: a bug in the Scheduler,
// since handle recovers the Handler's.
func (s *Scheduler) poolPanic(v any) {
	s.logger.Error("scheduler: internal panic in a pool task", slog.Any("panic", v), slog.String("stack", string(debug.Stack())))
}

// antsLogger sends the pools' own messages to the Scheduler's logger.
type antsLogger struct{ logger *slog.Logger }

func (l antsLogger) Printf(format string, args ...any) {
	l.logger.Warn("scheduler: ants: " + strings.TrimSpace(fmt.Sprintf(format, args...)))
}
