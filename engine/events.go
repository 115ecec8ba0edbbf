package engine

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"

	"gorm.io/gorm"

	"github.com/goxpdl/goxpdl/engine/flow"
	"github.com/goxpdl/goxpdl/engine/machine"
	"github.com/goxpdl/goxpdl/store"
	"github.com/goxpdl/goxpdl/wftype"
	"github.com/goxpdl/goxpdl/xpdl"
)

// Intermediate Message and Signal events, receive tasks and the
// event-based gateway (workflow patterns 16, 23 and 24).
//
// A catching Message event, or a receive task without an application,
// waits (Waiting) for a message the host sends with Engine.Send, addressed
// by the activity's id. Messages are persistent: one that arrives before
// the activity waits is kept in the correlation inbox and taken when it
// does. A catching Signal event waits for a signal of its name
// (TriggerResultSignal@Name): it subscribes (store.Subscription), and a
// signal (Engine.Signal, or a throwing Signal event) is delivered to the
// subscriptions that exist when it is sent, each through an outbox event
// of the subscriber's instance. Signals are transient: nothing keeps one
// for an event that starts waiting later.
//
// An event-based gateway (a Route with ExclusiveType="Event") starts all
// the activities its transitions lead to in its own transaction, so that
// their timers, subscriptions and inbox checks are armed at once. The
// first of them to complete wins: in the transaction that completes it,
// the others are withdrawn (their timers deleted with them, their
// subscriptions dropped, their work items withdrawn).

// subSignal is the store.Subscription.Kind of an event waiting for a
// signal.
const subSignal = "signal"

// evSignal is the outbox event that delivers a signal to one waiting
// event; its payload names the activity instance and the signal.
const evSignal = "signal.deliver"

// inboxSignal is the store.InboxMessage.Kind that remembers a signal sent
// with a SignalID, so that sending it again is recognised.
const inboxSignal = "signal"

// maxReceivers bounds the subscriptions one signal is delivered to; a
// broadcast to more is refused rather than written as one huge
// transaction.
const maxReceivers = 100000

// signalPayload is the signal an evSignal event delivers.
type signalPayload struct {
	Name string `json:"name"`
	// Variables is the JSON of the signal's variables.
	Variables json.RawMessage `json:"variables,omitempty"`
}

// ErrNoReceiver: a message names an activity that cannot receive one:
// neither a manual activity, nor a catching intermediate Message event,
// nor a receive task without an application.
var ErrNoReceiver = errors.New("activity receives no messages")

// ErrTooManyReceivers: a signal has more waiting events than one
// transaction delivers to (100000).
var ErrTooManyReceivers = errors.New("too many events wait for the signal")

// SignalOpts are the options of one signal (Engine.Signal).
type SignalOpts struct {
	// Instance, when not 0, delivers the signal only to that process
	// instance's events; 0 broadcasts it to every instance.
	Instance int64
	// Variables are set in each instance that catches the signal, as
	// far as its process declares them; a value of the wrong type leaves
	// the catching event Abnormal.
	Variables map[string]any
	// SignalID, when not empty, makes the signal idempotent: sending a
	// SignalID again delivers nothing and answers with the first
	// Broadcast (Duplicate set). Signal ids share the correlation inbox
	// with message ids: Engine.Inbox reports them too.
	SignalID string
	// Actor is recorded as who sent the signal; default "host".
	Actor string
}

// Broadcast says where a signal went.
type Broadcast struct {
	// Name is the signal's name.
	Name string
	// Receivers are the events that waited for the signal when it was
	// sent, in the order they began to wait. Each catches it when the
	// delivery is processed, right after the signal's transaction
	// commits, unless it stopped waiting meanwhile or its instance is
	// suspended then. Empty: nothing waited and the signal is lost.
	Receivers []Receiver
	// Duplicate is true when SignalOpts.SignalID was sent before; the
	// rest is the first signal's.
	Duplicate bool
}

// Receiver is an event a signal was delivered to.
type Receiver struct {
	// Instance is the process instance.
	Instance int64
	// Activity is the catching event's activity id.
	Activity string
	// ActivityInstance is the catching event's activity instance.
	ActivityInstance int64
}

