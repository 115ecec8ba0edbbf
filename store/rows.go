package store

import "time"

// Definition is one deployed version of an XPDL package.
type Definition struct {
	// ID is the caller's (the engine's, package idgen), given at
	// insert.
	ID int64
	// PackageID is the XPDL Package id.
	PackageID string
	// Version counts the deployments of PackageID: 1 for the first, then
	// 2, 3, ... It is assigned by the store on insert.
	Version int
	// Name is the package's name, for display.
	Name string
	// Source holds the XPDL document as deployed.
	Source []byte
	// CreatedAt is when the definition was deployed.
	CreatedAt time.Time
	// GroupID names the packages deployed together with this one (one
	// Engine.DeployFiles or DeployTogether): it is the ID of the first
	// definition of that deployment, so the first's own ID, and its own
	// ID too for a definition deployed alone.
	GroupID int64
	// File is the base name of the file the package was read from (what
	// an ExternalPackage href of a package deployed with it names); empty
	// when it was deployed from bytes.
	File string
}

// ProcessInstance is one run of a WorkflowProcess.
type ProcessInstance struct {
	// ID is the caller's (the engine's, package idgen), given at
	// insert.
	ID int64
	// DefinitionID is the Definition the instance runs.
	DefinitionID int64
	// ProcessDefID is the id of the XPDL WorkflowProcess within the
	// definition.
	ProcessDefID string
	// ParentInstanceID is the process instance that started this one as a
	// subflow; nil for a top-level instance.
	ParentInstanceID *int64
	// ParentActivityID is the activity instance of the parent that waits
	// for this subflow; nil for a top-level instance.
	ParentActivityID *int64
	// Depth counts the subflow levels above the instance: 0 for a
	// top-level instance, its parent's Depth+1 for a subflow. The engine
	// sets it at insert, and bounds it (engine.Config.MaxSubflowDepth);
	// it never changes. Instances stored before the column existed read
	// 0. Never negative.
	Depth int
	// State is the process state (Initiated, Running, ...).
	State string
	// Version is the optimistic concurrency counter: 1 after insert, and
	// incremented by the store on every update.
	Version int64
	// Diagnosis explains an error state such as Locking.
	Diagnosis string
	// Tokens is the engine's navigation state (arrivals waiting at joins),
	// opaque to the store; nil when there is none.
	Tokens []byte
	// CreatedAt is when the instance was created.
	CreatedAt time.Time
	// UpdatedAt is when the instance last changed.
	UpdatedAt time.Time
	// EndedAt is when the instance reached a final state; nil until then.
	EndedAt *time.Time
	// StartKey is the idempotency key the host started the instance
	// with; "" for none. Keys are unique among the instances of a
	// database: a second insert with the same key is store.ErrDuplicate.
	StartKey string
	// BusinessKey is the host's key of what the instance works on (an
	// order, an account); "" for none. Not unique; indexed, so instances
	// are found by it (ListProcessInstancesParams.BusinessKey).
	BusinessKey string
}

// ActivityInstance is one execution of an XPDL activity within a process
// instance.
type ActivityInstance struct {
	// ID is the engine's (package idgen), given at insert.
	ID int64
	// ProcessInstanceID is the process instance the activity belongs to.
	ProcessInstanceID int64
	// ActivityDefID is the XPDL Activity id.
	ActivityDefID string
	// ActivitySetID is the ActivitySet that contains the activity; "" for
	// the top level of the process.
	ActivitySetID string
	// BlockInstanceID is the block activity instance that runs the
	// activity set; nil at the top level.
	BlockInstanceID *int64
	// State is the activity state (Initiated, Active, ...).
	State string
	// Attempt counts executions of the activity; part of the idempotency
	// key handed to applications.
	Attempt int
	// Version is the optimistic concurrency counter: 1 after insert, and
	// incremented by the store on every update.
	Version int64
	// Diagnosis explains an Abnormal state.
	Diagnosis string
	// CreatedAt is when the activity instance was created.
	CreatedAt time.Time
	// UpdatedAt is when the activity instance last changed.
	UpdatedAt time.Time
	// EndedAt is when the activity instance reached a final state; nil
	// until then.
	EndedAt *time.Time
	// LoopParentID is, for one instance (or iteration) of a looping
	// activity (XPDL 2 Loop, standard or multi-instance), the activity
	// instance of the looping activity as a whole; nil otherwise.
	LoopParentID *int64
	// LoopIndex numbers the instances (iterations) of a looping activity
	// from 1, in creation order; 0 when LoopParentID is nil.
	LoopIndex int
	// LoopState is the engine's bookkeeping of a looping activity
	// (instances wanted, started, completed), opaque to the store; nil
	// for other activities.
	LoopState []byte
	// AssignTo is, for a manual activity an operator's move started
	// (Rollback, Withdraw), the one user its work item is to be offered
	// to; "" for the usual offer. It is set when the activity instance is
	// inserted and never changed: an activity started while its instance
	// was Suspended is offered when the instance resumes, in another
	// transaction.
	AssignTo string
}

