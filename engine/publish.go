package engine

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/goxpdl/goxpdl/sink"
	"github.com/goxpdl/goxpdl/store"
	"github.com/goxpdl/goxpdl/timer"
)

// Publishing records to a sink (Config.Publish, docs/sinks.md).
//
// The durable path has two halves. In the transaction of every step, flush
// writes the step's records to the publication outbox
// (store.Publications), keyed for order by the instance's version: the
// version the step commits is greater than every earlier step's, on any
// node, whatever the nodes' clocks say. The publisher (one goroutine, a
// timer.Periodic owned by the engine) reads the waiting records, a batch
// at a time, as a prefix of each instance's order, hands them to the
// sink, and deletes them once the sink returned nil; nothing is marked,
// so no record can be skipped, and a failure leaves the batch to be
// published again, with the same IDs. One node of those sharing the
// database publishes at a time: the holder of the lease publishLease,
// renewed before every batch and after every Publish, and fencing the
// delete. The other nodes keep looking at the backlog, for Stats, and
// take the lease over when its holder stops or dies.

// publishLease names the publisher's lease (store.Tx.AcquireLease).
const publishLease = "publisher"

// The publisher's defaults (Config.PublishInterval, PublishBatch,
// PublishLease).
const (
	DefaultPublishInterval = time.Second
	DefaultPublishBatch    = 500
	DefaultPublishLease    = 30 * time.Second
)

// maxPublishBackoff bounds the wait after failed Publish calls.
const maxPublishBackoff = time.Minute

// maxPublishCount bounds the count of waiting records a look makes.
const maxPublishCount = 1_000_000

// PublishStats are the publisher's counters and its view of the
// publication outbox (Stats.Publish).
type PublishStats struct {
	// Enabled says a sink is configured (Config.Publish); everything
	// else is zero without one.
	Enabled bool
	// Holding says this node holds the publisher's lease: it is the one
	// publishing, of the nodes sharing the database.
	Holding bool
	// Published counts the records this node published (the sink
	// accepted them); Failures the Publish calls of this node that
	// failed.
	Published uint64
	Failures  uint64
	// LastError is the error of the last failed Publish call, until a
	// call succeeds; "" when the last call succeeded.
	LastError string
	// Pending counts the records waiting to be published, of every node,
	// as of this node's last look (at most a million are counted); Lag
	// is the age of the oldest of them then, by the engine's clock: how
	// far the sink is behind. Both are 0 when nothing waits.
	Pending int64
	Lag     time.Duration
}

// publisher is the goroutine that hands the publication outbox to the
// sink (see above). Only its Periodic's goroutine runs pass; Stats reads
// its state under mu.
type publisher struct {
	e        *Engine
	sink     sink.Sink
	periodic *timer.Periodic
	batch    int
	lease    time.Duration
	interval time.Duration

	published, failures atomic.Uint64

	mu sync.Mutex
	// holding says this node holds the lease, until heldUntil; triedAt
	// is when it last asked for it, and otherHolds that another node had
	// it then.
	holding, otherHolds bool
	heldUntil, triedAt  time.Time
	// failing counts the Publish calls failed in a row; none is made
	// before retryAt (a backoff); lastErr is the last one's error.
	failing int
	retryAt time.Time
	lastErr string
	// pending and oldest are the backlog as of the look at lookedAt.
	pending          int64
	oldest, lookedAt time.Time
}

// newPublisher returns the publisher of cfg.Publish, or nil when there is
// no sink: then nothing is written and nothing runs.
func newPublisher(e *Engine, cfg Config) (*publisher, error) {
	if cfg.Publish == nil {
		return nil, nil
	}
	switch {
	case cfg.PublishInterval < 0:
		return nil, fmt.Errorf("%w: Config.PublishInterval is %v, want > 0", ErrConfig, cfg.PublishInterval)
	case cfg.PublishBatch < 0:
		return nil, fmt.Errorf("%w: Config.PublishBatch is %d, want > 0", ErrConfig, cfg.PublishBatch)
	case cfg.PublishLease < 0:
		return nil, fmt.Errorf("%w: Config.PublishLease is %v, want > 0", ErrConfig, cfg.PublishLease)
	}
	p := &publisher{e: e, sink: cfg.Publish, batch: cfg.PublishBatch, lease: cfg.PublishLease, interval: cfg.PublishInterval}
	if p.interval == 0 {
		p.interval = DefaultPublishInterval
	}
	if p.batch == 0 {
		p.batch = DefaultPublishBatch
	}
	if p.lease == 0 {
		p.lease = DefaultPublishLease
	}
	p.periodic = timer.NewPeriodic(cfg.Clock, p.interval, p.pass)
	return p, nil
}

