package engine

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"gorm.io/gorm"

	"github.com/goxpdl/goxpdl/store"
	"github.com/goxpdl/goxpdl/xpdl"
)

// The audit log (docs/operations.md, "Audit"). The engine writes one
// entry, in goxpdl_audit, for every operator command that carries an Op,
// whoever gives it (the console, the CLI, the host's own code), so that
// no front end can leave one out: who, what, on what, why, and what came
// of it.
//
//   - A command that succeeds writes its entry in the transaction of its
//     change: in a …Tx form that is the host's, and the host's rollback
//     takes the entry with the change.
//   - A command that is refused or fails writes its entry after the
//     refusal, in a short transaction of its own; in a …Tx form, in the
//     host's transaction (after the command's savepoint was rolled back),
//     so that it is kept if the host commits. It is never written on
//     another connection while the host's transaction is open: SQLite has
//     one writer, and the host's transaction may hold it.
//   - The commands a batch gives each instance write none; the batch's
//     start, pause, resume and cancel do.
//
// Purge deletes in many transactions; its entry is written once after
// them, with the counts, in the host's transaction for PurgeTx.

// AuditAction names an operator command in the audit log: the kind of
// its target, a dot, the verb.
type AuditAction string

// The audited commands.
const (
	// AuditStart is StartProcess given StartOptions.Op.
	AuditStart AuditAction = "instance.start"
	// AuditSuspend is Suspend.
	AuditSuspend AuditAction = "instance.suspend"
	// AuditResume is Resume.
	AuditResume AuditAction = "instance.resume"
	// AuditTerminate is Terminate.
	AuditTerminate AuditAction = "instance.terminate"
	// AuditMove is MoveInstance.
	AuditMove AuditAction = "instance.move"
	// AuditJump is Jump.
	AuditJump AuditAction = "instance.jump"
	// AuditRollback is Rollback.
	AuditRollback AuditAction = "instance.rollback"
	// AuditSetVariables is SetVariables.
	AuditSetVariables AuditAction = "instance.set_variables"
	// AuditMigrate is Migrate.
	AuditMigrate AuditAction = "instance.migrate"
	// AuditPurge is Purge: its target is the package purged ("" for
	// every package).
	AuditPurge AuditAction = "instance.purge"
	// AuditRetry is RetryActivity.
	AuditRetry AuditAction = "activity.retry"
	// AuditSkip is SkipActivity.
	AuditSkip AuditAction = "activity.skip"
	// AuditWithdraw is Withdraw.
	AuditWithdraw AuditAction = "workitem.withdraw"
	// AuditClaim, AuditRelease, AuditDelegate and AuditComplete are the
	// work-item commands given on someone's behalf (an Op whose Actor is
	// not the acting user: an operator in the console); a user's own
	// claims and completions are in the history only.
	AuditClaim    AuditAction = "workitem.claim"
	AuditRelease  AuditAction = "workitem.release"
	AuditDelegate AuditAction = "workitem.delegate"
	AuditComplete AuditAction = "workitem.complete"
	// AuditReassign is ReassignWorkItem, an administrator's command.
	AuditReassign AuditAction = "workitem.reassign"
	// AuditReleaseLock is ReleaseLock: its target is the business key.
	AuditReleaseLock AuditAction = "lock.release"
	// AuditBatchStart is StartBatch.
	AuditBatchStart AuditAction = "batch.start"
	// AuditBatchCancel is CancelBatch.
	AuditBatchCancel AuditAction = "batch.cancel"
	// AuditBatchPause is PauseBatch.
	AuditBatchPause AuditAction = "batch.pause"
	// AuditBatchResume is ResumeBatch.
	AuditBatchResume AuditAction = "batch.resume"
	// AuditDeploy is DeployAs: its target is the (first) package.
	AuditDeploy AuditAction = "package.deploy"
)

// AuditActions lists the audited commands.
var AuditActions = []AuditAction{
	AuditStart, AuditSuspend, AuditResume, AuditTerminate, AuditMove, AuditJump, AuditRollback, AuditSetVariables,
	AuditMigrate, AuditPurge, AuditRetry, AuditSkip, AuditWithdraw,
	AuditClaim, AuditRelease, AuditDelegate, AuditComplete, AuditReassign, AuditReleaseLock,
	AuditBatchStart, AuditBatchCancel, AuditBatchPause, AuditBatchResume, AuditDeploy,
}

// AuditTargetKind is the kind of thing an audited command was given on.
type AuditTargetKind string

