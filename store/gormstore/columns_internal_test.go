package gormstore

import (
	"sync"
	"testing"

	"github.com/stretchr/testify/require"
	"gorm.io/gorm/schema"
)

// The column lists of the plain INSERTs must name every column of their
// model but the id, or a field added to the model would silently not be
// written on SQLite.
func TestPlainInsertColumnsMatchTheirModels(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		model   any
		columns []string
	}{
		{eventModel{}, eventColumns},
		{activityInstanceModel{}, activityInstanceColumns},
		{historyModel{}, historyColumns},
		{processInstanceModel{}, processInstanceColumns},
	} {
		sch, err := schema.Parse(tc.model, &sync.Map{}, schema.NamingStrategy{})
		require.NoError(t, err)
		var want []string
		for _, f := range sch.Fields {
			if f.DBName != "" && f.DBName != "id" {
				want = append(want, f.DBName)
			}
		}
		require.ElementsMatch(t, want, tc.columns, "%s", sch.Table)
	}
}

// values gives one value per column, in the same order as the columns.
func TestPlainInsertValuesMatchTheirColumns(t *testing.T) {
	t.Parallel()
	require.Len(t, eventModel{}.values(), len(eventColumns))
	require.Len(t, activityInstanceModel{}.values(), len(activityInstanceColumns))
	require.Len(t, processInstanceModel{}.values(), len(processInstanceColumns))
}
