package store

import (
	"context"
	"time"
)

// Store is goxpdl's persistence. Its data methods (those of Tx) each run
// atomically on their own; InTx groups several of them into one database
// transaction. Implementations must pass the conformance suite in
// store/storetest.
type Store interface {
	Tx

	// InTx runs fn in one database transaction and commits it when fn
	// returns nil. When fn returns an error, everything fn wrote is rolled
	// back and InTx returns fn's error unchanged. When fn panics, the
	// transaction is rolled back and the panic continues. tx is valid only
	// until fn returns.
	InTx(ctx context.Context, fn func(ctx context.Context, tx Tx) error) error

	// Capabilities describes the database behind the store, for the few
	// places where callers behave differently per dialect.
	Capabilities() Capabilities

	// ServerVersion returns the version of the database server ("3.51.0"
	// for SQLite, "10.11.9-MariaDB" or "8.4.2" for MySQL).
	ServerVersion(ctx context.Context) (string, error)

	// DatabaseFile returns the file the database lives in when it is a
	// file of this machine (SQLite), and "" otherwise (an in-memory
	// SQLite database, a MySQL or PostgreSQL server): the file an engine process locks
	// for itself (recovery.LockFile).
	DatabaseFile(ctx context.Context) (string, error)
}

// Capabilities describes what the database behind a Store can do.
type Capabilities struct {
	// Dialect names the database: DialectSQLite, DialectMySQL or
	// DialectPostgres.
	Dialect string
	// SupportsSkipLocked reports that ClaimEvents skips rows another
	// transaction has locked (SELECT ... FOR UPDATE SKIP LOCKED), so that
	// several engine processes can claim from one database in parallel.
	// Without it claims are serialised by the database (SQLite has a
	// single writer).
	SupportsSkipLocked bool
	// DeferredSavepoints reports that Tx.DeferredSavepoint costs no
	// statement unless something is sent while it stands (the store
	// holds writes back: MySQL with pipelined sessions, SQLite). Without
	// it, a deferred savepoint is a Savepoint, with its round trips.
	DeferredSavepoints bool
}

// Dialects reported by Capabilities.
const (
	// DialectSQLite is SQLite.
	DialectSQLite = "sqlite"
	// DialectMySQL is MySQL 8 or MariaDB 10.6 and later.
	DialectMySQL = "mysql"
	// DialectPostgres is PostgreSQL 13 and later.
	DialectPostgres = "postgres"
)

