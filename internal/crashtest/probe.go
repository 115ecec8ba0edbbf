package main

import (
	"context"
	"fmt"
	"sync"
	"time"

	"gorm.io/gorm"
)

// probe reads the engine's tables while the load runs, with queries that
// stay cheap on a busy database: a maximum of a primary key, or counts
// over the outbox's (processed_at, id) index.
type probe struct{ db *gorm.DB }

// marks are where the engine's tables stood at a moment: the last
// history row, and the outbox's unprocessed events.
type marks struct {
	history  int64
	eventMax int64 // the highest id of an unprocessed event
	backlog  int64 // how many events were unprocessed
}

func (p probe) marks(ctx context.Context) (marks, error) {
	var m marks
	db := p.db.WithContext(ctx)
	if err := db.Raw("SELECT COALESCE(MAX(id), 0) FROM goxpdl_history").Scan(&m.history).Error; err != nil {
		return m, fmt.Errorf("read the history mark: %w", err)
	}
	var row struct{ N, Max int64 }
	if err := db.Raw("SELECT COUNT(*) AS n, COALESCE(MAX(id), 0) AS max FROM goxpdl_events WHERE processed_at IS NULL").Scan(&row).Error; err != nil {
		return m, fmt.Errorf("read the outbox mark: %w", err)
	}
	m.backlog, m.eventMax = row.N, row.Max
	return m, nil
}

// progressed reports whether a state change committed after m: every
// change of an instance, an activity or a work item writes history.
func (p probe) progressed(ctx context.Context, m marks) (bool, error) {
	var last int64
	err := p.db.WithContext(ctx).Raw("SELECT COALESCE(MAX(id), 0) FROM goxpdl_history").Scan(&last).Error
	return last > m.history, err
}

// drained reports whether the events left unprocessed at m are processed.
func (p probe) drained(ctx context.Context, m marks) (bool, error) {
	if m.backlog == 0 {
		return true, nil
	}
	var n int64
	err := p.db.WithContext(ctx).Raw("SELECT COUNT(*) FROM goxpdl_events WHERE processed_at IS NULL AND id <= ?", m.eventMax).Scan(&n).Error
	return n == 0, err
}

// claimed returns the unprocessed events node has claimed, and their
// process instances. A claim names the node, or one run of it as
// "NODE#RUN".
func (p probe) claimed(ctx context.Context, node string) (events, instances []int64, err error) {
	var rows []struct{ ID, ProcessInstanceID int64 }
	err = p.db.WithContext(ctx).Raw(`SELECT id, process_instance_id FROM goxpdl_events
		WHERE processed_at IS NULL AND (claimed_by = ? OR claimed_by LIKE ?)`, node, node+"#%").
		Scan(&rows).Error
	if err != nil {
		return nil, nil, fmt.Errorf("read the events %s claimed: %w", node, err)
	}
	seen := make(map[int64]bool)
	for _, r := range rows {
		events = append(events, r.ID)
		if r.ProcessInstanceID != 0 && !seen[r.ProcessInstanceID] {
			seen[r.ProcessInstanceID] = true
			instances = append(instances, r.ProcessInstanceID)
		}
	}
	return events, instances, nil
}

// maxLeftovers is how many left-over events leftovers describes.
const maxLeftovers = 5

// leftovers describes the events left unprocessed at m that still are,
// at most maxLeftovers of them, and counts them all.
func (p probe) leftovers(ctx context.Context, m marks) (int64, []string, error) {
	var n int64
	db := p.db.WithContext(ctx)
	if err := db.Raw("SELECT COUNT(*) FROM goxpdl_events WHERE processed_at IS NULL AND id <= ?", m.eventMax).Scan(&n).Error; err != nil {
		return 0, nil, fmt.Errorf("read the left-over events: %w", err)
	}
	var rows []struct {
		ID, ProcessInstanceID int64
		Kind, ClaimedBy       string
		Attempts              int
		AvailableAt           time.Time
		ClaimedUntil          *time.Time
	}
	err := db.Raw(`SELECT id, process_instance_id, kind, claimed_by, attempts, available_at, claimed_until FROM goxpdl_events
		WHERE processed_at IS NULL AND id <= ? ORDER BY id LIMIT ?`, m.eventMax, maxLeftovers).Scan(&rows).Error
	if err != nil {
		return 0, nil, fmt.Errorf("read the left-over events: %w", err)
	}
	now := clock.Now()
	out := make([]string, len(rows))
	for i, r := range rows {
		claim := "unclaimed"
		if r.ClaimedUntil != nil {
			claim = fmt.Sprintf("claimed by %s until now%+v", r.ClaimedBy, r.ClaimedUntil.Sub(now).Round(time.Millisecond))
		}
		out[i] = fmt.Sprintf("event %d %s of instance %d: attempts %d, available at now%+v, %s",
			r.ID, r.Kind, r.ProcessInstanceID, r.Attempts, r.AvailableAt.Sub(now).Round(time.Millisecond), claim)
	}
	return n, out, nil
}

