package engine

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"gorm.io/gorm"

	"github.com/goxpdl/goxpdl/engine/machine"
	"github.com/goxpdl/goxpdl/store"
	"github.com/goxpdl/goxpdl/wftype"
	"github.com/goxpdl/goxpdl/xpdl"
)

// Business keys and locks (seed 003: locks by lookup key).
//
// A start may carry a business key (StartOptions.BusinessKey): the
// host's name for what the instance works on, kept on the instance,
// inherited by its subflows, and searchable. With StartOptions.Lock it
// also takes a lock on that key, which another locked start of the same
// key waits for or is refused by, until the holder ends:
//
//   - LockLocal: at most one holder per business key and process (the
//     package and process ids, whatever the version);
//   - LockGlobal: at most one holder per business key, whatever the
//     process; it excludes local locks of the key and they exclude it.
//
// The locks are rows of goxpdl_locks, written in the transaction that
// creates the instance and deleted in the one in which it completes or
// is terminated, so they hold across nodes: a unique index keeps one
// holder per scope and key, and every change of a key's locks first
// takes the key (store.Tx.LocksForUpdate), which serialises them on the
// database. A Locking instance keeps its lock: it is not dead (paper
// §2.1), and an operator repairs it, or releases the lock (ReleaseLock).
//
// A start that asks to wait (LockOptions.Wait) is queued instead of
// refused: its instance is created Queued (a state of its own in
// engine/machine, between creation and Initiated: it has its data and
// first activities, and neither a schedule event nor its process Limit
// yet) with a waiting lock row. The transaction that frees the lock
// grants it to the waiters in the order they queued, as far as they do
// not exclude each other or one queued before them, and moves each to
// Initiated with its process.schedule event: it starts as a new instance
// does. Terminating a Queued instance withdraws it from the queue.

// LockScope says which starts a business-key lock excludes.
type LockScope string

// The lock scopes.
const (
	// LockLocal: one holder per business key and process (package and
	// process id, any version).
	LockLocal LockScope = "local"
	// LockGlobal: one holder per business key across every process; it
	// excludes the local locks of the key, and they exclude it.
	LockGlobal LockScope = "global"
)

// LockOptions ask a start for a lock on its business key.
type LockOptions struct {
	// Scope is LockLocal (the default when empty) or LockGlobal.
	Scope LockScope
	// Wait queues the start while the key is locked instead of refusing
	// it: StartProcess returns the new instance's id at once, the
	// instance Queued, and it starts when it gets the lock (see the
	// comment at the top of engine/lock.go).
	Wait bool
}

// LockKey names a lock: its scope, the process of a local lock, and the
// business key.
type LockKey struct {
	Scope LockScope `json:"scope"`
	// Package and Process name the process of a local lock; empty for a
	// global one.
	Package     string `json:"package,omitempty"`
	Process     string `json:"process,omitempty"`
	BusinessKey string `json:"businessKey"`
}

func (k LockKey) String() string {
	if k.Scope == LockGlobal {
		return fmt.Sprintf("global lock on %q", k.BusinessKey)
	}
	return fmt.Sprintf("local lock of %s:%s on %q", k.Package, k.Process, k.BusinessKey)
}

// scopeKey is the store's name of k's scope, after checking k.
func (k LockKey) scopeKey() (string, error) {
	switch {
	case k.BusinessKey == "":
		return "", fmt.Errorf("%w: a lock needs a business key", ErrBadArgument)
	case len(k.BusinessKey) > maxBusinessKey:
		return "", fmt.Errorf("%w: business key longer than %d bytes", ErrBadArgument, maxBusinessKey)
	}
	return scopeKeyOf(k.Scope, k.Package, k.Process)
}

