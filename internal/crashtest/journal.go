package main

import (
	"context"
	"fmt"
	"time"

	"gorm.io/gorm"

	"github.com/goxpdl/goxpdl/engine"
)

// callModel is one application call as journaled: written in a
// connection of its own and committed at once (autocommit), outside the
// engine's transaction, so that a call whose engine transaction a kill
// lost is still on record.
type callModel struct {
	ID                 int64     `gorm:"column:id;primaryKey;autoIncrement"`
	IdempotencyKey     string    `gorm:"column:idempotency_key;size:255;not null;index:crash_calls_key"`
	ProcessInstanceID  int64     `gorm:"column:process_instance_id;not null"`
	ActivityInstanceID int64     `gorm:"column:activity_instance_id;not null"`
	ActivityDefID      string    `gorm:"column:activity_def_id;size:255;not null"`
	NodeID             string    `gorm:"column:node_id;size:64;not null"`
	At                 time.Time `gorm:"column:at;not null;precision:6"`
}

func (callModel) TableName() string { return "crash_calls" }

// migrateJournal creates the journal's table.
func migrateJournal(db *gorm.DB) error {
	if err := db.AutoMigrate(&callModel{}); err != nil {
		return fmt.Errorf("create crash_calls: %w", err)
	}
	return nil
}

// journal is the application the load's tool activities call.
type journal struct {
	db    *gorm.DB
	node  string
	sleep time.Duration
}

// call journals the call, sleeps a little (a kill is then more likely to
// land while the engine's transaction is open), and adds one to the
// counter parameter. A journal that cannot be written (the database is
// restarting) makes the call retryable: the engine rolls the step back
// and calls again later with the same idempotency key.
func (j *journal) call(ctx context.Context, call *engine.Call) (map[string]any, error) {
	row := callModel{
		IdempotencyKey: call.IdempotencyKey, ProcessInstanceID: call.ProcessInstanceID,
		ActivityInstanceID: call.ActivityInstanceID, ActivityDefID: call.ActivityID,
		NodeID: j.node, At: clock.Now().UTC().Truncate(time.Microsecond),
	}
	if err := j.db.WithContext(ctx).Create(&row).Error; err != nil {
		return nil, engine.Retryable(fmt.Errorf("journal call %s: %w", call.IdempotencyKey, err))
	}
	if err := pause(ctx, j.sleep); err != nil {
		return nil, engine.Retryable(err)
	}
	var n int64
	switch v := call.Params[counterVar].(type) {
	case int64:
		n = v
	case nil:
	default:
		return nil, fmt.Errorf("call %s: parameter %s is a %T, want an INTEGER", call.IdempotencyKey, counterVar, v)
	}
	return map[string]any{counterVar: n + 1}, nil
}

// callCount is how often one idempotency key was called.
type callCount struct {
	IdempotencyKey     string
	ActivityInstanceID int64
	ActivityDefID      string
	Calls              int64
}

// readCalls returns the journal, grouped by idempotency key and activity.
func readCalls(ctx context.Context, db *gorm.DB) ([]callCount, error) {
	var out []callCount
	err := db.WithContext(ctx).Raw(`SELECT idempotency_key, activity_instance_id, activity_def_id, COUNT(*) AS calls
		FROM crash_calls GROUP BY idempotency_key, activity_instance_id, activity_def_id`).Scan(&out).Error
	if err != nil {
		return nil, fmt.Errorf("read crash_calls: %w", err)
	}
	return out, nil
}
