package engine

import (
	"cmp"
	"context"
	"errors"
	"fmt"

	"gorm.io/gorm"

	"github.com/goxpdl/goxpdl/engine/machine"
	"github.com/goxpdl/goxpdl/store"
	"github.com/goxpdl/goxpdl/workitem"
	"github.com/goxpdl/goxpdl/xpdl"
)

// StartOptions say which process to start and with what data.
type StartOptions struct {
	// Package is the XPDL package id; the latest deployed version starts
	// unless DefinitionID names one.
	Package string
	// DefinitionID selects a deployed version (Deployment.ID); it wins
	// over Package.
	DefinitionID int64
	// Process is the WorkflowProcess id; empty starts MainProcess.
	Process string
	// Variables are initial values of data fields and formal parameters,
	// by id. Values must fit the declared types (see the package doc of
	// vars.go: int64 for INTEGER, string for STRING, ...).
	Variables map[string]any
	// TextVariables are initial values written as text (a form, a
	// command line), by id; each is parsed by its variable's declared
	// type ("42" for an INTEGER, "true" for a BOOLEAN, JSON for declared
	// types). Variables wins for a name given in both.
	TextVariables map[string]string
	// Actor is recorded in the audit trail as who started it; default
	// "host".
	Actor string
	// Op, when not nil, makes the start an operator's command (a form of
	// the console, the CLI): it is written to the audit log (Audit) as
	// AuditStart whether it succeeds or is refused, Op.Actor is who
	// started it (Actor when empty), and Op.Reason and Op.Data go into the
	// history entry of the instance's creation. Starts without an Op (the
	// host's own, in its business transactions) are not audited.
	Op *Op
	// IdempotencyKey, when not empty, makes the start idempotent: the
	// first start with a key creates the instance, and every later one
	// returns that instance's id and creates nothing. It is how a host
	// resolves a start whose outcome it does not know (the connection
	// failed around the commit): start again with the same key. Keys are
	// unique among all the instances of the database, whatever their
	// process, and stay taken while the instance's row exists; a key
	// already used for another package or process is refused with
	// ErrKeyReused. The variables of a repeated start are not compared.
	IdempotencyKey string
	// BusinessKey is the host's key of what the instance works on (an
	// order number, an account): kept on the instance (and its subflow
	// instances), found with store.ListProcessInstancesParams.BusinessKey,
	// at most 255 bytes. It need not be unique, unless Lock says so.
	BusinessKey string
	// Lock, when not nil, takes a lock on BusinessKey (required) for the
	// life of the instance: a second locked start of the key is refused
	// with a *LockedError (ErrLocked) naming the holder, or, with
	// Lock.Wait, queued until the lock is free. See engine/lock.go and
	// docs/operations.md.
	Lock *LockOptions
}

// StartProcess creates a process instance in its own transaction and
// returns its id. The instance is Initiated; the engine schedules it
// (Running, first activities started) right after commit.
func (e *Engine) StartProcess(ctx context.Context, opts StartOptions) (int64, error) {
	return e.startProcess(ctx, nil, opts)
}

// StartProcessTx is StartProcess inside the host's transaction tx: the
// instance exists if and only if tx commits. The engine picks it up from
// the outbox after the commit (see Transaction). A nil tx is the
// engine's own transaction, as in every …Tx method: StartProcess.
func (e *Engine) StartProcessTx(ctx context.Context, tx *gorm.DB, opts StartOptions) (int64, error) {
	return e.startProcess(ctx, tx, opts)
}

func (e *Engine) startProcess(ctx context.Context, hostTx *gorm.DB, opts StartOptions) (int64, error) {
	var a *auditing
	if opts.Op != nil {
		op := *opts.Op
		op.Actor = cmp.Or(op.Actor, opts.Actor)
		opts.Op = &op
		a = e.audit(ctx, op, audited{action: AuditStart, kind: TargetInstance})
		a.detail("%s", startedWhat(opts))
		if err := op.check(); err != nil {
			return 0, a.end(ctx, hostTx, err)
		}
	}
	if err := opts.checkLock(); err != nil {
		return 0, a.end(ctx, hostTx, err)
	}
	id, err := e.startProcessOnce(ctx, hostTx, opts, a)
	if errors.Is(err, store.ErrDuplicate) && opts.IdempotencyKey != "" && hostTx == nil {
		// A concurrent start with the same key committed first: this
		// attempt finds its instance.
		id, err = e.startProcessOnce(ctx, hostTx, opts, a)
	}
	id, err = e.lockedStart(ctx, hostTx, opts, a, id, err)
	return id, a.end(ctx, hostTx, err)
}