// Variable is the value of one data field of a process instance. Its key is
// (ProcessInstanceID, Name).
type Variable struct {
	// ProcessInstanceID is the process instance the variable belongs to.
	ProcessInstanceID int64
	// Name is the data field's id.
	Name string
	// Type is the data field's type, as the engine names it.
	Type string
	// Value is the JSON encoding of the value; nil when unset.
	Value []byte
}

// WorkItem is a piece of work offered to people for an activity instance.
// Who sees it in their worklist is not part of the row: that is the
// visibility the store keeps beside it (InsertWorkItemParams.VisibleTo,
// UpdateWorkItemParams.VisibleTo).
type WorkItem struct {
	// ID is the caller's (the engine's, package idgen), given at
	// insert.
	ID int64
	// ProcessInstanceID is the process instance of the activity.
	ProcessInstanceID int64
	// ActivityInstanceID is the activity instance waiting for the item.
	ActivityInstanceID int64
	// ProcessDefID is the id of the XPDL WorkflowProcess of the activity.
	ProcessDefID string
	// ActivityDefID is the XPDL Activity id.
	ActivityDefID string
	// Name is the item's display name.
	Name string
	// State is the work item state.
	State string
	// Performer is the participant the item is offered or assigned to.
	Performer string
	// Assignees are the principals the item is offered to; nil when none.
	Assignees []Principal
	// Owner is the user holding the item once it is allocated or started;
	// "" while it is offered.
	Owner string
	// Priority orders worklists: higher first. Any int but the smallest
	// int64, which the store rejects.
	Priority int
	// DueAt is when the item should be done; nil for no deadline.
	DueAt *time.Time
	// Version is the optimistic concurrency counter: 1 after insert, and
	// incremented by the store on every update.
	Version int64
	// CompletedBy is the user who completed the item; "" until then.
	CompletedBy string
	// CompletionKey is the idempotency key of the completion: a repeated
	// completion with the same key is answered with Result instead of
	// failing.
	CompletionKey string
	// SuspendedFrom is the state a Suspended item returns to on resume;
	// "" otherwise.
	SuspendedFrom string
	// Result is the JSON encoding of the completion's outputs, opaque to
	// the store; nil until completed.
	Result []byte
	// CreatedAt is when the work item was created.
	CreatedAt time.Time
	// UpdatedAt is when the work item last changed.
	UpdatedAt time.Time
	// EndedAt is when the work item was completed or withdrawn; nil until
	// then.
	EndedAt *time.Time
}

// Principal is someone a work item can be offered to or seen by: a user,
// or a role or organisational unit that users belong to.
type Principal struct {
	// Kind says what ID names.
	Kind PrincipalKind
	// ID is the user, role or unit id; case-sensitive.
	ID string
}

// PrincipalKind is the kind of a Principal.
type PrincipalKind string

// Principal kinds.
const (
	// PrincipalUser is a single user.
	PrincipalUser PrincipalKind = "user"
	// PrincipalRole is a role (an XPDL Participant of type ROLE).
	PrincipalRole PrincipalKind = "role"
	// PrincipalUnit is an organisational unit.
	PrincipalUnit PrincipalKind = "unit"
)

