package engine

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"regexp"
	"runtime/debug"
	"slices"
	"strconv"
	"strings"

	"github.com/goxpdl/goxpdl/engine/flow"
	"github.com/goxpdl/goxpdl/engine/machine"
	"github.com/goxpdl/goxpdl/script"
	"github.com/goxpdl/goxpdl/store"
	"github.com/goxpdl/goxpdl/wftype"
	"github.com/goxpdl/goxpdl/workitem"
	"github.com/goxpdl/goxpdl/xpdl"
)

// IsManual reports whether an activity waits for a person: an XPDL 2
// TaskUser or TaskManual, a Manual start or finish mode, or an
// implementation of No (manual procedures, XPDL 1.0) with a performer,
// unless both modes say Automatic.
func IsManual(a *xpdl.Activity) bool {
	switch {
	case a.Kind == xpdl.ActivityRoute || a.Kind == xpdl.ActivityBlock || a.Kind == xpdl.ActivitySubFlow || a.Kind == xpdl.ActivityEvent:
		return false
	case a.Task == xpdl.TaskUser || a.Task == xpdl.TaskManual:
		return true
	case a.StartMode == xpdl.ModeManual || a.FinishMode == xpdl.ModeManual:
		return true
	case a.Kind == xpdl.ActivityNo && a.Task != xpdl.TaskNone && len(a.Performers) > 0:
		return !(a.StartMode == xpdl.ModeAutomatic && a.FinishMode == xpdl.ModeAutomatic)
	}
	return false
}

// startActivity runs an Initiated activity as far as it goes in this
// transaction: automatic work completes and routes; manual work is offered;
// subflows and blocks start and wait; a looping activity waits for its
// instances (loop.go). A Suspended process leaves it
// Initiated (Resume starts it); a finished one ignores it.
func (r *run) startActivity(a *act) error {
	if r.state() != wftype.ProcessRunning || a.row.State != string(wftype.ActivityInitiated) {
		return nil
	}
	if target := r.failTarget(a); len(r.doomed) > 0 {
		if f, ok := r.doomed[target.key]; ok {
			return r.failDoomed(target, f) // it failed in an attempt rolled back
		}
	}
	if isLoop(a) {
		return r.startWaiting(a) // it waits for its instances (loop.go)
	}
	if isLoopInstance(a) {
		leave, err := r.enterInstance(a)
		if err != nil {
			return err
		}
		defer leave()
	}
	def := a.def
	if isEventGateway(def) {
		return r.startEventGateway(a)
	}
	if isThrowEvent(def) {
		return r.throwEvent(a)
	}
	if waits(def) {
		return r.startWaiting(a)
	}
	switch {
	case def.Kind == xpdl.ActivityEvent && def.Event != nil && def.Event.Type != xpdl.EventEnd &&
		def.Event.Trigger != "" && def.Event.Trigger != xpdl.TriggerNone:
		if err := r.setActivity(a, machine.ActivityStart, ""); err != nil {
			return err
		}
		return r.fail(a, fmt.Sprintf("%s %s events are not executed yet", def.Event.Type, def.Event.Trigger))
	}
	if err := r.setActivity(a, machine.ActivityStart, ""); err != nil {
		return err
	}
	if exception, err := r.callHooks(a, HookOnEnter); err != nil || exception != "" {
		return r.callFailed(a, exception, err)
	}
	switch {
	case def.Kind == xpdl.ActivityTool || (def.Task == xpdl.TaskService || def.Task == xpdl.TaskSend || def.Task == xpdl.TaskReceive) && len(def.Tools) > 0:
		if exception, err := r.callTools(a); err != nil || exception != "" {
			return r.callFailed(a, exception, err)
		}
	case def.Kind == xpdl.ActivityScript || def.Script != nil:
		if err := r.runScript(a); err != nil {
			if isStoreError(err) {
				return err
			}
			return r.fail(a, err.Error())
		}
	}
	return r.complete(a, "")
}

