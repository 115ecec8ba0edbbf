package engine

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/goxpdl/goxpdl/engine/flow"
	"github.com/goxpdl/goxpdl/engine/machine"
	"github.com/goxpdl/goxpdl/resource"
	"github.com/goxpdl/goxpdl/store"
	"github.com/goxpdl/goxpdl/timer"
	"github.com/goxpdl/goxpdl/wftype"
	"github.com/goxpdl/goxpdl/workitem"
	"github.com/goxpdl/goxpdl/xpdl"
)

// Timer kinds, as store.Timer.Kind.
const (
	timerDeadline     = "deadline"      // an activity's Deadline; Key is its index
	timerLimit        = "limit"         // an activity's Limit
	timerProcessLimit = "process-limit" // the process header's Limit
	timerEvent        = "event"         // a timer event in the flow (intermediate, or start)
	timerBoundary     = "boundary"      // a timer event attached to an activity; Key is the event's id
	timerReminder     = "reminder"      // an overdue reminder; Count is how many were sent
)

// evTimer is the outbox event of a timer that fired; its payload names
// the timer.
const evTimer = "timer.fired"

// Extended attributes of timed work.
const (
	// AttrReminder on a manual activity is its overdue-reminder policy
	// (timer.ParseReminderPolicy): when and how often the host is
	// reminded while the work waits, and whom it escalates to.
	AttrReminder = "Reminder"
	// AttrOnLimit says what a Limit does when it passes: "notify" (the
	// default: an activity.overdue or process.overdue record only),
	// "complete" on an activity (timed completion: its work items are
	// withdrawn and it completes along its normal transitions), or
	// "terminate" on a process.
	AttrOnLimit = "OnLimit"
)

// timerPayload is a timer's own data.
type timerPayload struct {
	Exception   string    `json:"exception,omitempty"`
	Synchronous bool      `json:"synchr,omitempty"`
	Since       time.Time `json:"since,omitzero"`    // when the timed wait began (reminders, cycles)
	Action      string    `json:"action,omitempty"`  // a limit's OnLimit
	Process     string    `json:"process,omitempty"` // a start timer's process
}

// NextProgressTimer returns the earliest pending timer of process
// instance id that can move it on when it fires (a deadline, a timer
// event, a boundary timer, a limit that completes or terminates), and
// false when there is none: reminders and limits that only report do
// not count. `goxpdl run` waits for it before it calls a run stuck.
func (e *Engine) NextProgressTimer(ctx context.Context, id int64) (Timer, bool, error) {
	timers, err := e.store.ListTimers(ctx, store.ListTimersParams{
		ProcessInstanceID: id, States: []store.TimerState{store.TimerPending, store.TimerFired},
	})
	if err != nil {
		return Timer{}, false, err
	}
	for _, t := range timers {
		if movesOn(t) {
			return timerOf(t), true, nil
		}
	}
	return Timer{}, false, nil
}

func movesOn(t store.Timer) bool {
	switch t.Kind {
	case timerDeadline, timerEvent, timerBoundary:
		return true
	case timerLimit, timerProcessLimit:
		var p timerPayload
		return json.Unmarshal(t.Payload, &p) == nil && p.Action != "" && p.Action != "notify"
	}
	return false
}

// timedWork lists the timers an activity instance would arm, computed
// before it starts so that a deadline that cannot be evaluated leaves the
// activity Abnormal instead of half started.
type timedWork []store.Timer

// due is when the work of an activity with these timers should be done:
// its first deadline or its limit, whichever comes first; nil when it has
// neither.
func (w timedWork) due() *time.Time {
	var due *time.Time
	for _, t := range w {
		if (t.Kind == timerDeadline || t.Kind == timerLimit) && (due == nil || t.DueAt.Before(*due)) {
			at := t.DueAt
			due = &at
		}
	}
	return due
}

// hasTimers reports whether instances of def can have timers: a
// deadline, a limit, a reminder policy, a boundary timer, or being a
// timer event.
func hasTimers(f *xpdl.Flow, def *xpdl.Activity) bool {
	return ownTimers(def) || len(boundaryTimers(f, def.ID)) > 0
}