// scopeKeyOf is the store's name of a scope: store.LockScopeGlobal, or
// "local:" and the package and process ids (XPDL ids are NMTOKENs,
// without '/').
func scopeKeyOf(scope LockScope, pkg, proc string) (string, error) {
	switch scope {
	case LockGlobal:
		return store.LockScopeGlobal, nil
	case LockLocal, "":
		if pkg == "" || proc == "" {
			return "", fmt.Errorf("%w: a local lock names its package and process", ErrBadArgument)
		}
		return "local:" + pkg + "/" + proc, nil
	}
	return "", fmt.Errorf("%w: unknown lock scope %q (want %q or %q)", ErrBadArgument, scope, LockLocal, LockGlobal)
}

// lockKeyOf reads a store lock's key back.
func lockKeyOf(l store.Lock) LockKey {
	if l.ScopeKey == store.LockScopeGlobal {
		return LockKey{Scope: LockGlobal, BusinessKey: l.BusinessKey}
	}
	pkg, proc, _ := strings.Cut(strings.TrimPrefix(l.ScopeKey, "local:"), "/")
	return LockKey{Scope: LockLocal, Package: pkg, Process: proc, BusinessKey: l.BusinessKey}
}

// maxBusinessKey is the longest business key, in bytes (its column).
const maxBusinessKey = 255

// excludes reports whether locks of scope keys a and b of one business
// key exclude each other.
func excludes(a, b string) bool {
	return a == b || a == store.LockScopeGlobal || b == store.LockScopeGlobal
}

// LockedError refuses a start whose business key is locked by another
// instance (StartOptions.Lock without Wait); nothing was created. It
// matches ErrLocked.
type LockedError struct {
	// Key is the held lock that stands in the way: one that excludes the
	// start's, or, when only a start queued before it does, the one that
	// start waits for.
	Key LockKey
	// Holder is the process instance that holds it.
	Holder int64
}

func (e *LockedError) Error() string {
	return fmt.Sprintf("business key %q is locked: %s is held by process instance %d", e.Key.BusinessKey, e.Key, e.Holder)
}

// Is matches ErrLocked.
func (e *LockedError) Is(target error) bool { return target == ErrLocked }

// RecordProcessQueued is the record of a start that waits for its lock
// (the instance is Queued); its process.started follows when it gets the
// lock.
const RecordProcessQueued = "process.queued"

// checkLock refuses StartOptions whose business key or lock cannot be
// used (ErrBadArgument), or whose keys and actor cannot be kept as given (a
// *TextError).
func (o StartOptions) checkLock() error {
	err := checkTexts(maxBusinessKey, "StartOptions.BusinessKey", o.BusinessKey,
		"StartOptions.IdempotencyKey", o.IdempotencyKey, "StartOptions.Actor", o.Actor)
	if err != nil {
		return err
	}
	if o.Lock == nil {
		return nil
	}
	if o.BusinessKey == "" {
		return fmt.Errorf("%w: StartOptions.Lock needs a BusinessKey", ErrBadArgument)
	}
	if s := o.Lock.Scope; s != "" && s != LockLocal && s != LockGlobal {
		return fmt.Errorf("%w: unknown lock scope %q (want %q or %q)", ErrBadArgument, s, LockLocal, LockGlobal)
	}
	return nil
}

// startLock is the lock a start asks for, and what the key's locks say
// of it.
type startLock struct {
	key      LockKey
	scopeKey string
	wait     bool
	// blocker is the held lock that stands in the way; nil when the lock
	// is free for this start.
	blocker *store.Lock
}

// queued reports that the start waits for its lock.
func (l *startLock) queued() bool { return l != nil && l.blocker != nil && l.wait }

// refusal is the error of a start that may not wait, or nil.
func (l *startLock) refusal() error {
	if l == nil || l.blocker == nil || l.wait {
		return nil
	}
	return &LockedError{Key: lockKeyOf(*l.blocker), Holder: l.blocker.ProcessInstanceID}
}