// callFailed handles an application or hook call of activity a that
// raised an XPDL exception (its exception transitions fire) or failed. A
// database error rolls the step back for the event to come again. An
// error the call's retry policy retries does too, until the policy's
// last attempt: then, as for any other error, the activity goes Abnormal
// with an incident.
func (r *run) callFailed(a *act, exception string, err error) error {
	if err == nil {
		return r.complete(a, exception)
	}
	if isStoreError(err) {
		return err
	}
	ce, ok := asCallError(err)
	if !ok {
		if IsRetryable(err) {
			return err
		}
		return r.failCause(a, CauseApplication, err.Error())
	}
	f := failure{cause: CauseApplication, diagnosis: err.Error(), app: ce.app, params: ce.params}
	if ce.policy.retries(err) {
		attempt := max(r.attempt, 1)
		if !ce.policy.exhausted(attempt) {
			return err
		}
		f.cause, f.attempts = CauseRetriesExhausted, attempt
		f.diagnosis = fmt.Sprintf("gave up after %d attempts: %v", attempt, err)
	}
	return r.failWith(a, f)
}

// waits reports whether an activity waits once started, for people, a
// subflow, its activity set, a timer, a message or a signal, so that its
// deadlines, limit, boundary timers and reminders can pass.
func waits(def *xpdl.Activity) bool {
	return IsManual(def) || def.Kind == xpdl.ActivitySubFlow || def.Kind == xpdl.ActivityBlock || isTimerEvent(def) ||
		catchesTrigger(def)
}

// startWaiting starts an activity that waits, arming its timers when it
// is still waiting at the end. Timers that cannot be worked out (a
// deadline script fails) leave it Abnormal before anything else happens.
func (r *run) startWaiting(a *act) error {
	var plan timedWork
	if hasTimers(a.scope.Flow, a.def) && !isLoopInstance(a) { // a loop's timers are its own
		var err error
		if plan, err = r.planTimers(a); err != nil {
			if isStoreError(err) {
				return err
			}
			if err := r.setActivity(a, machine.ActivityStart, ""); err != nil {
				return err
			}
			return r.fail(a, err.Error())
		}
	}
	var err error
	switch def := a.def; {
	case isLoop(a):
		err = r.startLoop(a)
	case IsManual(def):
		a.dueAt = plan.due()
		err = r.offer(a)
	case def.Kind == xpdl.ActivitySubFlow:
		err = r.startSubflow(a)
	case def.Kind == xpdl.ActivityBlock:
		err = r.startBlock(a)
	default: // an event or a receive task: it waits for its timer, message or signal
		if err = r.setActivity(a, machine.ActivityStart, ""); err == nil {
			if err = r.setActivity(a, machine.ActivityWait, ""); err == nil {
				err = r.armTrigger(a)
			}
		}
	}
	if err != nil || len(plan) == 0 {
		return err
	}
	switch wftype.ActivityState(a.row.State) {
	case wftype.ActivityInActive, wftype.ActivityWaiting:
		r.arm(a, plan)
	}
	return nil
}

// isStoreError tells the errors that roll a step back (to be tried again)
// from those that fail the activity: the database's, and a cancelled
// context (the engine stopping), as opposed to a script's or an
// application's.
func isStoreError(err error) bool {
	return errors.Is(err, store.ErrConflict) || errors.As(err, new(*storeErr)) ||
		errors.Is(err, context.Canceled) && !errors.Is(err, script.ErrCanceled) ||
		transientDBError(err) // also from an application's own statement in the step's transaction
}

// storeErr marks errors of the database met while evaluating, so that
// they roll the step back rather than failing the activity.
type storeErr struct{ err error }

func (e *storeErr) Error() string { return e.err.Error() }
func (e *storeErr) Unwrap() error { return e.err }

