package engine

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"gorm.io/gorm"

	"github.com/goxpdl/goxpdl/resource"
	"github.com/goxpdl/goxpdl/store"
	"github.com/goxpdl/goxpdl/wftype"
	"github.com/goxpdl/goxpdl/workitem"
	"github.com/goxpdl/goxpdl/xpdl"
)

// Extended attributes of manual activities the work-item service reads.
const (
	// AttrSeparationOfDuties names activities (comma-separated ids) whose
	// performer in the same process instance may not perform this one:
	// the "four eyes" rule.
	AttrSeparationOfDuties = "SeparationOfDuties"
	// AttrSamePerformerAs names an activity whose performer in the same
	// process instance gets this one too (retain familiar).
	AttrSamePerformerAs = "SamePerformerAs"
	// AttrVariableToProcessUpdate (Shark's convention, one attribute per
	// variable) names a variable the performer may set when completing.
	// An activity without any may set every variable.
	AttrVariableToProcessUpdate = "VariableToProcess_UPDATE"
)

// Errors of the work-item service, matched with errors.Is on a
// *WorkItemError.
var (
	// ErrNotAllowed: the user may not do this with the work item (not
	// offered to them, held by someone else, a four-eyes rule, a variable
	// the activity does not let them set).
	ErrNotAllowed = errors.New("not allowed")
	// ErrCompletedDifferently: a repeated completion (same idempotency
	// key) carries different outputs than the first.
	ErrCompletedDifferently = errors.New("work item completed already with different outputs")
)

// WorkItemError is a refusal of the work-item service. It matches its
// kind (ErrNotAllowed, ErrCompletedDifferently).
type WorkItemError struct {
	// WorkItem is the item's id.
	WorkItem int64
	// User is who asked.
	User string
	// Op is what was asked: claim, start, complete, ...
	Op string
	// Reason says why it was refused.
	Reason string

	kind error
}

func (e *WorkItemError) Error() string {
	return fmt.Sprintf("work item %d: %s by %q refused: %s", e.WorkItem, e.Op, e.User, e.Reason)
}

// Is matches the error's kind.
func (e *WorkItemError) Is(target error) bool { return target == e.kind }

func notAllowed(wi store.WorkItem, user, op, format string, args ...any) error {
	return &WorkItemError{WorkItem: wi.ID, User: user, Op: op, Reason: fmt.Sprintf(format, args...), kind: ErrNotAllowed}
}

// Completion is what a person hands in with a work item.
type Completion struct {
	// User completes the item; they must hold it or, for an offered
	// item, be one it is offered to.
	User string
	// Outputs are new values of variables, by id, type-checked against
	// their declarations.
	Outputs map[string]any
	// TextOutputs are outputs written as text (a form's fields), parsed
	// by the declared types as StartOptions.TextVariables are; an output
	// in both takes its Outputs value. WorkItemForm lists what an item
	// takes.
	TextOutputs map[string]string
	// IdempotencyKey, when not empty, makes a repeated completion with
	// the same key and outputs a no-op that returns the first result.
	IdempotencyKey string
	// Op is who completes and why, written to the history with the
	// completion; its Actor defaults to User.
	Op Op
}

// ClaimWorkItem allocates an offered work item to user, atomically: of
// several users claiming one item exactly one wins, the others get
// ErrNotAllowed. op is written to the history as for every work-item
// command: its Actor (default: user) as the entry's actor, its Reason
// and Data in the entry's detail.
func (e *Engine) ClaimWorkItem(ctx context.Context, id int64, user string, op Op) error {
	return e.ClaimWorkItemTx(ctx, nil, id, user, op)
}

// ClaimWorkItemTx is ClaimWorkItem inside the host's transaction tx.
func (e *Engine) ClaimWorkItemTx(ctx context.Context, tx *gorm.DB, id int64, user string, op Op) error {
	return e.workItemOp(ctx, tx, id, user, op, workitem.Allocate, func(r *run, wi *store.WorkItem, a *act) error {
		if err := r.mayTake(*wi, a, user, "claim"); err != nil {
			return err
		}
		wi.Owner = user
		return nil
	})
}

// StartWorkItem records that the owner began the work.
func (e *Engine) StartWorkItem(ctx context.Context, id int64, user string, op Op) error {
	return e.StartWorkItemTx(ctx, nil, id, user, op)
}

// StartWorkItemTx is StartWorkItem inside the host's transaction tx.
func (e *Engine) StartWorkItemTx(ctx context.Context, tx *gorm.DB, id int64, user string, op Op) error {
	return e.workItemOp(ctx, tx, id, user, op, workitem.Start, func(_ *run, wi *store.WorkItem, _ *act) error {
		return mustOwn(*wi, user, "start")
	})
}