// lockForStart takes the business key of a start that asks for a lock
// (serialising this transaction with every other that changes the key's
// locks, on every node) and finds whether the lock is free: no held lock
// of the key excludes it, and no waiting one does (a start does not
// overtake the queue). It returns nil when the start asks for no lock.
func (r *run) lockForStart(opts StartOptions, dep *deployment, proc *xpdl.Process) (*startLock, error) {
	if opts.Lock == nil {
		return nil, nil
	}
	l := &startLock{
		key:  LockKey{Scope: orLocal(opts.Lock.Scope), Package: dep.def.PackageID, Process: proc.ID, BusinessKey: opts.BusinessKey},
		wait: opts.Lock.Wait,
	}
	var err error
	if l.scopeKey, err = l.key.scopeKey(); err != nil {
		return nil, err
	}
	locks, err := r.snap.locksFor(opts.BusinessKey)
	if err != nil {
		return nil, err
	}
	for i := range locks {
		if locks[i].Held && excludes(locks[i].ScopeKey, l.scopeKey) {
			l.blocker = &locks[i]
			return l, nil
		}
	}
	for i := range locks {
		if locks[i].Held || !excludes(locks[i].ScopeKey, l.scopeKey) {
			continue
		}
		// A start queued before this one that it would overtake: the
		// lock that one waits for is what this one waits for too.
		l.blocker = &locks[i]
		for j := range locks {
			if locks[j].Held && excludes(locks[j].ScopeKey, locks[i].ScopeKey) {
				l.blocker = &locks[j]
				break
			}
		}
		return l, nil
	}
	return l, nil
}

// orLocal is s, LockLocal when empty.
func orLocal(s LockScope) LockScope {
	if s == "" {
		return LockLocal
	}
	return s
}

// takeLock writes the lock of the instance r has just created: held, or
// waiting, in which case the instance goes Queued.
func (r *run) takeLock(l *startLock) error {
	id, err := r.idNow()
	if err != nil {
		return err
	}
	row := store.Lock{
		ID: id, ScopeKey: l.scopeKey, BusinessKey: l.key.BusinessKey, ProcessInstanceID: r.pi.ID, Held: !l.queued(), CreatedAt: r.now,
	}
	r.locks.taken = append(r.locks.taken, row)
	if !l.queued() {
		return nil
	}
	why := fmt.Sprintf("waits for the %s, held by process instance %d", lockKeyOf(*l.blocker), l.blocker.ProcessInstanceID)
	if err := r.setProcess(machine.ProcessQueue, why); err != nil {
		return err
	}
	r.record(Record{Type: RecordProcessQueued, State: r.pi.State, Detail: why})
	return nil
}

// lockConflict turns a second holder refused by the database (which the
// serialisation of LocksForUpdate should prevent) into a conflict, so
// that the transaction runs again and sees the holder.
func lockConflict(err error) error {
	if errors.Is(err, store.ErrDuplicate) {
		return fmt.Errorf("%w: %w", store.ErrConflict, err)
	}
	return err
}

// releaseLocks frees the locks of an instance that has ended (Completed,
// Terminated), in its ending transaction, and grants them on to the
// starts queued for them.
func (r *run) releaseLocks() error {
	if r.pi.BusinessKey == "" {
		return nil // a lock needs a business key
	}
	mine, err := r.snap.instanceLocks()
	if err != nil {
		return err
	}
	if len(mine) == 0 && !slices.ContainsFunc(r.locks.taken, func(l store.Lock) bool { return l.ProcessInstanceID == r.pi.ID }) {
		return nil
	}
	return r.dropLocks(r.pi.BusinessKey, func(l store.Lock) bool { return l.ProcessInstanceID == r.pi.ID }, "")
}