// offer hands a manual activity to people: the activity goes InActive
// with a work item offered to whom its performer resolves to (see
// assignees). A message that arrived early for the activity completes the
// item at once.
func (r *run) offer(a *act) error {
	if err := r.setActivity(a, machine.ActivityOffer, ""); err != nil {
		return err
	}
	assignees, err := r.assignees(a)
	if a.row.AssignTo != "" {
		assignees, err = []store.Principal{{Kind: store.PrincipalUser, ID: a.row.AssignTo}}, nil
	}
	if err != nil {
		if isStoreError(err) {
			return err
		}
		return r.fail(a, err.Error())
	}
	performer := ""
	if len(a.def.Performers) > 0 {
		performer = a.def.Performers[0]
	}
	id, err := r.idNow()
	if err != nil {
		return err
	}
	item := store.WorkItem{
		ID: id, ProcessInstanceID: r.pi.ID, ActivityInstanceID: a.row.ID, ProcessDefID: r.proc.ID, ActivityDefID: a.def.ID,
		Name: a.def.Name, State: string(workitem.Offered), Performer: performer, Assignees: assignees,
		Priority: priority(a.def.Priority), DueAt: a.dueAt, CreatedAt: r.now, UpdatedAt: r.now,
	}
	r.stageItem(&item, true)
	wi := item
	aid, wid := a.row.ID, wi.ID
	r.history = append(r.history, store.HistoryEntry{
		ProcessInstanceID: r.pi.ID, ActivityInstanceID: &aid, WorkItemID: &wid, Subject: store.SubjectWorkItem,
		ToState: wi.State, Actor: r.actor, At: r.now,
		Data: mustJSON(map[string]string{"performer": performer, "assignees": principalsString(assignees)}),
	})
	r.record(Record{
		Type: RecordWorkItemCreated, Activity: a.def.ID, ActivityInstance: aid, WorkItem: wid, State: wi.State,
		Assignees: assigneeNames(assignees),
	})
	_, err = r.applyInbox(a, wi)
	return err
}

// priority reads an activity's Priority; absent or not a number is 0.
func priority(text string) int {
	n, err := strconv.Atoi(strings.TrimSpace(text))
	if err != nil {
		return 0
	}
	return n
}

// fail puts an activity in Abnormal: an operator must retry or skip it, or
// terminate the process. Nothing the failed work did stays: the first
// time, fail rolls the whole transaction back (errRolledBack), the host's
// writes with it, and transact runs it again with the activity doomed,
// so that it goes Abnormal without being run (startActivity) or, where
// the failure is not in running it, here. An activity inside an activity
// set dooms the block activity at the top of its sets instead (paper
// §2.5: a set is one transaction): the block goes Abnormal with the
// cause, its set's activities end, and retrying the block runs the whole
// set again.
func (r *run) fail(a *act, diagnosis string) error {
	return r.failWith(a, failure{cause: CauseOther, diagnosis: diagnosis})
}

// failCause is fail with the cause an incident shows.
func (r *run) failCause(a *act, cause IncidentCause, diagnosis string) error {
	return r.failWith(a, failure{cause: cause, diagnosis: diagnosis})
}

// failWith is fail with everything the incident shows.
func (r *run) failWith(a *act, f failure) error {
	if r.skipping == a {
		// An operator's skip cannot route the activity on: refuse it
		// rather than fail the activity again.
		return fmt.Errorf("%w: activity %s cannot be routed on: %s", ErrCannotSkip, a.def.ID, f.diagnosis)
	}
	target := r.failTarget(a)
	doomed, ok := r.doomed[target.key]
	if !ok {
		if target != a {
			f.diagnosis = fmt.Sprintf("activity set %s rolled back: activity %s failed: %s", target.def.Block.ActivitySet, a.def.ID, f.diagnosis)
		}
		return &rolledBack{key: target.key, failure: f}
	}
	if target != a {
		return r.failDoomed(target, doomed)
	}
	return r.abnormal(a, f)
}

// abnormal puts a in Abnormal and opens its incident.
func (r *run) abnormal(a *act, f failure) error {
	if err := r.setActivity(a, machine.ActivityFail, f.diagnosis); err != nil {
		return err
	}
	r.incidents = append(r.incidents, pendingIncident{act: a, failure: f})
	return nil
}

// failTarget is the activity a failure of a puts in Abnormal: a itself at
// the top level of the process, else the block activity that runs the
// outermost activity set a is in.
func (r *run) failTarget(a *act) *act {
	t := a
	for t.scope.Block != 0 {
		block := r.activity(t.scope.Block)
		if block == nil {
			break
		}
		t = block
	}
	return t
}

// failDoomed puts a doomed activity in Abnormal without running it: a
// block activity's set activities end with it.
func (r *run) failDoomed(a *act, f failure) error {
	if a.row.State == string(wftype.ActivityInitiated) {
		if err := r.setActivity(a, machine.ActivityStart, ""); err != nil {
			return err
		}
	}
	if err := r.interrupt(a); err != nil {
		return err
	}
	return r.abnormal(a, f)
}