// ownTimers reports whether def arms timers of its own: deadlines, a
// limit, a reminder, or as a timer event.
func ownTimers(def *xpdl.Activity) bool {
	if len(def.Deadlines) > 0 || strings.TrimSpace(def.Limit) != "" || isTimerEvent(def) {
		return true
	}
	_, ok := def.ExtendedAttributes.Get(AttrReminder)
	return ok
}

// timedProcess reports whether a process has anything that arms timers,
// so that processes without any skip the timer statements.
func timedProcess(proc *xpdl.Process) bool {
	if strings.TrimSpace(proc.Header.Limit) != "" {
		return true
	}
	// Each activity's own timers, and each boundary timer event for the
	// activity it is attached to: one pass, where asking hasTimers of
	// every activity would look through the flow for each (quadratic:
	// seconds at a deployment of ten thousand activities).
	for _, f := range proc.Flows() {
		for _, a := range f.Activities {
			if ownTimers(a) {
				return true
			}
			if isBoundaryEvent(a) && a.Event.Trigger == xpdl.TriggerTimer && f.Activity(a.Event.Target) != nil {
				return true
			}
		}
	}
	return false
}

// isTimerEvent reports whether def is a timer event of the normal flow
// (not a boundary event).
func isTimerEvent(def *xpdl.Activity) bool {
	return def.Kind == xpdl.ActivityEvent && def.Event != nil && def.Event.Trigger == xpdl.TriggerTimer &&
		def.Event.Type != xpdl.EventEnd && def.Event.Target == ""
}

// isBoundaryEvent reports whether def is attached to another activity.
func isBoundaryEvent(def *xpdl.Activity) bool {
	return def.Kind == xpdl.ActivityEvent && def.Event != nil && def.Event.Target != ""
}

// boundaryTimers are the timer events of flow f attached to activity id.
func boundaryTimers(f *xpdl.Flow, id string) []*xpdl.Activity {
	var out []*xpdl.Activity
	for _, a := range f.Activities {
		if isBoundaryEvent(a) && a.Event.Target == id && a.Event.Trigger == xpdl.TriggerTimer {
			out = append(out, a)
		}
	}
	return out
}

// planTimers works out the timers activity a arms when it starts to
// wait: its deadlines, its limit, its boundary timers and its first
// reminder. A deadline or timer it cannot evaluate is an error.
func (r *run) planTimers(a *act) (timedWork, error) {
	def := a.def
	var plan timedWork
	add := func(kind, key string, due time.Time, p timerPayload) {
		plan = append(plan, store.Timer{
			ProcessInstanceID: r.pi.ID, Kind: kind, Key: key, DueAt: due, CreatedAt: r.now, Payload: mustJSON(p),
		})
	}
	for i, d := range def.Deadlines {
		due, ok, err := r.deadlineDue(a, d)
		if err != nil {
			return nil, fmt.Errorf("deadline %d of activity %s: %w", i+1, def.ID, err)
		}
		if ok {
			add(timerDeadline, strconv.Itoa(i), due, timerPayload{
				Exception: strings.TrimSpace(d.ExceptionName), Synchronous: d.Execution == xpdl.ExecSynchr,
			})
		}
	}
	if limit := strings.TrimSpace(def.Limit); limit != "" {
		if d, ok := r.limit(limit, "activity "+def.ID); ok {
			action, _ := def.ExtendedAttributes.Get(AttrOnLimit)
			add(timerLimit, "", r.now.Add(d), timerPayload{Action: strings.ToLower(strings.TrimSpace(action))})
		}
	}
	for _, b := range boundaryTimers(a.scope.Flow, def.ID) {
		due, ok, err := r.triggerDue(b.Event.Timer, r.now)
		if err != nil {
			return nil, fmt.Errorf("timer event %s on activity %s: %w", b.ID, def.ID, err)
		}
		if ok {
			add(timerBoundary, b.ID, due, timerPayload{Since: r.now})
		}
	}
	if isTimerEvent(def) {
		due, ok, err := r.triggerDue(def.Event.Timer, r.now)
		if err != nil {
			return nil, fmt.Errorf("timer event %s: %w", def.ID, err)
		}
		if !ok {
			due = r.now // an empty trigger, as some exporters write: no wait
		}
		add(timerEvent, def.ID, due, timerPayload{Since: r.now})
	}
	if text, ok := def.ExtendedAttributes.Get(AttrReminder); ok {
		policy, err := timer.ParseReminderPolicy(text, r.e.cfg.Location)
		if err != nil {
			return nil, fmt.Errorf("reminder policy of activity %s: %w", def.ID, err)
		}
		if due, ok := policy.Next(r.now, 0, time.Time{}); ok {
			add(timerReminder, "", due, timerPayload{Since: r.now})
		}
	}
	return plan, nil
}