// dropLocks takes business key key, deletes its locks that drop selects,
// and grants the key's waiting locks that are free now, in queue order.
// why, when not empty, goes to the history of the instances that get the
// lock.
func (r *run) dropLocks(key string, drop func(store.Lock) bool, why string) error {
	locks, err := r.snap.locksFor(key)
	if err != nil {
		return err
	}
	var rest []store.Lock
	for _, l := range locks {
		if drop(l) {
			r.locks.drop(l)
		} else {
			rest = append(rest, l)
		}
	}
	return r.grantWaiting(rest, why)
}

// grantWaiting grants the waiting locks among locks (one business key,
// in ID order) that no held lock excludes and no lock queued before them
// still waiting excludes, and starts their instances.
func (r *run) grantWaiting(locks []store.Lock, why string) error {
	var held, waiting []string
	for _, l := range locks {
		if l.Held {
			held = append(held, l.ScopeKey)
		}
	}
	excluded := func(scope string, by []string) bool {
		for _, s := range by {
			if excludes(s, scope) {
				return true
			}
		}
		return false
	}
	for _, l := range locks {
		if l.Held {
			continue
		}
		if excluded(l.ScopeKey, held) || excluded(l.ScopeKey, waiting) {
			waiting = append(waiting, l.ScopeKey)
			continue
		}
		r.locks.grant(l, r.now)
		held = append(held, l.ScopeKey)
		if err := r.dequeue(l, why); err != nil {
			return err
		}
	}
	return nil
}

// dequeue starts the Queued instance that has just got lock l: it goes
// Initiated, its process Limit is armed from now, and its
// process.schedule is sent, as for a new start. Its run is written with
// this one (a child run).
func (r *run) dequeue(l store.Lock, why string) error {
	c := r.spawn()
	if err := c.load(l.ProcessInstanceID); err != nil {
		return err
	}
	if c.state() != wftype.ProcessQueued {
		return nil // not waiting (a lock row left by hand): it keeps the lock
	}
	if err := c.setProcess(machine.ProcessDequeue, ""); err != nil {
		return err
	}
	if why == "" {
		why = fmt.Sprintf("got the %s", lockKeyOf(l))
	}
	c.history[len(c.history)-1].Data = mustJSON(entryDetail{Diagnosis: why})
	if err := c.armProcessLimit(); err != nil {
		return err
	}
	c.record(Record{Type: RecordProcessStarted, State: c.pi.State, Detail: why})
	c.emit(c.pi.ID, evSchedule, payload{}, true)
	r.children = append(r.children, c)
	return nil
}

// ReleaseLock frees a held lock by an operator's command, whatever its
// holder is doing (a Locking instance keeps its lock until repaired; a
// host may know that the business key is free earlier). The holder runs
// on without it; the release is in its history with op's actor, reason
// and data; the starts queued for the key get it as when the holder
// ends. A lock nobody holds is ErrNotFound. Racing the holder's own end,
// one of the two wins and the other is retried: the lock is released
// once.
func (e *Engine) ReleaseLock(ctx context.Context, key LockKey, op Op) error {
	return e.ReleaseLockTx(ctx, nil, key, op)
}

// ReleaseLockTx is ReleaseLock inside the host's transaction tx (nil:
// its own).
func (e *Engine) ReleaseLockTx(ctx context.Context, tx *gorm.DB, key LockKey, op Op) error {
	a := e.audit(ctx, op, audited{action: AuditReleaseLock, kind: TargetLock, target: key.BusinessKey})
	a.detail("%s", key)
	if err := op.check(); err != nil {
		return a.end(ctx, tx, err)
	}
	scope, err := key.scopeKey()
	if err != nil {
		return a.end(ctx, tx, err)
	}
	return a.end(ctx, tx, e.transactAs(ctx, tx, op.actor("host"), true, func(r *run) (*run, error) {
		r.op = op
		locks, err := r.snap.locksFor(key.BusinessKey)
		if err != nil {
			return nil, err
		}
		var holder int64
		for _, l := range locks {
			if l.Held && l.ScopeKey == scope {
				holder = l.ProcessInstanceID
			}
		}
		if holder == 0 {
			return nil, notFound("held lock", key)
		}
		if err := r.load(holder); err != nil {
			return nil, err
		}
		why := fmt.Sprintf("%s released by %s", key, r.actor)
		r.history = append(r.history, store.HistoryEntry{
			ProcessInstanceID: r.pi.ID, Subject: store.SubjectProcess, FromState: r.pi.State, ToState: r.pi.State,
			Actor: r.actor, At: r.now, Data: r.detail(why),
		})
		r.record(Record{Type: RecordLockReleased, State: r.pi.State, Detail: why})
		if err := r.dropLocks(key.BusinessKey, func(l store.Lock) bool {
			return l.Held && l.ScopeKey == scope && l.ProcessInstanceID == holder
		}, fmt.Sprintf("got the %s released from process instance %d by %s", key, holder, r.actor)); err != nil {
			return nil, err
		}
		return r, a.okOnIn(r, key.BusinessKey, holder)
	}))
}