// Signal sends a signal: every intermediate catching Signal event whose
// TriggerResultSignal Name is name and that waits when the signal's
// transaction commits catches it (in every process instance, or in
// opts.Instance only) and completes. The signal is transient: an event
// that starts waiting later does not see it, and a signal nothing waits
// for is lost (an empty Broadcast, not an error). Instances that are
// suspended when the delivery is processed do not catch it. An empty
// name is refused (ErrBadArgument); opts.Instance must exist (ErrNotFound)
// and not be finished (ErrInstanceFinished).
func (e *Engine) Signal(ctx context.Context, name string, opts SignalOpts) (Broadcast, error) {
	return e.signal(ctx, nil, name, opts)
}

// SignalTx is Signal inside the host's transaction tx: the signal is sent
// if and only if tx commits, to the events waiting then as tx sees them.
// The deliveries are picked up from the outbox after the commit (see
// Engine.Transaction). A nil tx is the engine's own transaction, as in
// every …Tx method: Signal.
func (e *Engine) SignalTx(ctx context.Context, tx *gorm.DB, name string, opts SignalOpts) (Broadcast, error) {
	return e.signal(ctx, tx, name, opts)
}

func (e *Engine) signal(ctx context.Context, hostTx *gorm.DB, name string, opts SignalOpts) (Broadcast, error) {
	if strings.TrimSpace(name) == "" {
		return Broadcast{}, fmt.Errorf("%w: a signal needs a name", ErrBadArgument)
	}
	if err := checkTexts(maxKey, "signal name", name, "SignalOpts.SignalID", opts.SignalID, "SignalOpts.Actor", opts.Actor); err != nil {
		return Broadcast{}, err
	}
	vars, err := canonicalOutputs(opts.Variables)
	if err != nil {
		return Broadcast{}, fmt.Errorf("%w: signal %s: %w", ErrBadArgument, name, err)
	}
	b, err := e.signalOnce(ctx, hostTx, name, vars, opts)
	if errors.Is(err, store.ErrDuplicate) && opts.SignalID != "" && hostTx == nil {
		// A concurrent signal with the same id committed first: this
		// attempt finds it.
		b, err = e.signalOnce(ctx, hostTx, name, vars, opts)
	}
	if err != nil {
		return Broadcast{}, err
	}
	return b, nil
}

func (e *Engine) signalOnce(ctx context.Context, hostTx *gorm.DB, name string, vars []byte, opts SignalOpts) (Broadcast, error) {
	var b Broadcast
	err := e.transact(ctx, hostTx, actorOf(opts.Actor), func(r *run) (*run, error) {
		if opts.SignalID != "" {
			prior, err := r.snap.message(opts.SignalID)
			if err == nil {
				b, err = broadcastOf(prior)
				b.Duplicate = true
				return nil, err // sent before: nothing to write
			} else if !errors.Is(err, store.ErrNotFound) {
				return nil, err
			}
		}
		if opts.Instance != 0 {
			if err := r.requireOpen(opts.Instance, "signal"); err != nil {
				return nil, err
			}
		}
		subs, err := r.snap.receivers(name, opts.Instance)
		if err != nil {
			return nil, err
		}
		r.deliverSignal(name, vars, subs)
		b = Broadcast{Name: name, Receivers: receiversOf(subs)}
		if opts.SignalID != "" {
			if err := r.rememberSignal(opts.SignalID, vars, b); err != nil {
				return nil, err
			}
		}
		// The run has no instance: flushDetached writes its events and
		// the signal it remembers.
		return r, nil
	})
	return b, err
}

// requireOpen checks that process instance id exists and is not
// finished, without loading it into the run.
func (r *run) requireOpen(id int64, cmd string) error {
	pi, err := r.snap.instance(id)
	if errors.Is(err, store.ErrNotFound) {
		return notFound("process instance", id)
	}
	if err != nil {
		return err
	}
	if state := wftype.ProcessState(pi.State); state.IsFinal() {
		return &wftype.StateError{Subject: "process", State: pi.State, Command: cmd, Finished: true}
	}
	return nil
}

// deliverSignal queues one delivery event per waiting event.
func (r *run) deliverSignal(name string, vars []byte, subs []store.Subscription) {
	sig := &signalPayload{Name: name}
	if string(vars) != "{}" {
		sig.Variables = vars
	}
	for _, s := range subs {
		r.emit(s.ProcessInstanceID, evSignal, payload{Activity: s.ActivityInstanceID, Signal: sig}, false)
	}
}

