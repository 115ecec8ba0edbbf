// Package recovery keeps an engine process's place among the engine nodes
// sharing a database and brings back the work of nodes that stopped
// without saying so.
//
// Every engine process registers as a node (table goxpdl_nodes) with a
// lease it renews while it runs (Membership). A node whose lease ran out
// is dead: any live node releases its event claims, so that their events
// are processed at once by the others rather than after the claims'
// own, longer, lease. A node that restarts under the same NodeID takes
// its row over (a new epoch) and releases the claims of its previous run
// at once. Releasing fences the old claimant: the transaction that would
// mark one of its events processed fails (store.ErrLeaseLost), so a node
// that lost its lease cannot commit a transition someone else now owns.
//
// On SQLite one engine process owns a database file (LockFile); the
// engines of that process share it.
package recovery

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"sync"
	"time"

	"github.com/goxpdl/goxpdl/internal/startstop"
	"github.com/goxpdl/goxpdl/store"
	"github.com/goxpdl/goxpdl/timer"
)

// DefaultLease is the default MembershipConfig.Lease.
const DefaultLease = 5 * time.Second

// MembershipConfig configures a Membership.
type MembershipConfig struct {
	// Store is the shared database; required.
	Store store.Store
	// Clock gives lease times and paces the renewals; required.
	Clock timer.Clock
	// NodeID is the node's stable name; Owner identifies this run of it
	// (its event claims carry Owner). Both required.
	NodeID, Owner string
	// Lease is how long the node counts as alive after a renewal; it
	// renews every third of it. A node silent for longer is taken over.
	// Default DefaultLease.
	Lease time.Duration
	// OthersDead says that no other engine process can be running on the
	// database (SQLite, whose file this process has locked): every other
	// node is reaped at Join, whatever its lease says.
	OthersDead bool
	// Replaced is called, once, when a newer run of the same NodeID took
	// the node's row over: this run must stop processing. Optional.
	Replaced func()
	// Logger; default slog.Default().
	Logger *slog.Logger
}

// JoinReport says what Join found.
type JoinReport struct {
	// Node is this node as registered.
	Node store.Node
	// Replaced is the Owner of the node's previous run, "" if none.
	Replaced string
	// Reaped lists the dead nodes taken over.
	Reaped []string
	// Released counts the event claims given back to the pool: the
	// previous run's and the dead nodes'.
	Released int64
}

// Membership is one engine process's registration as a node. It owns one
// goroutine, the renewer, between Join and Leave.
type Membership struct {
	cfg  MembershipConfig
	log  *slog.Logger
	host string

	mu      sync.Mutex
	joined  bool
	left    bool
	renewer startstop.Service
}

// NewMembership checks cfg and returns a Membership that has not joined.
func NewMembership(cfg MembershipConfig) (*Membership, error) {
	switch {
	case cfg.Store == nil:
		return nil, errors.New("recovery: MembershipConfig.Store is required")
	case cfg.Clock == nil:
		return nil, errors.New("recovery: MembershipConfig.Clock is required")
	case cfg.NodeID == "" || cfg.Owner == "":
		return nil, errors.New("recovery: MembershipConfig.NodeID and Owner are required")
	case cfg.Lease < 0:
		return nil, fmt.Errorf("recovery: MembershipConfig.Lease is %v, want >= 0", cfg.Lease)
	}
	cfg.Lease = cmp.Or(cfg.Lease, DefaultLease)
	host, _ := os.Hostname()
	return &Membership{cfg: cfg, log: cmp.Or(cfg.Logger, slog.Default()), host: host}, nil
}