// The kinds of audit targets; the target's id is a process instance's,
// an activity instance's, a work item's or a batch's id, a lock's
// business key, or a package's id.
const (
	TargetInstance AuditTargetKind = "instance"
	TargetActivity AuditTargetKind = "activity"
	TargetWorkItem AuditTargetKind = "workitem"
	TargetBatch    AuditTargetKind = "batch"
	TargetLock     AuditTargetKind = "lock"
	TargetPackage  AuditTargetKind = "package"
)

// AuditTargetKinds lists the kinds of audit targets.
var AuditTargetKinds = []AuditTargetKind{TargetInstance, TargetActivity, TargetWorkItem, TargetBatch, TargetLock, TargetPackage}

// AuditResult is what came of an audited command.
type AuditResult string

// The results of audited commands.
const (
	// AuditOK: the command was carried out.
	AuditOK AuditResult = "ok"
	// AuditRefused: the engine refused the command as given (a state it
	// does not apply in, an unknown id, a bad argument); nothing changed.
	AuditRefused AuditResult = "refused"
	// AuditFailed: the command could not be carried out for another
	// reason (the database, a cancelled context, a conflict that outlasted
	// its retries); nothing changed, except what a Purge deleted before
	// it failed.
	AuditFailed AuditResult = "failed"
)

// AuditResults lists the results of audited commands.
var AuditResults = []AuditResult{AuditOK, AuditRefused, AuditFailed}

// refusals are the errors that make a command's result AuditRefused: the
// engine's answers to a command it will not carry out as given.
var refusals = []error{
	ErrNotFound, ErrIllegalState, ErrUnknownVariable, ErrWrongType, ErrConfig, ErrBadArgument, ErrBadTimer, ErrKeyReused,
	ErrEmptyProcess, ErrCannotSkip, ErrWrongInstance, ErrLocked, ErrCannotMove, ErrCannotMigrate, ErrBadBatch,
	ErrBadFilter, ErrInvalidPurge, ErrNotAllowed, ErrAmbiguousProcess, xpdl.ErrInvalid,
}

// resultOf is the audit result of a command that returned err.
func resultOf(err error) AuditResult {
	if err == nil {
		return AuditOK
	}
	for _, r := range refusals {
		if errors.Is(err, r) {
			return AuditRefused
		}
	}
	return AuditFailed
}

// AuditEntry is one operator command in the audit log.
type AuditEntry struct {
	ID int64 `json:"id"`
	// At is when the entry was written, by the engine's clock.
	At time.Time `json:"at"`
	// Actor is Op.Actor ("host" when it was empty).
	Actor  string      `json:"actor"`
	Action AuditAction `json:"action"`
	// TargetKind and TargetID name what the command was given on;
	// TargetID is "" when the command was refused before that was known
	// (a start that created no instance, a batch that was not created).
	TargetKind AuditTargetKind `json:"targetKind"`
	TargetID   string          `json:"targetId,omitempty"`
	// Instance is the process instance the command was about (the
	// instance of a retried activity or a withdrawn work item, a released
	// lock's holder); 0 when none.
	Instance int64 `json:"instance,omitempty"`
	// Reason and Data are the Op's.
	Reason string         `json:"reason,omitempty"`
	Data   map[string]any `json:"data,omitempty"`
	Result AuditResult    `json:"result"`
	// Error is why the command was refused or failed.
	Error string `json:"error,omitempty"`
	// Detail is what the engine adds: the versions a deployment made, a
	// purge's counts, a batch's size, a lock's scope.
	Detail string `json:"detail,omitempty"`
}

// AuditFilter selects audit entries. Zero fields do not filter; the
// fields given must all hold.
type AuditFilter struct {
	// Actor keeps the entries of this actor (exactly; case matters).
	Actor string
	// Actions keeps entries of one of these actions, Results those with
	// one of these results.
	Actions []AuditAction
	Results []AuditResult
	// TargetKind keeps entries whose target is of this kind, TargetID
	// those whose target has this id.
	TargetKind AuditTargetKind
	TargetID   string
	// Instance keeps the entries about this process instance, whatever
	// their target (its activities and work items too).
	Instance int64
	// Since keeps entries written at or after it, Until those written
	// before it.
	Since time.Time
	Until time.Time
	// After is the cursor: the Next of the previous page.
	After string
	// Limit is the page size; default 100, at most 1000.
	Limit int
}

// AuditPage is one page of the audit log, newest first. Next is the
// cursor of the next (older) page, opaque; "" when this is the last.
type AuditPage struct {
	Entries []AuditEntry `json:"entries"`
	Next    string       `json:"next,omitempty"`
}