// rolledBack is the error that rolls a transaction back because an
// activity failed (fail); transact runs it again with the activity
// doomed.
type rolledBack struct {
	key     string
	failure failure
}

func (e *rolledBack) Error() string {
	return "activity " + e.key + " failed: " + e.failure.diagnosis + " (the transaction is run again without it)"
}

// complete finishes an activity and routes: the transitions chosen by its
// split (or, for an exception, its EXCEPTION transitions) fire, joins
// collect the arrivals, and the scope is settled. A condition that cannot
// be evaluated, or an exception the model does not handle, leaves the
// activity Abnormal instead.
func (r *run) complete(a *act, exception string) error {
	if handled, err := r.completeInstance(a, exception); handled || err != nil {
		return err // an instance of a loop (loop.go)
	}
	if isLoop(a) && exception == "" {
		if err := r.closeCountersign(a); err != nil { // countersign.go
			return err
		}
	}
	sc := a.scope
	var fired []*xpdl.Transition
	if exception != "" {
		fired = flow.ChooseException(sc.Flow, a.def, exception)
		if len(fired) == 0 {
			return r.failCause(a, CauseException, fmt.Sprintf("exception %s: no EXCEPTION or DEFAULTEXCEPTION transition", exception))
		}
	}
	var decided []decision
	if exception == "" {
		var err error
		if fired, err = flow.Choose(sc.Flow, a.def, func(t *xpdl.Transition) (bool, error) {
			ok, err := r.condition(t)
			decided = append(decided, decision{t, ok})
			return ok, err
		}); err != nil {
			if isStoreError(err) {
				return err
			}
			return r.failCause(a, CauseCondition, err.Error())
		}
	}
	cmd, why := machine.ActivityComplete, ""
	if r.skipping == a {
		cmd, why = machine.ActivitySkip, "skipped by "+r.actor // an operator completes it without running it
	}
	a.raised = exception != ""
	if err := r.setActivity(a, cmd, why); err != nil {
		return err
	}
	if err := r.deferredChoice(a); err != nil {
		return err
	}
	if len(fired) == 0 && hasNormalOutgoing(sc.Flow, a.def) {
		r.tokens.Lose(sc, a.def, r.lostBecause(decided))
	} else if len(fired) == 0 && len(sc.Flow.Outgoing(a.def.ID)) > 0 {
		r.tokens.DeadEnd(sc, a.def)
	}
	if err := r.fire(sc, fired); err != nil {
		return err
	}
	if a.def.Event != nil && a.def.Event.Type == xpdl.EventEnd && a.def.Event.Trigger == xpdl.TriggerTerminate && sc.Block == 0 {
		if err := r.endOpenActivities("ended by terminate end event " + a.def.ID); err != nil {
			return err
		}
		return r.endProcess(machine.ProcessComplete, "")
	}
	return r.settle(sc)
}

// decision is a transition condition evaluated as an activity completed.
type decision struct {
	t     *xpdl.Transition
	holds bool
}

// hasNormalOutgoing reports whether an activity has an outgoing
// transition other than an exception path: one that its normal
// completion is meant to take. An activity with none is an end point.
func hasNormalOutgoing(f *xpdl.Flow, a *xpdl.Activity) bool {
	for _, t := range f.Outgoing(a.ID) {
		if t.Condition == nil || (t.Condition.Type != xpdl.ConditionException && t.Condition.Type != xpdl.ConditionDefaultException) {
			return true
		}
	}
	return false
}

// identifier matches the names a condition may read.
var identifier = regexp.MustCompile(`[A-Za-z_$][A-Za-z0-9_$]*`)

// lostBecause says why no transition fired: each condition evaluated,
// with what it gave, and the values of the variables they read.
func (r *run) lostBecause(decided []decision) string {
	if len(decided) == 0 {
		return "no transition holds and none is OTHERWISE"
	}
	vars, _ := r.variables() // loaded already: the conditions read them
	var parts []string
	read := map[string]bool{}
	for _, d := range decided {
		text := strings.TrimSpace(d.t.Condition.Expression.Text)
		parts = append(parts, fmt.Sprintf("%s [%s] is %t", d.t.ID, text, d.holds))
		for _, name := range identifier.FindAllString(text, -1) {
			if _, ok := vars[name]; ok {
				read[name] = true
			}
		}
	}
	why := strings.Join(parts, ", ")
	if len(read) > 0 {
		names := slices.Sorted(maps.Keys(read))
		values := make([]string, len(names))
		for i, name := range names {
			values[i] = name + "=" + showValue(vars[name])
		}
		why += " (" + strings.Join(values, ", ") + ")"
	}
	return why
}