// Tx holds every data method of the store. It is implemented by Store
// itself (each call is its own transaction) and by the transaction handed
// to the function given to InTx.
type Tx interface {
	// Publications: the publication outbox and its leases
	// (store/publication.go).
	Publications

	// InsertDefinition stores a new version of a package, with the ID
	// the caller gave it (params.ID: the engine's, package idgen; 0 or
	// less is refused, an ID already stored is ErrDuplicate): its
	// Version is one more than the highest version stored for the
	// PackageID (1 for the first). The stored definition is returned.
	InsertDefinition(ctx context.Context, params InsertDefinitionParams) (Definition, error)
	// GetDefinition returns the definition with the given id, or
	// ErrNotFound.
	GetDefinition(ctx context.Context, id int64) (Definition, error)
	// LatestDefinition returns the highest version of a package, or
	// ErrNotFound when none is stored.
	LatestDefinition(ctx context.Context, packageID string) (Definition, error)
	// LatestDefinitionID returns the ID of the highest version of a
	// package, or ErrNotFound when none is stored: LatestDefinition
	// without reading the source, for a caller that keeps the parsed
	// definitions by ID (the engine, on every start of an instance).
	LatestDefinitionID(ctx context.Context, packageID string) (int64, error)
	// ListDefinitions returns definitions in ID order.
	ListDefinitions(ctx context.Context, params ListDefinitionsParams) ([]Definition, error)

	// InsertProcessInstance stores a new process instance with the ID
	// the caller gave it (the engine's, package idgen: positive and
	// unique; 0 or less is refused, an ID already stored is
	// ErrDuplicate, as is a StartKey already stored). The Version of inst
	// is ignored; the returned instance has Version 1. An instance
	// without a StartKey may be held back like InsertHistory (see Flush),
	// so that its ErrDuplicate may come from a later statement, Flush or
	// the commit; one with a StartKey is written at once.
	InsertProcessInstance(ctx context.Context, inst ProcessInstance) (ProcessInstance, error)
	// GetProcessInstance returns the process instance with the given id,
	// or ErrNotFound.
	GetProcessInstance(ctx context.Context, id int64) (ProcessInstance, error)
	// UpdateProcessInstance changes a process instance if its version is
	// still params.ExpectedVersion, and returns the new version. It returns
	// ErrConflict when the version differs and ErrNotFound when there is
	// no such instance.
	UpdateProcessInstance(ctx context.Context, params UpdateProcessInstanceParams) (int64, error)
	// ListProcessInstances returns process instances matching the filter,
	// in ID order.
	ListProcessInstances(ctx context.Context, params ListProcessInstancesParams) ([]ProcessInstance, error)
	// InsertProcessInstances stores new process instances, all or none,
	// with multi-row inserts: bulk loads and tools (the engine inserts
	// one at a time). Each has the ID its caller gave it, as for
	// InsertProcessInstance; Version is 1, and the stored instances are
	// returned in the order of insts.
	InsertProcessInstances(ctx context.Context, insts []ProcessInstance) ([]ProcessInstance, error)
	// CountProcessInstances counts the process instances params selects,
	// as ListProcessInstances would return them without a limit, but
	// stops at params.Limit when it is greater than 0 (the count is then
	// min(n, Limit)). It scans the rows; CountProcessInstanceGroups is
	// the cheap count per definition, process and state.
	CountProcessInstances(ctx context.Context, params ListProcessInstancesParams) (int64, error)
	// CountProcessInstanceGroups returns how many process instances
	// there are per definition, process and state; groups without any
	// are absent. The store keeps these counts up to date in the
	// transaction of every insert, state change, migration and purge of
	// an instance, so the call reads a few rows, not the instances.
	CountProcessInstanceGroups(ctx context.Context) ([]InstanceCount, error)
	// FoldInstanceCounts compacts the counts behind
	// CountProcessInstanceGroups: it folds up to limit of the changes
	// recorded since the last fold into the totals, and returns how many
	// it folded (fewer than limit: nothing is left). No count changes;
	// reading them gets cheaper. Several callers may fold at once.
	FoldInstanceCounts(ctx context.Context, limit int) (int, error)
	// CountProcessInstancesPerMinute counts, per minute from
	// params.From (rounded down to the minute) to params.To (exclusive),
	// the instances created and, by final state, those that ended; only
	// minutes with something to count are returned, in time order.
	CountProcessInstancesPerMinute(ctx context.Context, params CountPerMinuteParams) ([]MinuteCount, error)
	// CountProcessInstancesByState counts process instances per state.
	// States without instances are absent from the map.
	CountProcessInstancesByState(ctx context.Context) (map[string]int64, error)

	// InsertActivityInstances stores new activity instances with the IDs
	// the caller gave them (the engine's, package idgen: positive and
	// unique; an ID of 0 or less is refused), all or none once the caller
	// has rolled back after an error (see InsertHistory): an ID already
	// stored is ErrDuplicate, possibly reported by a later statement,
	// Flush or the commit (see Flush). Versions of the arguments are
	// ignored. The returned instances, in argument order, have Version 1.
	InsertActivityInstances(ctx context.Context, insts []ActivityInstance) ([]ActivityInstance, error)
	// GetActivityInstance returns the activity instance with the given id,
	// or ErrNotFound.
	GetActivityInstance(ctx context.Context, id int64) (ActivityInstance, error)
	// UpdateActivityInstance changes an activity instance if its version
	// is still params.ExpectedVersion, and returns the new version. It
	// returns ErrConflict when the version differs and ErrNotFound when
	// there is no such instance.
	UpdateActivityInstance(ctx context.Context, params UpdateActivityInstanceParams) (int64, error)
	// UpdateActivityInstances is UpdateActivityInstance for several
	// instances in one statement, each at its own expected version (IDs
	// must be distinct). It changes all or returns an error: ErrNotFound
	// when an instance does not exist, otherwise ErrConflict when a
	// version differs. After an error the caller rolls back, since the
	// instances that matched may have changed. On success every new
	// version is its expected version plus one.
	UpdateActivityInstances(ctx context.Context, params []UpdateActivityInstanceParams) error
	// ListActivityInstances returns the activity instances of a process
	// instance in ID order, optionally only those in the given states.
	ListActivityInstances(ctx context.Context, params ListActivityInstancesParams) ([]ActivityInstance, error)

	// PutVariables inserts the variables, replacing the Type and Value of
	// those whose (ProcessInstanceID, Name) already exists.
	PutVariables(ctx context.Context, vars []Variable) error
	// GetVariables returns the variables of a process instance by name;
	// an empty map when it has none.
	GetVariables(ctx context.Context, processInstanceID int64) (map[string]Variable, error)

	// InsertWorkItem stores a new work item, with the ID the caller gave
	// it (the engine's, package idgen: positive and unique; 0 or less is
	// refused, an ID already stored is ErrDuplicate), and makes it
	// visible in the worklists of params.VisibleTo. The Version of
	// params.Item is ignored; the returned item has Version 1. Inside a
	// transaction the store may hold the write back (see Flush): its
	// ErrDuplicate then comes from whatever sends it.
	InsertWorkItem(ctx context.Context, params InsertWorkItemParams) (WorkItem, error)
	// GetWorkItem returns the work item with the given id, or ErrNotFound.
	GetWorkItem(ctx context.Context, id int64) (WorkItem, error)
	// UpdateWorkItem changes a work item and replaces its visibility, and
	// returns the new version. When params.ExpectedVersion is not 0 the
	// change is made only if the item still has that version, and when
	// params.ExpectedState is not empty only if it is still in that state;
	// ErrConflict is returned otherwise. ErrNotFound means there is no
	// such item. Neither changes anything. Inside a transaction the store
	// may hold the write back (see Flush): those errors then come from
	// whatever sends it.
	UpdateWorkItem(ctx context.Context, params UpdateWorkItemParams) (int64, error)
	// ListWorkItems returns work items matching the filter, in ID order.
	ListWorkItems(ctx context.Context, params ListWorkItemsParams) ([]WorkItem, error)
	// ListWorklist returns one page of the work items visible to any of
	// params.Principals, ordered by Priority descending then ID
	// ascending; an item visible through several principals appears
	// once. Walk the pages by passing the Priority and ID of the last item
	// of a page as params.After of the next; the walk neither repeats nor
	// skips items that do not change meanwhile.
	ListWorklist(ctx context.Context, params ListWorklistParams) ([]WorkItem, error)

	// InsertInboxMessage stores a new inbox message with the ID the caller
	// gave it (the engine's, package idgen; 0 or less is refused). It
	// returns ErrDuplicate when the MessageID or the ID is already stored.
	InsertInboxMessage(ctx context.Context, msg InboxMessage) (InboxMessage, error)
	// GetInboxMessage returns the inbox message with the given MessageID,
	// or ErrNotFound.
	GetInboxMessage(ctx context.Context, messageID string) (InboxMessage, error)
	// ListInbox returns inbox messages matching the filter, in ID order.
	ListInbox(ctx context.Context, params ListInboxParams) ([]InboxMessage, error)
	// UpdateInboxMessage changes an inbox message. When
	// params.ExpectedState is not empty the change is made only if the
	// message is still in that state, and ErrConflict is returned
	// otherwise. ErrNotFound means there is no such message.
	UpdateInboxMessage(ctx context.Context, params UpdateInboxMessageParams) error
	// FindProcessInstancesByVariable returns, in ID order, the process
	// instances of process params.ProcessDefID whose variable params.Name
	// holds exactly the JSON value params.Value (byte for byte, as
	// stored): how a message correlated by query finds its instance.
	FindProcessInstancesByVariable(ctx context.Context, params FindByVariableParams) ([]int64, error)

	// InsertTimers stores new timers with the IDs the caller gave them
	// (the engine's, package idgen; 0 or less is refused), all or none,
	// and returns them in argument order. FiredAt and PausedAt of the
	// arguments are ignored; an empty State is TimerPending.
	InsertTimers(ctx context.Context, timers []Timer) ([]Timer, error)
	// GetTimer returns the timer with the given id, or ErrNotFound.
	GetTimer(ctx context.Context, id int64) (Timer, error)
	// FireDueTimers moves up to params.Limit pending timers whose DueAt is
	// not after params.Now to TimerFired (FiredAt = params.Now), earliest
	// DueAt first (then ID), and returns them as they are now. Concurrent
	// callers (other transactions, other engine nodes) never fire the
	// same timer: on MySQL the rows are locked with FOR UPDATE SKIP
	// LOCKED, so a caller skips what another is firing; a timer is
	// returned only by the call that moved it.
	FireDueTimers(ctx context.Context, params FireDueTimersParams) ([]Timer, error)
	// NextTimerDue returns the earliest DueAt of the pending timers, and
	// false when there are none.
	NextTimerDue(ctx context.Context) (time.Time, bool, error)
	// CountTimers counts the timers by state, and the pending ones whose
	// DueAt is not after now (due and not fired yet).
	CountTimers(ctx context.Context, now time.Time) (TimerCounts, error)
	// ListTimers returns the timers matching the filter, earliest DueAt
	// first, then ID.
	ListTimers(ctx context.Context, params ListTimersParams) ([]Timer, error)
	// CountPendingTimers counts the pending timers, and those of them
	// due by params.DueBy.
	CountPendingTimers(ctx context.Context, params CountTimersParams) (PendingTimerCounts, error)
	// DeleteTimers deletes the timers matching the filter and returns how
	// many it deleted. A filter with neither ProcessInstanceID nor IDs is
	// refused (an error), so that a mistake cannot delete every timer.
	DeleteTimers(ctx context.Context, params DeleteTimersParams) (int64, error)
	// PauseTimers moves the pending timers of a process instance to
	// TimerPaused with PausedAt = params.At (the process was suspended)
	// and returns how many it moved.
	PauseTimers(ctx context.Context, params PauseTimersParams) (int64, error)
	// ResumeTimers moves the paused timers of a process instance back to
	// TimerPending, each with its DueAt pushed back by the time it was
	// paused (params.At - PausedAt), so that it keeps the time it had
	// left; PausedAt is cleared. It returns how many it moved.
	ResumeTimers(ctx context.Context, params ResumeTimersParams) (int64, error)

	// InsertSubscriptions stores new subscriptions with the IDs the caller
	// gave them (the engine's, package idgen; 0 or less is refused), all
	// or none, and returns them in argument order.
	InsertSubscriptions(ctx context.Context, subs []Subscription) ([]Subscription, error)
	// ListSubscriptions returns the subscriptions matching the filter, in
	// ID order: how a signal finds the events waiting for it.
	ListSubscriptions(ctx context.Context, params ListSubscriptionsParams) ([]Subscription, error)
	// DeleteSubscriptions deletes the subscriptions matching the filter
	// and returns how many it deleted. A filter with neither
	// ProcessInstanceID nor IDs is refused (an error), so that a mistake
	// cannot delete every subscription.
	DeleteSubscriptions(ctx context.Context, params DeleteSubscriptionsParams) (int64, error)

	// InsertEvents writes events to the outbox, all or none, with the IDs
	// the caller gave them (the engine's, package idgen: positive and
	// unique; an ID of 0 or less is refused). When an ID or an EventID is
	// already stored (or appears twice in events) it returns ErrDuplicate
	// and inserts nothing of the batch. ProcessedAt and Attempts of the
	// arguments are ignored. An event whose ClaimedBy and
	// ClaimedUntil are both set is stored already claimed (Attempts 1): its
	// producer hands it to its own scheduler after commit, and nobody else
	// claims it before the claim expires. Otherwise both are ignored. The
	// returned events are in argument order.
	InsertEvents(ctx context.Context, events []Event) ([]Event, error)
	// AppendEvents is InsertEvents for events whose IDs and EventIDs
	// cannot be stored already (the engine's own: made from its id
	// allocator's IDs). A store that holds writes back (gormstore's
	// transactions on MySQL and SQLite) may send them with a later statement, Flush or the
	// commit, where a duplicate then fails that (ErrDuplicate and
	// ErrHeldWrite) and the transaction must roll back; a caller that
	// treats ErrDuplicate as "published before" uses InsertEvents.
	// Elsewhere it is InsertEvents.
	AppendEvents(ctx context.Context, events []Event) ([]Event, error)
	// GetEvent returns the event with the given id, or ErrNotFound.
	GetEvent(ctx context.Context, id int64) (Event, error)
	// ClaimEvents claims up to params.Limit events for params.Owner until
	// params.LeaseUntil and returns them in ID order, with ClaimedBy,
	// ClaimedUntil and Attempts already updated. An event can be claimed
	// when it is not processed, its AvailableAt is not after params.Now
	// and it has no unexpired claim (one whose ClaimedUntil is after
	// params.Now), whoever holds it: a claim is handed out once per lease,
	// even to its owner. Concurrent callers never receive the same event
	// under overlapping leases.
	ClaimEvents(ctx context.Context, params ClaimEventsParams) ([]Event, error)
	// EventBacklog counts the unprocessed events, stopping at limit when
	// it is greater than 0, and tells when the first of them (in ID
	// order) was created.
	EventBacklog(ctx context.Context, limit int64) (EventBacklog, error)
	// MarkEventsProcessed sets ProcessedAt on the given events; processed
	// events are never claimed again. Events that do not exist or are
	// already processed are left as they are, so marking is idempotent.
	MarkEventsProcessed(ctx context.Context, params MarkEventsProcessedParams) error

	// RetryEvent gives up the claim on an unprocessed event whose
	// processing failed and makes it claimable again at
	// params.AvailableAt (a backoff). Events that do not exist or are
	// processed are left as they are, and so is an event another owner
	// claimed meanwhile when params.Owner is set.
	RetryEvent(ctx context.Context, params RetryEventParams) error
	// CountUnprocessedEvents counts the events not yet processed: those
	// available at or before params.Now, and those available later (a
	// retry's backoff).
	CountUnprocessedEvents(ctx context.Context, now time.Time) (available, later int64, err error)
	// NextEventAvailable returns the earliest time after after at which
	// an unprocessed event becomes available (a retry's backoff ends), and
	// false when none waits beyond after.
	NextEventAvailable(ctx context.Context, after time.Time) (time.Time, bool, error)
	// ReleaseClaims gives up every claim of owner on unprocessed events,
	// so that they can be claimed at once, and returns how many it
	// released. Releasing fences owner: its MarkEventsProcessed with
	// Owner fails with ErrLeaseLost for those events. The batches owner
	// holds (ClaimBatch) are released too (not counted), fencing its
	// UpdateBatchProgress the same way, and so are its leases
	// (AcquireLease), fencing its DeletePublications.
	ReleaseClaims(ctx context.Context, owner string) (int64, error)
	// ReleaseClaim gives up the claims of owner that run until exactly
	// until on unprocessed events, so that they can be claimed at once,
	// and returns how many it released: the claims of one ClaimEvents
	// call whose outcome the caller could not know (its COMMIT failed,
	// or the connection broke after it went through), which would
	// otherwise wait out their lease. It fences owner for those events
	// as ReleaseClaims does.
	ReleaseClaim(ctx context.Context, owner string, until time.Time) (int64, error)

	// AcquireIDNode leases a free node number of the id allocator to
	// params.Owner: the lowest number no one holds or whose lease ended
	// at or before params.Now, preferring one whose ReservedUntil is not
	// after params.Now. It returns the number as stored and from, the
	// earliest time the owner's ids may carry: params.Now, or the
	// previous holder's ReservedUntil when that is later. ReservedUntil
	// becomes from plus params.Reserve. Of concurrent callers, each gets
	// another number (a caller may get ErrConflict or ErrDuplicate and
	// try again); ErrExhausted when every number is leased.
	AcquireIDNode(ctx context.Context, params AcquireIDNodeParams) (node IDNode, from time.Time, err error)
	// RenewIDNode moves the lease of a number params.Owner holds to
	// params.LeaseUntil, and its ReservedUntil to params.ReservedUntil
	// when that is later; ErrLeaseLost when params.Owner does not hold
	// it (another allocator took it after the lease ran out).
	RenewIDNode(ctx context.Context, params RenewIDNodeParams) error
	// ReleaseIDNode gives up a number params.Owner holds, keeping the
	// later of the stored ReservedUntil and params.ReservedUntil; nothing
	// happens when it does not hold it.
	ReleaseIDNode(ctx context.Context, params ReleaseIDNodeParams) error

	// RegisterNode records that the engine process params.Owner runs as
	// node params.ID: the node's row is created (Epoch 1) or taken over
	// (Epoch increased, the lease renewed). It returns the node as stored
	// and the Owner it took over from ("" for a new row), whose claims
	// the caller should release.
	RegisterNode(ctx context.Context, params RegisterNodeParams) (node Node, replaced string, err error)
	// RenewNode moves the lease of node params.ID to params.LeaseUntil
	// and its HeartbeatAt to params.Now, if params.Owner still holds it;
	// otherwise (the row is gone or another Owner took it over) it
	// returns ErrLeaseLost.
	RenewNode(ctx context.Context, params RenewNodeParams) error
	// ListNodes returns the registered nodes in ID order.
	ListNodes(ctx context.Context) ([]Node, error)
	// RemoveNode deletes node params.ID if params.Owner holds it and,
	// when params.ExpiredBy is set, only if its lease ended before then.
	// It reports whether it deleted the row.
	RemoveNode(ctx context.Context, params RemoveNodeParams) (bool, error)

	// CountProcessInstancesByDefinition counts process instances per
	// definition and state; definitions without instances are absent.
	CountProcessInstancesByDefinition(ctx context.Context) (map[int64]map[string]int64, error)
	// MigrateProcessInstance moves a process instance to another
	// definition if its version is still params.ExpectedVersion (else
	// ErrConflict, or ErrNotFound), renaming its activities, and returns
	// the new version.
	MigrateProcessInstance(ctx context.Context, params MigrateProcessInstanceParams) (int64, error)

	// RecordIncident opens an incident, or updates the open incident of
	// the same subject (inc.ActivityInstanceID, or the process when it is
	// nil): Cause, Error, Application, Params and LastFailureAt are
	// replaced, and Attempts is inc.Attempts when that is greater than 0,
	// else one more than before. A new incident gets FirstFailureAt =
	// inc.LastFailureAt (when FirstFailureAt is zero) and Attempts at
	// least 1, and inc.ID, the caller's (the engine's, package idgen;
	// required, 0 or less is refused, an ID already stored is
	// ErrDuplicate); an update keeps the open incident's ID. State and
	// the resolution fields of inc are ignored. The incident is returned
	// as stored; opened says whether it is new (false: the subject's
	// open incident was updated).
	RecordIncident(ctx context.Context, inc Incident) (stored Incident, opened bool, err error)
	// ResolveIncidents resolves the open incidents params selects and
	// returns how many it resolved.
	ResolveIncidents(ctx context.Context, params ResolveIncidentsParams) (int64, error)
	// GetIncident returns the incident with the given id, or ErrNotFound.
	GetIncident(ctx context.Context, id int64) (Incident, error)
	// ListIncidents returns the incidents matching the filter, in ID
	// order.
	ListIncidents(ctx context.Context, params ListIncidentsParams) ([]Incident, error)
	// CountIncidents counts the incidents in the given states (all when
	// empty) per cause. Causes without incidents are absent.
	CountIncidents(ctx context.Context, states []string) (map[string]int64, error)

	// InsertBatch stores a new batch (store/batch.go) with the ID the
	// caller gave it (the engine's, package idgen; 0 or less is refused,
	// an ID already stored is ErrDuplicate); the other fields are kept as
	// given. The stored batch is returned.
	InsertBatch(ctx context.Context, b Batch) (Batch, error)
	// GetBatch returns the batch with the given id, or ErrNotFound.
	GetBatch(ctx context.Context, id int64) (Batch, error)
	// ListBatches returns the batches matching the filter, in ID order.
	ListBatches(ctx context.Context, params ListBatchesParams) ([]Batch, error)
	// ClaimBatch gives params.Owner the oldest Running batch that no one
	// holds or that it holds already, and returns it; ErrNotFound when
	// there is none. Of concurrent claims of one batch, one wins. A
	// holder lets go with ReleaseBatch, by finishing it
	// (UpdateBatchProgress), or when its claims are released
	// (ReleaseClaims: it stopped or its node died).
	ClaimBatch(ctx context.Context, params ClaimBatchParams) (Batch, error)
	// UpdateBatchProgress records what a chunk of a batch did (cursor,
	// counts, failures, the latter with their callers' IDs) if
	// params.Owner still holds the batch, else it returns ErrLeaseLost
	// and changes nothing. The counts are recorded
	// whatever the batch's state (an operator may have paused or
	// cancelled it meanwhile); Finish ends it only while it is Running.
	// It returns the batch as stored.
	UpdateBatchProgress(ctx context.Context, params BatchProgressParams) (Batch, error)
	// ReleaseBatch lets go of a batch owner holds; nothing happens when
	// it does not hold it.
	ReleaseBatch(ctx context.Context, id int64, owner string) error
	// SetBatchState moves a batch in one of params.From to params.To and
	// returns it; a batch in another state is returned unchanged with
	// ErrConflict, a missing one is ErrNotFound.
	SetBatchState(ctx context.Context, params SetBatchStateParams) (Batch, error)
	// ListBatchFailures returns the failures kept for a batch, in ID
	// order.
	ListBatchFailures(ctx context.Context, params ListBatchFailuresParams) ([]BatchFailure, error)
	// LocksForUpdate returns the locks (held and waiting) of a business
	// key, in ID order, and serialises the caller's transaction with
	// every other transaction that calls it for the same key, on every
	// node, until it ends: the second caller waits for the first to
	// commit or roll back and then sees what it wrote. Every change of
	// the locks of a key goes through it first.
	LocksForUpdate(ctx context.Context, businessKey string) ([]Lock, error)
	// InsertLock stores a new lock, held or waiting. It returns
	// ErrDuplicate when lock is held and a held lock of the same
	// ScopeKey and BusinessKey exists: the database keeps at most one.
	// The lock has the ID the caller gave it (the engine's, package
	// idgen; 0 or less is refused, an ID already stored is
	// ErrDuplicate).
	InsertLock(ctx context.Context, lock Lock) (Lock, error)
	// GrantLock makes the waiting lock id held since at; ErrDuplicate as
	// for InsertLock, ErrNotFound when no waiting lock has that id.
	GrantLock(ctx context.Context, id int64, at time.Time) error
	// DeleteLocks deletes the locks params selects and returns how many
	// it deleted. A filter with neither IDs nor ProcessInstanceID is
	// refused (an error).
	DeleteLocks(ctx context.Context, params DeleteLocksParams) (int64, error)
	// ListLocks returns the locks matching the filter, in ID order.
	ListLocks(ctx context.Context, params ListLocksParams) ([]Lock, error)
	// PurgeProcessInstances deletes, in one transaction, up to
	// params.Limit top-level process instances (or instances whose parent
	// is gone) that are in one of params.States, ended before
	// params.EndedBefore, match the package and process filter and have
	// no unprocessed event, together with everything that belongs to
	// them: activity instances, variables, work items and their worklist
	// entries, events, history, inbox messages, timers, subscriptions and
	// incidents. Their subflow instances, at any depth, are deleted with
	// them when they too are in params.States, ended before the cutoff
	// and have no unprocessed event; a subflow instance that is not (one
	// started ASYNCHR that still runs) is kept with everything below it,
	// and becomes a top-level candidate of its own. Nothing else is
	// touched: a finished subflow instance of a parent that is not
	// deleted stays. Concurrent callers (other engine nodes) never delete
	// an instance twice nor fail because another deleted it: on MySQL the
	// candidates are locked with FOR UPDATE SKIP LOCKED, and every delete
	// repeats the rows' own conditions. Callers loop until Instances is 0.
	PurgeProcessInstances(ctx context.Context, params PurgeProcessInstancesParams) (PurgeResult, error)

	// InsertHistory appends entries to the audit trail, with the IDs the
	// caller gave them (the engine's, package idgen: positive, unique,
	// ordered by time; 0 or less is refused). It is all or none once the
	// caller has rolled
	// back after an error: inside a transaction, a store may leave the
	// first rows of a failed multi-row statement for the rollback to undo
	// (the SQLite store does, to spare itself a statement journal).
	InsertHistory(ctx context.Context, entries []HistoryEntry) error
	// ListHistory returns the history of a process instance in ID order,
	// which is the order the engine made the entries in.
	ListHistory(ctx context.Context, params ListHistoryParams) ([]HistoryEntry, error)

	// InsertAudit appends an entry to the audit log (store/audit.go),
	// with the ID the caller gave it (the engine's, package idgen; 0 or
	// less is refused). Inside a transaction it may be held back like
	// InsertHistory (see Flush), so that a duplicate ID may be reported
	// later.
	InsertAudit(ctx context.Context, entry AuditEntry) error
	// ListAudit returns the audit entries matching the filter, newest
	// first (ID descending).
	ListAudit(ctx context.Context, params ListAuditParams) ([]AuditEntry, error)

	// Flush sends the writes a transaction still holds back, and returns
	// the first of their errors. Inside a transaction a store may hold
	// back writes whose callers want no result (history, the processed
	// mark of events, the versioned updates of instances) and send them
	// with the next statement, reporting their errors (ErrConflict,
	// ErrNotFound, ErrLeaseLost included) from that statement, Flush or
	// the commit. A caller that must know a write's outcome before
	// something else happens (code of its own that will run in the
	// transaction, the next member of a shared transaction) calls Flush.
	// Every write is sent before the transaction commits. After such an
	// error the caller rolls back, as after any other: the writes sent
	// together with the refused one may have happened.
	Flush(ctx context.Context) error

	// Savepoint runs fn on the transaction inside a savepoint: when fn
	// fails, what it wrote is rolled back and the transaction goes on
	// with what came before, as if fn had not run. fn's writes that the
	// store holds back are sent before the savepoint ends, so that their
	// errors are fn's too. failed is fn's error (or that of its writes),
	// unchanged. err is the savepoint's own: it could not be set, rolled
	// back to or released, or the writes held back before it (see Flush)
	// failed; the database may then have rolled back the whole
	// transaction (a deadlock, a lost connection), and the caller rolls
	// back. The rollback to the savepoint runs even when ctx is done (fn
	// may have failed because of it). When fn panics, what it wrote is
	// rolled back and the panic continues. Savepoints nest: fn may set
	// its own. On a Store outside a transaction, fn runs in a transaction
	// of its own, committed when fn succeeds.
	Savepoint(ctx context.Context, fn func(ctx context.Context, tx Tx) error) (failed, err error)

	// DeferredSavepoint is Savepoint for a caller that can run the whole
	// transaction again: the writes fn leaves held back when it succeeds
	// stay held, and are checked only when they are sent, with later
	// writes (the next statement that wants a result, Flush, the commit).
	// A held write that fails then fails whatever sent it, and the
	// caller rolls the transaction back: once a text that crossed a
	// standing deferred savepoint has failed, every later statement, every
	// rollback to a savepoint and the commit fail too, with
	// ErrHeldWrite. In return it costs nothing when fn sends nothing: no
	// statement sets, releases or rolls back a savepoint that fn's writes
	// never reached the database behind, and fn's writes may be joined
	// with others (MySQL, SQLite). When fn fails, what it wrote is undone
	// and failed is fn's error, as with Savepoint. Stores that hold no
	// writes back implement it as Savepoint.
	DeferredSavepoint(ctx context.Context, fn func(ctx context.Context, tx Tx) error) (failed, err error)
}