// Join registers the node, releases the claims of its previous run and
// of dead nodes, and starts renewing the lease until Leave.
func (m *Membership) Join(ctx context.Context) (JoinReport, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.joined || m.left {
		return JoinReport{}, errors.New("recovery: Join called twice or after Leave")
	}
	var rep JoinReport
	now := m.cfg.Clock.Now()
	err := m.inTx(ctx, func(ctx context.Context, tx store.Tx) error {
		var err error
		rep.Node, rep.Replaced, err = tx.RegisterNode(ctx, store.RegisterNodeParams{
			ID: m.cfg.NodeID, Owner: m.cfg.Owner, Host: m.host, PID: os.Getpid(), Now: now, LeaseUntil: now.Add(m.cfg.Lease),
		})
		if err != nil || rep.Replaced == "" || rep.Replaced == m.cfg.Owner {
			return err
		}
		rep.Released, err = tx.ReleaseClaims(ctx, rep.Replaced)
		return err
	})
	if err != nil {
		return JoinReport{}, fmt.Errorf("recovery: join as node %s: %w", m.cfg.NodeID, err)
	}
	reaped, released, err := m.reap(ctx, m.cfg.OthersDead)
	if err != nil {
		return JoinReport{}, err
	}
	rep.Reaped, rep.Released = reaped, rep.Released+released
	if rep.Replaced != "" || len(reaped) > 0 {
		m.log.Info("took over the work of stopped nodes", "node", m.cfg.NodeID, "epoch", rep.Node.Epoch,
			"previous_run", rep.Replaced, "reaped", reaped, "released_claims", rep.Released)
	}
	// The renewer runs until Leave, whatever becomes of ctx, and its
	// statements are not cancelled mid-way (Leave waits for the one under
	// way): a cancelled statement can cost the pool its connection, and
	// with it an in-memory SQLite database.
	m.joined = true
	if err := m.renewer.Start(context.WithoutCancel(ctx), func(ctx context.Context) {
		m.renew(context.WithoutCancel(ctx), ctx.Done())
	}); err != nil {
		return JoinReport{}, fmt.Errorf("recovery: start renewing node %s: %w", m.cfg.NodeID, err)
	}
	return rep, nil
}

// Reap takes over the nodes whose lease ended: it releases their claims
// and removes their rows. It returns their ids and how many claims it
// released. Join and the renewer call it; an operator's recovery command
// may too.
func (m *Membership) Reap(ctx context.Context) (nodes []string, released int64, err error) {
	return m.reap(ctx, false)
}

func (m *Membership) reap(ctx context.Context, all bool) ([]string, int64, error) {
	nodes, err := m.cfg.Store.ListNodes(ctx)
	if err != nil {
		return nil, 0, fmt.Errorf("recovery: list nodes: %w", err)
	}
	now := m.cfg.Clock.Now()
	expiredBy := now
	if all {
		expiredBy = now.Add(100 * 365 * 24 * time.Hour)
	}
	var reaped []string
	var released int64
	for _, n := range nodes {
		if n.ID == m.cfg.NodeID || !n.LeaseUntil.Before(expiredBy) {
			continue
		}
		var gone bool
		var k int64
		err := m.inTx(ctx, func(ctx context.Context, tx store.Tx) error {
			var err error
			gone, err = tx.RemoveNode(ctx, store.RemoveNodeParams{ID: n.ID, Owner: n.Owner, ExpiredBy: expiredBy})
			if err != nil || !gone {
				return err // renewed meanwhile, or another node reaped it
			}
			k, err = tx.ReleaseClaims(ctx, n.Owner)
			return err
		})
		if err == nil && gone {
			released += k
			reaped = append(reaped, n.ID)
		}
		if err != nil {
			return reaped, released, fmt.Errorf("recovery: take over node %s: %w", n.ID, err)
		}
	}
	return reaped, released, nil
}

// maxConflictRetries bounds how often a membership transaction is run
// again after store.ErrConflict.
const maxConflictRetries = 5

// inTx runs fn in a transaction, again when it ends in store.ErrConflict:
// on MySQL two survivors reaping the same dead node both update its
// events' claims, and InnoDB may pick one of them as a deadlock victim.
// The retry finds the node gone and does nothing.
func (m *Membership) inTx(ctx context.Context, fn func(ctx context.Context, tx store.Tx) error) error {
	for attempt := 0; ; attempt++ {
		err := m.cfg.Store.InTx(ctx, fn)
		if !errors.Is(err, store.ErrConflict) || attempt == maxConflictRetries || ctx.Err() != nil {
			return err
		}
		m.log.Debug("membership transaction conflicted; trying again", "node", m.cfg.NodeID, "attempt", attempt+1, "err", err)
	}
}