// ReleaseWorkItem gives a held item back to the people it is offered to.
func (e *Engine) ReleaseWorkItem(ctx context.Context, id int64, user string, op Op) error {
	return e.ReleaseWorkItemTx(ctx, nil, id, user, op)
}

// ReleaseWorkItemTx is ReleaseWorkItem inside the host's transaction tx.
func (e *Engine) ReleaseWorkItemTx(ctx context.Context, tx *gorm.DB, id int64, user string, op Op) error {
	return e.workItemOp(ctx, tx, id, user, op, workitem.Release, func(_ *run, wi *store.WorkItem, _ *act) error {
		if err := mustOwn(*wi, user, "release"); err != nil {
			return err
		}
		wi.Owner = ""
		return nil
	})
}

// DelegateWorkItem hands a held item to another user, who holds it
// allocated. The other user must be one the item may go to (the four-eyes
// rules apply to them).
func (e *Engine) DelegateWorkItem(ctx context.Context, id int64, user, to string, op Op) error {
	return e.DelegateWorkItemTx(ctx, nil, id, user, to, op)
}

// DelegateWorkItemTx is DelegateWorkItem inside the host's transaction tx.
func (e *Engine) DelegateWorkItemTx(ctx context.Context, tx *gorm.DB, id int64, user, to string, op Op) error {
	if err := checkText("to", to, maxKey); err != nil {
		return err
	}
	return e.workItemOp(ctx, tx, id, user, op, workitem.Delegate, func(r *run, wi *store.WorkItem, a *act) error {
		if err := mustOwn(*wi, user, "delegate"); err != nil {
			return err
		}
		if err := r.mayTake(*wi, a, to, "delegate"); err != nil {
			return err
		}
		wi.Owner = to
		return nil
	})
}

// ReassignWorkItem is an administrator's command: the item is offered
// afresh to the given users, roles and units, and whoever held it loses
// it. admin is recorded as who did it (op.Actor, when given, as the
// history entry's actor).
func (e *Engine) ReassignWorkItem(ctx context.Context, id int64, admin string, to []Principal, op Op) error {
	return e.ReassignWorkItemTx(ctx, nil, id, admin, to, op)
}

// ReassignWorkItemTx is ReassignWorkItem inside the host's transaction tx.
func (e *Engine) ReassignWorkItemTx(ctx context.Context, tx *gorm.DB, id int64, admin string, to []Principal, op Op) error {
	if len(to) == 0 {
		return fmt.Errorf("%w: reassign work item %d to nobody", ErrBadArgument, id)
	}
	for _, p := range to {
		if err := checkText("principal", p.ID, maxKey); err != nil {
			return err
		}
	}
	return e.workItemOp(ctx, tx, id, admin, op, workitem.Reassign, func(_ *run, wi *store.WorkItem, _ *act) error {
		wi.Assignees, wi.Owner = slices.Clone(to), ""
		return nil
	})
}

// CompleteWorkItem completes a work item as c.User with c.Outputs and
// moves the process on, in one transaction. It returns the completed
// item; with an IdempotencyKey, a repeated completion returns the first
// one's item and changes nothing. c.Op is written to the history of the
// completion and of what it moves (its Actor defaults to c.User).
func (e *Engine) CompleteWorkItem(ctx context.Context, id int64, c Completion) (WorkItem, error) {
	return e.CompleteWorkItemTx(ctx, nil, id, c)
}

