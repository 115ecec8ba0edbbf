package gormstore

import (
	"encoding/json"
	"fmt"
	"time"

	"github.com/goxpdl/goxpdl/store"
)

// The GORM models are private: they fix table names, column names, sizes
// and indexes, and map to and from the plain rows of package store. Every
// table name starts with "goxpdl_" because the tables live in the host's
// database.
//
// Conventions:
//   - Timestamps are DATETIME(6) on MySQL (precision:6) and text in
//     SQLite's datetime format; both keep microseconds. They are written in
//     UTC, truncated to the microsecond, so that SQLite's text comparison
//     orders them correctly.
//   - CreatedAt and UpdatedAt carry autoCreateTime:false/autoUpdateTime:
//     false: GORM would otherwise fill them from its own clock, and all
//     time must come from the caller.
//   - Strings that are indexed have a size (VARCHAR on MySQL); free text is
//     TEXT; byte slices are BLOBs.
//   - No column has a default: GORM leaves zero-valued fields with a
//     default out of INSERTs, and every value is written explicitly.

const (
	tableDefinitions       = "goxpdl_definitions"
	tableProcessInstances  = "goxpdl_process_instances"
	tableActivityInstances = "goxpdl_activity_instances"
	tableVariables         = "goxpdl_variables"
	tableWorkItems         = "goxpdl_work_items"
	tableVisibility        = "goxpdl_work_item_visibility"
	tableInbox             = "goxpdl_inbox"
	tableEvents            = "goxpdl_events"
	tableHistory           = "goxpdl_history"
	tableTimers            = "goxpdl_timers"
	tableNodes             = "goxpdl_nodes"
	tableSubscriptions     = "goxpdl_subscriptions"

	tableInstanceCounts      = "goxpdl_instance_counts"
	tableInstanceCountDeltas = "goxpdl_instance_count_deltas"
)

type definitionModel struct {
	ID        int64     `gorm:"column:id;primaryKey;autoIncrement:false"`
	PackageID string    `gorm:"column:package_id;size:255;not null;uniqueIndex:goxpdl_definitions_package_version,priority:1"`
	Version   int       `gorm:"column:version;not null;uniqueIndex:goxpdl_definitions_package_version,priority:2"`
	Name      string    `gorm:"column:name;type:text;not null"`
	Source    []byte    `gorm:"column:source"`
	CreatedAt time.Time `gorm:"column:created_at;not null;precision:6;autoCreateTime:false"`
	// The deployment columns came after the first schema and are nullable
	// (see the loop columns of activityInstanceModel). GroupID is NULL for
	// the first definition of a deployment (alone or not): its group is
	// its own id.
	GroupID *int64  `gorm:"column:group_id;index:goxpdl_definitions_group"`
	File    *string `gorm:"column:file;size:255"`
}

func (definitionModel) TableName() string { return tableDefinitions }

// processInstanceModel is a process instance. Its indexes serve the
// engine and the console's instance list (Engine.Instances), whose pages
// are walked by keyset, in id or in start (created) order, either way:
// every filter the console offers has an index whose columns after the
// filter's are the order's, so that a page reads its rows and stops.
//   - goxpdl_process_instances_state (state, id) and _state_created
//     (state, created_at, id): by state;
//   - goxpdl_process_instances_definition (definition_id, and the id
//     every index ends with) and _definition_created (definition_id,
//     created_at, id): by definition (a package or version is the set
//     of its definitions); _definition_state (definition_id, state, id):
//     by definition and state (without it MariaDB intersects the
//     definition's and the state's indexes and sorts what both hold:
//     0.3 s at a million instances);
//   - goxpdl_process_instances_created (created_at, id): unfiltered in
//     start order, and started between two times;
//   - goxpdl_process_instances_business_key, _parent: few rows each;
//   - by incident cause, goxpdl_incidents_cause gives the instances.
//
// goxpdl_process_instances_ended (state, ended_at) serves retention's
// search for instances that ended before a cutoff (purge.go) and the
// count of those that ended per minute (counts.go).
type processInstanceModel struct {
	ID               int64  `gorm:"column:id;primaryKey;autoIncrement:false;index:goxpdl_process_instances_state,priority:2;index:goxpdl_process_instances_created,priority:2;index:goxpdl_process_instances_state_created,priority:3;index:goxpdl_process_instances_definition_created,priority:3;index:goxpdl_process_instances_definition_state,priority:3"`
	DefinitionID     int64  `gorm:"column:definition_id;not null;index:goxpdl_process_instances_definition;index:goxpdl_process_instances_definition_created,priority:1;index:goxpdl_process_instances_definition_state,priority:1"`
	ProcessDefID     string `gorm:"column:process_def_id;size:255;not null"`
	ParentInstanceID *int64 `gorm:"column:parent_instance_id;index:goxpdl_process_instances_parent"`
	ParentActivityID *int64 `gorm:"column:parent_activity_id"`
	// Depth has a default so that Migrate can add it to a table that has
	// rows: those instances read 0.
	Depth     int        `gorm:"column:depth;not null;default:0"`
	State     string     `gorm:"column:state;size:64;not null;index:goxpdl_process_instances_state,priority:1;index:goxpdl_process_instances_ended,priority:1;index:goxpdl_process_instances_state_created,priority:1;index:goxpdl_process_instances_definition_state,priority:2"`
	Version   int64      `gorm:"column:version;not null"`
	Diagnosis string     `gorm:"column:diagnosis;type:text;not null"`
	Tokens    []byte     `gorm:"column:tokens"`
	CreatedAt time.Time  `gorm:"column:created_at;not null;precision:6;autoCreateTime:false;index:goxpdl_process_instances_created,priority:1;index:goxpdl_process_instances_state_created,priority:2;index:goxpdl_process_instances_definition_created,priority:2"`
	UpdatedAt time.Time  `gorm:"column:updated_at;not null;precision:6;autoUpdateTime:false"`
	EndedAt   *time.Time `gorm:"column:ended_at;precision:6;index:goxpdl_process_instances_ended,priority:2"`
	// StartKey is NULL when the host gave no key, so that the unique
	// index admits any number of those.
	StartKey *string `gorm:"column:start_key;size:255;uniqueIndex:goxpdl_process_instances_start_key"`
	// BusinessKey is NULL for none; nullable so that Migrate can add it
	// to a table that has rows.
	BusinessKey *string `gorm:"column:business_key;size:255;index:goxpdl_process_instances_business_key"`
}