// showValue prints a variable's value in a diagnosis: strings quoted.
func showValue(v any) string {
	if s, ok := v.(string); ok {
		return strconv.Quote(s)
	}
	data, err := json.Marshal(v)
	if err != nil {
		return fmt.Sprint(v)
	}
	return string(data)
}

// settle starts OR-joins that can fire and finishes the scope when nothing
// in it is alive: the process completes, or the block activity running an
// activity set completes, or the process locks with a diagnosis.
func (r *run) settle(sc flow.Scope) error {
	if r.state().IsFinal() {
		return nil
	}
	var live []string
	for _, a := range r.acts {
		if a.scope.Block == sc.Block && a.scope.Flow == sc.Flow && a.row.State != string(wftype.ActivityCompleted) {
			live = append(live, a.def.ID)
		}
	}
	starts, outcome, diagnosis := r.tokens.Settle(sc, live, r.e.lockLost(r.dep))
	for _, id := range starts {
		if err := r.startJoin(sc, sc.Flow.Activity(id), nil); err != nil {
			return err
		}
	}
	switch outcome {
	case flow.Done:
		if sc.Block == 0 {
			return r.endProcess(machine.ProcessComplete, "")
		}
		r.tokens.Clear(sc)
		block := r.activity(sc.Block)
		if block == nil {
			return fmt.Errorf("block activity instance %d is not loaded", sc.Block)
		}
		return r.complete(block, "")
	case flow.Locked:
		if sc.Block != 0 {
			if block := r.activity(sc.Block); block != nil {
				diagnosis = fmt.Sprintf("in activity set of %s: %s", block.def.ID, diagnosis)
			}
		}
		return r.endProcess(machine.ProcessLock, diagnosis)
	}
	return nil
}

// endOpenActivities ends every unfinished activity of the process before
// a Terminate end event completes it (explicit termination, workflow
// pattern 43): work items are withdrawn, subflow instances terminated,
// blocks cancelled with their activities, and each activity completes
// without passing anything on.
func (r *run) endOpenActivities(why string) error {
	for _, a := range r.acts {
		if a.scope.Block != 0 || a.row.State == string(wftype.ActivityCompleted) {
			continue // a block's activities end with it
		}
		if err := r.interrupt(a); err != nil {
			return err
		}
		if err := r.forceComplete(a, why); err != nil {
			return err
		}
	}
	return nil
}

// endProcess completes or locks the process, withdraws its open work
// items, and tells a waiting parent.
func (r *run) endProcess(cmd machine.ProcessCommand, diagnosis string) error {
	if err := r.setProcess(cmd, diagnosis); err != nil {
		return err
	}
	// An instance of a process without manual activities or message
	// receivers has neither work items nor inbox messages (send refuses
	// messages for other activities): no need to look for them.
	if r.dep == nil || r.dep.addressable[r.proc.ID] {
		if err := r.withdrawWorkItems(); err != nil {
			return err
		}
		if err := r.expireInbox(); err != nil {
			return err
		}
	}
	if r.pi.ParentInstanceID != nil && r.pi.ParentActivityID != nil {
		r.tellParent()
	}
	return nil
}

// withdrawWorkItems withdraws the process's open work items.
func (r *run) withdrawWorkItems() error {
	return r.moveOpenItems(workitem.Withdraw)
}

// moveOpenItems applies cmd (withdraw, suspend, resume) to every open
// work item of the process that accepts it.
func (r *run) moveOpenItems(cmd workitem.Command) error {
	return r.moveItems(cmd, openItems(r.pi.ID))
}