// CompleteWorkItemTx is CompleteWorkItem inside the host's transaction
// tx: the host's business writes and the completion commit together.
func (e *Engine) CompleteWorkItemTx(ctx context.Context, tx *gorm.DB, id int64, c Completion) (WorkItem, error) {
	if err := c.Op.check(); err != nil {
		return WorkItem{}, err
	}
	if err := checkTexts(maxKey, "Completion.User", c.User, "Completion.IdempotencyKey", c.IdempotencyKey); err != nil {
		return WorkItem{}, err
	}
	var aud *auditing
	if onBehalf(c.Op, c.User) {
		aud = e.audit(ctx, c.Op, audited{action: AuditComplete, kind: TargetWorkItem, target: idText(id)})
	}
	var done WorkItem
	err := e.transact(ctx, tx, c.Op.actor(actorOf(c.User)), func(r *run) (*run, error) {
		r.op = c.Op
		wi, err := r.snap.workItem(id)
		if err != nil {
			if errors.Is(err, store.ErrNotFound) {
				return nil, notFound("work item", id)
			}
			return nil, err
		}
		aud.about(wi.ProcessInstanceID)
		if workitem.State(wi.State) == workitem.Completed && c.IdempotencyKey != "" && wi.CompletionKey == c.IdempotencyKey {
			// Completed before with this key: nothing to write.
			return nil, r.repeatedCompletion(wi, c, &done)
		}
		if err := r.load(wi.ProcessInstanceID); err != nil {
			return nil, err
		}
		if r.state().IsFinal() {
			return nil, r.processAccepts("complete work item")
		}
		if _, err := workitem.Next(workitem.State(wi.State), workitem.Complete, ""); err != nil {
			return nil, err
		}
		if err := r.processAccepts("complete work item"); err != nil {
			return nil, err
		}
		a, err := r.itemActivity(wi)
		if err != nil {
			return nil, err
		}
		if err := r.completeItem(&wi, a, c, nil); err != nil {
			return nil, err
		}
		done = workItemOf(wi)
		return r, aud.okIn(r)
	})
	return done, aud.end(ctx, tx, err)
}

// completeItem completes an open work item of waiting activity a as
// c.User with c.Outputs, and completes the activity: the user must hold
// the item or, when it is offered, be one who may take it.
func (r *run) completeItem(wi *store.WorkItem, a *act, c Completion, detail map[string]string) error {
	from := workitem.State(wi.State)
	if _, err := workitem.Next(from, workitem.Complete, ""); err != nil {
		return err
	}
	var err error
	if from == workitem.Offered {
		err = r.mayTake(*wi, a, c.User, "complete")
	} else {
		err = mustOwn(*wi, c.User, "complete")
	}
	if err != nil {
		return err
	}
	defer r.produce(a)() // an instance of a loop keeps its outputs (countersign.go)
	result, err := r.applyOutputs(*wi, a, c)
	if err != nil {
		return err
	}
	exception, err := r.callHooks(a, HookOnFinish)
	if err != nil {
		return err // the completion is refused; nothing changes
	}
	end := r.now
	wi.Owner, wi.CompletedBy, wi.CompletionKey, wi.Result, wi.EndedAt = c.User, c.User, c.IdempotencyKey, result, &end
	if err := r.moveItem(wi, from, workitem.Completed, c.User, detail); err != nil {
		return err
	}
	return r.complete(a, exception)
}

// repeatedCompletion answers a completion whose key was seen before.
func (r *run) repeatedCompletion(wi store.WorkItem, c Completion, done *WorkItem) error {
	outputs := c.Outputs
	if len(c.TextOutputs) > 0 {
		if err := r.load(wi.ProcessInstanceID); err != nil {
			return err
		}
		def, err := r.activityDef(wi.ActivityDefID)
		if err != nil {
			return err
		}
		if outputs, err = r.outputs(def, c); err != nil {
			return err
		}
	}
	got, err := canonicalOutputs(outputs)
	if err != nil {
		return err
	}
	if !bytes.Equal(got, canonicalJSON(wi.Result)) {
		return &WorkItemError{WorkItem: wi.ID, User: c.User, Op: "complete", kind: ErrCompletedDifferently,
			Reason: "the idempotency key was used with other outputs"}
	}
	*done = workItemOf(wi)
	return nil
}

// workItemOp runs one life-cycle command on a work item: it checks the
// transition, lets check adjust the item (owner, assignees), and writes
// it with its history, record and worklist visibility.
func (e *Engine) workItemOp(ctx context.Context, tx *gorm.DB, id int64, user string, op Op, cmd workitem.Command,
	check func(r *run, wi *store.WorkItem, a *act) error,
) error {
	if user == "" {
		return fmt.Errorf("%w: %s work item %d: no user", ErrBadArgument, cmd, id)
	}
	if err := checkText("user", user, maxKey); err != nil {
		return err
	}
	if err := op.check(); err != nil {
		return err
	}
	var aud *auditing
	if action, ok := workItemAudits[cmd]; ok && (cmd == workitem.Reassign || onBehalf(op, user)) {
		aud = e.audit(ctx, op, audited{action: action, kind: TargetWorkItem, target: idText(id)})
		if op.Actor == "" {
			aud.entry.Actor = clip(user, maxAuditKey) // the administrator
		}
	}
	err := e.transact(ctx, tx, op.actor(user), func(r *run) (*run, error) {
		r.op = op
		wi, err := r.snap.workItem(id)
		if err != nil {
			if errors.Is(err, store.ErrNotFound) {
				return nil, notFound("work item", id)
			}
			return nil, err
		}
		aud.about(wi.ProcessInstanceID)
		if err := r.load(wi.ProcessInstanceID); err != nil {
			return nil, err
		}
		if r.state().IsFinal() {
			return nil, r.processAccepts(string(cmd) + " work item")
		}
		from := workitem.State(wi.State)
		to, err := workitem.Next(from, cmd, "")
		if err != nil {
			return nil, err
		}
		if cmd != workitem.Reassign {
			if err := r.processAccepts(string(cmd) + " work item"); err != nil {
				return nil, err
			}
		}
		a, err := r.itemActivity(wi)
		if err != nil {
			return nil, err
		}
		before := wi
		if err := check(r, &wi, a); err != nil {
			return nil, err
		}
		if err := r.moveItem(&wi, from, to, user, changeDetail(before, wi)); err != nil {
			return nil, err
		}
		return r, aud.okIn(r)
	})
	return aud.end(ctx, tx, err)
}

