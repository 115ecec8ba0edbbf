package gormstore

import (
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/goxpdl/goxpdl/store"
)

// A run of transitions of one subject at one instant is one row, and
// gives back its entries (the conformance suite checks those on every
// database; this checks the rows).
func TestHistoryRunsAreOneRow(t *testing.T) {
	t.Parallel()
	db, err := OpenSQLite(filepath.Join(t.TempDir(), "history.db"))
	require.NoError(t, err)
	t.Cleanup(func() { closeGorm(db) })
	s, err := New(db)
	require.NoError(t, err)
	require.NoError(t, s.Migrate(t.Context()))

	at := time.Date(2026, 11, 27, 6, 0, 0, 0, time.UTC)
	act, next := int64(50), int64(100)
	entry := func(subject string, activity *int64, from, to string) store.HistoryEntry {
		next++
		return store.HistoryEntry{ID: next, ProcessInstanceID: 1, ActivityInstanceID: activity, Subject: subject, FromState: from, ToState: to, Actor: "engine", At: at}
	}
	// One step of a chain: an activity runs and completes, the next
	// one is created.
	step := []store.HistoryEntry{
		entry(store.SubjectActivity, &act, "Initiated", "Active"),
		entry(store.SubjectActivity, &act, "Active", "Completed"),
		entry(store.SubjectActivity, new(int64(51)), "", "Initiated"),
	}
	require.NoError(t, s.InsertHistory(t.Context(), step))

	var rows []historyModel
	require.NoError(t, db.Order("id").Find(&rows).Error)
	require.Len(t, rows, 2)
	require.Equal(t, historyModel{ID: 101, ProcessInstanceID: 1, ActivityInstanceID: &act, Subject: store.SubjectActivity,
		FromState: "Initiated", Via: "Active", ToState: "Completed", Actor: "engine", At: rows[0].At}, rows[0])
	require.Empty(t, rows[1].Via)

	got, err := s.ListHistory(t.Context(), store.ListHistoryParams{ProcessInstanceID: 1})
	require.NoError(t, err)
	require.Len(t, got, 3)
	require.Equal(t, []int64{101, 102, 103}, []int64{got[0].ID, got[1].ID, got[2].ID})
	require.Equal(t, "Active", got[1].FromState)
	require.Equal(t, "Completed", got[1].ToState)
}