// InsertDefinitionParams are the arguments of Tx.InsertDefinition.
type InsertDefinitionParams struct {
	// ID is the new definition's, the caller's (the engine's, package
	// idgen); required.
	ID int64
	// PackageID is the XPDL Package id; required.
	PackageID string
	// Name is the package's name.
	Name string
	// Source is the XPDL document.
	Source []byte
	// CreatedAt is the deployment time.
	CreatedAt time.Time
	// GroupID, when not 0, is the ID of the first definition of the
	// deployment this one belongs to (Definition.GroupID); 0 makes the new
	// definition the first of its own.
	GroupID int64
	// File is the base name of the file the package was read from; empty
	// when there is none.
	File string
}

// ListDefinitionsParams are the arguments of Tx.ListDefinitions.
type ListDefinitionsParams struct {
	// PackageID, when not empty, lists only the versions of that package.
	PackageID string
	// GroupID, when not 0, lists only the definitions deployed together
	// in that group (Definition.GroupID), its first included.
	GroupID int64
}

// UpdateProcessInstanceParams are the arguments of
// Tx.UpdateProcessInstance. State, Diagnosis, Tokens, UpdatedAt and
// EndedAt replace the stored values.
type UpdateProcessInstanceParams struct {
	// ID is the process instance to change.
	ID int64
	// ExpectedVersion is the version the change was computed from.
	ExpectedVersion int64
	// FromState is the state the instance had at ExpectedVersion, as the
	// caller read it, for the counts per state the store keeps
	// (CountProcessInstanceGroups); "" makes the store read it, which
	// costs a query. A store may also leave the stored state as it is
	// when FromState equals State (gormstore does on SQLite, where
	// writing it rewrites its index entries), so it must be the state
	// at ExpectedVersion.
	FromState string
	// State is the new state.
	State string
	// Diagnosis is the new diagnosis ("" clears it).
	Diagnosis string
	// Tokens is the new navigation state (nil clears it).
	Tokens []byte
	// UpdatedAt is the time of the change.
	UpdatedAt time.Time
	// EndedAt is the new end time (nil clears it).
	EndedAt *time.Time
}