// processed reports whether every one of the events is processed.
func (p probe) processed(ctx context.Context, events []int64) (bool, error) {
	if len(events) == 0 {
		return true, nil
	}
	var n int64
	err := p.db.WithContext(ctx).Raw("SELECT COUNT(*) FROM goxpdl_events WHERE processed_at IS NULL AND id IN ?", events).Scan(&n).Error
	return n == 0, err
}

// instancesProgressed reports whether one of the instances changed after
// history mark m.
func (p probe) instancesProgressed(ctx context.Context, m marks, instances []int64) (bool, error) {
	if len(instances) == 0 {
		return false, nil
	}
	var n int64
	err := p.db.WithContext(ctx).Raw("SELECT COUNT(*) FROM goxpdl_history WHERE id > ? AND process_instance_id IN ?", m.history, instances).
		Scan(&n).Error
	return n > 0, err
}

// loadStatus is how far the load has come.
type loadStatus struct {
	Roots       int64 // instances that are no subflow's
	Unfinished  int64 // instances not Completed, Terminated or Locking
	Unprocessed int64 // events not processed
}

// done reports whether all of the roots wanted exist and nothing is left
// to do.
func (s loadStatus) done(roots int) bool {
	return s.Roots >= int64(roots) && s.Unfinished == 0 && s.Unprocessed == 0
}

func (p probe) status(ctx context.Context) (loadStatus, error) {
	var s loadStatus
	err := p.db.WithContext(ctx).Raw(`SELECT
		(SELECT COUNT(*) FROM goxpdl_process_instances WHERE parent_instance_id IS NULL) AS roots,
		(SELECT COUNT(*) FROM goxpdl_process_instances WHERE state NOT IN ('Completed', 'Terminated', 'Locking')) AS unfinished,
		(SELECT COUNT(*) FROM goxpdl_events WHERE processed_at IS NULL) AS unprocessed`).Scan(&s).Error
	if err != nil {
		return s, fmt.Errorf("read the load's status: %w", err)
	}
	return s, nil
}

// watchPoll is how often a watcher polls: the resolution of the times it
// measures.
const watchPoll = 20 * time.Millisecond

// condition is something a watcher waits for.
type condition struct {
	name  string
	check func(ctx context.Context) (bool, error)
}

// watcher polls conditions from a moment on and notes how long after it
// each first held. Query errors (the database may be down) are counted
// and polling goes on. It owns one goroutine: stop ends it.
type watcher struct {
	from   time.Time
	cancel context.CancelFunc
	done   chan struct{}

	mu     sync.Mutex
	after  map[string]time.Duration
	errors int
}

// watch starts a watcher of conds, timed from from.
func watch(ctx context.Context, from time.Time, conds ...condition) *watcher {
	ctx, cancel := context.WithCancel(ctx)
	w := &watcher{from: from, cancel: cancel, done: make(chan struct{}), after: make(map[string]time.Duration)}
	go w.run(ctx, conds)
	return w
}

func (w *watcher) run(ctx context.Context, conds []condition) {
	defer close(w.done)
	todo := conds
	for len(todo) > 0 {
		var left []condition
		for _, c := range todo {
			ok, err := c.check(ctx)
			if ctx.Err() != nil {
				return
			}
			w.mu.Lock()
			switch {
			case err != nil:
				w.errors++
				left = append(left, c)
			case ok:
				w.after[c.name] = clock.Now().Sub(w.from)
			default:
				left = append(left, c)
			}
			w.mu.Unlock()
		}
		todo = left
		if len(todo) > 0 && pause(ctx, watchPoll) != nil {
			return
		}
	}
}

// stop ends the watcher and waits for its goroutine.
func (w *watcher) stop() {
	w.cancel()
	<-w.done
}

// finished returns a channel closed once every condition held (or the
// watcher stopped).
func (w *watcher) finished() <-chan struct{} { return w.done }

// result returns how long after the start the condition held, if it did.
func (w *watcher) result(name string) (time.Duration, bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	d, ok := w.after[name]
	return d, ok
}