func receiversOf(subs []store.Subscription) []Receiver {
	out := make([]Receiver, len(subs))
	for i, s := range subs {
		out[i] = Receiver{Instance: s.ProcessInstanceID, Activity: s.ActivityDefID, ActivityInstance: s.ActivityInstanceID}
	}
	return out
}

// signalRecord is what the inbox keeps of a signal sent with an id.
type signalRecord struct {
	Variables json.RawMessage `json:"variables,omitempty"`
	Receivers []Receiver      `json:"receivers,omitempty"`
}

// rememberSignal keeps a signal sent with an id in the inbox, already
// applied (or expired when nothing caught it), so that a repeat is
// recognised.
func (r *run) rememberSignal(id string, vars []byte, b Broadcast) error {
	state, reason := store.InboxApplied, fmt.Sprintf("signal %s sent to %d waiting events", b.Name, len(b.Receivers))
	if len(b.Receivers) == 0 {
		state, reason = store.InboxExpired, fmt.Sprintf("signal %s: no event was waiting for it", b.Name)
	}
	end := r.now
	rowID, err := r.idNow()
	if err != nil {
		return err
	}
	r.inboxNew = append(r.inboxNew, store.InboxMessage{
		ID: rowID, MessageID: id, Kind: inboxSignal, ActivityDefID: b.Name, User: r.actor,
		Payload: mustJSON(signalRecord{Variables: vars, Receivers: b.Receivers}),
		State:   state, Reason: reason, CreatedAt: r.now, EndedAt: &end,
	})
	return nil
}

// broadcastOf reads back a signal rememberSignal kept.
func broadcastOf(msg store.InboxMessage) (Broadcast, error) {
	if msg.Kind != inboxSignal {
		return Broadcast{}, fmt.Errorf("%w: signal id %q is the id of a message", ErrBadArgument, msg.MessageID)
	}
	var rec signalRecord
	if err := json.Unmarshal(msg.Payload, &rec); err != nil {
		return Broadcast{}, fmt.Errorf("signal %q: %w", msg.MessageID, err)
	}
	return Broadcast{Name: msg.ActivityDefID, Receivers: rec.Receivers}, nil
}

// signalDelivered handles an evSignal event: the event it names catches
// the signal if it still waits for it and its process is running; else
// the signal is lost for it.
func (r *run) signalDelivered(p payload) error {
	if p.Signal == nil || r.state() != wftype.ProcessRunning {
		return nil
	}
	a := r.activity(p.Activity)
	if a == nil || a.row.State != string(wftype.ActivityWaiting) || !isSignalCatch(a.def) || a.def.Event.Ref != p.Signal.Name {
		return nil
	}
	r.unsubscribe(a)
	vars, err := decodeOutputs(p.Signal.Variables)
	if err != nil {
		return err
	}
	if err := r.setVariables(vars, true); err != nil {
		if isStoreError(err) {
			return err
		}
		return r.fail(a, fmt.Sprintf("signal %s: %v", p.Signal.Name, err))
	}
	r.recordActivity(a, Record{Type: RecordSignalCaught, Activity: a.def.ID, Detail: p.Signal.Name})
	return r.complete(a, "")
}

// setVariables sets several variables, all or none: each value is
// checked against its declaration before any is set. Names the process
// does not declare are refused (ErrUnknownVariable), or skipped when
// skipUnknown.
func (r *run) setVariables(values map[string]any, skipUnknown bool) error {
	if len(values) == 0 {
		return nil
	}
	if _, err := r.variables(); err != nil {
		return err
	}
	names := make([]string, 0, len(values))
	for name := range values {
		names = append(names, name)
	}
	slices.Sort(names)
	set := names[:0]
	for _, name := range names {
		d, ok := r.decls[name]
		switch {
		case !ok && skipUnknown:
			continue
		case !ok:
			return &VariableError{Name: name, Value: values[name], kind: ErrUnknownVariable}
		}
		if _, err := d.typ.coerce(name, values[name]); err != nil {
			return err
		}
		set = append(set, name)
	}
	for _, name := range set {
		if err := r.setVariable(name, values[name]); err != nil {
			return err
		}
	}
	return nil
}

