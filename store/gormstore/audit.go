package gormstore

import (
	"context"
	"errors"
	"time"

	"github.com/goxpdl/goxpdl/store"
)

// tableAudit is the audit log of operator commands (store/audit.go). It
// is not in purgeTables: the log outlives the instances it names, whose
// ids are in instance_id and target_id (see keptTables).
const tableAudit = "goxpdl_audit"

// auditModel is an audit entry. The indexes serve the log's filters,
// newest first: each ends, implicitly, with the primary key (InnoDB's
// secondary indexes carry it; SQLite's carry the rowid, which id is).
type auditModel struct {
	ID         int64     `gorm:"column:id;primaryKey;autoIncrement:false"`
	At         time.Time `gorm:"column:at;not null;precision:6;index:goxpdl_audit_at"`
	Actor      string    `gorm:"column:actor;size:255;not null;index:goxpdl_audit_actor"`
	Action     string    `gorm:"column:action;size:64;not null;index:goxpdl_audit_action"`
	TargetKind string    `gorm:"column:target_kind;size:32;not null;index:goxpdl_audit_target,priority:1"`
	TargetID   string    `gorm:"column:target_id;size:255;not null;index:goxpdl_audit_target,priority:2"`
	InstanceID *int64    `gorm:"column:instance_id;index:goxpdl_audit_instance"`
	Reason     string    `gorm:"column:reason;type:text;not null"`
	Data       []byte    `gorm:"column:data"`
	Result     string    `gorm:"column:result;size:16;not null"`
	Error      string    `gorm:"column:error;type:text;not null"`
	Detail     string    `gorm:"column:detail;type:text;not null"`
}

func (auditModel) TableName() string { return tableAudit }

func (m *auditModel) row() store.AuditEntry {
	return store.AuditEntry{
		ID: m.ID, At: rowTime(m.At), Actor: m.Actor, Action: m.Action, TargetKind: m.TargetKind, TargetID: m.TargetID,
		InstanceID: copyInt64Ptr(m.InstanceID), Reason: m.Reason, Data: rowBytes(m.Data), Result: m.Result,
		Error: m.Error, Detail: m.Detail,
	}
}

// auditColumns are the columns InsertAudit writes, in the order of its
// row's values.
var auditColumns = []string{"at", "actor", "action", "target_kind", "target_id", "instance_id", "reason", "data", "result", "error", "detail"}

// auditColumnsWithID are the id and auditColumns.
var auditColumnsWithID = append([]string{"id"}, auditColumns...)

// InsertAudit implements store.Tx: a plain INSERT, held back in a
// pipelined transaction like a history row.
func (s *Store) InsertAudit(ctx context.Context, e store.AuditEntry) error {
	switch {
	case e.Action == "":
		return errors.New("insert audit entry: no action")
	case e.Result == "":
		return errors.New("insert audit entry: no result")
	}
	if err := errors.Join(
		requireID("insert audit entry", e.ID),
		requireTime("insert audit entry: at", e.At),
	); err != nil {
		return err
	}
	done, err := s.writing(ctx)
	if err != nil {
		return err
	}
	defer done()
	row := []any{e.ID, dbTime(e.At), e.Actor, e.Action, e.TargetKind, e.TargetID, copyInt64Ptr(e.InstanceID), e.Reason,
		dbBytes(e.Data), e.Result, e.Error, e.Detail}
	if err := insertRows(ctx, s, tableAudit, auditColumnsWithID, [][]any{row}); err != nil {
		return wrap(err, "insert audit entry %s", e.Action)
	}
	return nil
}

// ListAudit implements store.Tx.
func (s *Store) ListAudit(ctx context.Context, params store.ListAuditParams) ([]store.AuditEntry, error) {
	q := s.db.WithContext(ctx).Order("id DESC")
	if params.Actor != "" {
		q = q.Where("actor = ?", params.Actor)
	}
	if len(params.Actions) > 0 {
		q = q.Where("action IN ?", params.Actions)
	}
	if len(params.Results) > 0 {
		q = q.Where("result IN ?", params.Results)
	}
	if params.TargetKind != "" {
		q = q.Where("target_kind = ?", params.TargetKind)
	}
	if params.TargetID != "" {
		q = q.Where("target_id = ?", params.TargetID)
	}
	if params.InstanceID != 0 {
		q = q.Where("instance_id = ?", params.InstanceID)
	}
	if params.From != nil {
		q = q.Where("at >= ?", dbTime(*params.From))
	}
	if params.Before != nil {
		q = q.Where("at < ?", dbTime(*params.Before))
	}
	if params.BeforeID != 0 {
		q = q.Where("id < ?", params.BeforeID)
	}
	if params.Limit > 0 {
		q = q.Limit(params.Limit)
	}
	var ms []auditModel
	if err := q.Find(&ms).Error; err != nil {
		return nil, wrap(err, "list audit entries")
	}
	out := make([]store.AuditEntry, len(ms))
	for i := range ms {
		out[i] = ms[i].row()
	}
	return out, nil
}
