package engine

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"sync/atomic"
	"time"

	"gorm.io/gorm"

	"github.com/goxpdl/goxpdl/store"
	"github.com/goxpdl/goxpdl/timer"
	"github.com/goxpdl/goxpdl/wftype"
)

// Retention says how long finished process instances are kept
// (Config.Retention). An instance is finished when it is Completed or
// Terminated; a Running, Suspended, Initiated or Locking instance is
// never deleted, whatever its age. When an instance is deleted,
// everything that belongs to it goes with it: its activity instances,
// variables, work items and worklist entries, events, history, inbox
// messages, timers, subscriptions, incidents, and the subflow instances
// it started (once they have finished too). docs/operations.md,
// "Retention", has the details.
//
// The zero Retention keeps everything: nothing is ever deleted unless an
// age is configured.
type Retention struct {
	// MaxAge is how long after it ended a finished instance is kept;
	// 0 keeps instances forever (but those PerProcess gives an age).
	MaxAge time.Duration
	// PerProcess gives a package (Process "") or one process of a
	// package an age of its own, which wins over MaxAge; a process's
	// entry wins over its package's. An age of 0 or less keeps that
	// scope's instances forever, whatever MaxAge says.
	PerProcess map[RetentionScope]time.Duration
	// Schedule is when retention runs: a cron expression as timer events
	// take it ("0 3 * * *", "@hourly", "@every 15m", with an optional
	// "CRON_TZ=Europe/Berlin " prefix; Config.Location is its default
	// zone). Default "@hourly".
	Schedule string
	// BatchSize is how many top-level instances one transaction deletes
	// (with their subflow instances); default DefaultPurgeBatch, at most
	// store.MaxPurgeLimit.
	BatchSize int
}

// RetentionScope names the instances of a package (Process "") or of one
// process of it, by XPDL ids, all versions of the package included.
type RetentionScope struct {
	// Package is the XPDL Package id; required.
	Package string
	// Process is the WorkflowProcess id; "" for the whole package.
	Process string
}

// DefaultPurgeBatch is the default number of top-level instances one
// purge transaction deletes.
const DefaultPurgeBatch = 500

// defaultRetentionSchedule is Retention.Schedule's default.
const defaultRetentionSchedule = "@hourly"

// ErrInvalidPurge: a PurgeOptions is unusable (no cutoff, a batch size
// out of range); nothing was deleted.
var ErrInvalidPurge = errors.New("invalid purge")

// PurgeOptions select the finished instances Purge deletes.
type PurgeOptions struct {
	// Before is the cutoff: instances that ended before it are deleted;
	// required.
	Before time.Time
	// Package, when not empty, deletes only instances of that package
	// (any version); Process, when not empty, only instances of that
	// WorkflowProcess.
	Package string
	Process string
	// BatchSize is how many top-level instances one transaction deletes;
	// default Config.Retention.BatchSize, else DefaultPurgeBatch; at
	// most store.MaxPurgeLimit.
	BatchSize int
}

// PurgeReport says what a purge deleted.
type PurgeReport struct {
	// Instances counts the process instances deleted, subflow instances
	// included.
	Instances int64
	// Rows counts the rows deleted in every table, the instances' own
	// included.
	Rows int64
	// Batches counts the transactions that deleted something.
	Batches int
}

func (r *PurgeReport) add(o PurgeReport) {
	r.Instances += o.Instances
	r.Rows += o.Rows
	r.Batches += o.Batches
}

// finalStates are the states whose instances retention deletes: not
// Locking, which an operator can still repair (wftype.ProcessState.IsFinal
// counts it as final).
var finalStates = []string{string(wftype.ProcessCompleted), string(wftype.ProcessTerminated)}

// retention is the engine's retention service and its counter.
type retention struct {
	rules    []purgeRule
	batch    int
	calendar *timer.Calendar // nil when retention is off
	purged   atomic.Uint64
	// ranFunc, when set (by tests, before Start), is called after every
	// scheduled run.
	ranFunc func(PurgeReport, error)
}

// purgeRule is one age applied to one scope, minus the scopes that have
// ages of their own.
type purgeRule struct {
	scope   RetentionScope // zero: every package
	age     time.Duration
	exclude []store.ProcessScope
}