// armTrigger is called when a catching event or receive task has begun
// to wait: a message event or receive task takes a message the inbox
// kept for it, a signal event subscribes.
func (r *run) armTrigger(a *act) error {
	switch {
	case receivesMessages(a.def):
		_, err := r.consumeInbox(a, func(msg *store.InboxMessage) error { return r.catchMessage(msg, a) })
		return err
	case isSignalCatch(a.def):
		r.subscribe(a)
	}
	return nil
}

// catchMessage completes a waiting message event or receive task with a
// message: its outputs are set as process variables (all or none), and
// the message is marked applied.
func (r *run) catchMessage(msg *store.InboxMessage, a *act) error {
	outputs, err := decodeOutputs(msg.Payload)
	if err != nil {
		return err
	}
	defer r.produce(a)() // an instance of a loop keeps the message's values (countersign.go)
	if err := r.setVariables(outputs, false); err != nil {
		return err
	}
	end := r.now
	msg.State, msg.Reason, msg.EndedAt = store.InboxApplied, "caught by activity "+a.def.ID, &end
	msg.ProcessInstanceID = r.pi.ID
	r.recordActivity(a, Record{Type: RecordMessageApplied, Activity: a.def.ID, Detail: msg.MessageID})
	return r.complete(a, "")
}

// catching returns the instance of activity id that waits for a message
// now (a message event or receive task, in a running process), if any.
func (r *run) catching(id string) *act {
	if r.state() != wftype.ProcessRunning {
		return nil
	}
	for _, a := range r.acts {
		if a.def.ID == id && a.row.State == string(wftype.ActivityWaiting) && receivesMessages(a.def) {
			return a
		}
	}
	return nil
}

// catchPending lets the message events and receive tasks that waited
// through a suspension take the messages that arrived meanwhile.
func (r *run) catchPending() error {
	for _, a := range slices.Clone(r.acts) {
		if r.state() != wftype.ProcessRunning {
			return nil
		}
		if a.row.State == string(wftype.ActivityWaiting) && receivesMessages(a.def) {
			if err := r.armTrigger(a); err != nil {
				return err
			}
		}
	}
	return nil
}

// subscribe records that a waits for its signal; flush writes the
// subscription.
func (r *run) subscribe(a *act) {
	r.subs = append(r.subs, store.Subscription{
		ID: r.newID(), Kind: subSignal, Name: a.def.Event.Ref, ProcessInstanceID: r.pi.ID, ActivityInstanceID: a.row.ID,
		ActivityDefID: a.def.ID, CreatedAt: r.now,
	})
}

// unsubscribe drops a's subscription: one this run made goes unwritten,
// a stored one is deleted at flush.
func (r *run) unsubscribe(a *act) {
	before := len(r.subs)
	r.subs = slices.DeleteFunc(r.subs, func(s store.Subscription) bool { return s.ActivityInstanceID == a.row.ID })
	if len(r.subs) == before {
		r.unsubs = append(r.unsubs, a.row.ID)
	}
}

// unsubscribed reports that s, a stored subscription, is one this run
// dropped.
func (r *run) unsubscribed(s store.Subscription) bool {
	return s.ProcessInstanceID == r.pi.ID && slices.Contains(r.unsubs, s.ActivityInstanceID)
}

// eachRun calls fn with r and, depth first, the subflow runs it created.
func (r *run) eachRun(fn func(*run)) {
	fn(r)
	for _, c := range r.children {
		c.eachRun(fn)
	}
}