// startedWhat names the process a start asks for, for its audit entry.
func startedWhat(opts StartOptions) string {
	what := "package " + opts.Package
	if opts.DefinitionID != 0 {
		what = "deployment " + idText(opts.DefinitionID)
	}
	if opts.Process != "" {
		what += ", process " + opts.Process
	}
	if opts.BusinessKey != "" {
		what += ", business key " + opts.BusinessKey
	}
	if opts.IdempotencyKey != "" {
		what += ", idempotency key " + opts.IdempotencyKey
	}
	return what
}

// startProcessOnce runs a start in one transaction; a (nil when the
// start is not audited) writes its entry there when it succeeds.
func (e *Engine) startProcessOnce(ctx context.Context, hostTx *gorm.DB, opts StartOptions, a *auditing) (int64, error) {
	actor := opts.Actor
	if opts.Op != nil {
		actor = opts.Op.Actor
	}
	if actor == "" {
		actor = "host"
	}
	var id int64
	err := e.transact(ctx, hostTx, actor, func(r *run) (*run, error) {
		if opts.Op != nil {
			r.op = *opts.Op
		}
		var dep *deployment
		var err error
		switch {
		case opts.DefinitionID != 0:
			dep, err = r.snap.definition(opts.DefinitionID)
		case opts.Package != "":
			dep, err = r.snap.latest(opts.Package)
		default:
			return nil, fmt.Errorf("%w: StartOptions names neither Package nor DefinitionID", ErrNotFound)
		}
		if err != nil {
			return nil, err
		}
		var proc *xpdl.Process
		if opts.Process == "" {
			if proc, err = MainProcess(dep.pkg); err != nil {
				return nil, err
			}
		} else if proc = dep.pkg.Process(opts.Process); proc == nil && opts.DefinitionID == 0 {
			// The latest version may be one of several files of the
			// package deployed together; the process is in another.
			if dep, proc, err = r.snap.samePackageTogether(dep, opts.Process); err != nil {
				return nil, err
			}
		}
		if proc == nil {
			return nil, notFound("process", opts.Process+" in package "+dep.def.PackageID)
		}
		if len(proc.Activities) == 0 {
			return nil, &EmptyProcessError{Process: proc.ID}
		}
		// The key's locks first: a repeated start finds its instance
		// below even when that holds the lock.
		lock, err := r.lockForStart(opts, dep, proc)
		if err != nil {
			return nil, err
		}
		if opts.IdempotencyKey != "" {
			found, err := e.startedWithKey(r, opts.IdempotencyKey, dep, proc)
			if err == nil && found != 0 {
				err = a.okOnIn(r, idText(found), found)
			}
			if err != nil || found != 0 {
				id = found
				return nil, err // started before: nothing to write
			}
		}
		given, err := mergeTextVariables(declarations(dep.pkg, proc), opts.Variables, opts.TextVariables)
		if err != nil {
			return nil, err
		}
		if err := checkValuesSize(given); err != nil {
			return nil, err
		}
		if err := lock.refusal(); err != nil {
			return nil, err
		}
		r.startKey, r.businessKey, r.lock = opts.IdempotencyKey, opts.BusinessKey, lock
		created, err := e.createInstance(r, dep, proc, given, nil, nil)
		if err != nil {
			return nil, err
		}
		// r has no instance of its own: the new instance's run is the one
		// to write.
		id = created.pi.ID
		return created, a.okOnIn(created, idText(id), id)
	})
	if err != nil {
		return 0, err
	}
	return id, nil
}

// startedWithKey returns the id of the instance started with key, 0 when
// there is none, or ErrKeyReused when that instance runs another package
// or process than dep and proc.
func (e *Engine) startedWithKey(r *run, key string, dep *deployment, proc *xpdl.Process) (int64, error) {
	found, err := r.snap.startedWith(key)
	if err != nil || len(found) == 0 {
		return 0, err
	}
	pi := found[0]
	if pi.DefinitionID != dep.def.ID {
		other, err := r.snap.definition(pi.DefinitionID)
		if err != nil {
			return 0, err
		}
		if other.def.PackageID != dep.def.PackageID {
			return 0, fmt.Errorf("%w: key %q started instance %d of package %s, not %s",
				ErrKeyReused, key, pi.ID, other.def.PackageID, dep.def.PackageID)
		}
	}
	if pi.ProcessDefID != proc.ID {
		return 0, fmt.Errorf("%w: key %q started instance %d of process %s, not %s", ErrKeyReused, key, pi.ID, pi.ProcessDefID, proc.ID)
	}
	return pi.ID, nil
}