// arm queues the planned timers of a, which has its ID by now, for flush.
func (r *run) arm(a *act, plan timedWork) {
	for _, t := range plan {
		t.ActivityInstanceID = a.row.ID
		r.armTimer(t)
	}
}

func (r *run) armTimer(t store.Timer) {
	r.timers = append(r.timers, t)
	if r.nextDue.IsZero() || t.DueAt.Before(r.nextDue) {
		r.nextDue = t.DueAt
	}
}

// armProcessLimit arms the process header's Limit of a new instance.
func (r *run) armProcessLimit() error {
	limit := strings.TrimSpace(r.proc.Header.Limit)
	if limit == "" {
		return nil
	}
	d, ok := r.limit(limit, "process "+r.proc.ID)
	if !ok {
		return nil
	}
	action, _ := r.proc.ExtendedAttributes.Get(AttrOnLimit)
	r.armTimer(store.Timer{
		ProcessInstanceID: r.pi.ID, Kind: timerProcessLimit, DueAt: r.now.Add(d), CreatedAt: r.now,
		Payload: mustJSON(timerPayload{Since: r.now, Action: strings.ToLower(strings.TrimSpace(action))}),
	})
	return nil
}

// limit reads a Limit of the process's DurationUnit. A Limit that is no
// number (Bonita writes a placeholder such as "P_Limit") is no limit: it
// is logged, and the work runs without one, as the tool that wrote it
// does.
func (r *run) limit(text, of string) (time.Duration, bool) {
	d, err := timer.LimitDuration(text, r.proc.Header.DurationUnit)
	if err != nil {
		r.e.log.Warn("ignoring a Limit that is not a duration", "of", of, "limit", text, "err", err)
		return 0, false
	}
	return d, true
}

// deadlineDue evaluates a deadline expression as real files write it: a
// constant duration (milliseconds, ISO 8601, "3 days"), an absolute
// date, or JavaScript returning a Date, a duration in milliseconds, or
// an absolute time in epoch milliseconds (numbers from 10^11 on, which is
// 1973). Shark's scripts see shark_activity_created_time and
// shark_process_created_time as Dates. An empty deadline (d.Empty) is no
// deadline.
func (r *run) deadlineDue(a *act, d *xpdl.Deadline) (time.Time, bool, error) {
	if d.Empty() {
		return time.Time{}, false, nil
	}
	return r.timeExpression(strings.TrimSpace(d.Condition.Text), map[string]any{
		"shark_activity_created_time": a.row.CreatedAt,
		"shark_process_created_time":  r.pi.CreatedAt,
	})
}

// triggerDue is when a timer event fires first: its TimeDate (a date, a
// duration from now, or JavaScript), else the first occurrence of its
// TimeCycle. A trigger with neither reports false.
func (r *run) triggerDue(tt *xpdl.TimerTrigger, from time.Time) (time.Time, bool, error) {
	if tt == nil {
		return time.Time{}, false, nil
	}
	if text := strings.TrimSpace(tt.TimeDate.Text); text != "" {
		return r.timeExpression(text, nil)
	}
	if text := strings.TrimSpace(tt.TimeCycle.Text); text != "" {
		if d, ok := xpdl.ParseDuration(text); ok {
			return from.Add(d), true, nil // a plain delay, as Global 360 writes it
		}
		c, err := timer.ParseCycle(text, r.e.cfg.Location)
		if err != nil {
			return time.Time{}, false, err
		}
		due, ok := c.Next(from, 0)
		return due, ok, nil
	}
	return time.Time{}, false, nil
}