// nudge asks the publisher for a pass soon: records were committed.
func (p *publisher) nudge() {
	if p != nil {
		p.periodic.Now()
	}
}

// flushPublications writes the run's own records to the publication
// outbox, in the order they were made, at the version flush wrote the
// instance at.
func (r *run) flushPublications(records []Record) error {
	if r.e.publisher == nil || len(records) == 0 {
		return nil
	}
	pubs := make([]store.Publication, len(records))
	for i, rec := range records {
		rec.Seq = 0 // it numbers one engine's live records
		pubs[i] = store.Publication{
			ID: r.newID(), ProcessInstanceID: r.pi.ID, Version: r.pi.Version, Seq: i,
			Type: rec.Type, ProcessDefID: rec.Process, Payload: mustJSON(rec), CreatedAt: rec.Time,
		}
	}
	if r.idErr != nil {
		return r.idErr
	}
	return r.tx.InsertPublications(r.ctx, pubs)
}

// pass publishes batches until the outbox is empty, a batch fails, or
// another node holds the lease. During a backoff, and on a node that did
// not get the lease less than an interval ago, it only looks at the
// backlog, once an interval: a pass runs after every commit of the
// engine (nudge), which must cost next to nothing there.
func (p *publisher) pass(ctx context.Context) {
	now := p.e.now()
	p.mu.Lock()
	idle := now.Before(p.retryAt) || p.otherHolds && now.Sub(p.triedAt) < p.interval
	lookDue := p.lookedAt.IsZero() || now.Sub(p.lookedAt) >= p.interval
	p.mu.Unlock()
	if idle {
		if lookDue {
			p.look(ctx)
		}
		return
	}
	for ctx.Err() == nil {
		more, err := p.round(ctx)
		if err != nil {
			if ctx.Err() == nil {
				p.e.log.Warn("publishing records failed; they wait in the outbox", "err", err)
			}
			p.look(ctx)
			return
		}
		if !more {
			return
		}
	}
}

// errNotHolding says another node holds the publisher's lease.
var errNotHolding = errors.New("another node publishes")

// round publishes one batch, and reports whether a full one went out
// (more may wait).
func (p *publisher) round(ctx context.Context) (more bool, err error) {
	e := p.e
	if err := p.hold(ctx); err != nil {
		if errors.Is(err, errNotHolding) {
			p.look(ctx)
			return false, nil
		}
		return false, err
	}
	pubs, err := e.store.ListPublications(ctx, store.ListPublicationsParams{Limit: p.batch})
	if err != nil {
		return false, err
	}
	if len(pubs) == 0 {
		p.setBacklog(0, time.Time{})
		return false, nil
	}
	msgs := make([]sink.Message, len(pubs))
	ids := make([]int64, len(pubs))
	for i, pub := range pubs {
		ids[i] = pub.ID
		msgs[i] = sink.Message{
			ID: strconv.FormatInt(pub.ID, 10), Type: pub.Type, Process: pub.ProcessDefID,
			Instance: pub.ProcessInstanceID, Time: pub.CreatedAt, Payload: pub.Payload,
		}
	}
	if err := p.call(ctx, msgs); err != nil {
		if ctx.Err() == nil {
			p.failed(err)
		}
		return false, err
	}
	p.succeeded()
	// The sink may have taken long: the lease is renewed (it is still
	// ours when nobody took it meanwhile), and the delete is fenced by it.
	// A holder that lost it deletes nothing; the new holder publishes the
	// batch again (at least once).
	if err := p.hold(ctx); err != nil {
		return false, fmt.Errorf("after publishing %d records: %w", len(pubs), err)
	}
	if err := e.store.DeletePublications(ctx, store.DeletePublicationsParams{
		IDs: ids, Lease: publishLease, Owner: e.owner, Now: e.now(),
	}); err != nil {
		if errors.Is(err, store.ErrLeaseLost) {
			p.lost()
		}
		return false, fmt.Errorf("after publishing %d records: %w", len(pubs), err)
	}
	p.published.Add(uint64(len(pubs)))
	if len(pubs) < p.batch {
		p.setBacklog(0, time.Time{})
		return false, nil
	}
	p.look(ctx)
	return true, nil
}

