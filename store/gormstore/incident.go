package gormstore

import (
	"context"
	"errors"
	"fmt"
	"time"

	"gorm.io/gorm"
	"gorm.io/gorm/clause"

	"github.com/goxpdl/goxpdl/store"
)

// tableIncidents holds the incidents.
const tableIncidents = "goxpdl_incidents"

// incidentModel is an incident. OpenKey names the subject of an open
// incident ("a:" and the activity instance, "p:" and the process
// instance) and is NULL once it is resolved: its unique index keeps one
// open incident per subject, on every node. goxpdl_incidents_cause
// (state, cause, process_instance_id) serves the counts by cause and
// the instances with an open incident of a cause, from the index alone;
// it replaced goxpdl_incidents_state (state, cause), which Migrate drops.
type incidentModel struct {
	ID                 int64      `gorm:"column:id;primaryKey;autoIncrement:false"`
	OpenKey            *string    `gorm:"column:open_key;size:64;uniqueIndex:goxpdl_incidents_open"`
	ProcessInstanceID  int64      `gorm:"column:process_instance_id;not null;index:goxpdl_incidents_process;index:goxpdl_incidents_cause,priority:3"`
	ActivityInstanceID *int64     `gorm:"column:activity_instance_id"`
	ActivityDefID      string     `gorm:"column:activity_def_id;size:255;not null"`
	Cause              string     `gorm:"column:cause;size:64;not null;index:goxpdl_incidents_cause,priority:2"`
	State              string     `gorm:"column:state;size:32;not null;index:goxpdl_incidents_cause,priority:1"`
	Error              string     `gorm:"column:error;type:text;not null"`
	Application        string     `gorm:"column:application;size:255;not null"`
	Params             []byte     `gorm:"column:params"`
	Attempts           int        `gorm:"column:attempts;not null"`
	FirstFailureAt     time.Time  `gorm:"column:first_failure_at;not null;precision:6"`
	LastFailureAt      time.Time  `gorm:"column:last_failure_at;not null;precision:6"`
	ResolvedAt         *time.Time `gorm:"column:resolved_at;precision:6"`
	ResolvedBy         string     `gorm:"column:resolved_by;size:255;not null"`
	Resolution         string     `gorm:"column:resolution;size:64;not null"`
}

func (incidentModel) TableName() string { return tableIncidents }

func (m incidentModel) row() store.Incident {
	return store.Incident{
		ID: m.ID, ProcessInstanceID: m.ProcessInstanceID, ActivityInstanceID: m.ActivityInstanceID,
		ActivityDefID: m.ActivityDefID, Cause: m.Cause, Error: m.Error, Application: m.Application,
		Params: rowBytes(m.Params), Attempts: m.Attempts, FirstFailureAt: rowTime(m.FirstFailureAt),
		LastFailureAt: rowTime(m.LastFailureAt), State: m.State, ResolvedAt: rowTimePtr(m.ResolvedAt),
		ResolvedBy: m.ResolvedBy, Resolution: m.Resolution,
	}
}

// incidentKey is the OpenKey of an open incident of inc's subject.
func incidentKey(processInstanceID int64, activityInstanceID *int64) string {
	if activityInstanceID != nil {
		return fmt.Sprintf("a:%d", *activityInstanceID)
	}
	return fmt.Sprintf("p:%d", processInstanceID)
}

// RecordIncident implements store.Tx.
func (s *Store) RecordIncident(ctx context.Context, inc store.Incident) (store.Incident, bool, error) {
	switch {
	case inc.ProcessInstanceID == 0:
		return store.Incident{}, false, errors.New("record incident: no process instance")
	case inc.Cause == "":
		return store.Incident{}, false, errors.New("record incident: no cause")
	}
	if err := errors.Join(
		requireID("record incident", inc.ID),
		requireTime("record incident: last failure at", inc.LastFailureAt),
	); err != nil {
		return store.Incident{}, false, err
	}
	key := incidentKey(inc.ProcessInstanceID, inc.ActivityInstanceID)
	var out incidentModel
	opened := false
	err := s.atomic(ctx, func(db *gorm.DB) error {
		var old incidentModel
		err := db.Clauses(clause.Locking{Strength: clause.LockingStrengthUpdate}).Take(&old, "open_key = ?", key).Error
		switch {
		case errors.Is(err, gorm.ErrRecordNotFound):
			opened = true
			first := inc.FirstFailureAt
			if first.IsZero() {
				first = inc.LastFailureAt
			}
			out = incidentModel{
				ID: inc.ID, OpenKey: &key, ProcessInstanceID: inc.ProcessInstanceID, ActivityInstanceID: inc.ActivityInstanceID,
				ActivityDefID: inc.ActivityDefID, Cause: inc.Cause, State: store.IncidentOpen, Error: inc.Error,
				Application: inc.Application, Params: dbBytes(inc.Params), Attempts: max(inc.Attempts, 1),
				FirstFailureAt: dbTime(first), LastFailureAt: dbTime(inc.LastFailureAt),
			}
			return db.Create(&out).Error
		case err != nil:
			return err
		}
		out = old
		out.Cause, out.Error, out.Application, out.Params = inc.Cause, inc.Error, inc.Application, dbBytes(inc.Params)
		out.LastFailureAt = dbTime(inc.LastFailureAt)
		if inc.Attempts > 0 {
			out.Attempts = inc.Attempts
		} else {
			out.Attempts++
		}
		if inc.ActivityDefID != "" {
			out.ActivityDefID = inc.ActivityDefID
		}
		return db.Model(&incidentModel{}).Where("id = ?", old.ID).Updates(map[string]any{
			"cause": out.Cause, "error": out.Error, "application": out.Application, "params": out.Params,
			"last_failure_at": out.LastFailureAt, "attempts": out.Attempts, "activity_def_id": out.ActivityDefID,
		}).Error
	})
	if err != nil {
		return store.Incident{}, false, wrap(err, "record incident %s", key)
	}
	return out.row(), opened, nil
}