// timeExpression is when a time expression says: a constant duration
// from now, a date, or JavaScript over the variables (and extra).
func (r *run) timeExpression(text string, extra map[string]any) (time.Time, bool, error) {
	return r.e.timeAt(r.ctx, r.now, text, func() (map[string]any, error) {
		vars, err := r.variables()
		if err != nil {
			return nil, &storeErr{err}
		}
		if len(extra) == 0 {
			return vars, nil
		}
		merged := make(map[string]any, len(vars)+len(extra))
		for k, v := range vars {
			merged[k] = v
		}
		for k, v := range extra {
			merged[k] = v
		}
		return merged, nil
	})
}

// timeAt is when a time expression says, seen at now: a constant
// duration from now, a date, or JavaScript over the variables vars
// returns (asked for only when the text is a script). A script may return
// a Date, a duration in milliseconds, epoch milliseconds (from 10^11 on)
// or a string read again as an expression.
func (e *Engine) timeAt(ctx context.Context, now time.Time, text string, vars func() (map[string]any, error)) (time.Time, bool, error) {
	if d, ok := xpdl.ParseDuration(text); ok {
		return now.Add(d), true, nil
	}
	if t, err := timer.ParseTimeDate(text, e.cfg.Location); err == nil {
		return t, true, nil
	}
	values, err := vars()
	if err != nil {
		return time.Time{}, false, err
	}
	sctx, cancel := context.WithTimeout(ctx, e.cfg.ConditionTimeout)
	defer cancel()
	v, err := e.eval.Eval(sctx, text, values)
	if err != nil {
		return time.Time{}, false, e.conditionLimit(err)
	}
	switch v := v.(type) {
	case time.Time:
		return v, true, nil
	case nil:
		return time.Time{}, false, nil
	case string:
		return e.timeAt(ctx, now, v, func() (map[string]any, error) { return nil, nil })
	}
	ms, ok := number(v)
	if !ok || math.IsNaN(ms) || math.IsInf(ms, 0) || ms < 0 {
		return time.Time{}, false, fmt.Errorf("%q gives %v, not a date or milliseconds", text, v)
	}
	if ms >= 1e11 {
		return time.UnixMilli(int64(ms)), true, nil
	}
	return now.Add(time.Duration(ms * float64(time.Millisecond))), true, nil
}

// flushTimers writes the run's timer changes: the timers that fired go,
// a suspended or resumed instance's are paused or resumed, activities
// that completed lose their pending timers, a finished process loses all
// of its, and the new ones are inserted.
func (r *run) flushTimers() error {
	if err := r.flushTimerSwitch(); err != nil {
		return err
	}
	if r.timedProc() {
		if r.state().IsFinal() {
			if _, err := r.tx.DeleteTimers(r.ctx, store.DeleteTimersParams{ProcessInstanceID: r.pi.ID}); err != nil {
				return err
			}
			r.timers = nil
			return nil
		}
		var done []int64
		for _, a := range r.acts {
			if a.stored && a.row.State == string(wftype.ActivityCompleted) && a.finishedNow &&
				hasTimers(a.scope.Flow, a.def) {
				done = append(done, a.row.ID)
			}
		}
		if len(done) > 0 {
			_, err := r.tx.DeleteTimers(r.ctx, store.DeleteTimersParams{
				ProcessInstanceID: r.pi.ID, ActivityInstanceIDs: done,
				States: []store.TimerState{store.TimerPending, store.TimerPaused},
			})
			if err != nil {
				return err
			}
		}
	}
	if len(r.timers) == 0 {
		return nil
	}
	for i := range r.timers {
		r.timers[i].ID = r.newID() // a re-armed timer's row is a new one
		if r.state() == wftype.ProcessSuspended {
			r.timers[i].State = store.TimerPaused
		}
	}
	if r.idErr != nil {
		return r.idErr
	}
	_, err := r.tx.InsertTimers(r.ctx, r.timers)
	return err
}

// timedProc reports whether the run's process arms timers.
func (r *run) timedProc() bool {
	return r.proc != nil && r.dep != nil && r.dep.timed[r.proc.ID]
}

// firedKey keys, in the context of a timer firing's transaction
// (fireTx), the events the firing published.
type firedKey struct{}