// moveItems applies cmd to the work items filter selects that accept it.
func (r *run) moveItems(cmd workitem.Command, filter store.ListWorkItemsParams) error {
	items, err := r.snap.workItems(filter)
	if err != nil {
		return err
	}
	for _, wi := range items {
		from := workitem.State(wi.State)
		to, err := workitem.Next(from, cmd, workitem.State(wi.SuspendedFrom))
		if err != nil {
			continue // e.g. resuming an item that was not suspended
		}
		switch cmd {
		case workitem.Suspend:
			wi.SuspendedFrom = wi.State
		case workitem.Resume:
			wi.SuspendedFrom = ""
		case workitem.Withdraw:
			end := r.now
			wi.EndedAt = &end
		}
		if err := r.moveItem(&wi, from, to, r.actor, nil); err != nil {
			return err
		}
	}
	return nil
}

// startBlock runs a BlockActivity: it waits while its activity set runs,
// in this transaction as far as the set's activities are automatic.
func (r *run) startBlock(a *act) error {
	set := r.proc.ActivitySet(a.def.Block.ActivitySet)
	if set == nil {
		return fmt.Errorf("activity %s: activity set %s not found", a.def.ID, a.def.Block.ActivitySet)
	}
	if err := r.setActivity(a, machine.ActivityStart, ""); err != nil {
		return err
	}
	if err := r.setActivity(a, machine.ActivityWait, ""); err != nil {
		return err
	}
	sc := flow.Scope{Flow: &set.Flow, Block: a.row.ID}
	for _, def := range startActivities(&set.Flow, a.def.Block.StartActivity) {
		if _, err := r.createActivity(sc, def, true); err != nil {
			return err
		}
	}
	return r.settle(sc)
}

// startActivities are where a flow begins: the named activity, or every
// activity without incoming transitions but the events attached to other
// activities.
func startActivities(f *xpdl.Flow, named string) []*xpdl.Activity {
	if named != "" {
		if a := f.Activity(named); a != nil {
			return []*xpdl.Activity{a}
		}
	}
	var out []*xpdl.Activity
	for _, a := range f.Activities {
		if len(f.Incoming(a.ID)) == 0 && !isBoundaryEvent(a) {
			out = append(out, a)
		}
	}
	return out
}

// application finds an Application by id in the process, then the package.
func (r *run) application(id string) *xpdl.Application {
	for _, app := range r.proc.Applications {
		if app.ID == id {
			return app
		}
	}
	for _, app := range r.dep.pkg.Applications {
		if app.ID == id {
			return app
		}
	}
	return nil
}

// callTools calls the activity's applications in order, inside this
// transaction. It returns the name of an XPDL exception an application
// raised, or an error: retryable or a database error (roll back), or
// fatal (the activity goes Abnormal).
func (r *run) callTools(a *act) (exception string, err error) {
	for i, tc := range a.def.Tools {
		app := r.application(tc.Application)
		if app == nil {
			return "", fmt.Errorf("tool %s: application %s not found", a.def.ID, tc.Application)
		}
		class, _ := app.ExtendedAttributes.Get("ToolAgentClass")
		if c, ok := tc.ExtendedAttributes.Get("ToolAgentClass"); ok {
			class = c
		}
		b, ok := r.e.resolve(app, class)
		if !ok {
			return "", fmt.Errorf("application %s: %w", app.ID, ErrNoApplication)
		}
		params := make(map[string]any, len(app.FormalParameters))
		for j, fp := range app.FormalParameters {
			if j >= len(tc.ActualParameters) {
				break
			}
			v, err := r.expression(tc.ActualParameters[j])
			if err != nil {
				if fp.Mode == xpdl.ModeOut {
					continue
				}
				return "", fmt.Errorf("application %s: parameter %s: %w", app.ID, fp.ID, err)
			}
			params[fp.ID] = v
		}
		tx, err := r.hostTx()
		if err != nil {
			return "", err
		}
		call := &Call{
			Tx: tx, Application: app.ID, ToolAgentClass: class, Params: params, Formal: app.FormalParameters,
			ExtendedAttributes: append(append(xpdl.ExtendedAttributes{}, app.ExtendedAttributes...), tc.ExtendedAttributes...),
			IdempotencyKey:     fmt.Sprintf("%d/%d/%d/%d", r.pi.ID, a.row.ID, a.row.Attempt, i),
			ProcessInstanceID:  r.pi.ID, ActivityInstanceID: a.row.ID, ActivityID: a.def.ID,
		}
		if r.redelivered || r.rerun {
			if v, ok := call.ExtendedAttributes.Get(AttrRetryable); ok && strings.EqualFold(strings.TrimSpace(v), "false") {
				return "", fmt.Errorf("%w: application %s is declared Retryable=false and an earlier attempt of activity %s may have called it",
					ErrNotRetried, app.ID, a.def.ID)
			}
		}
		out, err := r.call(b.fn, call)
		if err != nil {
			if exc, ok := errors.AsType[*ApplicationException](err); ok {
				return exc.Name, nil
			}
			return "", r.callError(a, app.ID, params, b, err)
		}
		if r.redelivered {
			// An earlier call may have failed and opened a CauseFailing
			// incident: it is over.
			r.resolve(r.failTarget(a), "succeeded")
		}
		for j, fp := range app.FormalParameters {
			if fp.Mode != xpdl.ModeOut && fp.Mode != xpdl.ModeInOut || j >= len(tc.ActualParameters) {
				continue
			}
			v, ok := out[fp.ID]
			if !ok {
				continue
			}
			name := strings.TrimSpace(tc.ActualParameters[j].Text)
			if err := r.setVariable(name, v); err != nil {
				return "", fmt.Errorf("application %s: OUT parameter %s: %w", app.ID, fp.ID, err)
			}
		}
	}
	return "", nil
}