// ListProcessInstancesParams filter Tx.ListProcessInstances. Zero fields
// do not filter. Pages are walked by passing the last ID of a page as
// AfterID of the next.
type ListProcessInstancesParams struct {
	// States, when not empty, keeps only instances in one of these states.
	States []string
	// DefinitionID, when not 0, keeps only instances of that definition.
	DefinitionID int64
	// ParentInstanceID, when not 0, keeps only subflow instances of that
	// parent.
	ParentInstanceID int64
	// AfterID is the cursor: it keeps only the instances after the one
	// with this ID in Order (ID greater in OrderID, smaller in
	// OrderIDDesc). In the created orders it needs AfterCreatedAt.
	AfterID int64
	// AfterCreatedAt is, in the created orders, the CreatedAt of the
	// instance AfterID: the instances kept are those after (CreatedAt,
	// ID) in Order. It must be nil in the ID orders.
	AfterCreatedAt *time.Time
	// Order is the order of the rows; OrderID by default.
	Order InstanceOrder
	// StartKey, when not empty, keeps only the instance started with that
	// idempotency key.
	StartKey string
	// BusinessKey, when not empty, keeps only the instances with exactly
	// that business key.
	BusinessKey string
	// NoPendingEvents keeps only instances that have no unprocessed event
	// in the outbox (claimed or not): those recovery's sweep looks at.
	NoPendingEvents bool
	// ActivityState, when not empty, keeps only instances with an
	// activity instance in that state. Recovery's sweep asks for the
	// Running instances with an Initiated activity: those a lost
	// activity.start leaves stalled, and not the many that wait on a work
	// item, a timer or a message.
	ActivityState string
	// Limit, when greater than 0, is the most instances returned.
	Limit int
	// ProcessDefID, when not empty, keeps only instances of that XPDL
	// WorkflowProcess.
	ProcessDefID string
	// PackageID, when not empty, keeps only instances of a definition of
	// that package.
	PackageID string
	// PackageVersion, when not 0, keeps only instances of a definition
	// with that Version.
	PackageVersion int
	// CreatedFrom, when not nil, keeps only instances created at or
	// after it.
	CreatedFrom *time.Time
	// CreatedBefore, when not nil, keeps only instances created before
	// it.
	CreatedBefore *time.Time
	// OpenIncidentCause, when not empty, keeps only instances with an
	// open incident of that cause.
	OpenIncidentCause string
	// IDs, when not empty, keeps only the instances with these ids.
	IDs []int64
}

