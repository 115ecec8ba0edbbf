package engine

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/goxpdl/goxpdl/store"
	"github.com/goxpdl/goxpdl/wftype"
	"github.com/goxpdl/goxpdl/workitem"
)

// Message completes an activity from outside, possibly before the
// activity is waiting for it (the out-of-order problem): a manual
// activity's work item, or a catching intermediate Message event or
// receive task. A message that arrives early is kept in the correlation
// inbox with its key and applied when the activity offers its work item
// or starts to wait. A message whose instance can never get there (it
// finished) expires with the reason.
type Message struct {
	// MessageID identifies the message; sending it again is recognised
	// and answered with the first delivery. Required.
	MessageID string
	// Instance is the process instance it is for, or 0 when Match says.
	Instance int64
	// Match correlates by data instead: the instance of a process whose
	// variable has a value.
	Match *Match
	// Activity is the id of the activity it is for: a manual activity,
	// whose work item it completes, or a catching intermediate Message
	// event or a receive task (one bound to no application), which it
	// completes. Required.
	Activity string
	// User completes the work item; it must be allowed to. For an event
	// or a receive task it is only recorded as the actor.
	User string
	// Outputs are set as the work item's completion outputs; for an
	// event or a receive task, as process variables, which must be
	// declared and of the declared types (all are set or none).
	Outputs map[string]any
	// TTL is how long the message may wait in the inbox; 0: until its
	// instance finishes.
	TTL time.Duration
}

// Match selects the process instance a message is for by data: the
// running instance of Process whose variable Variable equals Value.
type Match struct {
	Process  string
	Variable string
	Value    any
}

// Delivery says what became of a message.
type Delivery struct {
	// MessageID is the message's id.
	MessageID string
	// State is Applied (its work item was completed), Pending (waiting
	// in the inbox) or Expired.
	State DeliveryState
	// Reason says what applying did, or why the message expired.
	Reason string
	// Instance is the process instance it was matched to; 0 while
	// pending by data.
	Instance int64
	// Duplicate is true when this MessageID was sent before; the rest is
	// the first delivery's state now.
	Duplicate bool
}

// DeliveryState is what became of a message.
type DeliveryState string

// The delivery states.
const (
	// DeliveryPending: the message waits in the inbox for its activity
	// (or its instance, when matched by data).
	DeliveryPending DeliveryState = store.InboxPending
	// DeliveryApplied: the message was applied to its instance.
	DeliveryApplied DeliveryState = store.InboxApplied
	// DeliveryExpired: the message expired, or could not be applied,
	// before it was; Reason says why.
	DeliveryExpired DeliveryState = store.InboxExpired
)

// Message kinds in the inbox.
const inboxComplete = "complete"

// ErrAmbiguousMatch: a message's Match selects more than one instance.
var ErrAmbiguousMatch = errors.New("message matches more than one process instance")

// Send delivers a message: it completes the activity's open work item, or
// the message event or receive task, at once when the activity is
// waiting, or keeps the message in the inbox until it is (a persistent
// trigger: the activity takes it when it starts to wait). A message for
// a suspended instance waits until it is resumed. A malformed message,
// an unknown instance or activity, an activity that takes no messages
// (ErrNoReceiver), or a user who may not complete the item or outputs
// that do not fit the variables are refused and nothing is kept.
func (e *Engine) Send(ctx context.Context, m Message) (Delivery, error) {
	if m.MessageID == "" || m.Activity == "" || (m.Instance == 0) == (m.Match == nil) {
		return Delivery{}, fmt.Errorf("%w: a message needs a MessageID, an Activity, and either an Instance or a Match", ErrBadArgument)
	}
	if err := checkTexts(maxKey, "Message.MessageID", m.MessageID, "Message.User", m.User); err != nil {
		return Delivery{}, err
	}
	var d Delivery
	err := e.transact(ctx, nil, actorOf(m.User), func(r *run) (*run, error) {
		if prior, err := r.snap.message(m.MessageID); err == nil {
			d = deliveryOf(prior)
			d.Duplicate = true
			return nil, nil // sent before: nothing to write
		} else if !errors.Is(err, store.ErrNotFound) {
			return nil, err
		}
		var err error
		d, err = r.send(m)
		return r, err // r has no instance when the message is only kept
	})
	return d, err
}