// call calls an application or hook function, observing how long it
// took and how it ended.
func (r *run) call(fn ApplicationFunc, call *Call) (map[string]any, error) {
	r.calledApps = true
	if r.e.observer == nil && r.e.tracer == nil {
		return callSafely(r.ctx, fn, call)
	}
	ctx, span := r.startCall(call)
	began := r.e.clock.Now()
	out, err := callSafely(ctx, fn, call)
	result := CallOK
	if _, ok := errors.AsType[*ApplicationException](err); ok {
		result = CallException
	} else if err != nil {
		result = CallError
	}
	endCall(span, result, err)
	if r.e.observer != nil {
		r.called(ApplicationCalled{
			Application: call.Application, ToolAgentClass: call.ToolAgentClass, Hook: call.Hook, Process: r.pi.ProcessDefID,
			Activity: call.ActivityID, Instance: call.ProcessInstanceID, ActivityInstance: call.ActivityInstanceID,
			Duration: r.e.clock.Now().Sub(began), Result: result,
		})
	}
	return out, err
}

// callSafely calls an application, turning a panic into a fatal error.
func callSafely(ctx context.Context, fn ApplicationFunc, call *Call) (out map[string]any, err error) {
	defer func() {
		if p := recover(); p != nil {
			what := "application " + call.Application
			if call.Hook != "" {
				what = "hook " + call.ToolAgentClass
			}
			out, err = nil, fmt.Errorf("%s panicked: %v\n%s", what, p, debug.Stack())
		}
	}()
	return fn(ctx, call)
}

// runScript runs an XPDL 2 script task over the variables; assignments to
// variables are kept.
func (r *run) runScript(a *act) error {
	if a.def.Script == nil || strings.TrimSpace(a.def.Script.Text) == "" {
		return nil
	}
	vars, err := r.variables()
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(r.ctx, r.e.cfg.ScriptTimeout)
	defer cancel()
	out, err := r.e.eval.Exec(ctx, a.def.Script.Text, vars)
	if err != nil {
		return fmt.Errorf("script of activity %s: %w", a.def.ID, r.e.scriptLimit(err))
	}
	// The variables the script changed, by their types' values (what it
	// exports for one it did not touch may differ in Go type: an
	// integral FLOAT comes back an int64).
	for name, v := range out {
		if err := r.scriptSet(name, v); err != nil {
			return fmt.Errorf("script of activity %s: %w", a.def.ID, err)
		}
	}
	return nil
}

// scriptSet sets variable name to v, what a script left in it, when that
// is another value than the variable has. A value of the wrong type is
// refused even when it reads the same (the text "6" for the INTEGER 6).
func (r *run) scriptSet(name string, v any) error {
	typ := r.decls[name].typ // JSON for a stored variable no longer declared: setVariable refuses a change
	c, err := typ.coerce(name, v)
	if err != nil {
		return err
	}
	if typ.same(c, r.vars[name]) {
		return nil
	}
	return r.setVariable(name, c)
}