// newRetention checks cfg.Retention and builds the service; its calendar
// is nil when nothing is to be deleted.
func (e *Engine) newRetention(cfg Retention, loc *time.Location) (*retention, error) {
	if cfg.MaxAge < 0 {
		return nil, fmt.Errorf("%w: Retention.MaxAge is negative (%s); 0 keeps instances forever", ErrConfig, cfg.MaxAge)
	}
	if cfg.BatchSize < 0 || cfg.BatchSize > store.MaxPurgeLimit {
		return nil, fmt.Errorf("%w: Retention.BatchSize %d, want 1 to %d (0 for %d)", ErrConfig, cfg.BatchSize, store.MaxPurgeLimit, DefaultPurgeBatch)
	}
	for s := range cfg.PerProcess {
		if s.Package == "" {
			return nil, fmt.Errorf("%w: Retention.PerProcess has an entry without a package (process %q)", ErrConfig, s.Process)
		}
	}
	ret := &retention{batch: cmp.Or(cfg.BatchSize, DefaultPurgeBatch), rules: retentionRules(cfg)}
	spec := cmp.Or(cfg.Schedule, defaultRetentionSchedule)
	sched, err := timer.ParseCron(spec, loc)
	if err != nil {
		return nil, fmt.Errorf("%w: Retention.Schedule: %w", ErrConfig, err)
	}
	if len(ret.rules) > 0 {
		ret.calendar = timer.NewCalendar(e.clock, sched, e.runRetention)
	}
	return ret, nil
}

// retentionRules turns a Retention into the purges of one run: each
// process with an age of its own, then each package (but its processes
// with ages of their own), then everything else by MaxAge. A scope kept
// forever has no rule and is excluded from the wider ones.
func retentionRules(cfg Retention) []purgeRule {
	scopes := slices.SortedFunc(maps.Keys(cfg.PerProcess), func(a, b RetentionScope) int {
		return cmp.Or(cmp.Compare(a.Package, b.Package), cmp.Compare(a.Process, b.Process))
	})
	var rules []purgeRule
	for _, s := range scopes {
		if age := cfg.PerProcess[s]; s.Process != "" && age > 0 {
			rules = append(rules, purgeRule{scope: s, age: age})
		}
	}
	for _, s := range scopes {
		if age := cfg.PerProcess[s]; s.Process == "" && age > 0 {
			r := purgeRule{scope: s, age: age}
			for _, p := range scopes {
				if p.Package == s.Package && p.Process != "" {
					r.exclude = append(r.exclude, store.ProcessScope{PackageID: p.Package, ProcessDefID: p.Process})
				}
			}
			rules = append(rules, r)
		}
	}
	if cfg.MaxAge > 0 {
		r := purgeRule{age: cfg.MaxAge}
		for _, s := range scopes {
			r.exclude = append(r.exclude, store.ProcessScope{PackageID: s.Package, ProcessDefID: s.Process})
		}
		rules = append(rules, r)
	}
	return rules
}

// runRetention is one scheduled run: every rule, with its cutoff from the
// engine's clock at the start of the run.
func (e *Engine) runRetention(ctx context.Context) {
	now := e.now()
	var total PurgeReport
	var errs []error
	for _, r := range e.retention.rules {
		rep, err := e.purge(ctx, nil, store.PurgeProcessInstancesParams{
			States: finalStates, EndedBefore: now.Add(-r.age), PackageID: r.scope.Package, ProcessDefID: r.scope.Process,
			Exclude: r.exclude, Limit: e.retention.batch,
		})
		total.add(rep)
		if err != nil {
			errs = append(errs, err)
			if ctx.Err() != nil {
				break
			}
		}
	}
	err := errors.Join(errs...)
	switch {
	case err != nil && ctx.Err() == nil:
		e.log.Warn("retention failed; it runs again at its next time", "err", err, "instances", total.Instances)
	case total.Instances > 0:
		e.log.Info("retention deleted finished instances", "instances", total.Instances, "rows", total.Rows, "batches", total.Batches)
	}
	if e.retention.ranFunc != nil {
		e.retention.ranFunc(total, err)
	}
}