// Suspend pauses a Running process instance: no activity starts until
// Resume; work items and subflows wait. It refuses (ErrIllegalState)
// anything but a Running instance.
func (e *Engine) Suspend(ctx context.Context, id int64, op Op) error {
	return e.SuspendTx(ctx, nil, id, op)
}

// SuspendTx is Suspend inside the host's transaction tx (nil: its own).
func (e *Engine) SuspendTx(ctx context.Context, tx *gorm.DB, id int64, op Op) error {
	return e.command(ctx, tx, id, op, audited{action: AuditSuspend}, (*run).suspend)
}

// suspend pauses the process: its timers pause and its open work items
// are suspended.
func (r *run) suspend() error {
	if err := r.setProcess(machine.ProcessSuspend, ""); err != nil {
		return err
	}
	if err := r.pauseTimers(); err != nil {
		return err
	}
	return r.moveOpenItems(workitem.Suspend)
}

// Resume continues a Suspended process instance; the activities that
// could not start meanwhile start now. A second Resume is refused
// (ErrIllegalState).
func (e *Engine) Resume(ctx context.Context, id int64, op Op) error {
	return e.ResumeTx(ctx, nil, id, op)
}

// ResumeTx is Resume inside the host's transaction tx (nil: its own).
func (e *Engine) ResumeTx(ctx context.Context, tx *gorm.DB, id int64, op Op) error {
	return e.command(ctx, tx, id, op, audited{action: AuditResume}, func(r *run) error {
		if err := r.setProcess(machine.ProcessResume, ""); err != nil {
			return err
		}
		r.record(Record{Type: RecordProcessResumed, State: r.pi.State})
		if err := r.resumeTimers(); err != nil {
			return err
		}
		if err := r.moveOpenItems(workitem.Resume); err != nil {
			return err
		}
		return r.resumed()
	})
}

// Terminate ends a Running or Suspended process instance: its open work
// items are withdrawn and its subflows terminated. A finished instance
// refuses (ErrInstanceFinished).
func (e *Engine) Terminate(ctx context.Context, id int64, op Op) error {
	return e.TerminateTx(ctx, nil, id, op)
}

// TerminateTx is Terminate inside the host's transaction tx (nil: its
// own).
func (e *Engine) TerminateTx(ctx context.Context, tx *gorm.DB, id int64, op Op) error {
	return e.command(ctx, tx, id, op, audited{action: AuditTerminate}, func(r *run) error { return r.terminate() })
}

// command runs an operator command on process instance id: op is
// checked, then fn runs on the loaded instance in a critical transaction.
// The command is audited as what says (audit.go), on the instance unless
// what names another target; its entry is written in the transaction
// when fn succeeds, after it otherwise.
func (e *Engine) command(ctx context.Context, tx *gorm.DB, id int64, op Op, what audited, fn func(r *run) error) error {
	if what.kind == "" {
		what.kind, what.target = TargetInstance, idText(id)
	}
	what.instance = id
	a := e.audit(ctx, op, what)
	if err := op.check(); err != nil {
		return a.end(ctx, tx, err)
	}
	// Process control: the critical lane, never behind application calls;
	// a batch's commands take a normal one (batch.go).
	return a.end(ctx, tx, e.transactAs(ctx, tx, op.actor("host"), !bulk(ctx), func(r *run) (*run, error) {
		r.op = op
		if err := r.load(id); err != nil {
			return nil, err
		}
		if err := fn(r); err != nil {
			return nil, err
		}
		return r, a.okIn(r)
	}))
}