// hold takes the publisher's lease, or renews it once a third of it has
// passed; errNotHolding when another node holds it. What this node
// believes it holds only saves statements: the delete that follows a
// Publish is fenced by the lease in the database.
func (p *publisher) hold(ctx context.Context) error {
	now := p.e.now()
	p.mu.Lock()
	fresh := p.holding && now.Before(p.heldUntil.Add(-p.lease/3))
	p.mu.Unlock()
	if fresh {
		return nil
	}
	l, err := p.e.store.AcquireLease(ctx, store.AcquireLeaseParams{Name: publishLease, Owner: p.e.owner, Now: now, Until: now.Add(p.lease)})
	// Another node holds it, or won the race for it.
	other := errors.Is(err, store.ErrLeaseLost) || errors.Is(err, store.ErrDuplicate) || errors.Is(err, store.ErrConflict)
	p.mu.Lock()
	p.holding, p.otherHolds, p.triedAt = err == nil, other, now
	if err == nil {
		p.heldUntil = l.Until
	}
	p.mu.Unlock()
	if other {
		return errNotHolding
	}
	return err
}

// lost notes that this node no longer holds the lease (its fenced delete
// failed).
func (p *publisher) lost() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.holding = false
}

// call hands msgs to the sink, turning a panic into an error.
func (p *publisher) call(ctx context.Context, msgs []sink.Message) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("the sink panicked: %v", r)
		}
	}()
	if err := p.sink.Publish(ctx, msgs); err != nil {
		return fmt.Errorf("sink: %w", err)
	}
	return nil
}

// failed counts a failed Publish and sets the backoff before the next:
// the interval, doubling with each failure in a row, at most a minute
// (or the interval, when that is longer).
func (p *publisher) failed(err error) {
	p.failures.Add(1)
	p.mu.Lock()
	defer p.mu.Unlock()
	p.failing++
	delay := p.interval
	for i := 1; i < p.failing && delay < maxPublishBackoff; i++ {
		delay *= 2
	}
	p.retryAt = p.e.now().Add(min(delay, max(maxPublishBackoff, p.interval)))
	p.lastErr = err.Error()
}

func (p *publisher) succeeded() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.failing, p.retryAt, p.lastErr = 0, time.Time{}, ""
}

// look counts the waiting records, for Stats.
func (p *publisher) look(ctx context.Context) {
	b, err := p.e.store.CountPublications(ctx, maxPublishCount)
	if err != nil {
		if ctx.Err() == nil {
			p.e.log.Warn("counting the records waiting for the sink failed", "err", err)
		}
		return
	}
	p.setBacklog(b.Count, b.Oldest)
}

func (p *publisher) setBacklog(n int64, oldest time.Time) {
	now := p.e.now()
	p.mu.Lock()
	defer p.mu.Unlock()
	p.pending, p.oldest, p.lookedAt = n, oldest, now
}

// stats returns the publisher's counters; the zero PublishStats without
// a sink.
func (p *publisher) stats() PublishStats {
	if p == nil {
		return PublishStats{}
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	st := PublishStats{Enabled: true, Holding: p.holding, Published: p.published.Load(), Failures: p.failures.Load(),
		LastError: p.lastErr, Pending: p.pending}
	if p.pending > 0 && !p.oldest.IsZero() {
		st.Lag = max(p.e.now().Sub(p.oldest), 0)
	}
	return st
}

// WaitPublished returns when no record waits in the publication outbox
// (every record committed so far went to Config.Publish), or when ctx
// ends; it returns at once without a sink. It asks the publisher for a
// pass as it looks, but does not cut a backoff after failed Publish
// calls short: while the sink fails, it waits. Like WaitQuiet, it waits
// on the real clock between looks, briefly.
func (e *Engine) WaitPublished(ctx context.Context) error {
	if e.publisher == nil {
		return nil
	}
	for {
		b, err := e.store.CountPublications(ctx, 1)
		if err != nil || b.Count == 0 {
			return err
		}
		e.publisher.nudge()
		t := timer.Real().NewTimer(time.Millisecond) // a look, not a schedule
		select {
		case <-ctx.Done():
			t.Stop()
			return ctx.Err()
		case <-t.C():
		}
	}
}