// Event is an entry of the outbox: an event written in the same transaction
// as the state change that produced it and handed to the scheduler after
// commit.
type Event struct {
	// ID is the producer's (the engine's, package idgen), given at
	// insert; events are claimed in ID order.
	ID int64
	// EventID is the producer's unique id of the event; inserting the same
	// EventID twice is ErrDuplicate.
	EventID string
	// ProcessInstanceID is the process instance the event is for; 0 for
	// none.
	ProcessInstanceID int64
	// Kind names the event type.
	Kind string
	// Payload is the event's data.
	Payload []byte
	// Critical selects the pool: process-control events are critical,
	// activity work is not.
	Critical bool
	// CreatedAt is when the event was written.
	CreatedAt time.Time
	// AvailableAt is the earliest time the event may be claimed.
	AvailableAt time.Time
	// ProcessedAt is when the event was marked processed; nil until then.
	ProcessedAt *time.Time
	// Attempts counts the claims of the event.
	Attempts int
	// CallFailures counts the deliveries of the event that failed in an
	// application call (RetryEventParams.CallFailed): a retry policy
	// counts its calls by it, not by Attempts, which also counts the
	// deliveries that failed before the call (a database conflict).
	CallFailures int
	// ClaimedBy is the owner of the latest claim; "" if never claimed.
	ClaimedBy string
	// ClaimedUntil is when the latest claim expires; nil if never claimed.
	ClaimedUntil *time.Time
}

// HistoryEntry is one line of the audit trail: a state change of a process
// instance, an activity instance or a work item.
type HistoryEntry struct {
	// ID is the caller's (the engine's, package idgen); it orders the
	// history.
	ID int64
	// ProcessInstanceID is the process instance the entry belongs to.
	ProcessInstanceID int64
	// ActivityInstanceID is set when the subject is an activity or one of
	// its work items.
	ActivityInstanceID *int64
	// WorkItemID is set when the subject is a work item.
	WorkItemID *int64
	// Subject is what changed: SubjectProcess, SubjectActivity or
	// SubjectWorkItem.
	Subject string
	// FromState is the state before the change; "" for a creation.
	FromState string
	// ToState is the state after the change.
	ToState string
	// Actor is who caused the change: a user, "engine", "console", ...
	Actor string
	// Data is optional JSON detail.
	Data []byte
	// At is when the change happened.
	At time.Time
}

// Subjects of history entries.
const (
	// SubjectProcess marks a history entry about a process instance.
	SubjectProcess = "process"
	// SubjectActivity marks a history entry about an activity instance.
	SubjectActivity = "activity"
	// SubjectWorkItem marks a history entry about a work item.
	SubjectWorkItem = "workitem"
	// SubjectVariable marks a history entry about a variable a command
	// changed.
	SubjectVariable = "variable"
)

// InboxMessage is a message for a process instance kept until it can be
// applied: a completion or a signal sent before the activity waiting for it
// has started, or addressed by the value of a process variable rather than
// by instance id (correlation by query).
type InboxMessage struct {
	// ID is the caller's (the engine's, package idgen), given at
	// insert; messages are listed in ID order.
	ID int64
	// MessageID is the sender's unique id of the message; inserting the
	// same MessageID twice is ErrDuplicate.
	MessageID string
	// Kind says what the message does when applied, e.g. "complete" or
	// "signal"; opaque to the store.
	Kind string
	// ProcessInstanceID is the target instance; 0 while the message is
	// correlated by query and not yet resolved.
	ProcessInstanceID int64
	// ProcessDefID, Variable and Value correlate by query: the target is
	// the instance of process ProcessDefID whose variable Variable holds
	// the JSON value Value.
	ProcessDefID string
	// Variable is the name of the correlating variable.
	Variable string
	// Value is the JSON encoding of the correlating value.
	Value []byte
	// ActivityDefID is the XPDL Activity the message waits for.
	ActivityDefID string
	// User is who sent the message.
	User string
	// Payload is the message's JSON data.
	Payload []byte
	// State is InboxPending, InboxApplied or InboxExpired.
	State string
	// Reason says why the message expired, or what applying it did.
	Reason string
	// CreatedAt is when the message was received.
	CreatedAt time.Time
	// ExpiresAt is when a pending message expires; nil for never.
	ExpiresAt *time.Time
	// EndedAt is when the message was applied or expired; nil until then.
	EndedAt *time.Time
}

