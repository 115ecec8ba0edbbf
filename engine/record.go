package engine

import "time"

// Record is one observable step of the engine, published to observers
// after the transaction that made it committed. `goxpdl run --trace jsonl`
// prints them one per line, a format the README ("goxpdl run") keeps
// stable.
type Record struct {
	// Seq numbers the records of this engine in publication order.
	Seq int64 `json:"seq"`
	// Time is when the step happened, by the engine's clock.
	Time time.Time `json:"time"`
	// Type is what happened: one of the Record* constants.
	Type string `json:"type"`
	// Process is the WorkflowProcess id.
	Process string `json:"process"`
	// Instance is the process instance id.
	Instance int64 `json:"instance"`
	// Activity is the XPDL activity id, where relevant.
	Activity string `json:"activity,omitempty"`
	// ActivityInstance is the activity instance id, where relevant.
	ActivityInstance int64 `json:"activityInstance,omitempty"`
	// WorkItem is the work item id, where relevant.
	WorkItem int64 `json:"workitem,omitempty"`
	// User is who moved a work item (claimed, completed, ...); Assignees
	// are whom a work item is offered to, as kind:id.
	User      string   `json:"user,omitempty"`
	Assignees []string `json:"assignees,omitempty"`
	// State is the new state of the subject; From, where given, the
	// state it left (work items).
	State string `json:"state,omitempty"`
	From  string `json:"from,omitempty"`
	// Error explains a failure, a deadlock or an abnormal activity.
	Error string `json:"error,omitempty"`
	// Detail adds what the type needs: the exception a deadline raises,
	// the number of a reminder, the activity a boundary timer is on.
	Detail string `json:"detail,omitempty"`
	// Due is when the timer behind a timer record (deadline.fired,
	// timer.fired, *.overdue, activity.reminder) was due; Time is when
	// the engine acted on it.
	Due *time.Time `json:"due,omitempty"`
	// Parent is the parent process instance of a subflow instance.
	Parent int64 `json:"parent,omitempty"`
	// Batch is the batch of a batch.* record (batch.go).
	Batch int64 `json:"batch,omitempty"`
	// BusinessKey is the instance's business key, on process.started and
	// process.queued.
	BusinessKey string `json:"businessKey,omitempty"`
}

// Record types.
const (
	RecordProcessStarted    = "process.started"
	RecordProcessCompleted  = "process.completed"
	RecordProcessTerminated = "process.terminated"
	RecordProcessSuspended  = "process.suspended"
	RecordProcessResumed    = "process.resumed"
	RecordProcessLocked     = "process.locked"
	// An operator moved the instance (MoveInstance, Jump, Rollback,
	// Withdraw): Detail lists what was cancelled and started, User who.
	RecordProcessMoved = "process.moved"
	// An operator migrated the instance to another version of its
	// definition (Migrate): Detail says from which to which.
	RecordProcessMigrated   = "process.migrated"
	RecordActivityStarted   = "activity.started"
	RecordActivityCompleted = "activity.completed"
	RecordActivityAbnormal  = "activity.abnormal"
	RecordActivityWaiting   = "activity.waiting"
	RecordWorkItemCreated   = "workitem.created"
	RecordWorkItemOffered   = "workitem.offered" // offered afresh: released or reassigned
	RecordWorkItemAllocated = "workitem.allocated"
	RecordWorkItemStarted   = "workitem.started"
	RecordWorkItemSuspended = "workitem.suspended"
	RecordWorkItemResumed   = "workitem.resumed"
	RecordWorkItemCompleted = "workitem.completed"
	RecordWorkItemWithdrawn = "workitem.withdrawn"
	RecordMessageApplied    = "message.applied"
	RecordMessageExpired    = "message.expired"
	// Signals: a waiting Signal event caught one (Detail is its name); a
	// throwing Signal event sent one (Detail is its name).
	RecordSignalCaught = "signal.caught"
	RecordSignalThrown = "signal.thrown"
	// Timers: a deadline passed (State is SYNCHR or ASYNCHR, Detail the
	// exception); a timer event fired; a Limit passed; an overdue reminder
	// was sent (Detail is its number); a waiting activity's work was
	// escalated (Assignees are whom it is offered to now).
	RecordDeadlineFired     = "deadline.fired"
	RecordTimerFired        = "timer.fired"
	RecordActivityOverdue   = "activity.overdue"
	RecordProcessOverdue    = "process.overdue"
	RecordActivityReminder  = "activity.reminder"
	RecordActivityEscalated = "activity.escalated"
	// A non-reentrant activity started and withdrew the open activities
	// that could only lead to it (Detail names them): a race was decided.
	RecordRaceDecided = "race.decided"
)

// timerRecords are the record types a timer causes.
var timerRecords = map[string]bool{
	RecordDeadlineFired: true, RecordTimerFired: true, RecordActivityOverdue: true, RecordProcessOverdue: true,
	RecordActivityReminder: true,
}

// Subscribe calls fn with every record from now on, in order, until the
// returned function is called. fn runs on the engine's workers: it must be
// quick and must not call back into the engine synchronously.
func (e *Engine) Subscribe(fn func(Record)) (unsubscribe func()) {
	e.obsMu.Lock()
	defer e.obsMu.Unlock()
	e.observers = append(e.observers, fn)
	idx := len(e.observers) - 1
	return func() {
		e.obsMu.Lock()
		defer e.obsMu.Unlock()
		e.observers[idx] = nil
	}
}

// publish numbers the records and hands them to the observers. Records of
// one instance are published in the order they were made, because the
// scheduler processes one instance's events one at a time; the mutex keeps
// Seq in publication order across instances.
func (e *Engine) publish(recs []Record) {
	if len(recs) == 0 {
		return
	}
	e.publisher.nudge() // the records committed are in the publication outbox
	e.obsMu.Lock()
	defer e.obsMu.Unlock()
	for i := range recs {
		recs[i].Seq = e.seq.Add(1)
		for _, fn := range e.observers {
			if fn != nil {
				fn(recs[i])
			}
		}
	}
}
