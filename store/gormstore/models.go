package gormstore

import (
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
	tableEvents            = "goxpdl_events"
	tableHistory           = "goxpdl_history"
)

type definitionModel struct {
	ID        int64     `gorm:"column:id;primaryKey;autoIncrement"`
	PackageID string    `gorm:"column:package_id;size:255;not null;uniqueIndex:goxpdl_definitions_package_version,priority:1"`
	Version   int       `gorm:"column:version;not null;uniqueIndex:goxpdl_definitions_package_version,priority:2"`
	Name      string    `gorm:"column:name;type:text;not null"`
	Source    []byte    `gorm:"column:source"`
	CreatedAt time.Time `gorm:"column:created_at;not null;precision:6;autoCreateTime:false"`
}

func (definitionModel) TableName() string { return tableDefinitions }

type processInstanceModel struct {
	ID               int64      `gorm:"column:id;primaryKey;autoIncrement;index:goxpdl_process_instances_state,priority:2"`
	DefinitionID     int64      `gorm:"column:definition_id;not null;index:goxpdl_process_instances_definition"`
	ProcessDefID     string     `gorm:"column:process_def_id;size:255;not null"`
	ParentInstanceID *int64     `gorm:"column:parent_instance_id;index:goxpdl_process_instances_parent"`
	ParentActivityID *int64     `gorm:"column:parent_activity_id"`
	State            string     `gorm:"column:state;size:64;not null;index:goxpdl_process_instances_state,priority:1"`
	Version          int64      `gorm:"column:version;not null"`
	Diagnosis        string     `gorm:"column:diagnosis;type:text;not null"`
	Tokens           []byte     `gorm:"column:tokens"`
	CreatedAt        time.Time  `gorm:"column:created_at;not null;precision:6;autoCreateTime:false"`
	UpdatedAt        time.Time  `gorm:"column:updated_at;not null;precision:6;autoUpdateTime:false"`
	EndedAt          *time.Time `gorm:"column:ended_at;precision:6"`
}

func (processInstanceModel) TableName() string { return tableProcessInstances }

type activityInstanceModel struct {
	ID                int64      `gorm:"column:id;primaryKey;autoIncrement"`
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
}

func (activityInstanceModel) TableName() string { return tableActivityInstances }

type variableModel struct {
	ProcessInstanceID int64  `gorm:"column:process_instance_id;primaryKey;autoIncrement:false"`
	Name              string `gorm:"column:name;primaryKey;size:255"`
	Type              string `gorm:"column:type;size:64;not null"`
	Value             []byte `gorm:"column:value"`
}

func (variableModel) TableName() string { return tableVariables }

type workItemModel struct {
	ID                 int64      `gorm:"column:id;primaryKey;autoIncrement"`
	ProcessInstanceID  int64      `gorm:"column:process_instance_id;not null;index:goxpdl_work_items_process_state,priority:1"`
	ActivityInstanceID int64      `gorm:"column:activity_instance_id;not null;index:goxpdl_work_items_activity"`
	State              string     `gorm:"column:state;size:64;not null;index:goxpdl_work_items_process_state,priority:2;index:goxpdl_work_items_state"`
	Performer          string     `gorm:"column:performer;size:255;not null"`
	CreatedAt          time.Time  `gorm:"column:created_at;not null;precision:6;autoCreateTime:false"`
	UpdatedAt          time.Time  `gorm:"column:updated_at;not null;precision:6;autoUpdateTime:false"`
	EndedAt            *time.Time `gorm:"column:ended_at;precision:6"`
}

func (workItemModel) TableName() string { return tableWorkItems }

// eventModel is the outbox. The claim query is "unprocessed, available,
// unclaimed, in ID order, LIMIT n"; the index (processed_at, id) lets both
// databases walk the unprocessed events already in ID order and stop after
// n matches, instead of sorting every available event. That matters on
// MySQL, where FOR UPDATE locks every row the query reads: a sort would
// lock the whole backlog and SKIP LOCKED would then hide it from the other
// claimants.
type eventModel struct {
	ID                int64      `gorm:"column:id;primaryKey;autoIncrement;index:goxpdl_events_claim,priority:2"`
	EventID           string     `gorm:"column:event_id;size:255;not null;uniqueIndex:goxpdl_events_event_id"`
	ProcessInstanceID int64      `gorm:"column:process_instance_id;not null;index:goxpdl_events_process"`
	Kind              string     `gorm:"column:kind;size:128;not null"`
	Payload           []byte     `gorm:"column:payload"`
	Critical          bool       `gorm:"column:critical;not null"`
	CreatedAt         time.Time  `gorm:"column:created_at;not null;precision:6;autoCreateTime:false"`
	AvailableAt       time.Time  `gorm:"column:available_at;not null;precision:6"`
	ProcessedAt       *time.Time `gorm:"column:processed_at;precision:6;index:goxpdl_events_claim,priority:1"`
	Attempts          int        `gorm:"column:attempts;not null"`
	ClaimedBy         string     `gorm:"column:claimed_by;size:255;not null"`
	ClaimedUntil      *time.Time `gorm:"column:claimed_until;precision:6"`
}