func (processInstanceModel) TableName() string { return tableProcessInstances }

// processInstanceColumns are the columns of a processInstanceModel but
// its id, in the order of values.
var processInstanceColumns = []string{"definition_id", "process_def_id", "parent_instance_id", "parent_activity_id", "depth", "state", "version", "diagnosis", "tokens", "created_at", "updated_at", "ended_at", "start_key", "business_key"}

func (m processInstanceModel) values() []any {
	return []any{m.DefinitionID, m.ProcessDefID, m.ParentInstanceID, m.ParentActivityID, m.Depth, m.State, m.Version, m.Diagnosis, m.Tokens, m.CreatedAt, m.UpdatedAt, m.EndedAt, m.StartKey, m.BusinessKey}
}

type activityInstanceModel struct {
	ID                int64      `gorm:"column:id;primaryKey;autoIncrement:false"`
	ProcessInstanceID int64      `gorm:"column:process_instance_id;not null;index:goxpdl_activity_instances_process_state,priority:1"`
	ActivityDefID     string     `gorm:"column:activity_def_id;size:255;not null"`
	ActivitySetID     string     `gorm:"column:activity_set_id;size:255;not null"`
	BlockInstanceID   *int64     `gorm:"column:block_instance_id"`
	State             string     `gorm:"column:state;size:64;not null;index:goxpdl_activity_instances_process_state,priority:2"`
	Attempt           int        `gorm:"column:attempt;not null"`
	Version           int64      `gorm:"column:version;not null"`
	Diagnosis         string     `gorm:"column:diagnosis;type:text;not null"`
	CreatedAt         time.Time  `gorm:"column:created_at;not null;precision:6;autoCreateTime:false"`
	UpdatedAt         time.Time  `gorm:"column:updated_at;not null;precision:6;autoUpdateTime:false"`
	EndedAt           *time.Time `gorm:"column:ended_at;precision:6"`
	// The loop columns came after the first schema: they are nullable,
	// so that Migrate can add them to a table that has rows (SQLite
	// cannot add a NOT NULL column without a default).
	LoopParentID *int64 `gorm:"column:loop_parent_id"`
	LoopIndex    *int   `gorm:"column:loop_index"`
	LoopState    []byte `gorm:"column:loop_state"`
	// AssignTo came later too; NULL for "" (the usual offer).
	AssignTo *string `gorm:"column:assign_to;size:255"`
}

func (activityInstanceModel) TableName() string { return tableActivityInstances }

// activityInstanceColumns are the columns of an activityInstanceModel but
// its id, in the order of values.
var activityInstanceColumns = []string{"process_instance_id", "activity_def_id", "activity_set_id", "block_instance_id", "state", "attempt", "version", "diagnosis", "created_at", "updated_at", "ended_at", "loop_parent_id", "loop_index", "loop_state", "assign_to"}

func (m activityInstanceModel) values() []any {
	return []any{m.ProcessInstanceID, m.ActivityDefID, m.ActivitySetID, m.BlockInstanceID, m.State, m.Attempt, m.Version, m.Diagnosis, m.CreatedAt, m.UpdatedAt, m.EndedAt, m.LoopParentID, m.LoopIndex, m.LoopState, m.AssignTo}
}