// UpdateActivityInstanceParams are the arguments of
// Tx.UpdateActivityInstance. State, Attempt, Diagnosis, UpdatedAt,
// EndedAt and LoopState replace the stored values; LoopParentID,
// LoopIndex and AssignTo never change after insert.
type UpdateActivityInstanceParams struct {
	// ID is the activity instance to change.
	ID int64
	// ExpectedVersion is the version the change was computed from.
	ExpectedVersion int64
	// State is the new state.
	State string
	// Attempt is the new attempt count.
	Attempt int
	// Diagnosis is the new diagnosis ("" clears it).
	Diagnosis string
	// UpdatedAt is the time of the change.
	UpdatedAt time.Time
	// EndedAt is the new end time (nil clears it).
	EndedAt *time.Time
	// LoopState is the new loop bookkeeping (nil clears it).
	LoopState []byte
}

// ListActivityInstancesParams are the arguments of
// Tx.ListActivityInstances.
type ListActivityInstancesParams struct {
	// ProcessInstanceID is the process instance whose activities are
	// listed; required.
	ProcessInstanceID int64
	// States, when not empty, keeps only activities in one of these
	// states.
	States []string
	// AfterID keeps only activities whose ID is greater.
	AfterID int64
	// Limit, when greater than 0, is the most activities returned.
	Limit int
}