// workItemAudits are the audit actions of the work-item commands that
// are audited when given on someone's behalf (onBehalf) or, for a
// reassignment, always.
var workItemAudits = map[workitem.Command]AuditAction{
	workitem.Allocate: AuditClaim,
	workitem.Release:  AuditRelease,
	workitem.Delegate: AuditDelegate,
	workitem.Reassign: AuditReassign,
}

// onBehalf says whether op gives a work-item command on user's behalf:
// its actor is someone else (an operator), so the command goes into the
// audit log as well as the history.
func onBehalf(op Op, user string) bool {
	a := strings.TrimSpace(op.Actor)
	return a != "" && a != user
}

// processAccepts refuses work-item commands on a process that is not
// Running.
func (r *run) processAccepts(command string) error {
	if r.state() == wftype.ProcessRunning {
		return nil
	}
	return &wftype.StateError{Subject: "process", State: r.pi.State, Command: command, Finished: r.state().IsFinal()}
}

// itemActivity returns the InActive activity instance a work item is for.
func (r *run) itemActivity(wi store.WorkItem) (*act, error) {
	a := r.activity(wi.ActivityInstanceID)
	if a == nil || a.row.State != string(wftype.ActivityInActive) {
		return nil, &wftype.StateError{Subject: "workitem", State: wi.State, Command: "use (its activity is not waiting)"}
	}
	return a, nil
}

// moveItem writes a work item's new state, owner and assignees, with the
// worklist visibility that goes with them, an audit entry and a record.
func (r *run) moveItem(wi *store.WorkItem, from, to workitem.State, user string, detail map[string]string) error {
	wi.State, wi.UpdatedAt = string(to), r.now
	if !workitem.HasOwner(to) && to != workitem.Completed && to != workitem.Suspended {
		wi.Owner = ""
	}
	r.stageItem(wi, false) // written at flush, fenced by the version read
	aid, wid := wi.ActivityInstanceID, wi.ID
	r.history = append(r.history, store.HistoryEntry{
		ProcessInstanceID: r.pi.ID, ActivityInstanceID: &aid, WorkItemID: &wid, Subject: store.SubjectWorkItem,
		FromState: string(from), ToState: string(to), Actor: r.actor, At: r.now, Data: r.itemDetail(detail),
	})
	typ := workItemRecord[to]
	if from == workitem.Suspended && to != workitem.Withdrawn {
		typ = RecordWorkItemResumed
	}
	rec := Record{Type: typ, Activity: wi.ActivityDefID, ActivityInstance: aid, WorkItem: wid, State: string(to), From: string(from), User: user}
	if to == workitem.Offered {
		rec.Assignees = assigneeNames(wi.Assignees)
	}
	r.record(rec)
	return nil
}

// workItemRecord names the record of a work item reaching a state; a
// reassignment (Offered again) is workitem.offered.
// (A resume is RecordWorkItemResumed whatever state it returns to.)
var workItemRecord = map[workitem.State]string{
	workitem.Offered:   RecordWorkItemOffered,
	workitem.Allocated: RecordWorkItemAllocated,
	workitem.Started:   RecordWorkItemStarted,
	workitem.Suspended: RecordWorkItemSuspended,
	workitem.Completed: RecordWorkItemCompleted,
	workitem.Withdrawn: RecordWorkItemWithdrawn,
}

// visibleTo is whose worklists show an item: nobody's once it is final,
// its owner's while someone holds it, else its assignees'.
func visibleTo(wi store.WorkItem) []store.Principal {
	switch s := workitem.State(wi.State); {
	case s.IsFinal():
		return nil
	case wi.Owner != "":
		return []store.Principal{{Kind: store.PrincipalUser, ID: wi.Owner}}
	default:
		return wi.Assignees
	}
}