// variableModel is a process variable. The index (name, value) serves
// correlation by query (FindProcessInstancesByVariable): MySQL cannot
// index a whole BLOB, so it indexes the first 255 bytes of the value and
// compares the rest in the row; SQLite ignores the length and indexes
// the whole value.
type variableModel struct {
	ProcessInstanceID int64  `gorm:"column:process_instance_id;primaryKey;autoIncrement:false"`
	Name              string `gorm:"column:name;primaryKey;size:255;index:goxpdl_variables_value,priority:1"`
	Type              string `gorm:"column:type;size:64;not null"`
	Value             []byte `gorm:"column:value;index:goxpdl_variables_value,priority:2,length:255"`
}

func (variableModel) TableName() string { return tableVariables }

// workItemModel is a work item. Assignees is the JSON of []principalJSON.
type workItemModel struct {
	ID                 int64      `gorm:"column:id;primaryKey;autoIncrement:false"`
	ProcessInstanceID  int64      `gorm:"column:process_instance_id;not null;index:goxpdl_work_items_process_state,priority:1"`
	ActivityInstanceID int64      `gorm:"column:activity_instance_id;not null;index:goxpdl_work_items_activity"`
	ProcessDefID       string     `gorm:"column:process_def_id;size:255;not null"`
	ActivityDefID      string     `gorm:"column:activity_def_id;size:255;not null"`
	Name               string     `gorm:"column:name;type:text;not null"`
	State              string     `gorm:"column:state;size:64;not null;index:goxpdl_work_items_process_state,priority:2;index:goxpdl_work_items_state"`
	Performer          string     `gorm:"column:performer;size:255;not null"`
	Assignees          []byte     `gorm:"column:assignees"`
	Owner              string     `gorm:"column:owner;size:255;not null"`
	Priority           int        `gorm:"column:priority;not null"`
	DueAt              *time.Time `gorm:"column:due_at;precision:6"`
	Version            int64      `gorm:"column:version;not null"`
	CompletedBy        string     `gorm:"column:completed_by;size:255;not null"`
	CompletionKey      string     `gorm:"column:completion_key;size:255;not null"`
	SuspendedFrom      string     `gorm:"column:suspended_from;size:64;not null"`
	Result             []byte     `gorm:"column:result"`
	CreatedAt          time.Time  `gorm:"column:created_at;not null;precision:6;autoCreateTime:false"`
	UpdatedAt          time.Time  `gorm:"column:updated_at;not null;precision:6;autoUpdateTime:false"`
	EndedAt            *time.Time `gorm:"column:ended_at;precision:6"`
}

func (workItemModel) TableName() string { return tableWorkItems }

// visibilityModel is the worklist index: one row per work item and
// principal that sees it. The primary key is the worklist's order within
// one principal, so that a page is a range scan of the key that stops
// after LIMIT rows: worklists are ordered by priority descending and id
// ascending, and neg_priority holds -priority so that one ascending key
// serves both (MariaDB before 10.8 ignores DESC in index definitions).
// The other columns copy what worklist filters test, so that a filter is
// checked in the index rather than in the work item row; the index
// goxpdl_work_item_visibility_process serves the process filter, the most
// selective one, the same way. goxpdl_work_item_visibility_item finds an
// item's rows to replace them.
type visibilityModel struct {
	PrincipalKind string     `gorm:"column:principal_kind;primaryKey;size:32;index:goxpdl_work_item_visibility_process,priority:1"`
	PrincipalID   string     `gorm:"column:principal_id;primaryKey;size:255;index:goxpdl_work_item_visibility_process,priority:2"`
	NegPriority   int64      `gorm:"column:neg_priority;primaryKey;autoIncrement:false;index:goxpdl_work_item_visibility_process,priority:4"`
	WorkItemID    int64      `gorm:"column:work_item_id;primaryKey;autoIncrement:false;index:goxpdl_work_item_visibility_process,priority:5;index:goxpdl_work_item_visibility_item"`
	ProcessDefID  string     `gorm:"column:process_def_id;size:255;not null;index:goxpdl_work_item_visibility_process,priority:3"`
	ActivityDefID string     `gorm:"column:activity_def_id;size:255;not null"`
	State         string     `gorm:"column:state;size:64;not null"`
	DueAt         *time.Time `gorm:"column:due_at;precision:6"`
}

func (visibilityModel) TableName() string { return tableVisibility }