// flushSubscriptions writes the subscriptions the run made, and drops
// those of signal events that stopped waiting in this run (caught,
// completed, withdrawn, failed), or all of a finished instance's.
func (r *run) flushSubscriptions() error {
	if r.proc == nil || r.dep == nil || !r.dep.signalled[r.proc.ID] {
		return nil
	}
	if r.idErr != nil {
		return r.idErr
	}
	if r.state().IsFinal() {
		r.subs, r.unsubs = nil, nil
		_, err := r.tx.DeleteSubscriptions(r.ctx, store.DeleteSubscriptionsParams{ProcessInstanceID: r.pi.ID})
		return err
	}
	var live []store.Subscription
	for _, s := range r.subs {
		if a := r.activity(s.ActivityInstanceID); a != nil && a.row.State == string(wftype.ActivityWaiting) {
			live = append(live, s) // still waiting: a stopped one's subscription is never written
		}
	}
	done := r.unsubs
	for _, a := range r.acts {
		if a.stored && isSignalCatch(a.def) &&
			(a.finishedNow || a.row.State == string(wftype.ActivityAbnormal)) && !slices.Contains(done, a.row.ID) {
			done = append(done, a.row.ID)
		}
	}
	r.subs, r.unsubs = nil, nil
	if len(done) > 0 {
		_, err := r.tx.DeleteSubscriptions(r.ctx, store.DeleteSubscriptionsParams{ProcessInstanceID: r.pi.ID, ActivityInstanceIDs: done})
		if err != nil {
			return err
		}
	}
	if len(live) == 0 {
		return nil
	}
	_, err := r.tx.InsertSubscriptions(r.ctx, live)
	return err
}

// throwEvent runs a throwing Signal or Message event: a Signal is sent
// to the events of every instance waiting for it now (as Engine.Signal
// does, this instance's included); a Message goes nowhere the engine
// knows of, and the event passes on.
func (r *run) throwEvent(a *act) error {
	if err := r.setActivity(a, machine.ActivityStart, ""); err != nil {
		return err
	}
	if a.def.Event.Trigger == xpdl.TriggerSignal && a.def.Event.Ref != "" {
		subs, err := r.snap.receivers(a.def.Event.Ref, 0)
		if err != nil {
			return err
		}
		r.deliverSignal(a.def.Event.Ref, []byte("{}"), subs)
		r.recordActivity(a, Record{Type: RecordSignalThrown, Activity: a.def.ID, Detail: a.def.Event.Ref})
	}
	return r.complete(a, "")
}

// startEventGateway runs an event-based gateway: it completes and starts
// every activity its transitions lead to, in this transaction, so that
// they all wait at once; the first to complete withdraws the others
// (deferredChoice).
func (r *run) startEventGateway(a *act) error {
	if err := r.setActivity(a, machine.ActivityStart, ""); err != nil {
		return err
	}
	if err := r.setActivity(a, machine.ActivityComplete, ""); err != nil {
		return err
	}
	sc := a.scope
	var armed []*act
	for _, t := range gatewayTransitions(sc.Flow, a.def) {
		target := sc.Flow.Activity(t.To)
		if target == nil {
			continue
		}
		start, condErr := r.tokens.Arrive(sc, t, r.joinCondition)
		if !start {
			continue
		}
		if condErr != nil { // a Complex join after the gateway
			if err := r.startJoin(sc, target, condErr); err != nil {
				return err
			}
			continue
		}
		b, err := r.createActivity(sc, target, false)
		if err != nil {
			return err
		}
		armed = append(armed, b)
	}
	if len(armed) == 0 && len(sc.Flow.Outgoing(a.def.ID)) > 0 {
		r.tokens.DeadEnd(sc, a.def)
	}
	for _, b := range armed {
		if err := r.startActivity(b); err != nil {
			return err
		}
	}
	return r.settle(sc)
}

// gatewayTransitions are the transitions an event-based gateway takes:
// all but its exception transitions, whatever their conditions say.
func gatewayTransitions(f *xpdl.Flow, gw *xpdl.Activity) []*xpdl.Transition {
	var out []*xpdl.Transition
	for _, t := range flow.Outgoing(f, gw) {
		if t.Condition != nil && (t.Condition.Type == xpdl.ConditionException || t.Condition.Type == xpdl.ConditionDefaultException) {
			continue
		}
		out = append(out, t)
	}
	return out
}

// deferredChoice runs as activity a completes: when a is one of the
// activities an event-based gateway armed, its rivals (the gateway's
// other targets still alive in a's scope) are withdrawn, in this
// transaction: a fired first.
func (r *run) deferredChoice(a *act) error {
	rivals := rivalsOf(a.scope.Flow, a.def)
	if len(rivals) == 0 {
		return nil
	}
	for _, b := range slices.Clone(r.acts) {
		if b == a || b.scope.Flow != a.scope.Flow || b.scope.Block != a.scope.Block || !rivals[b.def.ID] ||
			b.row.State == string(wftype.ActivityCompleted) {
			continue
		}
		if err := r.interrupt(b); err != nil {
			return err
		}
		// No dead end is recorded: the branch was not lost, the choice
		// withdrew it (and a gateway in a loop would grow the tokens).
		if err := r.forceComplete(b, "deferred choice: "+a.def.ID+" came first"); err != nil {
			return err
		}
	}
	return nil
}