// InsertWorkItemParams are the arguments of Tx.InsertWorkItem.
type InsertWorkItemParams struct {
	// Item is the work item to store.
	Item WorkItem
	// VisibleTo are the principals whose worklists show the item; empty
	// for none. Duplicates are stored once.
	VisibleTo []Principal
}

// UpdateWorkItemParams are the arguments of Tx.UpdateWorkItem. State,
// Performer, Owner, Assignees, Priority, DueAt, CompletedBy,
// CompletionKey, SuspendedFrom, Result, UpdatedAt and EndedAt replace the stored values,
// and VisibleTo replaces the item's visibility.
type UpdateWorkItemParams struct {
	// ID is the work item to change.
	ID int64
	// ExpectedVersion, when not 0, makes the change conditional on the
	// item still having this version.
	ExpectedVersion int64
	// ExpectedState, when not empty, makes the change conditional on the
	// item still being in this state.
	ExpectedState string
	// State is the new state.
	State string
	// Performer is the new performer.
	Performer string
	// Owner is the new owner ("" while offered).
	Owner string
	// Assignees are the new assignees (nil clears them).
	Assignees []Principal
	// Priority is the new priority.
	Priority int
	// DueAt is the new deadline (nil clears it).
	DueAt *time.Time
	// CompletedBy is the user who completed the item.
	CompletedBy string
	// CompletionKey is the idempotency key of the completion.
	CompletionKey string
	// SuspendedFrom is the state a Suspended item returns to on resume.
	SuspendedFrom string
	// Result is the JSON of the completion's outputs (nil clears it).
	Result []byte
	// UpdatedAt is the time of the change.
	UpdatedAt time.Time
	// EndedAt is the new end time (nil clears it).
	EndedAt *time.Time
	// VisibleTo are the principals whose worklists show the item from now
	// on; empty takes it out of every worklist, as for a completed or
	// withdrawn item. Duplicates are stored once.
	VisibleTo []Principal
}