// eventModel is the outbox. The claim reads goxpdl_events_unclaimed,
// (processed_at, claimed_until, id), in two ranges: the expired claims
// (claimed_until up to now) and the unclaimed events (claimed_until NULL,
// in ID order). Each walk stops after the n rows it needs instead of
// sorting every available event, and neither walks the claims that still
// run. That matters on MySQL, where FOR UPDATE locks every row the query
// reads: a sort would lock the whole backlog, and SKIP LOCKED would then
// hide it from the other claimants. And a node's pre-claimed backlog can
// hold tens of thousands of rows: a walk over them for every claim cost
// ~150 ms on MariaDB at 100,000 parked instances.
type eventModel struct {
	ID                int64      `gorm:"column:id;primaryKey;autoIncrement:false;index:goxpdl_events_unclaimed,priority:3"`
	EventID           string     `gorm:"column:event_id;size:255;not null;uniqueIndex:goxpdl_events_event_id"`
	ProcessInstanceID int64      `gorm:"column:process_instance_id;not null;index:goxpdl_events_process"`
	Kind              string     `gorm:"column:kind;size:128;not null"`
	Payload           []byte     `gorm:"column:payload"`
	Critical          bool       `gorm:"column:critical;not null"`
	CreatedAt         time.Time  `gorm:"column:created_at;not null;precision:6;autoCreateTime:false"`
	AvailableAt       time.Time  `gorm:"column:available_at;not null;precision:6"`
	ProcessedAt       *time.Time `gorm:"column:processed_at;precision:6;index:goxpdl_events_unclaimed,priority:1"`
	Attempts          int        `gorm:"column:attempts;not null"`
	CallFailures      int        `gorm:"column:call_failures;not null;default:0"`
	ClaimedBy         string     `gorm:"column:claimed_by;size:255;not null"`
	ClaimedUntil      *time.Time `gorm:"column:claimed_until;precision:6;index:goxpdl_events_unclaimed,priority:2"`
}

func (eventModel) TableName() string { return tableEvents }

// eventColumns are the columns of an eventModel but its id, in the order
// of values.
var eventColumns = []string{"event_id", "process_instance_id", "kind", "payload", "critical", "created_at", "available_at", "processed_at", "attempts", "call_failures", "claimed_by", "claimed_until"}

func (m eventModel) values() []any {
	return []any{m.EventID, m.ProcessInstanceID, m.Kind, m.Payload, m.Critical, m.CreatedAt, m.AvailableAt, m.ProcessedAt, m.Attempts, m.CallFailures, m.ClaimedBy, m.ClaimedUntil}
}

type historyModel struct {
	ID                 int64  `gorm:"column:id;primaryKey;autoIncrement:false;index:goxpdl_history_process,priority:2"`
	ProcessInstanceID  int64  `gorm:"column:process_instance_id;not null;index:goxpdl_history_process,priority:1"`
	ActivityInstanceID *int64 `gorm:"column:activity_instance_id"`
	WorkItemID         *int64 `gorm:"column:work_item_id"`
	Subject            string `gorm:"column:subject;size:32;not null"`
	FromState          string `gorm:"column:from_state;size:64;not null"`
	ToState            string `gorm:"column:to_state;size:64;not null"`
	// Via lists the states between FromState and ToState of a row that
	// holds several transitions (history.go), comma-separated; "" for
	// one.
	Via   string    `gorm:"column:via;size:255;not null;default:''"`
	Actor string    `gorm:"column:actor;size:255;not null"`
	Data  []byte    `gorm:"column:data"`
	At    time.Time `gorm:"column:at;not null;precision:6"`
}

func (historyModel) TableName() string { return tableHistory }

// inboxModel is the correlation inbox. goxpdl_inbox_target serves the
// lookup of what waits for an activity of an instance, or with instance 0
// of the messages still to be correlated by query, in ID order;
// goxpdl_inbox_expiry serves the sweep for expired pending messages.
type inboxModel struct {
	ID                int64      `gorm:"column:id;primaryKey;autoIncrement:false;index:goxpdl_inbox_target,priority:3"`
	MessageID         string     `gorm:"column:message_id;size:255;not null;uniqueIndex:goxpdl_inbox_message_id"`
	Kind              string     `gorm:"column:kind;size:128;not null"`
	ProcessInstanceID int64      `gorm:"column:process_instance_id;not null;index:goxpdl_inbox_target,priority:1"`
	ProcessDefID      string     `gorm:"column:process_def_id;size:255;not null"`
	Variable          string     `gorm:"column:variable;size:255;not null"`
	Value             []byte     `gorm:"column:value"`
	ActivityDefID     string     `gorm:"column:activity_def_id;size:255;not null;index:goxpdl_inbox_target,priority:2"`
	User              string     `gorm:"column:user;size:255;not null"`
	Payload           []byte     `gorm:"column:payload"`
	State             string     `gorm:"column:state;size:64;not null;index:goxpdl_inbox_expiry,priority:1"`
	Reason            string     `gorm:"column:reason;type:text;not null"`
	CreatedAt         time.Time  `gorm:"column:created_at;not null;precision:6;autoCreateTime:false"`
	ExpiresAt         *time.Time `gorm:"column:expires_at;precision:6;index:goxpdl_inbox_expiry,priority:2"`
	EndedAt           *time.Time `gorm:"column:ended_at;precision:6"`
}