func (eventModel) TableName() string { return tableEvents }

type historyModel struct {
	ID                 int64     `gorm:"column:id;primaryKey;autoIncrement;index:goxpdl_history_process,priority:2"`
	ProcessInstanceID  int64     `gorm:"column:process_instance_id;not null;index:goxpdl_history_process,priority:1"`
	ActivityInstanceID *int64    `gorm:"column:activity_instance_id"`
	WorkItemID         *int64    `gorm:"column:work_item_id"`
	Subject            string    `gorm:"column:subject;size:32;not null"`
	FromState          string    `gorm:"column:from_state;size:64;not null"`
	ToState            string    `gorm:"column:to_state;size:64;not null"`
	Actor              string    `gorm:"column:actor;size:255;not null"`
	Data               []byte    `gorm:"column:data"`
	At                 time.Time `gorm:"column:at;not null;precision:6"`
}

func (historyModel) TableName() string { return tableHistory }

// allModels lists the models Migrate creates, in dependency order.
var allModels = []any{
	&definitionModel{},
	&processInstanceModel{},
	&activityInstanceModel{},
	&variableModel{},
	&workItemModel{},
	&eventModel{},
	&historyModel{},
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
	return store.Definition{
		ID:        m.ID,
		PackageID: m.PackageID,
		Version:   m.Version,
		Name:      m.Name,
		Source:    rowBytes(m.Source),
		CreatedAt: rowTime(m.CreatedAt),
	}
}

func processInstanceFromRow(r store.ProcessInstance) processInstanceModel {
	return processInstanceModel{
		ID:               r.ID,
		DefinitionID:     r.DefinitionID,
		ProcessDefID:     r.ProcessDefID,
		ParentInstanceID: copyInt64Ptr(r.ParentInstanceID),
		ParentActivityID: copyInt64Ptr(r.ParentActivityID),
		State:            r.State,
		Version:          r.Version,
		Diagnosis:        r.Diagnosis,
		Tokens:           dbBytes(r.Tokens),
		CreatedAt:        dbTime(r.CreatedAt),
		UpdatedAt:        dbTime(r.UpdatedAt),
		EndedAt:          dbTimePtr(r.EndedAt),
	}
}

func (m *processInstanceModel) row() store.ProcessInstance {
	return store.ProcessInstance{
		ID:               m.ID,
		DefinitionID:     m.DefinitionID,
		ProcessDefID:     m.ProcessDefID,
		ParentInstanceID: copyInt64Ptr(m.ParentInstanceID),
		ParentActivityID: copyInt64Ptr(m.ParentActivityID),
		State:            m.State,
		Version:          m.Version,
		Diagnosis:        m.Diagnosis,
		Tokens:           rowBytes(m.Tokens),
		CreatedAt:        rowTime(m.CreatedAt),
		UpdatedAt:        rowTime(m.UpdatedAt),
		EndedAt:          rowTimePtr(m.EndedAt),
	}
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
	}
}

func (m *activityInstanceModel) row() store.ActivityInstance {
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
		State:              r.State,
		Performer:          r.Performer,
		CreatedAt:          dbTime(r.CreatedAt),
		UpdatedAt:          dbTime(r.UpdatedAt),
		EndedAt:            dbTimePtr(r.EndedAt),
	}
}

func (m *workItemModel) row() store.WorkItem {
	return store.WorkItem{
		ID:                 m.ID,
		ProcessInstanceID:  m.ProcessInstanceID,
		ActivityInstanceID: m.ActivityInstanceID,
		State:              m.State,
		Performer:          m.Performer,
		CreatedAt:          rowTime(m.CreatedAt),
		UpdatedAt:          rowTime(m.UpdatedAt),
		EndedAt:            rowTimePtr(m.EndedAt),
	}
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