// Audit lists the audit entries the filter selects, newest first, one
// page at a time. A filter naming an unknown action, target kind or
// result, a negative instance or limit, a malformed cursor, or a Since
// not before Until is refused with ErrBadFilter.
func (e *Engine) Audit(ctx context.Context, f AuditFilter) (AuditPage, error) {
	params, err := f.params()
	if err != nil {
		return AuditPage{}, err
	}
	limit := pageLimit(f.Limit)
	params.Limit = limit + 1
	rows, err := e.store.ListAudit(ctx, params)
	if err != nil {
		return AuditPage{}, err
	}
	var page AuditPage
	if len(rows) > limit {
		rows = rows[:limit]
		page.Next = strconv.FormatInt(rows[limit-1].ID, 10)
	}
	page.Entries = make([]AuditEntry, len(rows))
	for i, row := range rows {
		a := AuditEntry{
			ID: row.ID, At: row.At, Actor: row.Actor, Action: AuditAction(row.Action), TargetKind: AuditTargetKind(row.TargetKind),
			TargetID: row.TargetID, Reason: row.Reason, Result: AuditResult(row.Result), Error: row.Error, Detail: row.Detail,
		}
		if row.InstanceID != nil {
			a.Instance = *row.InstanceID
		}
		if len(row.Data) > 0 {
			if err := json.Unmarshal(row.Data, &a.Data); err != nil {
				return AuditPage{}, fmt.Errorf("audit entry %d: its data do not decode: %w", row.ID, err)
			}
		}
		page.Entries[i] = a
	}
	return page, nil
}

// params is the store's filter for f, or why f is refused.
func (f AuditFilter) params() (store.ListAuditParams, error) {
	p := store.ListAuditParams{Actor: f.Actor, TargetKind: string(f.TargetKind), TargetID: f.TargetID, InstanceID: f.Instance}
	if err := checkPage(f.Instance, f.Limit); err != nil {
		return p, err
	}
	for _, a := range f.Actions {
		if !slices.Contains(AuditActions, a) {
			return p, fmt.Errorf("%w: unknown audit action %q", ErrBadFilter, a)
		}
		p.Actions = append(p.Actions, string(a))
	}
	for _, r := range f.Results {
		if !slices.Contains(AuditResults, r) {
			return p, fmt.Errorf("%w: unknown audit result %q", ErrBadFilter, r)
		}
		p.Results = append(p.Results, string(r))
	}
	if f.TargetKind != "" && !slices.Contains(AuditTargetKinds, f.TargetKind) {
		return p, fmt.Errorf("%w: unknown audit target kind %q", ErrBadFilter, f.TargetKind)
	}
	if !f.Since.IsZero() && !f.Until.IsZero() && !f.Since.Before(f.Until) {
		return p, fmt.Errorf("%w: Since %s is not before Until %s", ErrBadFilter, f.Since, f.Until)
	}
	if !f.Since.IsZero() {
		p.From = &f.Since
	}
	if !f.Until.IsZero() {
		p.Before = &f.Until
	}
	if f.After != "" {
		id, err := strconv.ParseInt(f.After, 10, 64)
		if err != nil || id <= 0 {
			return p, fmt.Errorf("%w: malformed audit cursor %q", ErrBadFilter, f.After)
		}
		p.BeforeID = id
	}
	return p, nil
}

// audited names an operator command for the audit log: its action and
// target, and the process instance it is about (0 for none).
type audited struct {
	action   AuditAction
	kind     AuditTargetKind
	target   string
	instance int64
}

// auditing is the audit entry of one command on its way: begun before
// the command (audit), written in the command's transaction when it
// succeeds (ok) or after it when it does not (end). A nil *auditing is
// a command that is not audited; its methods do nothing.
type auditing struct {
	e     *Engine
	entry store.AuditEntry
}

// Lengths the audit log keeps of an entry's texts: its indexed columns
// hold 255 bytes; a reason, error or detail longer than maxAuditText is
// cut (the history keeps a command's whole reason).
const (
	maxAuditKey  = 255
	maxAuditText = 16 << 10
)

// audit begins the audit entry of a command given with op; nil for a
// command a batch gives an instance (the batch itself is audited).
func (e *Engine) audit(ctx context.Context, op Op, what audited) *auditing {
	if bulk(ctx) {
		return nil
	}
	a := &auditing{e: e, entry: store.AuditEntry{Actor: clip(op.actor("host"), maxAuditKey), Action: string(what.action),
		Reason: clip(op.Reason, maxAuditText)}}
	if op.check() == nil && len(op.Data) > 0 {
		a.entry.Data = mustJSON(op.Data)
	}
	a.target(what.kind, what.target)
	a.about(what.instance)
	return a
}

// target names the command's target.
func (a *auditing) target(kind AuditTargetKind, id string) {
	if a != nil {
		a.entry.TargetKind, a.entry.TargetID = string(kind), clip(id, maxAuditKey)
	}
}