// itemDetail encodes a work item entry's detail: what changed (owner,
// assignees) with the reason and data of the command that changed it, as
// r.detail does for the other entries; nil when there is none of them.
func (r *run) itemDetail(change map[string]string) []byte {
	if len(change) == 0 && r.op.Reason == "" && len(r.op.Data) == 0 {
		return nil
	}
	d := make(map[string]any, len(change)+2)
	for k, v := range change {
		d[k] = v
	}
	if r.op.Reason != "" {
		d["reason"] = r.op.Reason
	}
	if len(r.op.Data) > 0 {
		d["data"] = r.op.Data
	}
	return mustJSON(d)
}

func changeDetail(before, after store.WorkItem) map[string]string {
	d := map[string]string{}
	if before.Owner != after.Owner {
		d["owner"] = after.Owner
	}
	if !slices.Equal(before.Assignees, after.Assignees) {
		d["assignees"] = principalsString(after.Assignees)
	}
	return d
}

func principalsString(ps []store.Principal) string {
	return strings.Join(assigneeNames(ps), ",")
}

// assigneeNames are principals as kind:id, as records report them.
func assigneeNames(ps []store.Principal) []string {
	names := make([]string, len(ps))
	for i, p := range ps {
		names[i] = string(p.Kind) + ":" + p.ID
	}
	return names
}

func mustOwn(wi store.WorkItem, user, op string) error {
	if wi.Owner != user {
		return notAllowed(wi, user, op, "the item is held by %q", wi.Owner)
	}
	return nil
}

// mayTake checks that user may take an offered item: it is offered to
// them (directly, or through a role or unit the directory says they are
// in), and the activity's four-eyes rules allow them.
func (r *run) mayTake(wi store.WorkItem, a *act, user, op string) error {
	if user == "" {
		return notAllowed(wi, user, op, "no user given")
	}
	if len(wi.Assignees) > 0 {
		ok, err := r.e.offeredTo(r.ctx, wi.Assignees, user)
		if err != nil {
			return &storeErr{err}
		}
		if !ok {
			return notAllowed(wi, user, op, "the item is offered to %s", principalsString(wi.Assignees))
		}
	}
	return r.mayPerform(wi, a, user, op)
}

// offeredTo reports whether user is one of principals or a member of one.
func (e *Engine) offeredTo(ctx context.Context, principals []store.Principal, user string) (bool, error) {
	for _, p := range principals {
		if p.Kind == store.PrincipalUser && p.ID == user {
			return true, nil
		}
	}
	for _, p := range principals {
		kind := resource.KindRole
		switch p.Kind {
		case store.PrincipalUser:
			kind = resource.KindHuman
		case store.PrincipalUnit:
			kind = resource.KindOrgUnit
		}
		ok, err := e.directory.IsMember(ctx, user, resource.Participant{ID: p.ID, Kind: kind})
		if err != nil && !errors.Is(err, resource.ErrUnknownUser) && !errors.Is(err, resource.ErrUnknownParticipant) {
			return false, err
		}
		if ok {
			return true, nil
		}
	}
	return false, nil
}

// mayPerform applies the activity's four-eyes rules to user.
func (r *run) mayPerform(wi store.WorkItem, a *act, user, op string) error {
	others, ok := a.def.ExtendedAttributes.Get(AttrSeparationOfDuties)
	if !ok {
		return nil
	}
	performers, err := r.performers()
	if err != nil {
		return err
	}
	for _, id := range strings.Split(others, ",") {
		id = strings.TrimSpace(id)
		if id != "" && slices.Contains(performers[id], user) {
			return notAllowed(wi, user, op, "separation of duties: %s performed %s in this process instance", user, id)
		}
	}
	return nil
}

// performers returns who completed the work items of each activity of
// this process instance, by activity id.
func (r *run) performers() (map[string][]string, error) {
	items, err := r.snap.workItems(store.ListWorkItemsParams{
		ProcessInstanceID: r.pi.ID, States: []string{string(workitem.Completed)},
	})
	if err != nil {
		return nil, &storeErr{err}
	}
	out := make(map[string][]string)
	for _, wi := range items {
		out[wi.ActivityDefID] = append(out[wi.ActivityDefID], wi.CompletedBy)
	}
	return out, nil
}