// fireTx is the timer service's Transact: the store's transaction, after
// which a COMMIT that failed releases the claims of the events the firing
// published, in case it went through (Bus.Abandon, as transactAs does).
func (e *Engine) fireTx(ctx context.Context, fn func(ctx context.Context, tx store.Tx) error) error {
	var published []store.Event
	err := e.store.InTx(context.WithValue(ctx, firedKey{}, &published), fn)
	if err != nil {
		e.bus.Abandon(ctx, published)
	}
	return err
}

// firedEvents notes events a timer firing published (see fireTx).
func firedEvents(ctx context.Context, events []store.Event) {
	if p, ok := ctx.Value(firedKey{}).(*[]store.Event); ok {
		*p = append(*p, events...)
	}
}

// fireTimers is the timer service's FireFunc: each fired timer becomes
// a critical event of its process instance, in the transaction that
// fired it, dispatched to this node after commit.
func (e *Engine) fireTimers(ctx context.Context, tx store.Tx, fired []store.Timer) (func(), error) {
	events := make([]store.Event, 0, len(fired))
	var afters []func()
	for _, t := range fired {
		if t.ProcessInstanceID == 0 {
			if t.Kind == timerStart {
				after, err := e.fireStartTimer(ctx, tx, t)
				if err != nil {
					return nil, err
				}
				if after != nil {
					afters = append(afters, after)
				}
			}
			continue
		}
		events = append(events, store.Event{
			ProcessInstanceID: t.ProcessInstanceID, Kind: evTimer, Payload: mustJSON(payload{Timer: t.ID}),
			Critical: true,
		})
	}
	var published []store.Event
	if len(events) > 0 {
		var err error
		if published, err = e.bus.Publish(ctx, tx, events); err != nil {
			return nil, err
		}
		firedEvents(ctx, published)
	}
	observe := e.observer != nil && len(fired) > 0
	if len(published) == 0 && len(afters) == 0 && !observe {
		return nil, nil
	}
	return func() {
		if observe {
			e.timersFired(fired)
		}
		for _, after := range afters { // their records before the events' (see transact)
			after()
		}
		e.bus.Dispatch(published)
	}, nil
}

// timersFired observes timers whose firing committed.
func (e *Engine) timersFired(fired []store.Timer) {
	for _, t := range fired {
		o := FiredTimer{Kind: TimerKind(t.Kind), Instance: t.ProcessInstanceID, Due: t.DueAt}
		if t.FiredAt != nil {
			o.Lateness = max(t.FiredAt.Sub(t.DueAt), 0)
		}
		e.observe(func(obs Observer) { obs.TimerFired(o) })
	}
}

// timerFired handles a fired timer of the run's instance. A timer whose
// activity moved on meanwhile does nothing; one that fired as its process
// was being suspended is kept, paused, for the resume.
func (r *run) timerFired(id int64) error {
	t, err := r.snap.timer(id)
	if errors.Is(err, store.ErrNotFound) {
		return nil // its activity or process finished
	}
	if err != nil {
		return err
	}
	if t.ProcessInstanceID != r.pi.ID || t.State != store.TimerFired {
		return nil
	}
	// The timer is spent: its row goes with this transaction (at flush),
	// whatever the firing does.
	r.spentTimers = append(r.spentTimers, t.ID)
	switch r.state() {
	case wftype.ProcessRunning:
	case wftype.ProcessSuspended:
		again := t
		again.State, again.DueAt, again.CreatedAt = store.TimerPaused, r.now, r.now
		r.timers = append(r.timers, again)
		return nil
	default:
		return nil
	}
	r.due = t.DueAt
	var p timerPayload
	if len(t.Payload) > 0 {
		if err := json.Unmarshal(t.Payload, &p); err != nil {
			return fmt.Errorf("timer %d: %w", t.ID, err)
		}
	}
	if t.Kind == timerProcessLimit {
		return r.processLimitPassed()
	}
	a := r.activity(t.ActivityInstanceID)
	if a == nil || a.row.State == string(wftype.ActivityCompleted) {
		return nil
	}
	switch t.Kind {
	case timerDeadline:
		return r.deadlinePassed(a, t, p)
	case timerLimit:
		return r.limitPassed(a)
	case timerEvent:
		return r.timerEventFired(a)
	case timerBoundary:
		return r.boundaryFired(a, t, p)
	case timerReminder:
		return r.remind(a, t, p)
	}
	return nil
}

