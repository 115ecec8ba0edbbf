package gormstore

import (
	"context"
	"errors"
	"fmt"

	"github.com/goxpdl/goxpdl/store"
)

// InsertInboxMessage implements store.Tx, with the caller's id. The unique index on message_id
// turns a second insert of a MessageID into ErrDuplicate.
func (s *Store) InsertInboxMessage(ctx context.Context, msg store.InboxMessage) (store.InboxMessage, error) {
	done, err := s.writing(ctx)
	if err != nil {
		return store.InboxMessage{}, err
	}
	defer done()
	if msg.MessageID == "" {
		return store.InboxMessage{}, errors.New("insert inbox message: empty MessageID")
	}
	if err := errors.Join(
		requireID("insert inbox message", msg.ID),
		requireTime("insert inbox message: created at", msg.CreatedAt),
	); err != nil {
		return store.InboxMessage{}, err
	}
	m := inboxFromRow(msg)
	if err := s.db.WithContext(ctx).Create(&m).Error; err != nil {
		return store.InboxMessage{}, wrap(err, "insert inbox message %q", msg.MessageID)
	}
	return m.row(), nil
}

// GetInboxMessage implements store.Tx.
func (s *Store) GetInboxMessage(ctx context.Context, messageID string) (store.InboxMessage, error) {
	var m inboxModel
	if err := s.db.WithContext(ctx).Take(&m, "message_id = ?", messageID).Error; err != nil {
		return store.InboxMessage{}, wrap(err, "get inbox message %q", messageID)
	}
	return m.row(), nil
}

// ListInbox implements store.Tx.
func (s *Store) ListInbox(ctx context.Context, params store.ListInboxParams) ([]store.InboxMessage, error) {
	q := s.db.WithContext(ctx).Order("id")
	if params.ProcessInstanceID != 0 {
		q = q.Where("process_instance_id = ?", params.ProcessInstanceID)
	}
	if params.Unmatched {
		q = q.Where("process_instance_id = 0")
	}
	if params.ProcessDefID != "" {
		q = q.Where("process_def_id = ?", params.ProcessDefID)
	}
	if params.ActivityDefID != "" {
		q = q.Where("activity_def_id = ?", params.ActivityDefID)
	}
	if len(params.States) > 0 {
		q = q.Where("state IN ?", params.States)
	}
	if params.ExpiresBefore != nil {
		q = q.Where("expires_at < ?", dbTime(*params.ExpiresBefore))
	}
	if params.AfterID != 0 {
		q = q.Where("id > ?", params.AfterID)
	}
	if params.Limit > 0 {
		q = q.Limit(params.Limit)
	}
	var ms []inboxModel
	if err := q.Find(&ms).Error; err != nil {
		return nil, wrap(err, "list inbox")
	}
	out := make([]store.InboxMessage, len(ms))
	for i := range ms {
		out[i] = ms[i].row()
	}
	return out, nil
}

// UpdateInboxMessage implements store.Tx.
func (s *Store) UpdateInboxMessage(ctx context.Context, params store.UpdateInboxMessageParams) error {
	done, err := s.writing(ctx)
	if err != nil {
		return err
	}
	defer done()
	db := s.db.WithContext(ctx)
	q := db.Model(&inboxModel{}).Where("id = ?", params.ID)
	if params.ExpectedState != "" {
		q = q.Where("state = ?", params.ExpectedState)
	}
	res := q.Updates(map[string]any{
		"state":               params.State,
		"reason":              params.Reason,
		"process_instance_id": params.ProcessInstanceID,
		"ended_at":            dbTimePtr(params.EndedAt),
	})
	if res.Error != nil {
		return wrap(res.Error, "update inbox message %d", params.ID)
	}
	if res.RowsAffected == 1 {
		return nil
	}
	// No row changed: it does not exist, it left ExpectedState, or (MySQL
	// counts changed rows, not matched ones) it already had these values.
	var states []string
	if err := db.Model(&inboxModel{}).Where("id = ?", params.ID).Pluck("state", &states).Error; err != nil {
		return wrap(err, "update inbox message %d", params.ID)
	}
	switch {
	case len(states) == 0:
		return fmt.Errorf("update inbox message %d: %w", params.ID, store.ErrNotFound)
	case params.ExpectedState != "" && states[0] != params.ExpectedState:
		return fmt.Errorf("update inbox message %d: expected state %q, found %q: %w", params.ID, params.ExpectedState, states[0], store.ErrConflict)
	}
	return nil
}

// FindProcessInstancesByVariable implements store.Tx: a lookup of the
// index goxpdl_variables_value (name, value), joined to the instances by
// primary key. On MySQL the index holds a prefix of the value, on
// PostgreSQL its md5, and the equality on the whole value is tested in
// the row.
func (s *Store) FindProcessInstancesByVariable(ctx context.Context, params store.FindByVariableParams) ([]int64, error) {
	switch {
	case params.ProcessDefID == "":
		return nil, errors.New("find process instances by variable: empty ProcessDefID")
	case params.Name == "":
		return nil, errors.New("find process instances by variable: empty Name")
	case len(params.Value) == 0:
		return nil, errors.New("find process instances by variable: empty Value")
	}
	q := s.db.WithContext(ctx).Table(tableVariables+" AS v").
		Joins("JOIN "+tableProcessInstances+" AS p ON p.id = v.process_instance_id").
		Where("v.name = ? AND v.value = ? AND p.process_def_id = ?", params.Name, params.Value, params.ProcessDefID).
		Order("v.process_instance_id")
	if s.dialect == store.DialectPostgres {
		q = q.Where("md5(v.value) = ?", md5Hex(params.Value)) // the index's key (pgVariablesIndex)
	}
	if len(params.States) > 0 {
		q = q.Where("p.state IN ?", params.States)
	}
	if params.Limit > 0 {
		q = q.Limit(params.Limit)
	}
	var out []int64
	if err := q.Pluck("v.process_instance_id", &out).Error; err != nil {
		return nil, wrap(err, "find instances of process %q by variable %q", params.ProcessDefID, params.Name)
	}
	return out, nil
}