// renew renews the lease every third of it and reaps dead nodes, until
// stop is closed (Leave). A lost lease is taken again when the row is gone (this node
// was silent too long and was reaped: its claims went back to the pool,
// so its unfinished transactions cannot commit); when a newer run of the
// NodeID holds the row, Replaced is called and renewing stops.
func (m *Membership) renew(ctx context.Context, stop <-chan struct{}) {
	every := m.cfg.Lease / 3
	for {
		t := m.cfg.Clock.NewTimer(every)
		select {
		case <-stop:
			t.Stop()
			return
		case <-t.C():
		}
		now := m.cfg.Clock.Now()
		err := m.cfg.Store.RenewNode(ctx, store.RenewNodeParams{
			ID: m.cfg.NodeID, Owner: m.cfg.Owner, Now: now, LeaseUntil: now.Add(m.cfg.Lease),
		})
		if errors.Is(err, store.ErrLeaseLost) {
			if m.rejoin(ctx) {
				continue
			}
			return
		}
		if err != nil {
			m.log.Warn("could not renew the node's lease; trying again", "node", m.cfg.NodeID, "err", err)
			continue
		}
		if nodes, n, err := m.Reap(ctx); err != nil {
			m.log.Warn("could not take over dead nodes", "err", err)
		} else if len(nodes) > 0 {
			m.log.Info("took over dead nodes", "node", m.cfg.NodeID, "reaped", nodes, "released_claims", n)
		}
	}
}

// rejoin handles a lost lease and reports whether renewing goes on.
func (m *Membership) rejoin(ctx context.Context) bool {
	nodes, err := m.cfg.Store.ListNodes(ctx)
	if err != nil {
		m.log.Warn("lost the node's lease and cannot read the nodes", "node", m.cfg.NodeID, "err", err)
		return true
	}
	for _, n := range nodes {
		if n.ID == m.cfg.NodeID && n.Owner != m.cfg.Owner {
			m.log.Error("a newer run of this node took over; this run stops processing", "node", m.cfg.NodeID,
				"newer_run", n.Owner, "host", n.Host, "pid", n.PID)
			if m.cfg.Replaced != nil {
				m.cfg.Replaced()
			}
			return false
		}
	}
	now := m.cfg.Clock.Now()
	if _, _, err := m.cfg.Store.RegisterNode(ctx, store.RegisterNodeParams{
		ID: m.cfg.NodeID, Owner: m.cfg.Owner, Host: m.host, PID: os.Getpid(), Now: now, LeaseUntil: now.Add(m.cfg.Lease),
	}); err != nil {
		m.log.Warn("could not register the node again", "node", m.cfg.NodeID, "err", err)
		return true
	}
	m.log.Warn("the node's lease had run out and its work was taken over; registered again", "node", m.cfg.NodeID)
	return true
}

// Leave stops renewing, releases this run's claims on events it did not
// process, and removes the node's row, so that other nodes take its work
// at once. It is idempotent.
func (m *Membership) Leave(ctx context.Context) error {
	m.mu.Lock()
	if m.left {
		m.mu.Unlock()
		return nil
	}
	m.left = true
	joined := m.joined
	m.mu.Unlock()
	if !joined {
		return nil
	}
	if err := m.renewer.Stop(ctx); err != nil {
		return err
	}
	return m.inTx(ctx, func(ctx context.Context, tx store.Tx) error {
		if _, err := tx.ReleaseClaims(ctx, m.cfg.Owner); err != nil {
			return err
		}
		_, err := tx.RemoveNode(ctx, store.RemoveNodeParams{ID: m.cfg.NodeID, Owner: m.cfg.Owner})
		return err
	})
}
