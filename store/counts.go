package store

import "time"

// InstanceCount is how many process instances of one definition and
// process are in one state (Tx.CountProcessInstanceGroups).
type InstanceCount struct {
	DefinitionID int64
	ProcessDefID string
	State        string
	N            int64
}

// InstanceOrder is the order Tx.ListProcessInstances returns rows in.
type InstanceOrder string

// The orders of process instances. The created orders break ties of
// CreatedAt by ID, in the same direction.
const (
	// OrderID is ID ascending, the default.
	OrderID InstanceOrder = ""
	// OrderIDDesc is ID descending.
	OrderIDDesc InstanceOrder = "id desc"
	// OrderCreated is CreatedAt ascending.
	OrderCreated InstanceOrder = "created"
	// OrderCreatedDesc is CreatedAt descending.
	OrderCreatedDesc InstanceOrder = "created desc"
)

// InstanceOrders lists every InstanceOrder.
var InstanceOrders = []InstanceOrder{OrderID, OrderIDDesc, OrderCreated, OrderCreatedDesc}

// Created reports whether o orders by CreatedAt.
func (o InstanceOrder) Created() bool { return o == OrderCreated || o == OrderCreatedDesc }

// Desc reports whether o is a descending order.
func (o InstanceOrder) Desc() bool { return o == OrderIDDesc || o == OrderCreatedDesc }

// CountPerMinuteParams are the arguments of
// Tx.CountProcessInstancesPerMinute: the minutes from From (rounded down
// to the minute) up to To, exclusive.
type CountPerMinuteParams struct {
	From, To time.Time
}

// MinuteCount is what happened to process instances in one minute.
type MinuteCount struct {
	// Minute is the minute's start, in UTC.
	Minute time.Time
	// Started counts the instances created in it.
	Started int64
	// Ended counts, by final state, the instances that ended in it.
	Ended map[string]int64
}

// EventBacklog describes the outbox's unprocessed events
// (Tx.EventBacklog).
type EventBacklog struct {
	// Events counts the unprocessed events, claimed or not, up to the
	// limit asked for.
	Events int64
	// Oldest is when the first unprocessed event (in ID order) was
	// created; nil when there is none.
	Oldest *time.Time
}

// CountTimersParams are the arguments of Tx.CountPendingTimers.
type CountTimersParams struct {
	// DueBy: timers due at or before it count as due.
	DueBy time.Time
	// Limit, when greater than 0, stops each count at it.
	Limit int64
}

// PendingTimerCounts counts the pending timers (Tx.CountPendingTimers).
type PendingTimerCounts struct {
	// Due counts those due by CountTimersParams.DueBy, Pending all of
	// them (due or not); each stops at CountTimersParams.Limit.
	Due, Pending int64
}
