package adversary

import (
	"encoding/json"
	"maps"
	"slices"
	"time"

	"github.com/goxpdl/goxpdl/wftype"
	"github.com/goxpdl/goxpdl/workitem"
)

// world is the model: what the engine should hold after the operations
// so far. It is plain data, cloned whole when an operation's outcome is
// unknown (a store fault), and changed only by the operations' apply
// functions (ops.go) and the flow below, which is the suite's reading of
// the definition in definition.go.
type world struct {
	now     time.Time
	deploys []deployment // in version order
	insts   []*inst      // in start order
	byKey   map[string]int
}

// deployment is one deployed version of the suite's package.
type deployment struct {
	id      int64
	version int
}

// inst is one process instance.
type inst struct {
	id      int64
	key     string // the start's idempotency key
	bkey    string // the business key
	defID   int64
	version int
	state   wftype.ProcessState
	vars    map[string]any

	// at is the activity the instance waits in: Review, Chase or Approve
	// with item as its work item; Book when Book is Abnormal; "" when
	// the instance waits nowhere (finished).
	at   string
	item *item
	// pending says that at was started by a move while the instance was
	// Suspended: it is Initiated and starts when the instance resumes
	// (offered to assign when that is not "").
	pending bool
	assign  string
	// abnormal is Book's Abnormal activity instance (its id once seen); it
	// stays Abnormal in a terminated instance.
	abnormal   bool
	abnormalID int64
	// due is Review's deadline while the instance runs; left is the time
	// the deadline had left when the instance was suspended.
	due  time.Time
	left time.Duration

	bookings    int // committed calls of book
	completions int // completed work items
	closed      []*closedItem
	// lastDone is, by activity, who completed its latest (not cancelled)
	// instance: the user of its work item, "" for a deadline. Rollback
	// offers the activity to that user.
	lastDone map[string]string
	// withdrawable is the completed Approve item whose completion
	// started the Review now open (Withdraw takes it back).
	withdrawable *closedItem
}

// item is an open work item.
type item struct {
	id       int64 // 0 until the checker has seen it
	act      int64 // its activity instance, 0 until seen
	activity string
	state    workitem.State
	from     workitem.State // the state a Suspended item resumes to
	owner    string
	// offeredTo is the one user the item is offered to ("" for the role
	// clerk): after a reassignment, a rollback or a withdrawal.
	offeredTo string
}

// closedItem is a work item that was completed or withdrawn.
type closedItem struct {
	id       int64
	activity string
	state    workitem.State
	by       string // the completing user
	key      string // the completion's idempotency key
	outputs  string // the completion's outputs, canonical JSON
}

func newWorld(start time.Time) *world {
	return &world{now: start, byKey: map[string]int{}}
}

// clone copies the world deeply.
func (w *world) clone() *world {
	c := &world{now: w.now, deploys: slices.Clone(w.deploys), byKey: maps.Clone(w.byKey)}
	c.insts = make([]*inst, len(w.insts))
	for i, in := range w.insts {
		c.insts[i] = in.clone()
	}
	return c
}

func (in *inst) clone() *inst {
	c := *in
	c.vars = maps.Clone(in.vars)
	c.lastDone = maps.Clone(in.lastDone)
	if in.item != nil {
		it := *in.item
		c.item = &it
	}
	c.closed = make([]*closedItem, len(in.closed))
	for i, ci := range in.closed {
		cc := *ci
		c.closed[i] = &cc
		if ci == in.withdrawable {
			c.withdrawable = &cc
		}
	}
	return &c
}

// latest is the newest deployment.
func (w *world) latest() deployment { return w.deploys[len(w.deploys)-1] }

// initialVars are the data fields' initial values (definition.go).
func initialVars() map[string]any {
	return map[string]any{"amount": int64(0), "note": "", "ok": false, "rate": float64(0), "memo": ""}
}

// open says whether an instance has not finished.
func (in *inst) open() bool { return !in.state.IsFinal() }