// States of inbox messages.
const (
	// InboxPending is a message waiting to be applied.
	InboxPending = "Pending"
	// InboxApplied is a message that was applied to its instance.
	InboxApplied = "Applied"
	// InboxExpired is a message that expired, or could not be applied,
	// before it was.
	InboxExpired = "Expired"
)

// Subscription says that an activity instance waits for a named trigger
// that is not addressed to its process instance: an intermediate catch
// event waiting for a signal, which every instance may receive. Whoever
// sends the trigger lists the subscriptions to that name to find its
// receivers.
type Subscription struct {
	// ID is the caller's (the engine's, package idgen), given at
	// insert.
	ID int64
	// Kind says what is waited for, e.g. "signal"; opaque to the store.
	Kind string
	// Name is the trigger's name (the signal's).
	Name string
	// ProcessInstanceID is the waiting process instance.
	ProcessInstanceID int64
	// ActivityInstanceID is the waiting activity instance.
	ActivityInstanceID int64
	// ActivityDefID is the XPDL Activity it is an instance of.
	ActivityDefID string
	// CreatedAt is when the wait began.
	CreatedAt time.Time
}

// TimerState is the state of a durable timer.
type TimerState string

// The timer states.
const (
	// TimerPending timers fire when their DueAt has come.
	TimerPending TimerState = "pending"
	// TimerPaused timers belong to a suspended process; they keep the
	// time they had left when paused and fire only after resuming.
	TimerPaused TimerState = "paused"
	// TimerFired timers have fired: their event is in the outbox.
	TimerFired TimerState = "fired"
)

// Timer is a durable timer: a deadline, a limit, a timer event or a
// reminder, due at a point in time.
type Timer struct {
	// ID is the caller's (the engine's, package idgen), given at
	// insert.
	ID int64
	// ProcessInstanceID is the instance the timer belongs to; 0 for a
	// timer of a deployment (a timer start event).
	ProcessInstanceID int64
	// ActivityInstanceID is the activity instance it belongs to; 0 for a
	// timer of the whole process or of a deployment.
	ActivityInstanceID int64
	// DefinitionID is the deployment a start timer belongs to; 0 else.
	DefinitionID int64
	// Kind says what the timer is for (the engine's names: deadline,
	// limit, event, boundary, reminder, start).
	Kind string
	// Key names the element of the definition it was armed for, such as
	// a deadline's index or an event's activity id.
	Key string
	// State is pending, paused or fired.
	State TimerState
	// DueAt is when the timer fires; never before.
	DueAt time.Time
	// PausedAt is when a paused timer was paused; nil else.
	PausedAt *time.Time
	// Count is how many times a repeating timer fired before this one.
	Count int
	// Payload is the engine's data for the timer.
	Payload []byte
	// CreatedAt is when the timer was armed.
	CreatedAt time.Time
	// FiredAt is when it fired; nil until then.
	FiredAt *time.Time
}

// Node is an engine process registered on the database: nodes sharing a
// database see each other here, renew their lease while they run, and
// take over the claims of a node whose lease ran out.
type Node struct {
	// ID is the node's stable name.
	ID string
	// Owner identifies the node's current run; its event claims carry it.
	Owner string
	// Epoch counts the runs of the node: each registration increases it.
	Epoch int64
	// Host and PID describe the process.
	Host string
	PID  int
	// StartedAt is when this run registered; HeartbeatAt when it last
	// renewed its lease, which lasts until LeaseUntil.
	StartedAt, HeartbeatAt, LeaseUntil time.Time
}