// ListWorkItemsParams filter Tx.ListWorkItems. Zero fields do not filter.
type ListWorkItemsParams struct {
	// ProcessInstanceID, when not 0, keeps only items of that process
	// instance.
	ProcessInstanceID int64
	// ActivityInstanceID, when not 0, keeps only items of that activity
	// instance.
	ActivityInstanceID int64
	// States, when not empty, keeps only items in one of these states.
	States []string
	// AfterID keeps only items whose ID is greater.
	AfterID int64
	// Limit, when greater than 0, is the most items returned.
	Limit int
	// Owner, when not empty, keeps only items held by that user.
	Owner string
	// Performer, when not empty, keeps only items of that performer
	// (the participant the item is offered or assigned to).
	Performer string
	// ActivityDefID, when not empty, keeps only items of that XPDL
	// activity.
	ActivityDefID string
	// DueBefore, when not nil, keeps only items with a DueAt before it.
	DueBefore *time.Time
	// VisibleTo, when not nil, keeps only the items in that principal's
	// worklist: the open items offered to it and held by nobody, and, for
	// a user, the open items they hold (UpdateWorkItemParams.VisibleTo).
	VisibleTo *Principal
}

// MaxWorklistLimit is the largest ListWorklistParams.Limit.
const MaxWorklistLimit = 1000

// ListWorklistParams are the arguments of Tx.ListWorklist. The filters
// apply to the item as it is now; empty or nil filters do not filter.
type ListWorklistParams struct {
	// Principals are whose worklist it is, typically a user and the roles
	// and units they belong to; required.
	Principals []Principal
	// States, when not empty, keeps only items in one of these states.
	States []string
	// ProcessDefIDs, when not empty, keeps only items of these processes.
	ProcessDefIDs []string
	// ActivityDefIDs, when not empty, keeps only items of these
	// activities.
	ActivityDefIDs []string
	// MinPriority, when not nil, keeps only items with at least this
	// priority.
	MinPriority *int
	// DueBefore, when not nil, keeps only items with a DueAt before it.
	DueBefore *time.Time
	// After, when not nil, continues the walk after the item it names:
	// the page starts with the items of lower priority, or of the same
	// priority and a greater ID.
	After *WorklistCursor
	// Limit is the most items returned; required, 1 to
	// MaxWorklistLimit.
	Limit int
}

// WorklistCursor names a position in a worklist: the Priority and ID of
// the last item of the previous page.
type WorklistCursor struct {
	// Priority is the item's priority.
	Priority int
	// ID is the item's ID.
	ID int64
}

// ListInboxParams filter Tx.ListInbox. Zero fields do not filter.
type ListInboxParams struct {
	// ProcessInstanceID, when not 0, keeps only messages for that
	// process instance.
	ProcessInstanceID int64
	// Unmatched keeps only messages correlated by query whose instance is
	// not yet known (ProcessInstanceID 0).
	Unmatched bool
	// ProcessDefID, when not empty, keeps only messages correlated by
	// query to instances of that process.
	ProcessDefID string
	// ActivityDefID, when not empty, keeps only messages waiting for that
	// activity.
	ActivityDefID string
	// States, when not empty, keeps only messages in one of these states.
	States []string
	// ExpiresBefore, when not nil, keeps only messages with an ExpiresAt
	// before it.
	ExpiresBefore *time.Time
	// AfterID keeps only messages whose ID is greater.
	AfterID int64
	// Limit, when greater than 0, is the most messages returned.
	Limit int
}

// UpdateInboxMessageParams are the arguments of Tx.UpdateInboxMessage.
// State, Reason, ProcessInstanceID and EndedAt replace the stored values.
type UpdateInboxMessageParams struct {
	// ID is the message (InboxMessage.ID) to change.
	ID int64
	// ExpectedState, when not empty, makes the change conditional on the
	// message still being in this state.
	ExpectedState string
	// State is the new state.
	State string
	// Reason is the new reason ("" clears it).
	Reason string
	// ProcessInstanceID is the target instance, once correlation resolved
	// it.
	ProcessInstanceID int64
	// EndedAt is the new end time (nil clears it).
	EndedAt *time.Time
}