func (inboxModel) TableName() string { return tableInbox }

// timerModel is a durable timer. goxpdl_timers_due serves the firing
// query (pending timers by due time), goxpdl_timers_instance the per
// instance deletes, pauses and listings.
type timerModel struct {
	ID                 int64      `gorm:"column:id;primaryKey;autoIncrement:false"`
	ProcessInstanceID  int64      `gorm:"column:process_instance_id;not null;index:goxpdl_timers_instance,priority:1"`
	ActivityInstanceID int64      `gorm:"column:activity_instance_id;not null;index:goxpdl_timers_instance,priority:2"`
	DefinitionID       int64      `gorm:"column:definition_id;not null"`
	Kind               string     `gorm:"column:kind;size:64;not null"`
	Key                string     `gorm:"column:timer_key;size:255;not null"`
	State              string     `gorm:"column:state;size:16;not null;index:goxpdl_timers_due,priority:1"`
	DueAt              time.Time  `gorm:"column:due_at;not null;precision:6;index:goxpdl_timers_due,priority:2"`
	PausedAt           *time.Time `gorm:"column:paused_at;precision:6"`
	Count              int        `gorm:"column:fire_count;not null"`
	Payload            []byte     `gorm:"column:payload"`
	CreatedAt          time.Time  `gorm:"column:created_at;not null;precision:6;autoCreateTime:false"`
	FiredAt            *time.Time `gorm:"column:fired_at;precision:6"`
}

func (timerModel) TableName() string { return tableTimers }

func (m timerModel) row() store.Timer {
	return store.Timer{
		ID: m.ID, ProcessInstanceID: m.ProcessInstanceID, ActivityInstanceID: m.ActivityInstanceID,
		DefinitionID: m.DefinitionID, Kind: m.Kind, Key: m.Key, State: store.TimerState(m.State),
		DueAt: rowTime(m.DueAt), PausedAt: rowTimePtr(m.PausedAt), Count: m.Count, Payload: rowBytes(m.Payload),
		CreatedAt: rowTime(m.CreatedAt), FiredAt: rowTimePtr(m.FiredAt),
	}
}

// subscriptionModel is a wait for a named trigger (a signal).
// goxpdl_subscriptions_name serves a sender's lookup of the receivers of
// a name in ID order, goxpdl_subscriptions_instance the per instance
// deletes.
type subscriptionModel struct {
	ID                 int64     `gorm:"column:id;primaryKey;autoIncrement:false;index:goxpdl_subscriptions_name,priority:3"`
	Kind               string    `gorm:"column:kind;size:64;not null;index:goxpdl_subscriptions_name,priority:1"`
	Name               string    `gorm:"column:name;size:255;not null;index:goxpdl_subscriptions_name,priority:2"`
	ProcessInstanceID  int64     `gorm:"column:process_instance_id;not null;index:goxpdl_subscriptions_instance,priority:1"`
	ActivityInstanceID int64     `gorm:"column:activity_instance_id;not null;index:goxpdl_subscriptions_instance,priority:2"`
	ActivityDefID      string    `gorm:"column:activity_def_id;size:255;not null"`
	CreatedAt          time.Time `gorm:"column:created_at;not null;precision:6;autoCreateTime:false"`
}

func (subscriptionModel) TableName() string { return tableSubscriptions }

func (m subscriptionModel) row() store.Subscription {
	return store.Subscription{
		ID: m.ID, Kind: m.Kind, Name: m.Name, ProcessInstanceID: m.ProcessInstanceID,
		ActivityInstanceID: m.ActivityInstanceID, ActivityDefID: m.ActivityDefID, CreatedAt: rowTime(m.CreatedAt),
	}
}

// nodeModel is an engine process registered on the database.
type nodeModel struct {
	ID          string    `gorm:"column:id;primaryKey;size:191"`
	Owner       string    `gorm:"column:owner;size:191;not null"`
	Epoch       int64     `gorm:"column:epoch;not null"`
	Host        string    `gorm:"column:host;size:255;not null"`
	PID         int       `gorm:"column:pid;not null"`
	StartedAt   time.Time `gorm:"column:started_at;not null;precision:6"`
	HeartbeatAt time.Time `gorm:"column:heartbeat_at;not null;precision:6"`
	LeaseUntil  time.Time `gorm:"column:lease_until;not null;precision:6"`
}

func (nodeModel) TableName() string { return tableNodes }