// deadlinePassed handles a deadline: SYNCHR interrupts the activity (its
// work items withdrawn, its subflow terminated) and takes the EXCEPTION
// transition named by ExceptionName, or a DEFAULTEXCEPTION one; ASYNCHR
// starts that path alongside and lets the activity go on.
func (r *run) deadlinePassed(a *act, t store.Timer, p timerPayload) error {
	mode := "ASYNCHR"
	if p.Synchronous {
		mode = "SYNCHR"
	}
	r.record(Record{
		Type: RecordDeadlineFired, Activity: a.def.ID, ActivityInstance: a.row.ID, State: mode,
		Detail: p.Exception,
	})
	exception := cmpOr(p.Exception, "deadline")
	if len(flow.ChooseException(a.scope.Flow, a.def, exception)) == 0 {
		// Nothing catches it: the deadline is reported and the
		// activity goes on (the validator warns of such deadlines).
		r.records[len(r.records)-1].Error = "no EXCEPTION or DEFAULTEXCEPTION transition catches " + exception
		return nil
	}
	if !p.Synchronous {
		return r.branchException(a, exception)
	}
	if err := r.interrupt(a); err != nil {
		return err
	}
	return r.complete(a, exception)
}

// branchException starts the exception path of a (the transitions
// ChooseException picks) without finishing a.
func (r *run) branchException(a *act, exception string) error {
	return r.fire(a.scope, flow.ChooseException(a.scope.Flow, a.def, exception))
}

// interrupt stops what an activity waits for before it is completed out
// of turn: its work items are withdrawn, its subflow instances told to
// terminate, the activities of its activity set and the instances of its
// loop completed unfinished.
func (r *run) interrupt(a *act) error {
	if err := r.interruptInstances(a); err != nil { // a loop's (loop.go)
		return err
	}
	if err := r.withdrawItemsOf(a); err != nil {
		return err
	}
	switch a.def.Kind {
	case xpdl.ActivitySubFlow:
		children, err := r.snap.children()
		if err != nil {
			return err
		}
		for _, c := range children {
			if c.ParentActivityID != nil && *c.ParentActivityID == a.row.ID {
				r.emit(c.ID, evTerminate, payload{}, true)
			}
		}
	case xpdl.ActivityBlock:
		for _, inner := range r.acts {
			if inner.scope.Block != a.row.ID || inner.row.State == string(wftype.ActivityCompleted) {
				continue
			}
			if err := r.interrupt(inner); err != nil {
				return err
			}
			if err := r.forceComplete(inner, "interrupted with its block activity"); err != nil {
				return err
			}
		}
		if set := r.proc.ActivitySet(a.def.Block.ActivitySet); set != nil {
			r.tokens.Clear(flow.Scope{Flow: &set.Flow, Block: a.row.ID})
		}
	}
	// A subflow's or block's activity waits in Waiting, which completes
	// directly; an Initiated one (a suspended start) starts first.
	return nil
}

// forceComplete completes an activity without routing it. In a
// Suspended process, where only an operator's move ends activities and
// nothing may become Active, the activity is cancelled where it stands
// (machine.ActivityCancel).
func (r *run) forceComplete(a *act, why string) error {
	if r.state() == wftype.ProcessSuspended {
		if a.row.State == string(wftype.ActivityAbnormal) {
			r.resolve(a, "ended")
		}
		return r.setActivity(a, machine.ActivityCancel, why)
	}
	if a.row.State == string(wftype.ActivityInitiated) {
		if err := r.setActivity(a, machine.ActivityStart, ""); err != nil {
			return err
		}
	}
	if a.row.State == string(wftype.ActivityAbnormal) {
		r.resolve(a, "ended")
		return r.setActivity(a, machine.ActivitySkip, why)
	}
	return r.setActivity(a, machine.ActivityComplete, why)
}

// withdrawItemsOf withdraws the open work items of one activity.
func (r *run) withdrawItemsOf(a *act) error {
	if !a.stored || !IsManual(a.def) {
		return nil
	}
	filter := openItems(r.pi.ID)
	filter.ActivityInstanceID = a.row.ID
	return r.moveItems(workitem.Withdraw, filter)
}