// applyOutputs checks and sets the completion's outputs and returns them
// as the item's stored result. An activity that declares formal
// parameters (XPDL 2.2) takes its OUT and INOUT parameters only, each
// checked against the parameter's type; one that names a data field sets
// it, the others are kept in the result for the host. Otherwise outputs
// are data fields, limited to the VariableToProcess_UPDATE ones when the
// activity names any.
func (r *run) applyOutputs(wi store.WorkItem, a *act, c Completion) ([]byte, error) {
	if _, err := r.variables(); err != nil {
		return nil, err
	}
	outputs, err := r.outputs(a.def, c)
	if err != nil {
		return nil, err
	}
	if err := checkValuesSize(outputs); err != nil {
		return nil, err
	}
	allowed := updatable(a.def)
	names := slices.Sorted(maps.Keys(outputs))
	typed := make(map[string]any, len(names))
	for _, name := range names {
		value := outputs[name]
		_, declared := r.decls[name]
		if params := a.def.FormalParameters; len(params) > 0 {
			i := slices.IndexFunc(params, func(fp *xpdl.FormalParameter) bool { return fp.ID == name })
			if i < 0 {
				return nil, notAllowed(wi, c.User, "complete", "activity %s has no parameter %s", a.def.ID, name)
			}
			fp := params[i]
			if fp.Mode != xpdl.ModeOut && fp.Mode != xpdl.ModeInOut {
				return nil, notAllowed(wi, c.User, "complete", "parameter %s of activity %s is %s: its performer cannot set it", name, a.def.ID, fp.Mode)
			}
			v, err := typeOf(fp.Type, fp.IsArray).coerce(name, value)
			if err != nil {
				return nil, err
			}
			if typed[name] = v; !declared {
				continue // not a data field: the host reads it from the result
			}
			value = v
		} else if len(allowed) > 0 && !allowed[name] && declared {
			return nil, notAllowed(wi, c.User, "complete", "activity %s does not let its performer set %s", a.def.ID, name)
		}
		if err := r.setVariable(name, value); err != nil {
			return nil, err
		}
		typed[name] = r.vars[name]
	}
	r.handBack(a, typed)
	return canonicalOutputs(typed)
}

// canonicalOutputs encodes outputs as JSON with sorted keys, so that two
// completions with the same values compare equal.
func canonicalOutputs(outputs map[string]any) ([]byte, error) {
	if len(outputs) == 0 {
		return []byte("{}"), nil
	}
	data, err := json.Marshal(outputs) // maps encode with sorted keys
	if err != nil {
		return nil, fmt.Errorf("encode outputs: %w", err)
	}
	return canonicalJSON(data), nil
}

// canonicalJSON re-encodes JSON so that numbers and spacing compare
// equal (42 and 42.0 differ in a typed INTEGER never).
func canonicalJSON(data []byte) []byte {
	if len(data) == 0 {
		return []byte("{}")
	}
	var v any
	if err := json.Unmarshal(data, &v); err != nil {
		return data
	}
	out, err := json.Marshal(v)
	if err != nil {
		return data
	}
	return out
}

// assignees works out whom a manual activity's work item is offered to:
// the performer of the activity named by SamePerformerAs when there is
// one, else each performer: a declared participant through the
// directory (a HUMAN is its users, a ROLE or ORGANIZATIONAL_UNIT the role
// or unit it maps to), or an expression over the variables naming
// participants or users.
func (r *run) assignees(a *act) ([]store.Principal, error) {
	if same, ok := a.def.ExtendedAttributes.Get(AttrSamePerformerAs); ok {
		performers, err := r.performers()
		if err != nil {
			return nil, err
		}
		if users := performers[strings.TrimSpace(same)]; len(users) > 0 {
			return []store.Principal{{Kind: store.PrincipalUser, ID: users[len(users)-1]}}, nil
		}
	}
	var out []store.Principal
	for _, ref := range a.def.Performers {
		ps, err := r.performerPrincipals(strings.TrimSpace(ref))
		if err != nil {
			return nil, err
		}
		for _, p := range ps {
			if !slices.Contains(out, p) {
				out = append(out, p)
			}
		}
	}
	return out, nil
}