// ResolveIncidents implements store.Tx.
func (s *Store) ResolveIncidents(ctx context.Context, params store.ResolveIncidentsParams) (int64, error) {
	if params.ProcessInstanceID == 0 {
		return 0, errors.New("resolve incidents: no process instance")
	}
	done, err := s.writing(ctx)
	if err != nil {
		return 0, err
	}
	defer done()
	q := s.db.WithContext(ctx).Model(&incidentModel{}).
		Where("process_instance_id = ? AND state = ?", params.ProcessInstanceID, store.IncidentOpen)
	if len(params.ActivityInstanceIDs) > 0 || params.ProcessLevel {
		keys := make([]string, 0, len(params.ActivityInstanceIDs)+1)
		for _, id := range params.ActivityInstanceIDs {
			keys = append(keys, incidentKey(params.ProcessInstanceID, &id))
		}
		if params.ProcessLevel {
			keys = append(keys, incidentKey(params.ProcessInstanceID, nil))
		}
		q = q.Where("open_key IN ?", keys)
	}
	res := q.Updates(map[string]any{
		"state": store.IncidentResolved, "open_key": nil, "resolved_at": dbTime(params.At),
		"resolved_by": params.By, "resolution": params.Resolution,
	})
	if res.Error != nil {
		return 0, wrap(res.Error, "resolve incidents of process instance %d", params.ProcessInstanceID)
	}
	return res.RowsAffected, nil
}

// GetIncident implements store.Tx.
func (s *Store) GetIncident(ctx context.Context, id int64) (store.Incident, error) {
	var m incidentModel
	if err := s.db.WithContext(ctx).Take(&m, "id = ?", id).Error; err != nil {
		return store.Incident{}, wrap(err, "get incident %d", id)
	}
	return m.row(), nil
}

// ListIncidents implements store.Tx.
func (s *Store) ListIncidents(ctx context.Context, params store.ListIncidentsParams) ([]store.Incident, error) {
	q := s.db.WithContext(ctx).Order("id")
	if params.ProcessInstanceID != 0 {
		q = q.Where("process_instance_id = ?", params.ProcessInstanceID)
	}
	if params.ActivityInstanceID != 0 {
		q = q.Where("activity_instance_id = ?", params.ActivityInstanceID)
	}
	if len(params.States) > 0 {
		q = q.Where("state IN ?", params.States)
	}
	if len(params.Causes) > 0 {
		q = q.Where("cause IN ?", params.Causes)
	}
	if params.AfterID != 0 {
		q = q.Where("id > ?", params.AfterID)
	}
	if params.Limit > 0 {
		q = q.Limit(params.Limit)
	}
	var ms []incidentModel
	if err := q.Find(&ms).Error; err != nil {
		return nil, wrap(err, "list incidents")
	}
	out := make([]store.Incident, len(ms))
	for i := range ms {
		out[i] = ms[i].row()
	}
	return out, nil
}

// CountIncidents implements store.Tx.
func (s *Store) CountIncidents(ctx context.Context, states []string) (map[string]int64, error) {
	q := s.db.WithContext(ctx).Model(&incidentModel{}).Select("cause, COUNT(*) AS n").Group("cause")
	if len(states) > 0 {
		q = q.Where("state IN ?", states)
	}
	var rows []struct {
		Cause string
		N     int64
	}
	if err := q.Scan(&rows).Error; err != nil {
		return nil, wrap(err, "count incidents")
	}
	out := make(map[string]int64, len(rows))
	for _, r := range rows {
		out[r.Cause] = r.N
	}
	return out, nil
}