// send matches, applies or keeps a message.
func (r *run) send(m Message) (Delivery, error) {
	msg := store.InboxMessage{
		MessageID: m.MessageID, Kind: inboxComplete, ProcessInstanceID: m.Instance, ActivityDefID: m.Activity,
		User: m.User, State: store.InboxPending, CreatedAt: r.now,
	}
	payload, err := canonicalOutputs(m.Outputs)
	if err != nil {
		return Delivery{}, err
	}
	msg.Payload = payload
	if m.TTL > 0 {
		exp := r.now.Add(m.TTL)
		msg.ExpiresAt = &exp
	}
	instance := m.Instance
	if m.Match != nil {
		value, err := encodeMatchValue(m.Match.Value)
		if err != nil {
			return Delivery{}, err
		}
		msg.ProcessDefID, msg.Variable, msg.Value = m.Match.Process, m.Match.Variable, value
		ids, err := r.snap.matchingInstances(store.FindByVariableParams{
			ProcessDefID: m.Match.Process, Name: m.Match.Variable, Value: value,
			States: openStates,
			Limit:  2,
		})
		if err != nil {
			return Delivery{}, err
		}
		switch len(ids) {
		case 0: // kept until an instance with that value gets there
		case 1:
			instance = ids[0]
		default:
			return Delivery{}, fmt.Errorf("%w: %s.%s = %v", ErrAmbiguousMatch, m.Match.Process, m.Match.Variable, m.Match.Value)
		}
	}
	if instance != 0 {
		if err := r.load(instance); err != nil {
			return Delivery{}, err
		}
		msg.ProcessInstanceID = instance
		def := r.receiverOf(m.Activity)
		if def == nil {
			return Delivery{}, notFound("activity", m.Activity+" in process "+r.proc.ID)
		}
		if !IsManual(def) && !receivesMessages(def) {
			return Delivery{}, fmt.Errorf("%w: activity %s of process %s", ErrNoReceiver, m.Activity, r.proc.ID)
		}
		if r.state().IsFinal() {
			msg.State, msg.Reason = store.InboxExpired, fmt.Sprintf("process instance %d is %s", instance, r.pi.State)
			end := r.now
			msg.EndedAt = &end
		} else if a := r.waiting(m.Activity); a != nil {
			wi, err := r.openItem(a)
			if err != nil {
				return Delivery{}, err
			}
			if err := r.applyMessage(&msg, a, wi); err != nil {
				return Delivery{}, err
			}
		} else if a := r.catching(m.Activity); a != nil {
			if err := r.catchMessage(&msg, a); err != nil {
				return Delivery{}, err
			}
		}
	}
	if msg.ID, err = r.idNow(); err != nil {
		return Delivery{}, err
	}
	r.inboxNew = append(r.inboxNew, msg)
	return deliveryOf(msg), nil
}

// waiting returns the InActive instance of activity id, if any.
func (r *run) waiting(id string) *act {
	for _, a := range r.acts {
		if a.def.ID == id && a.row.State == string(wftype.ActivityInActive) {
			return a
		}
	}
	return nil
}

// openItem returns the open work item of a waiting activity.
func (r *run) openItem(a *act) (store.WorkItem, error) {
	items, err := r.snap.workItems(store.ListWorkItemsParams{ProcessInstanceID: r.pi.ID, ActivityInstanceID: a.row.ID})
	if err != nil {
		return store.WorkItem{}, err
	}
	for _, wi := range items {
		if !workitem.State(wi.State).IsFinal() {
			return wi, nil
		}
	}
	return store.WorkItem{}, fmt.Errorf("activity instance %d is waiting without an open work item", a.row.ID)
}