// enter makes the instance arrive at activity act, as a transition or a
// move does: a manual activity offers a work item (to assign, or the
// role), Book books or goes Abnormal, Done completes the instance. In a
// Suspended instance the activity waits, Initiated, for the resume.
func (in *inst) enter(w *world, act, assign string) {
	in.at, in.item, in.pending, in.assign = act, nil, false, ""
	if in.state == wftype.ProcessSuspended {
		in.pending, in.assign = true, assign
		return
	}
	switch act {
	case ActBegin:
		in.enter(w, ActReview, "")
	case ActReview, ActChase, ActApprove:
		in.item = &item{activity: act, state: workitem.Offered, offeredTo: assign}
		if act == ActReview {
			in.due = w.now.Add(DeadlineAfter * time.Millisecond)
		}
	case ActBook:
		if in.vars["amount"].(int64) < 0 {
			in.abnormal, in.abnormalID = true, 0
			return
		}
		in.bookings++
		in.lastDone[ActBook] = ""
		in.enter(w, ActApprove, "")
	case ActDone:
		in.at = ""
		in.state = wftype.ProcessCompleted
	}
}

// closeItem ends the open work item as completed (by user, with key and
// outputs) or withdrawn.
func (in *inst) closeItem(state workitem.State, by, key, outputs string) *closedItem {
	ci := &closedItem{id: in.item.id, activity: in.item.activity, state: state, by: by, key: key, outputs: outputs}
	in.closed = append(in.closed, ci)
	in.item = nil
	if state == workitem.Completed {
		in.completions++
	}
	return ci
}

// completeItem completes the open work item as user with outputs (already
// checked) and moves the instance on.
func (in *inst) completeItem(w *world, user, key string, outputs map[string]any) {
	maps.Copy(in.vars, outputs)
	act := in.item.activity
	ci := in.closeItem(workitem.Completed, user, key, canonical(outputs))
	in.withdrawable = nil
	in.lastDone[act] = user
	switch act {
	case ActReview, ActChase:
		in.enter(w, ActBook, "")
	case ActApprove:
		if in.vars["ok"].(bool) {
			in.enter(w, ActDone, "")
			return
		}
		in.enter(w, ActReview, "")
		in.withdrawable = ci
	}
}

// deadline fires Review's deadline: its item is withdrawn and Chase
// offered.
func (in *inst) deadline(w *world) {
	in.closeItem(workitem.Withdrawn, "", "", "")
	in.withdrawable = nil
	in.lastDone[ActReview] = ""
	in.enter(w, ActChase, "")
}

// cancelAll cancels what the instance waits in, as a move does.
func (in *inst) cancelAll() {
	if in.item != nil {
		in.closeItem(workitem.Withdrawn, "", "", "")
	}
	in.at, in.pending, in.assign, in.abnormal, in.abnormalID = "", false, "", false, 0
	in.withdrawable = nil
}

func (in *inst) suspend(w *world) {
	in.state = wftype.ProcessSuspended
	if in.item != nil {
		in.item.from, in.item.state = in.item.state, workitem.Suspended
	}
	if in.at == ActReview && in.item != nil {
		in.left = in.due.Sub(w.now)
	}
}

func (in *inst) resume(w *world) {
	in.state = wftype.ProcessRunning
	if in.item != nil {
		in.item.state, in.item.from = in.item.from, ""
	}
	if in.at == ActReview && in.item != nil {
		in.due = w.now.Add(in.left)
	}
	if in.pending {
		in.enter(w, in.at, in.assign)
	}
}

func (in *inst) terminate() {
	in.state = wftype.ProcessTerminated
	if in.item != nil {
		in.closeItem(workitem.Withdrawn, "", "", "")
	}
	// An activity waiting to start stays Initiated in the terminated
	// instance, as an InActive one stays InActive.
	if !in.pending {
		in.at = ""
	}
	in.withdrawable = nil
}

// advance moves the clock on and fires the deadlines that fall due.
func (w *world) advance(d time.Duration) {
	w.now = w.now.Add(d)
	for _, in := range w.insts {
		if in.state == wftype.ProcessRunning && in.at == ActReview && in.item != nil && !w.now.Before(in.due) {
			in.deadline(w)
		}
	}
}

// canonical is the JSON of outputs as the engine compares repeated
// completions: sorted keys, numbers as JSON writes them.
func canonical(outputs map[string]any) string {
	if len(outputs) == 0 {
		return "{}"
	}
	data, err := json.Marshal(outputs)
	if err != nil {
		return "!" + err.Error()
	}
	var v any
	if err := json.Unmarshal(data, &v); err != nil {
		return string(data)
	}
	data, _ = json.Marshal(v)
	return string(data)
}