// rivalsOf returns the activities that race with def: the other targets
// of the event-based gateways that lead to def.
func rivalsOf(f *xpdl.Flow, def *xpdl.Activity) map[string]bool {
	var rivals map[string]bool
	for _, in := range f.Incoming(def.ID) {
		gw := f.Activity(in.From)
		if gw == nil || !isEventGateway(gw) {
			continue
		}
		for _, t := range gatewayTransitions(f, gw) {
			if t.To == def.ID {
				continue
			}
			if rivals == nil {
				rivals = map[string]bool{}
			}
			rivals[t.To] = true
		}
	}
	return rivals
}

// isEventGateway reports whether def is an event-based exclusive gateway
// (deferred choice): a Route with ExclusiveType (XPDL 2.0: XORType)
// "Event".
func isEventGateway(def *xpdl.Activity) bool {
	return def.Kind == xpdl.ActivityRoute && def.Route != nil && strings.EqualFold(strings.TrimSpace(def.Route.ExclusiveType), "Event")
}

// isIntermediateCatch reports whether def is an intermediate event of the
// normal flow that waits for trigger.
func isIntermediateCatch(def *xpdl.Activity, trigger xpdl.Trigger) bool {
	return def.Kind == xpdl.ActivityEvent && def.Event != nil && def.Event.Type == xpdl.EventIntermediate &&
		def.Event.Trigger == trigger && !def.Event.Throw && def.Event.Target == ""
}

// isSignalCatch reports whether def is a catching intermediate Signal
// event of the normal flow.
func isSignalCatch(def *xpdl.Activity) bool { return isIntermediateCatch(def, xpdl.TriggerSignal) }

// isReceiveTask reports whether def is an XPDL 2 receive task bound to
// no application: it waits for a message.
func isReceiveTask(def *xpdl.Activity) bool {
	return def.Kind == xpdl.ActivityTool && def.Task == xpdl.TaskReceive &&
		!slices.ContainsFunc(def.Tools, func(tc *xpdl.ToolCall) bool { return tc.Application != "" })
}

// receivesMessages reports whether def waits for a message: a catching
// intermediate Message event or a receive task without an application.
func receivesMessages(def *xpdl.Activity) bool {
	return isIntermediateCatch(def, xpdl.TriggerMessage) || isReceiveTask(def)
}

// catchesTrigger reports whether def waits for a message or a signal
// once started.
func catchesTrigger(def *xpdl.Activity) bool { return receivesMessages(def) || isSignalCatch(def) }

// isThrowEvent reports whether def throws a Signal or a Message: an
// intermediate event with CatchThrow="THROW", or an end event with that
// Result.
func isThrowEvent(def *xpdl.Activity) bool {
	if def.Kind != xpdl.ActivityEvent || def.Event == nil || def.Event.Target != "" {
		return false
	}
	ev := def.Event
	return (ev.Trigger == xpdl.TriggerSignal || ev.Trigger == xpdl.TriggerMessage) &&
		(ev.Type == xpdl.EventEnd || ev.Type == xpdl.EventIntermediate && ev.Throw)
}

// catchesSignals reports whether any flow of proc has a catching Signal
// event.
func catchesSignals(proc *xpdl.Process) bool {
	for _, f := range proc.Flows() {
		if slices.ContainsFunc(f.Activities, isSignalCatch) {
			return true
		}
	}
	return false
}

// addressable reports whether any flow of proc has an activity that a
// work item or a message finishes: a manual activity or a message
// receiver (the activities send accepts messages for).
func addressable(proc *xpdl.Process) bool {
	for _, f := range proc.Flows() {
		if slices.ContainsFunc(f.Activities, func(a *xpdl.Activity) bool { return IsManual(a) || receivesMessages(a) }) {
			return true
		}
	}
	return false
}

// receiverOf finds activity id in the process or its activity sets.
func (r *run) receiverOf(id string) *xpdl.Activity {
	for _, f := range r.proc.Flows() {
		if a := f.Activity(id); a != nil {
			return a
		}
	}
	return nil
}