func (m nodeModel) row() store.Node {
	return store.Node{
		ID: m.ID, Owner: m.Owner, Epoch: m.Epoch, Host: m.Host, PID: m.PID,
		StartedAt: rowTime(m.StartedAt), HeartbeatAt: rowTime(m.HeartbeatAt), LeaseUntil: rowTime(m.LeaseUntil),
	}
}

// allModels lists the models Migrate creates, in dependency order.
var allModels = []any{
	&definitionModel{},
	&processInstanceModel{},
	&activityInstanceModel{},
	&variableModel{},
	&workItemModel{},
	&visibilityModel{},
	&eventModel{},
	&historyModel{},
	&inboxModel{},
	&timerModel{},
	&nodeModel{},
	&subscriptionModel{},
	&incidentModel{},
	&batchModel{},
	&batchFailureModel{},
	&lockModel{},
	&lockKeyModel{},
	&auditModel{},
	&instanceCountModel{},
	&instanceCountDeltaModel{},
	&idNodeModel{},
	&publicationModel{},
	&leaseModel{},
}

// Conversions. Writes go through dbTime/dbBytes, reads through
// rowTime/rowBytes, so that both dialects return the same values.

// dbTime is t as stored: UTC, truncated to the microsecond.
func dbTime(t time.Time) time.Time { return t.UTC().Truncate(time.Microsecond) }

func dbTimePtr(t *time.Time) *time.Time {
	if t == nil {
		return nil
	}
	v := dbTime(*t)
	return &v
}

// rowTime is a stored time as returned to callers: in UTC whatever
// location the driver chose.
func rowTime(t time.Time) time.Time { return t.UTC() }

func rowTimePtr(t *time.Time) *time.Time {
	if t == nil {
		return nil
	}
	v := rowTime(*t)
	return &v
}

// dbBytes stores empty byte slices as NULL, and rowBytes reads both NULL
// and empty BLOBs back as nil: the drivers disagree on whether an empty
// slice is NULL, and callers should not have to care.
func dbBytes(b []byte) []byte {
	if len(b) == 0 {
		return nil
	}
	return b
}

func rowBytes(b []byte) []byte {
	if len(b) == 0 {
		return nil
	}
	return b
}

func copyInt64Ptr(p *int64) *int64 {
	if p == nil {
		return nil
	}
	v := *p
	return &v
}

func (m *definitionModel) row() store.Definition {
	d := store.Definition{
		ID:        m.ID,
		PackageID: m.PackageID,
		Version:   m.Version,
		Name:      m.Name,
		Source:    rowBytes(m.Source),
		CreatedAt: rowTime(m.CreatedAt),
		GroupID:   m.ID,
		File:      derefString(m.File),
	}
	if m.GroupID != nil {
		d.GroupID = *m.GroupID
	}
	return d
}

func processInstanceFromRow(r store.ProcessInstance) processInstanceModel {
	return processInstanceModel{
		ID:               r.ID,
		DefinitionID:     r.DefinitionID,
		ProcessDefID:     r.ProcessDefID,
		ParentInstanceID: copyInt64Ptr(r.ParentInstanceID),
		ParentActivityID: copyInt64Ptr(r.ParentActivityID),
		Depth:            r.Depth,
		State:            r.State,
		Version:          r.Version,
		Diagnosis:        r.Diagnosis,
		Tokens:           dbBytes(r.Tokens),
		CreatedAt:        dbTime(r.CreatedAt),
		UpdatedAt:        dbTime(r.UpdatedAt),
		EndedAt:          dbTimePtr(r.EndedAt),
		StartKey:         nullString(r.StartKey),
		BusinessKey:      nullString(r.BusinessKey),
	}
}

func (m *processInstanceModel) row() store.ProcessInstance {
	return store.ProcessInstance{
		ID:               m.ID,
		DefinitionID:     m.DefinitionID,
		ProcessDefID:     m.ProcessDefID,
		ParentInstanceID: copyInt64Ptr(m.ParentInstanceID),
		ParentActivityID: copyInt64Ptr(m.ParentActivityID),
		Depth:            m.Depth,
		State:            m.State,
		Version:          m.Version,
		Diagnosis:        m.Diagnosis,
		Tokens:           rowBytes(m.Tokens),
		CreatedAt:        rowTime(m.CreatedAt),
		UpdatedAt:        rowTime(m.UpdatedAt),
		EndedAt:          rowTimePtr(m.EndedAt),
		StartKey:         derefString(m.StartKey),
		BusinessKey:      derefString(m.BusinessKey),
	}
}

// nullString maps "" to NULL.
func nullString(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}

// derefString maps NULL to "".
func derefString(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}