// limitPassed handles an activity's Limit: an activity.overdue record,
// and with OnLimit=complete the activity completes normally (timed
// completion).
func (r *run) limitPassed(a *act) error {
	r.record(Record{Type: RecordActivityOverdue, Activity: a.def.ID, ActivityInstance: a.row.ID, State: a.row.State})
	action, _ := a.def.ExtendedAttributes.Get(AttrOnLimit)
	if !strings.EqualFold(strings.TrimSpace(action), "complete") {
		return nil
	}
	if err := r.interrupt(a); err != nil {
		return err
	}
	return r.complete(a, "")
}

// processLimitPassed handles the process's Limit: a process.overdue
// record, and with OnLimit=terminate the process is terminated.
func (r *run) processLimitPassed() error {
	r.record(Record{Type: RecordProcessOverdue, State: r.pi.State})
	action, _ := r.proc.ExtendedAttributes.Get(AttrOnLimit)
	if strings.EqualFold(strings.TrimSpace(action), "terminate") {
		return r.terminate()
	}
	return nil
}

// timerEventFired completes a timer event that was waiting.
func (r *run) timerEventFired(a *act) error {
	if a.row.State != string(wftype.ActivityWaiting) {
		return nil
	}
	r.record(Record{Type: RecordTimerFired, Activity: a.def.ID, ActivityInstance: a.row.ID})
	return r.complete(a, "")
}

// boundaryFired handles a timer event attached to activity a: the event
// takes its own outgoing transitions; an interrupting one ends a first
// (its work items withdrawn, its normal transitions not taken). A
// non-interrupting one with a repeating TimeCycle arms its next
// occurrence while a waits on.
func (r *run) boundaryFired(a *act, t store.Timer, p timerPayload) error {
	sc := a.scope
	ev := sc.Flow.Activity(t.Key)
	if ev == nil {
		return nil
	}
	if !ev.Event.Interrupting {
		r.rearmBoundary(a, ev, t, p)
	}
	r.record(Record{Type: RecordTimerFired, Activity: ev.ID, ActivityInstance: a.row.ID, Detail: "on " + a.def.ID})
	if ev.Event.Interrupting {
		if err := r.interrupt(a); err != nil {
			return err
		}
		if err := r.forceComplete(a, "interrupted by timer event "+ev.ID); err != nil {
			return err
		}
		if len(sc.Flow.Outgoing(a.def.ID)) > 0 {
			r.tokens.DeadEnd(sc, a.def)
		}
	}
	evAct, err := r.createActivity(sc, ev, false)
	if err != nil {
		return err
	}
	if err := r.setActivity(evAct, machine.ActivityStart, ""); err != nil {
		return err
	}
	return r.complete(evAct, "")
}

// rearmBoundary arms the next occurrence of a non-interrupting boundary
// timer whose TimeCycle repeats ("R3/PT1H", "R/P1D", a cron expression).
// A bare duration ("PT1H", Global 360's "100") is a single delay, as in
// planTimers. Occurrences missed while no engine ran are covered by the
// firing that just happened (timer.Cycle.Upcoming).
func (r *run) rearmBoundary(a *act, ev *xpdl.Activity, t store.Timer, p timerPayload) {
	tt := ev.Event.Timer
	if tt == nil || strings.TrimSpace(tt.TimeDate.Text) != "" {
		return
	}
	text := strings.TrimSpace(tt.TimeCycle.Text)
	if _, delay := xpdl.ParseDuration(text); delay || text == "" {
		return
	}
	c, err := timer.ParseCycle(text, r.e.cfg.Location)
	if err != nil {
		return // it parsed when it was armed; a changed Location cannot make it fail
	}
	due, fired, ok := c.Upcoming(p.Since, t.Count+1, r.now)
	if !ok {
		return
	}
	r.armTimer(store.Timer{
		ProcessInstanceID: r.pi.ID, ActivityInstanceID: a.row.ID, Kind: timerBoundary, Key: ev.ID,
		DueAt: due, Count: fired, CreatedAt: r.now, Payload: t.Payload,
	})
}