// RecordLockReleased is the record of an operator's ReleaseLock, on the
// holder.
const RecordLockReleased = "lock.released"

// LockState is whether a lock is held or waited for.
type LockState string

// The lock states.
const (
	LockHeld    LockState = "held"
	LockWaiting LockState = "waiting"
)

// Lock is a business-key lock: held by a process instance, or waited for
// by a Queued one.
type Lock struct {
	ID       int64     `json:"id"`
	Key      LockKey   `json:"key"`
	Instance int64     `json:"instance"`
	State    LockState `json:"state"`
	// Requested is when the start asked for it; HeldSince when it got it.
	Requested time.Time  `json:"requested"`
	HeldSince *time.Time `json:"heldSince,omitempty"`
}

// LockFilter selects locks. Zero fields do not filter; a Scope of
// LockLocal with Package and Process selects that process's local
// locks, and without them every lock (ErrBadFilter: name the process).
type LockFilter struct {
	Scope       LockScope
	Package     string
	Process     string
	BusinessKey string
	Instance    int64
	// State, when not empty, keeps only held or only waiting locks.
	State LockState
	// After is the cursor: the Next of the previous page.
	After int64
	// Limit is the page size; default 100, at most 1000.
	Limit int
}

// LockPage is one page of locks, in the order they were asked for
// (which is the queue order among the waiting locks of a key). Next is
// the cursor of the next page; 0 when this is the last.
type LockPage struct {
	Locks []Lock `json:"locks"`
	Next  int64  `json:"next,omitempty"`
}

// Locks lists the locks the filter selects, one page at a time.
func (e *Engine) Locks(ctx context.Context, f LockFilter) (LockPage, error) {
	limit := pageLimit(f.Limit)
	params := store.ListLocksParams{BusinessKey: f.BusinessKey, ProcessInstanceID: f.Instance, AfterID: f.After, Limit: limit + 1}
	switch f.Scope {
	case "":
	case LockGlobal, LockLocal:
		sk, err := scopeKeyOf(f.Scope, f.Package, f.Process)
		if err != nil {
			return LockPage{}, fmt.Errorf("%w: %w", ErrBadFilter, err)
		}
		params.ScopeKey = sk
	default:
		return LockPage{}, fmt.Errorf("%w: unknown lock scope %q", ErrBadFilter, f.Scope)
	}
	switch f.State {
	case "":
	case LockHeld, LockWaiting:
		held := f.State == LockHeld
		params.Held = &held
	default:
		return LockPage{}, fmt.Errorf("%w: unknown lock state %q", ErrBadFilter, f.State)
	}
	rows, err := e.store.ListLocks(ctx, params)
	if err != nil {
		return LockPage{}, err
	}
	var page LockPage
	if len(rows) > limit {
		rows = rows[:limit]
		page.Next = rows[limit-1].ID
	}
	page.Locks = make([]Lock, len(rows))
	for i, l := range rows {
		page.Locks[i] = Lock{
			ID: l.ID, Key: lockKeyOf(l), Instance: l.ProcessInstanceID, State: LockWaiting,
			Requested: l.CreatedAt, HeldSince: l.HeldSince,
		}
		if l.Held {
			page.Locks[i].State = LockHeld
		}
	}
	return page, nil
}