// Purge deletes the finished (Completed or Terminated) process instances
// that ended before opts.Before, in transactions of opts.BatchSize
// top-level instances until none is left or ctx ends, with everything
// that belongs to them, as retention does (Config.Retention); it works
// whether retention is configured or not. A top-level instance takes its
// subflow instances with it (they need not match the package and
// process filter, but they must have ended before opts.Before too); a
// subflow instance whose parent is still there is never deleted on its
// own. Op says who purged and why: the deletion is logged with it (the
// instances' histories go with them) and written, with the counts, to
// the audit log (Audit), which is kept. Other nodes purging at the same
// time take other instances; each instance is deleted and counted once.
// The report counts what was deleted before an error.
func (e *Engine) Purge(ctx context.Context, opts PurgeOptions, op Op) (PurgeReport, error) {
	return e.PurgeTx(ctx, nil, opts, op)
}

// PurgeTx is Purge inside the host's transaction tx: every batch runs in
// it, and nothing is deleted unless tx commits. A nil tx is Purge.
func (e *Engine) PurgeTx(ctx context.Context, tx *gorm.DB, opts PurgeOptions, op Op) (PurgeReport, error) {
	a := e.audit(ctx, op, audited{action: AuditPurge, kind: TargetPackage, target: opts.Package})
	if err := op.check(); err != nil {
		return PurgeReport{}, a.end(ctx, tx, err)
	}
	switch {
	case opts.Before.IsZero():
		return PurgeReport{}, a.end(ctx, tx, fmt.Errorf("%w: PurgeOptions.Before is not set", ErrInvalidPurge))
	case opts.BatchSize < 0 || opts.BatchSize > store.MaxPurgeLimit:
		return PurgeReport{}, a.end(ctx, tx, fmt.Errorf("%w: PurgeOptions.BatchSize %d, want 1 to %d (0 for the default)", ErrInvalidPurge, opts.BatchSize, store.MaxPurgeLimit))
	}
	rep, err := e.purge(ctx, tx, store.PurgeProcessInstancesParams{
		States: finalStates, EndedBefore: opts.Before, PackageID: opts.Package, ProcessDefID: opts.Process,
		Limit: cmp.Or(opts.BatchSize, e.retention.batch),
	})
	if rep.Instances > 0 || err != nil {
		e.log.Info("purged finished instances", "actor", op.actor("host"), "reason", op.Reason, "data", op.Data,
			"before", opts.Before, "package", opts.Package, "process", opts.Process,
			"instances", rep.Instances, "rows", rep.Rows, "err", err)
	}
	what := "ended before " + opts.Before.UTC().Format(time.RFC3339)
	if opts.Process != "" {
		what += ", process " + opts.Process
	}
	a.detail("%s: %d instances, %d rows", what, rep.Instances, rep.Rows)
	return rep, a.after(ctx, tx, err)
}

// purge deletes batches of params.Limit top-level instances until a
// batch deletes nothing or ctx ends, in the host's transaction when tx
// is not nil. A batch that loses a deadlock to another node (ErrConflict)
// is tried again.
func (e *Engine) purge(ctx context.Context, tx *gorm.DB, params store.PurgeProcessInstancesParams) (PurgeReport, error) {
	var st store.Tx = e.store
	if tx != nil {
		hs, err := hostStore(tx)
		if err != nil {
			return PurgeReport{}, err
		}
		st = hs
	}
	var rep PurgeReport
	for conflicts := 0; ; {
		if err := ctx.Err(); err != nil {
			return rep, err
		}
		res, err := st.PurgeProcessInstances(ctx, params)
		if errors.Is(err, store.ErrConflict) && tx == nil && conflicts < maxConflictRetries {
			conflicts++
			e.conflicts.Add(1)
			continue
		}
		if err != nil {
			return rep, fmt.Errorf("purge: %w", err)
		}
		if res.Instances == 0 {
			return rep, nil
		}
		rep.add(PurgeReport{Instances: res.Instances, Rows: res.Rows, Batches: 1})
		if tx == nil {
			e.retention.purged.Add(uint64(res.Instances))
		}
	}
}