// remind sends an overdue reminder for a waiting manual activity, arms
// the next one, and escalates when the policy says so.
func (r *run) remind(a *act, t store.Timer, p timerPayload) error {
	if a.row.State != string(wftype.ActivityInActive) && !(isLoop(a) && a.row.State == string(wftype.ActivityWaiting)) {
		return nil
	}
	text, _ := a.def.ExtendedAttributes.Get(AttrReminder)
	policy, err := timer.ParseReminderPolicy(text, r.e.cfg.Location)
	if err != nil {
		return nil //nolint:nilerr // checked when armed; a redeployed definition cannot change under an instance
	}
	sent := t.Count + 1
	r.record(Record{Type: RecordActivityReminder, Activity: a.def.ID, ActivityInstance: a.row.ID, Detail: strconv.Itoa(sent)})
	if policy.EscalateNow(sent) {
		if err := r.escalate(a, policy.To); err != nil {
			return err
		}
	}
	if due, ok := policy.Next(p.Since, sent, r.now); ok {
		r.armTimer(store.Timer{
			ProcessInstanceID: r.pi.ID, ActivityInstanceID: a.row.ID, Kind: timerReminder, DueAt: due, Count: sent,
			CreatedAt: r.now, Payload: mustJSON(p),
		})
	}
	return nil
}

// escalate offers a's open work items to participant p instead of whom
// they were offered to; items someone holds are taken back.
func (r *run) escalate(a *act, p resource.Participant) error {
	if isLoop(a) { // the work items are its instances'
		for _, inst := range r.openInstances(a) {
			if err := r.escalate(inst, p); err != nil {
				return err
			}
		}
		return nil
	}
	kind := store.PrincipalUser
	switch p.Kind {
	case resource.KindRole:
		kind = store.PrincipalRole
	case resource.KindOrgUnit:
		kind = store.PrincipalUnit
	}
	to := []store.Principal{{Kind: kind, ID: p.ID}}
	principal := string(kind) + ":" + p.ID
	filter := openItems(r.pi.ID)
	filter.ActivityInstanceID = a.row.ID
	items, err := r.snap.workItems(filter)
	if err != nil {
		return err
	}
	r.record(Record{Type: RecordActivityEscalated, Activity: a.def.ID, ActivityInstance: a.row.ID, Assignees: assigneeNames(to)})
	for _, wi := range items {
		from := workitem.State(wi.State)
		if from == workitem.Suspended {
			continue
		}
		wi.Assignees, wi.Owner = to, ""
		if err := r.moveItem(&wi, from, workitem.Offered, r.actor, map[string]string{"assignees": principal, "why": "escalated"}); err != nil {
			return err
		}
	}
	return nil
}

// pauseTimers and resumeTimers keep a suspended process's timers from
// firing; a resumed timer keeps the time it had left.
// Both are written at flush, before the timers the run arms.
func (r *run) pauseTimers() error {
	r.timerSwitch = timersPause
	return nil
}

func (r *run) resumeTimers() error {
	r.timerSwitch = timersResume
	return nil
}

// How flush switches the instance's stored timers (run.timerSwitch).
const (
	timersPause  = "pause"
	timersResume = "resume"
)

// flushTimerSwitch deletes the timers that fired in this run and pauses
// or resumes the stored ones.
func (r *run) flushTimerSwitch() error {
	if len(r.spentTimers) > 0 {
		if _, err := r.tx.DeleteTimers(r.ctx, store.DeleteTimersParams{ProcessInstanceID: r.pi.ID, IDs: r.spentTimers}); err != nil {
			return err
		}
		r.spentTimers = nil
	}
	if !r.timedProc() {
		r.timerSwitch = ""
		return nil
	}
	switch r.timerSwitch {
	case timersPause:
		if _, err := r.tx.PauseTimers(r.ctx, store.PauseTimersParams{ProcessInstanceID: r.pi.ID, At: r.now}); err != nil {
			return err
		}
	case timersResume:
		n, err := r.tx.ResumeTimers(r.ctx, store.ResumeTimersParams{ProcessInstanceID: r.pi.ID, At: r.now})
		if err != nil {
			return err
		}
		if n > 0 {
			r.nextDue = r.now // wake the service to plan again
		}
	}
	r.timerSwitch = ""
	return nil
}

func cmpOr(s, fallback string) string {
	if s == "" {
		return fallback
	}
	return s
}