func activityInstanceFromRow(r store.ActivityInstance) activityInstanceModel {
	return activityInstanceModel{
		ID:                r.ID,
		ProcessInstanceID: r.ProcessInstanceID,
		ActivityDefID:     r.ActivityDefID,
		ActivitySetID:     r.ActivitySetID,
		BlockInstanceID:   copyInt64Ptr(r.BlockInstanceID),
		State:             r.State,
		Attempt:           r.Attempt,
		Version:           r.Version,
		Diagnosis:         r.Diagnosis,
		CreatedAt:         dbTime(r.CreatedAt),
		UpdatedAt:         dbTime(r.UpdatedAt),
		EndedAt:           dbTimePtr(r.EndedAt),
		LoopParentID:      copyInt64Ptr(r.LoopParentID),
		LoopIndex:         &r.LoopIndex,
		LoopState:         dbBytes(r.LoopState),
		AssignTo:          nullString(r.AssignTo),
	}
}

func (m *activityInstanceModel) row() store.ActivityInstance {
	loopIndex := 0
	if m.LoopIndex != nil {
		loopIndex = *m.LoopIndex
	}
	return store.ActivityInstance{
		ID:                m.ID,
		ProcessInstanceID: m.ProcessInstanceID,
		ActivityDefID:     m.ActivityDefID,
		ActivitySetID:     m.ActivitySetID,
		BlockInstanceID:   copyInt64Ptr(m.BlockInstanceID),
		State:             m.State,
		Attempt:           m.Attempt,
		Version:           m.Version,
		Diagnosis:         m.Diagnosis,
		CreatedAt:         rowTime(m.CreatedAt),
		UpdatedAt:         rowTime(m.UpdatedAt),
		EndedAt:           rowTimePtr(m.EndedAt),
		LoopParentID:      copyInt64Ptr(m.LoopParentID),
		LoopIndex:         loopIndex,
		LoopState:         rowBytes(m.LoopState),
		AssignTo:          derefString(m.AssignTo),
	}
}

func variableFromRow(r store.Variable) variableModel {
	return variableModel{
		ProcessInstanceID: r.ProcessInstanceID,
		Name:              r.Name,
		Type:              r.Type,
		Value:             dbBytes(r.Value),
	}
}

func (m *variableModel) row() store.Variable {
	return store.Variable{
		ProcessInstanceID: m.ProcessInstanceID,
		Name:              m.Name,
		Type:              m.Type,
		Value:             rowBytes(m.Value),
	}
}

func workItemFromRow(r store.WorkItem) workItemModel {
	return workItemModel{
		ID:                 r.ID,
		ProcessInstanceID:  r.ProcessInstanceID,
		ActivityInstanceID: r.ActivityInstanceID,
		ProcessDefID:       r.ProcessDefID,
		ActivityDefID:      r.ActivityDefID,
		Name:               r.Name,
		State:              r.State,
		Performer:          r.Performer,
		Assignees:          dbPrincipals(r.Assignees),
		Owner:              r.Owner,
		Priority:           r.Priority,
		DueAt:              dbTimePtr(r.DueAt),
		Version:            r.Version,
		CompletedBy:        r.CompletedBy,
		CompletionKey:      r.CompletionKey,
		SuspendedFrom:      r.SuspendedFrom,
		Result:             dbBytes(r.Result),
		CreatedAt:          dbTime(r.CreatedAt),
		UpdatedAt:          dbTime(r.UpdatedAt),
		EndedAt:            dbTimePtr(r.EndedAt),
	}
}

func (m *workItemModel) row() (store.WorkItem, error) {
	assignees, err := rowPrincipals(m.Assignees)
	if err != nil {
		return store.WorkItem{}, fmt.Errorf("work item %d: assignees: %w", m.ID, err)
	}
	return store.WorkItem{
		ID:                 m.ID,
		ProcessInstanceID:  m.ProcessInstanceID,
		ActivityInstanceID: m.ActivityInstanceID,
		ProcessDefID:       m.ProcessDefID,
		ActivityDefID:      m.ActivityDefID,
		Name:               m.Name,
		State:              m.State,
		Performer:          m.Performer,
		Assignees:          assignees,
		Owner:              m.Owner,
		Priority:           m.Priority,
		DueAt:              rowTimePtr(m.DueAt),
		Version:            m.Version,
		CompletedBy:        m.CompletedBy,
		CompletionKey:      m.CompletionKey,
		SuspendedFrom:      m.SuspendedFrom,
		Result:             rowBytes(m.Result),
		CreatedAt:          rowTime(m.CreatedAt),
		UpdatedAt:          rowTime(m.UpdatedAt),
		EndedAt:            rowTimePtr(m.EndedAt),
	}, nil
}