// about names the process instance the command is about (0: none).
func (a *auditing) about(instance int64) {
	if a == nil {
		return
	}
	a.entry.InstanceID = nil
	if instance != 0 {
		a.entry.InstanceID = &instance
	}
}

// detail sets what the engine adds to the entry.
func (a *auditing) detail(format string, args ...any) {
	if a != nil {
		a.entry.Detail = clip(fmt.Sprintf(format, args...), maxAuditText)
	}
}

// ok writes the entry of the command's success in tx, the transaction
// of its change. A transaction that runs again (a conflict, a group
// commit replayed) writes it again; only the one that commits is kept.
func (a *auditing) ok(ctx context.Context, tx store.Tx) error {
	if a == nil {
		return nil
	}
	entry, err := a.okEntry(ctx)
	if err != nil {
		return err
	}
	return tx.InsertAudit(ctx, entry)
}

// okEntry is the entry of the command's success, with its ID.
func (a *auditing) okEntry(ctx context.Context) (store.AuditEntry, error) {
	entry := a.entry
	entry.At, entry.Result = a.e.now(), string(AuditOK)
	var err error
	entry.ID, err = a.e.ids.Next(ctx)
	return entry, err
}

// okIn is ok for a command carried out by run r: r holds the entry and
// writes it at flush, with the rest of the change (flushAudit).
func (a *auditing) okIn(r *run) error {
	if a == nil {
		return nil
	}
	entry, err := a.okEntry(r.ctx)
	if err != nil {
		return err
	}
	r.audits = append(r.audits, entry)
	return nil
}

// okOnIn is okOn for a command carried out by run r (okIn).
func (a *auditing) okOnIn(r *run, target string, instance int64) error {
	if a == nil {
		return nil
	}
	b := *a
	b.target(AuditTargetKind(a.entry.TargetKind), target)
	b.about(instance)
	return b.okIn(r)
}

// okOn is ok for a command whose target id, and the instance it is
// about, are found in its transaction (the instance a start creates, a
// lock's holder): this attempt's entry has them, and an entry written
// after a later refusal does not.
func (a *auditing) okOn(ctx context.Context, tx store.Tx, target string, instance int64) error {
	if a == nil {
		return nil
	}
	b := *a
	b.target(AuditTargetKind(a.entry.TargetKind), target)
	b.about(instance)
	return b.ok(ctx, tx)
}

// end writes the entry of a command that returned err, when err is not
// nil (the command's ok entry, if any, went with its rollback), and
// returns err. With a host's transaction hostTx the entry is written in
// it, where it stays if the host commits: never on another connection
// while the host's transaction may hold SQLite's one writer. Otherwise it
// is written in a transaction of its own, even when ctx was cancelled.
// An entry that cannot be written is logged; the command's error is
// returned all the same.
func (a *auditing) end(ctx context.Context, hostTx *gorm.DB, err error) error {
	if a == nil || err == nil {
		return err
	}
	a.write(ctx, hostTx, err)
	return err
}

// after writes the entry of a command that writes it only once it is
// over (Purge), whatever err is, and returns err.
func (a *auditing) after(ctx context.Context, hostTx *gorm.DB, err error) error {
	if a != nil {
		a.write(ctx, hostTx, err)
	}
	return err
}

func (a *auditing) write(ctx context.Context, hostTx *gorm.DB, err error) {
	entry := a.entry
	entry.At, entry.Result = a.e.now(), string(resultOf(err))
	if err != nil {
		entry.Error = clip(err.Error(), maxAuditText)
	}
	var st store.Tx = a.e.store
	if hostTx != nil {
		hs, serr := hostStore(hostTx)
		if serr != nil {
			a.e.log.Error("writing an audit entry failed", "action", entry.Action, "actor", entry.Actor, "result", entry.Result, "err", serr)
			return
		}
		st = hs
	} else {
		ctx = context.WithoutCancel(ctx)
	}
	var werr error
	if entry.ID, werr = a.e.ids.Next(ctx); werr == nil {
		werr = st.InsertAudit(ctx, entry)
	}
	if werr != nil {
		a.e.log.Error("writing an audit entry failed", "action", entry.Action, "actor", entry.Actor, "result", entry.Result,
			"error", entry.Error, "err", werr)
	}
}

// clip cuts s to at most n bytes, at a character boundary, its invalid
// bytes and NULs replaced by U+FFFD.
func clip(s string, n int) string {
	s = strings.ToValidUTF8(s, "\uFFFD")        // the audit log's columns hold text
	s = strings.ReplaceAll(s, "\x00", "\uFFFD") // which on PostgreSQL refuses NUL
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n-- // s[n] continues a character that starts before it
	}
	return s[:n]
}

// idText is an id as an audit target's id.
func idText(id int64) string { return strconv.FormatInt(id, 10) }