// plainName matches a performer that is a bare XPDL id, not a script.
var plainName = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_.-]*$`)

func (r *run) performerPrincipals(ref string) ([]store.Principal, error) {
	if ref == "" {
		return nil, nil
	}
	if p := r.participant(ref); p != nil {
		return r.e.principalsOf(r.ctx, p)
	}
	// Shark style: an expression (a variable holding a user or
	// participant id, or a script) naming who performs.
	v, err := r.expression(xpdl.Expression{Text: ref})
	if err != nil {
		if isStoreError(err) || !plainName.MatchString(ref) {
			return nil, fmt.Errorf("performer %q: %w", ref, err)
		}
		// A bare name that is neither a participant of the package nor a
		// variable: a participant declared elsewhere (an external
		// package, the organisation). It is offered as a role of that id.
		return []store.Principal{{Kind: store.PrincipalRole, ID: ref}}, nil
	}
	var names []string
	switch v := v.(type) {
	case string:
		names = []string{v}
	case []any:
		for _, x := range v {
			names = append(names, fmt.Sprint(x))
		}
	case nil:
	default:
		names = []string{fmt.Sprint(v)}
	}
	var out []store.Principal
	for _, n := range names {
		n = strings.TrimSpace(n)
		if n == "" {
			continue
		}
		if p := r.participant(n); p != nil {
			ps, err := r.e.principalsOf(r.ctx, p)
			if err != nil {
				return nil, err
			}
			out = append(out, ps...)
			continue
		}
		out = append(out, store.Principal{Kind: store.PrincipalUser, ID: n})
	}
	return out, nil
}

// participant finds a declared participant by id, in the process, then
// the package.
func (r *run) participant(id string) *xpdl.Participant {
	for _, p := range r.proc.Participants {
		if p.ID == id {
			return p
		}
	}
	for _, p := range r.dep.pkg.Participants {
		if p.ID == id {
			return p
		}
	}
	return nil
}

// principalsOf maps a participant to worklist principals: a HUMAN to its
// users, a ROLE (RESOURCE, RESOURCE_SET) or ORGANIZATIONAL_UNIT to the
// role or unit the directory maps it to, a SYSTEM to nobody.
func (e *Engine) principalsOf(ctx context.Context, p *xpdl.Participant) ([]store.Principal, error) {
	rp := resource.Participant{ID: p.ID, Name: p.Name, Kind: resource.ParticipantKind(p.Type)}
	switch p.Type {
	case xpdl.ParticipantSystem:
		return nil, nil
	case xpdl.ParticipantHuman:
		users, err := e.directory.Resolve(ctx, rp)
		if err != nil && !errors.Is(err, resource.ErrUnknownParticipant) {
			return nil, err
		}
		if len(users) == 0 {
			users = []string{p.ID}
		}
		out := make([]store.Principal, len(users))
		for i, u := range users {
			out[i] = store.Principal{Kind: store.PrincipalUser, ID: u}
		}
		return out, nil
	}
	kind, id := store.PrincipalRole, p.ID
	if p.Type == xpdl.ParticipantOrgUnit {
		kind = store.PrincipalUnit
	}
	if m, ok := e.directory.(resource.Mapper); ok {
		t, err := m.Map(ctx, rp)
		if err != nil && !errors.Is(err, resource.ErrUnknownParticipant) {
			return nil, err
		}
		if err == nil {
			switch t.Kind {
			case resource.KindHuman:
				kind = store.PrincipalUser
			case resource.KindOrgUnit:
				kind = store.PrincipalUnit
			default:
				kind = store.PrincipalRole
			}
			id = t.ID
		}
	}
	return []store.Principal{{Kind: kind, ID: id}}, nil
}

// WorklistFilter selects from a user's worklist.
type WorklistFilter struct {
	// States keeps items in these states; empty: every open state.
	States []workitem.State
	// Processes and Activities keep items of these process and activity
	// ids; empty: all.
	Processes, Activities []string
	// MinPriority keeps items of at least this priority; nil: all.
	MinPriority *int
	// DueBefore keeps items due before this time; nil: all.
	DueBefore *time.Time
	// After is the cursor: the Next of the previous page; "" starts at
	// the top.
	After string
	// Limit is the page size; default 50, at most 1000.
	Limit int
}

// WorklistPage is one page of a worklist.
type WorklistPage struct {
	// WorkItems are in priority order (highest first), then oldest first.
	WorkItems []WorkItem `json:"workitems"`
	// Next is the cursor of the following page, opaque; "" when this was
	// the last.
	Next string `json:"next,omitempty"`
}

// Worklist returns the open work items user may take or holds: those
// offered to them directly, through their roles and through their units
// (as the directory says), and those they hold.
func (e *Engine) Worklist(ctx context.Context, user string, q WorklistFilter) (WorklistPage, error) {
	if user == "" {
		return WorklistPage{}, fmt.Errorf("%w: worklist of no user", ErrBadArgument)
	}
	principals := []store.Principal{{Kind: store.PrincipalUser, ID: user}}
	m, err := e.directory.Memberships(ctx, user)
	if err != nil && !errors.Is(err, resource.ErrUnknownUser) {
		return WorklistPage{}, err
	}
	for _, role := range m.Roles {
		principals = append(principals, store.Principal{Kind: store.PrincipalRole, ID: role})
	}
	for _, unit := range m.Units {
		principals = append(principals, store.Principal{Kind: store.PrincipalUnit, ID: unit})
	}
	if err := checkPage(0, q.Limit); err != nil {
		return WorklistPage{}, err
	}
	limit := min(q.Limit, store.MaxWorklistLimit)
	if limit == 0 {
		limit = 50
	}
	// One more than the page tells whether another page follows (the
	// store's maximum page then ends with a possibly empty last page).
	params := store.ListWorklistParams{
		Principals: principals, ProcessDefIDs: q.Processes, ActivityDefIDs: q.Activities,
		MinPriority: q.MinPriority, Limit: min(limit+1, store.MaxWorklistLimit),
	}
	if q.DueBefore != nil {
		t := q.DueBefore.UTC()
		params.DueBefore = &t
	}
	for _, s := range q.States {
		if !slices.Contains(workitem.States, s) {
			return WorklistPage{}, fmt.Errorf("%w: unknown work item state %q", ErrBadFilter, s)
		}
		params.States = append(params.States, string(s))
	}
	if q.After != "" {
		c, err := decodeCursor(q.After)
		if err != nil {
			return WorklistPage{}, err
		}
		params.After = &c
	}
	items, err := e.store.ListWorklist(ctx, params)
	if err != nil {
		return WorklistPage{}, err
	}
	page := WorklistPage{WorkItems: workItemsOf(items)}
	if len(items) > limit || len(items) == store.MaxWorklistLimit {
		page.WorkItems = page.WorkItems[:limit]
		last := page.WorkItems[limit-1]
		page.Next = encodeCursor(store.WorklistCursor{Priority: last.Priority, ID: last.ID})
	}
	return page, nil
}

// Cursors are "priority.id": opaque to callers, stable across pages
// because the order (priority descending, id ascending) is total.
func encodeCursor(c store.WorklistCursor) string {
	return strconv.Itoa(c.Priority) + "." + strconv.FormatInt(c.ID, 10)
}

func decodeCursor(s string) (store.WorklistCursor, error) {
	p, id, ok := strings.Cut(s, ".")
	if ok {
		prio, err1 := strconv.Atoi(p)
		n, err2 := strconv.ParseInt(id, 10, 64)
		if err1 == nil && err2 == nil && n > 0 {
			return store.WorklistCursor{Priority: prio, ID: n}, nil
		}
	}
	return store.WorklistCursor{}, fmt.Errorf("%w: malformed worklist cursor %q", ErrBadFilter, s)
}

func actorOf(user string) string {
	if user == "" {
		return "host"
	}
	return user
}

// EligibleUsers lists, sorted, the users who may take work item id now as
// far as the directory can name them: the users it is offered to directly
// and the members of its roles and units, less those a four-eyes rule
// excludes; its owner alone while someone holds it. A directory that
// cannot enumerate members (resource.Anyone) contributes none.
func (e *Engine) EligibleUsers(ctx context.Context, id int64) ([]string, error) {
	var users []string
	// Reads only: no transaction, so nothing queues behind SQLite's
	// write lock.
	err := func() error {
		r := e.newRun(ctx, e.store, "host")
		wi, err := r.snap.workItem(id)
		if err != nil {
			if errors.Is(err, store.ErrNotFound) {
				return notFound("work item", id)
			}
			return err
		}
		if workitem.State(wi.State).IsFinal() {
			return nil
		}
		if wi.Owner != "" {
			users = []string{wi.Owner}
			return nil
		}
		if err := r.load(wi.ProcessInstanceID); err != nil {
			return err
		}
		a, err := r.itemActivity(wi)
		if err != nil {
			return err
		}
		var candidates []string
		for _, p := range wi.Assignees {
			kind := resource.KindRole
			switch p.Kind {
			case store.PrincipalUser:
				candidates = append(candidates, p.ID)
				continue
			case store.PrincipalUnit:
				kind = resource.KindOrgUnit
			}
			members, err := e.directory.Resolve(ctx, resource.Participant{ID: p.ID, Kind: kind})
			if err != nil && !errors.Is(err, resource.ErrUnknownParticipant) {
				return err
			}
			candidates = append(candidates, members...)
		}
		slices.Sort(candidates)
		for _, u := range slices.Compact(candidates) {
			if r.mayPerform(wi, a, u, "take") == nil {
				users = append(users, u)
			}
		}
		return nil
	}()
	return users, err
}