// FindByVariableParams are the arguments of
// Tx.FindProcessInstancesByVariable.
type FindByVariableParams struct {
	// ProcessDefID is the XPDL WorkflowProcess id of the instances;
	// required.
	ProcessDefID string
	// Name is the variable's name; required.
	Name string
	// Value is the JSON encoding the variable must hold; required.
	Value []byte
	// States, when not empty, keeps only instances in one of these
	// states.
	States []string
	// Limit, when greater than 0, is the most instance ids returned.
	Limit int
}

// EventPool selects which events ClaimEvents considers.
type EventPool int

const (
	// AnyPool claims critical and normal events alike.
	AnyPool EventPool = iota
	// CriticalPool claims only critical events (process control).
	CriticalPool
	// NormalPool claims only events that are not critical.
	NormalPool
)

// ClaimEventsParams are the arguments of Tx.ClaimEvents.
type ClaimEventsParams struct {
	// Owner identifies the claimant; required.
	Owner string
	// Now is the current time by the caller's clock.
	Now time.Time
	// LeaseUntil is when the claims expire; must be after Now.
	LeaseUntil time.Time
	// Limit is the most events claimed; must be greater than 0.
	Limit int
	// Pool restricts the claim to critical or normal events.
	Pool EventPool
}

// MarkEventsProcessedParams are the arguments of Tx.MarkEventsProcessed.
type MarkEventsProcessedParams struct {
	// IDs are the events (Event.ID) to mark.
	IDs []int64
	// ProcessedAt is the time of processing.
	ProcessedAt time.Time
	// Owner, when set, fences the marking: every event must be
	// unprocessed and claimed by Owner, else the call returns an error
	// matching ErrLeaseLost and the caller's transaction must roll back
	// (some of the events may have been marked in it).
	Owner string
}

// RetryEventParams are the arguments of Tx.RetryEvent.
type RetryEventParams struct {
	// ID is the event (Event.ID).
	ID int64
	// AvailableAt is when the event may be claimed again.
	AvailableAt time.Time
	// Owner, when set, leaves the event alone unless Owner claimed it
	// last.
	Owner string
	// CallFailed says that the delivery failed in an application call:
	// the event's CallFailures goes up by one.
	CallFailed bool
}

// ListHistoryParams are the arguments of Tx.ListHistory.
type ListHistoryParams struct {
	// ProcessInstanceID is the process instance whose history is listed;
	// required.
	ProcessInstanceID int64
	// AfterID keeps only entries whose ID is greater.
	AfterID int64
	// Limit, when greater than 0, is the most entries returned.
	Limit int
}

// FireDueTimersParams are the arguments of Tx.FireDueTimers.
type FireDueTimersParams struct {
	// Now is the current time by the caller's clock.
	Now time.Time
	// Limit is the most timers fired; must be greater than 0.
	Limit int
}

// TimerCounts is what Tx.CountTimers returns.
type TimerCounts struct {
	// Pending, Paused and Fired count the timers in each state (fired
	// ones wait for their event to be processed).
	Pending, Paused, Fired int64
	// Due counts the pending timers due at or before the time asked
	// about: they should have fired.
	Due int64
}

// ListTimersParams filter Tx.ListTimers; zero fields match everything.
type ListTimersParams struct {
	ProcessInstanceID  int64
	ActivityInstanceID int64
	DefinitionID       int64
	States             []TimerState
	Kinds              []string
	// Limit caps the result; 0 is no cap.
	Limit int
	// After, when not nil, continues the walk after the timer it names:
	// the timers due later, or due at the same time with a greater ID.
	After *TimerCursor
}

// TimerCursor names a position in a list of timers: the DueAt and ID of
// the last timer of the previous page.
type TimerCursor struct {
	DueAt time.Time
	ID    int64
}

// DeleteTimersParams filter Tx.DeleteTimers. ProcessInstanceID or IDs is
// required; the other fields narrow the match.
type DeleteTimersParams struct {
	ProcessInstanceID int64
	// ActivityInstanceIDs, when not empty, limit the match to the timers
	// of these activity instances.
	ActivityInstanceIDs []int64
	IDs                 []int64
	// States, when not empty, limit the match to timers in these states.
	States []TimerState
}

// PauseTimersParams are the arguments of Tx.PauseTimers.
type PauseTimersParams struct {
	ProcessInstanceID int64
	At                time.Time
}

// ResumeTimersParams are the arguments of Tx.ResumeTimers.
type ResumeTimersParams struct {
	ProcessInstanceID int64
	At                time.Time
}

// RegisterNodeParams are the arguments of Tx.RegisterNode.
type RegisterNodeParams struct {
	// ID is the node's stable name (Config.NodeID).
	ID string
	// Owner identifies this run of the node: its claims carry it.
	Owner string
	// Host and PID describe the process, for operators.
	Host string
	PID  int
	// Now is the registration time; LeaseUntil the end of the first lease.
	Now, LeaseUntil time.Time
}

// RenewNodeParams are the arguments of Tx.RenewNode.
type RenewNodeParams struct {
	ID, Owner       string
	Now, LeaseUntil time.Time
}

// RemoveNodeParams are the arguments of Tx.RemoveNode.
type RemoveNodeParams struct {
	ID, Owner string
	// ExpiredBy, when set, removes the node only if its lease ended
	// before it (a dead node's row).
	ExpiredBy time.Time
}

// ListSubscriptionsParams filter Tx.ListSubscriptions; zero fields match
// everything.
type ListSubscriptionsParams struct {
	// Kind, when not empty, keeps only subscriptions of that kind.
	Kind string
	// Name, when not empty, keeps only subscriptions to that name (case
	// sensitive).
	Name string
	// ProcessInstanceID, when not 0, keeps only the subscriptions of
	// that process instance.
	ProcessInstanceID int64
	// AfterID keeps only subscriptions whose ID is greater.
	AfterID int64
	// Limit, when greater than 0, is the most subscriptions returned.
	Limit int
}

// DeleteSubscriptionsParams filter Tx.DeleteSubscriptions.
// ProcessInstanceID or IDs is required; the other fields narrow the
// match.
type DeleteSubscriptionsParams struct {
	ProcessInstanceID int64
	// ActivityInstanceIDs, when not empty, limit the match to the
	// subscriptions of these activity instances.
	ActivityInstanceIDs []int64
	IDs                 []int64
}