// applyMessage completes a waiting activity's work item with a message's
// outputs as the message's user.
func (r *run) applyMessage(msg *store.InboxMessage, a *act, wi store.WorkItem) error {
	outputs, err := decodeOutputs(msg.Payload)
	if err != nil {
		return err
	}
	c := Completion{User: msg.User, Outputs: outputs, IdempotencyKey: "message:" + msg.MessageID}
	if err := r.completeItem(&wi, a, c, map[string]string{"message": msg.MessageID}); err != nil {
		return err
	}
	end := r.now
	msg.State, msg.Reason, msg.EndedAt = store.InboxApplied, fmt.Sprintf("completed work item %d", wi.ID), &end
	msg.ProcessInstanceID = r.pi.ID
	return nil
}

// applyInbox runs when activity a has just offered work item wi: a
// message that waited for it completes the item now. A message that
// expired meanwhile is marked so.
func (r *run) applyInbox(a *act, wi store.WorkItem) (bool, error) {
	return r.consumeInbox(a, func(msg *store.InboxMessage) error { return r.applyMessage(msg, a, wi) })
}

// consumeInbox applies the first message waiting in the inbox for
// activity a (by instance, or by data matching this instance) that apply
// accepts, and reports whether there was one. Messages whose time ran
// out, and those apply refuses for their content (a user not allowed, a
// value of the wrong type or for no variable), expire with the reason.
func (r *run) consumeInbox(a *act, apply func(msg *store.InboxMessage) error) (bool, error) {
	byID, err := r.snap.pendingMessages(store.ListInboxParams{
		ProcessInstanceID: r.pi.ID, ActivityDefID: a.def.ID, States: []string{store.InboxPending}, Limit: 100,
	})
	if err != nil {
		return false, err
	}
	byData, err := r.snap.pendingMessages(store.ListInboxParams{
		ProcessDefID: r.proc.ID, ActivityDefID: a.def.ID, States: []string{store.InboxPending}, Unmatched: true, Limit: 100,
	})
	if err != nil {
		return false, err
	}
	for _, msg := range append(byID, byData...) {
		if msg.ExpiresAt != nil && !msg.ExpiresAt.After(r.now) {
			if err := r.endMessage(msg, store.InboxExpired, "its time to live ran out before the activity was reached"); err != nil {
				return false, err
			}
			continue
		}
		if msg.ProcessInstanceID == 0 && !r.matches(msg) {
			continue
		}
		if err := apply(&msg); err != nil {
			if errors.Is(err, ErrNotAllowed) || errors.Is(err, ErrWrongType) || errors.Is(err, ErrUnknownVariable) {
				// The message cannot complete this item: it expires
				// with the reason rather than block the activity.
				if err := r.endMessage(msg, store.InboxExpired, err.Error()); err != nil {
					return false, err
				}
				continue
			}
			return false, err
		}
		r.inboxEnds = append(r.inboxEnds, store.UpdateInboxMessageParams{
			ID: msg.ID, ExpectedState: store.InboxPending, State: msg.State, Reason: msg.Reason,
			ProcessInstanceID: r.pi.ID, EndedAt: msg.EndedAt,
		})
		return true, nil
	}
	return false, nil
}

// matches reports whether a message pending by data names this instance.
func (r *run) matches(msg store.InboxMessage) bool {
	vars, err := r.variables()
	if err != nil {
		return false
	}
	v, ok := vars[msg.Variable]
	if !ok {
		return false
	}
	got, err := encodeMatchValue(v)
	return err == nil && string(got) == string(msg.Value)
}