// workItemRows converts models read from the database.
func workItemRows(ms []workItemModel) ([]store.WorkItem, error) {
	out := make([]store.WorkItem, len(ms))
	for i := range ms {
		var err error
		if out[i], err = ms[i].row(); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// principalJSON is how a principal is stored in JSON: with its own field
// names, so that renaming the Go fields does not change stored data.
type principalJSON struct {
	Kind string `json:"kind"`
	ID   string `json:"id"`
}

// dbPrincipals is the JSON of ps; nil (NULL) when ps is empty.
func dbPrincipals(ps []store.Principal) []byte {
	if len(ps) == 0 {
		return nil
	}
	js := make([]principalJSON, len(ps))
	for i, p := range ps {
		js[i] = principalJSON{Kind: string(p.Kind), ID: p.ID}
	}
	b, err := json.Marshal(js)
	if err != nil {
		panic(fmt.Sprintf("gormstore: marshal principals: %v", err)) // strings always marshal
	}
	return b
}

// rowPrincipals reads what dbPrincipals wrote; nil for NULL or an empty
// list.
func rowPrincipals(b []byte) ([]store.Principal, error) {
	if len(b) == 0 {
		return nil, nil
	}
	var js []principalJSON
	if err := json.Unmarshal(b, &js); err != nil {
		return nil, err
	}
	if len(js) == 0 {
		return nil, nil
	}
	ps := make([]store.Principal, len(js))
	for i, j := range js {
		ps[i] = store.Principal{Kind: store.PrincipalKind(j.Kind), ID: j.ID}
	}
	return ps, nil
}

func (m *eventModel) row() store.Event {
	return store.Event{
		ID:                m.ID,
		EventID:           m.EventID,
		ProcessInstanceID: m.ProcessInstanceID,
		Kind:              m.Kind,
		Payload:           rowBytes(m.Payload),
		Critical:          m.Critical,
		CreatedAt:         rowTime(m.CreatedAt),
		AvailableAt:       rowTime(m.AvailableAt),
		ProcessedAt:       rowTimePtr(m.ProcessedAt),
		Attempts:          m.Attempts,
		CallFailures:      m.CallFailures,
		ClaimedBy:         m.ClaimedBy,
		ClaimedUntil:      rowTimePtr(m.ClaimedUntil),
	}
}

func historyFromRow(r store.HistoryEntry) historyModel {
	return historyModel{
		ProcessInstanceID:  r.ProcessInstanceID,
		ActivityInstanceID: copyInt64Ptr(r.ActivityInstanceID),
		WorkItemID:         copyInt64Ptr(r.WorkItemID),
		Subject:            r.Subject,
		FromState:          r.FromState,
		ToState:            r.ToState,
		Actor:              r.Actor,
		Data:               dbBytes(r.Data),
		At:                 dbTime(r.At),
	}
}

func (m *historyModel) row() store.HistoryEntry {
	return store.HistoryEntry{
		ID:                 m.ID,
		ProcessInstanceID:  m.ProcessInstanceID,
		ActivityInstanceID: copyInt64Ptr(m.ActivityInstanceID),
		WorkItemID:         copyInt64Ptr(m.WorkItemID),
		Subject:            m.Subject,
		FromState:          m.FromState,
		ToState:            m.ToState,
		Actor:              m.Actor,
		Data:               rowBytes(m.Data),
		At:                 rowTime(m.At),
	}
}

func inboxFromRow(r store.InboxMessage) inboxModel {
	return inboxModel{
		ID:                r.ID,
		MessageID:         r.MessageID,
		Kind:              r.Kind,
		ProcessInstanceID: r.ProcessInstanceID,
		ProcessDefID:      r.ProcessDefID,
		Variable:          r.Variable,
		Value:             dbBytes(r.Value),
		ActivityDefID:     r.ActivityDefID,
		User:              r.User,
		Payload:           dbBytes(r.Payload),
		State:             r.State,
		Reason:            r.Reason,
		CreatedAt:         dbTime(r.CreatedAt),
		ExpiresAt:         dbTimePtr(r.ExpiresAt),
		EndedAt:           dbTimePtr(r.EndedAt),
	}
}

func (m *inboxModel) row() store.InboxMessage {
	return store.InboxMessage{
		ID:                m.ID,
		MessageID:         m.MessageID,
		Kind:              m.Kind,
		ProcessInstanceID: m.ProcessInstanceID,
		ProcessDefID:      m.ProcessDefID,
		Variable:          m.Variable,
		Value:             rowBytes(m.Value),
		ActivityDefID:     m.ActivityDefID,
		User:              m.User,
		Payload:           rowBytes(m.Payload),
		State:             m.State,
		Reason:            m.Reason,
		CreatedAt:         rowTime(m.CreatedAt),
		ExpiresAt:         rowTimePtr(m.ExpiresAt),
		EndedAt:           rowTimePtr(m.EndedAt),
	}
}