// lockedStart checks a refusal of a start outside a host's transaction
// against the committed locks. The start ran in a group commit, possibly
// after another member that took the lock in the same database
// transaction; when that member's work was rolled back and run again,
// its lock is another instance's now, or nobody's. The refusal is
// returned naming the holder as it is now; when nobody holds the lock,
// the start runs again.
func (e *Engine) lockedStart(ctx context.Context, hostTx *gorm.DB, opts StartOptions, a *auditing, id int64, err error) (int64, error) {
	for try := 0; try < 3; try++ {
		le, ok := errors.AsType[*LockedError](err)
		if !ok || hostTx != nil {
			return id, err
		}
		scope, serr := le.Key.scopeKey()
		if serr != nil {
			return 0, err
		}
		held := true
		rows, lerr := e.store.ListLocks(ctx, store.ListLocksParams{ScopeKey: scope, BusinessKey: le.Key.BusinessKey, Held: &held, Limit: 1})
		if lerr != nil {
			return 0, lerr
		}
		if len(rows) > 0 {
			return 0, &LockedError{Key: le.Key, Holder: rows[0].ProcessInstanceID}
		}
		id, err = e.startProcessOnce(ctx, hostTx, opts, a)
	}
	return id, err
}

// lockChanges are the business-key locks a run takes, grants and drops,
// held until flush like the rest of what it decides; the run's own
// reads of a key's locks (locksFor) see them.
type lockChanges struct {
	taken   []store.Lock // new locks, held or waiting, in the order taken
	granted []store.Lock // stored waiting locks the run granted
	dropped []int64      // stored locks the run deleted
}

// drop deletes lock l: a stored one at flush, a new one at once.
func (c *lockChanges) drop(l store.Lock) {
	if i := c.newIndex(l); i >= 0 {
		c.taken = slices.Delete(c.taken, i, i+1)
		return
	}
	c.granted = slices.DeleteFunc(c.granted, func(g store.Lock) bool { return g.ID == l.ID })
	c.dropped = append(c.dropped, l.ID)
}

// grant makes waiting lock l held from now.
func (c *lockChanges) grant(l store.Lock, now time.Time) {
	if i := c.newIndex(l); i >= 0 {
		c.taken[i].Held, c.taken[i].HeldSince = true, &now
		return
	}
	l.Held, l.HeldSince = true, &now
	c.granted = append(c.granted, l)
}

// newIndex is the index of l among the locks taken in this run, -1 for a
// stored lock (a new lock has its engine-made ID from the start).
func (c *lockChanges) newIndex(l store.Lock) int {
	return slices.IndexFunc(c.taken, func(t store.Lock) bool { return t.ID == l.ID })
}

// flushLocks writes the run's lock changes: the drops first, so that a
// lock granted on takes the place of the one released, then the grants,
// then the new locks. A second holder the database refuses (which the
// serialisation of locksFor should prevent) is a conflict: the
// transaction runs again and sees the holder.
func (r *run) flushLocks() error {
	c := &r.locks
	if len(c.dropped) > 0 {
		if _, err := r.tx.DeleteLocks(r.ctx, store.DeleteLocksParams{IDs: c.dropped}); err != nil {
			return err
		}
	}
	for _, l := range c.granted {
		if err := r.tx.GrantLock(r.ctx, l.ID, *l.HeldSince); err != nil {
			return lockConflict(err)
		}
	}
	for _, l := range c.taken {
		if _, err := r.tx.InsertLock(r.ctx, l); err != nil {
			return lockConflict(err)
		}
	}
	*c = lockChanges{}
	return nil
}