// commandMany runs fn, an operator command that calls no application
// (suspend, terminate), on each of the process instances ids, several
// to a database transaction on a normal commit lane, each instance in a
// savepoint of its own: it is loaded, changed and written as by command
// (its version fences it; its history carries op), and one whose command
// fails is rolled back to its savepoint alone, with its error in errs,
// while the others go on and commit. A transaction ends after all of
// them, or, once it has done minPerTx, when other transactions wait for
// its commit lane (on SQLite, for the database): it commits, and the
// rest queue again behind those. err is the error of a transaction that
// failed, with nothing of it committed: errs then holds the outcomes of
// the instances committed before (the others' entries are errNotRun,
// as are all of them when op is refused).
// The records and events of committed instances go out after each
// commit, as for any command.
func (e *Engine) commandMany(ctx context.Context, ids []int64, op Op, fn func(r *run) error) (errs []error, err error) {
	errs = make([]error, len(ids))
	for i := range errs {
		errs[i] = errNotRun
	}
	if err := op.check(); err != nil {
		return errs, err
	}
	for done := 0; done < len(ids); {
		n, err := e.commandTx(ctx, ids[done:], errs[done:], op, fn)
		if err != nil {
			return errs, err
		}
		done += n
	}
	return errs, nil
}

// errNotRun marks the instances of commandMany a failed transaction did
// not commit.
var errNotRun = errors.New("not run: its transaction failed")

// minPerTx is how many instances a transaction of commandMany does
// before it gives way to others waiting for its commit lane.
const minPerTx = 4

// commandTx is one transaction of commandMany: it runs fn on the first
// of ids, sets their outcomes in errs, and returns how many it did.
func (e *Engine) commandTx(ctx context.Context, ids []int64, errs []error, op Op, fn func(r *run) error) (int, error) {
	actor := op.actor("host")
	runs := make([]*run, len(ids))
	outcomes := make([]error, len(ids))
	n := 0
	body := func(ctx context.Context, tx store.Tx) error {
		// A body run again (a group commit replayed after another member
		// failed) starts afresh.
		clear(runs)
		clear(outcomes)
		n = 0
		for i, id := range ids {
			if i >= minPerTx && e.commits.waiting(ctx) {
				break
			}
			n = i + 1
			failed, err := tx.Savepoint(ctx, func(ctx context.Context, tx store.Tx) error {
				r := e.newRun(ctx, tx, actor)
				r.op, r.doomed = op, map[string]failure{}
				err := r.load(id)
				if err == nil && e.bulkLoadedFunc != nil {
					e.bulkLoadedFunc(id, &r.pi.Version)
				}
				if err == nil {
					err = fn(r)
				}
				if err == nil {
					err = r.drain()
				}
				if err == nil {
					err = r.flush(false)
				}
				if err == nil {
					runs[i] = r
				}
				return err // its writes' errors are its own (Savepoint flushes them)
			})
			if failed != nil {
				runs[i], outcomes[i] = nil, failed
			}
			if err != nil {
				// The database has rolled the whole transaction back (a
				// deadlock, a lost connection).
				if failed != nil {
					return fmt.Errorf("%w (after process instance %d failed: %w)", err, id, failed)
				}
				return err
			}
		}
		return nil
	}
	if err := e.commits.do(ctx, body, false); err != nil {
		for _, id := range ids {
			e.instances.forget(id)
		}
		for _, r := range runs[:n] {
			if r != nil {
				e.bus.Abandon(ctx, r.published) // the commit may have gone through (see transactAs)
			}
		}
		return 0, err
	}
	for i, r := range runs[:n] {
		errs[i] = outcomes[i]
		if r == nil {
			e.instances.forget(ids[i]) // the database may hold something else
			continue
		}
		if !r.nextDue.IsZero() {
			e.timers.Armed(r.nextDue)
		}
		e.remember(r)
		e.publish(r.records)
		e.bus.Dispatch(r.published)
	}
	return n, nil
}

// mergeTextVariables parses text values by their declared types and adds
// the typed values on top.
func mergeTextVariables(decls map[string]decl, typed map[string]any, text map[string]string) (map[string]any, error) {
	if len(text) == 0 {
		return typed, nil
	}
	out := make(map[string]any, len(typed)+len(text))
	for name, t := range text {
		d, ok := decls[name]
		if !ok {
			return nil, &VariableError{Name: name, Value: t, kind: ErrUnknownVariable}
		}
		v, err := d.typ.parseText(name, t)
		if err != nil {
			return nil, err
		}
		out[name] = v
	}
	for name, v := range typed {
		out[name] = v
	}
	return out, nil
}