// expireInbox expires the messages still waiting for this instance, which
// has finished.
func (r *run) expireInbox() error {
	pending, err := r.snap.pendingMessages(store.ListInboxParams{ProcessInstanceID: r.pi.ID, States: []string{store.InboxPending}, Limit: 1000})
	if err != nil {
		return err
	}
	for _, msg := range pending {
		reason := fmt.Sprintf("process instance %d ended %s before reaching activity %s", r.pi.ID, r.pi.State, msg.ActivityDefID)
		if err := r.endMessage(msg, store.InboxExpired, reason); err != nil {
			return err
		}
	}
	return nil
}

// endMessage ends a pending message (expired, with the reason) at flush.
func (r *run) endMessage(msg store.InboxMessage, state, reason string) error {
	end := r.now
	r.inboxEnds = append(r.inboxEnds, store.UpdateInboxMessageParams{
		ID: msg.ID, ExpectedState: store.InboxPending, State: state, Reason: reason,
		ProcessInstanceID: msg.ProcessInstanceID, EndedAt: &end,
	})
	return nil
}

// inboxMatches reports that the store's ListInbox would list m for
// params, for the messages a run keeps until flush.
func inboxMatches(params store.ListInboxParams, m store.InboxMessage) bool {
	return (params.ProcessInstanceID == 0 || m.ProcessInstanceID == params.ProcessInstanceID) &&
		(!params.Unmatched || m.ProcessInstanceID == 0) &&
		(params.ProcessDefID == "" || m.ProcessDefID == params.ProcessDefID) &&
		(params.ActivityDefID == "" || m.ActivityDefID == params.ActivityDefID) &&
		(len(params.States) == 0 || slices.Contains(params.States, m.State)) &&
		(params.ExpiresBefore == nil || (m.ExpiresAt != nil && m.ExpiresAt.Before(*params.ExpiresBefore))) &&
		m.ID > params.AfterID
}

// flushInbox inserts the messages and signals the run keeps (a message
// id sent meanwhile by another transaction fails it with
// store.ErrDuplicate), then writes the ends of the pending messages the
// run applied or expired, each fenced by its state: a message another
// transaction took meanwhile fails it with store.ErrConflict (and the
// run is tried again).
func (r *run) flushInbox() error {
	for _, m := range r.inboxNew {
		if _, err := r.tx.InsertInboxMessage(r.ctx, m); err != nil {
			return err
		}
	}
	r.inboxNew = nil
	for _, u := range r.inboxEnds {
		if err := r.tx.UpdateInboxMessage(r.ctx, u); err != nil {
			return fmt.Errorf("inbox message %d: %w", u.ID, err)
		}
	}
	r.inboxEnds = nil
	return nil
}

// Inbox returns a message by id.
func (e *Engine) Inbox(ctx context.Context, messageID string) (Delivery, error) {
	msg, err := e.store.GetInboxMessage(ctx, messageID)
	if errors.Is(err, store.ErrNotFound) {
		return Delivery{}, notFound("message", messageID)
	}
	if err != nil {
		return Delivery{}, err
	}
	return deliveryOf(msg), nil
}

func deliveryOf(msg store.InboxMessage) Delivery {
	return Delivery{MessageID: msg.MessageID, State: DeliveryState(msg.State), Reason: msg.Reason, Instance: msg.ProcessInstanceID}
}

// encodeMatchValue encodes a correlation value as variables are stored,
// so that the store can compare it with the stored JSON.
// (encodeVariable: the JSON of the typed value).
func encodeMatchValue(v any) ([]byte, error) {
	data, err := json.Marshal(v)
	if err != nil {
		return nil, fmt.Errorf("%w: match value %v: %w", ErrBadArgument, v, err)
	}
	return data, nil
}

// decodeOutputs reads a message's stored outputs, numbers as json.Number
// so that the variables' types decide (an INTEGER stays integral).
func decodeOutputs(data []byte) (map[string]any, error) {
	out := map[string]any{}
	if len(data) == 0 {
		return out, nil
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	if err := dec.Decode(&out); err != nil {
		return nil, fmt.Errorf("message outputs: %w", err)
	}
	return out, nil
}
