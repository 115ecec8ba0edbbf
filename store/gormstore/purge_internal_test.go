package gormstore

import (
	"slices"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"
	"gorm.io/gorm/schema"
)

// Every table whose rows belong to a process instance is purged with
// it: a model with a process_instance_id column must be in purgeTables,
// or retention would leave its rows behind. The worklist is reached
// through work_item_id.
func TestPurgeCoversEveryInstanceTable(t *testing.T) {
	t.Parallel()
	for _, m := range allModels {
		sch, err := schema.Parse(m, &sync.Map{}, schema.NamingStrategy{})
		require.NoError(t, err)
		switch {
		case sch.LookUpField("process_instance_id") != nil:
			require.Contains(t, purgeTables, sch.Table, "%s has process_instance_id: purge.go must delete its rows", sch.Table)
		case sch.LookUpField("instance_id") != nil:
			require.Contains(t, keptTables, sch.Table, "%s names instances: purge them (process_instance_id) or keep them on purpose (keptTables)", sch.Table)
		case sch.LookUpField("work_item_id") != nil:
			require.Equal(t, tableVisibility, sch.Table, "%s hangs off work items: purge.go must delete its rows", sch.Table)
		}
	}
	require.False(t, slices.Contains(purgeTables, tableProcessInstances), "instances are deleted last, under their own conditions")
	for _, kept := range keptTables {
		require.NotContains(t, purgeTables, kept, "%s is kept when instances are purged", kept)
	}
}
