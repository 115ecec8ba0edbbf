package engine

import (
	"context"
	"io"
	"log/slog"
	"testing"

	"github.com/stretchr/testify/require"
	"gorm.io/gorm"

	"github.com/goxpdl/goxpdl/store/dbtest"
	"github.com/goxpdl/goxpdl/wftype"
	"github.com/goxpdl/goxpdl/workitem"
	"github.com/goxpdl/goxpdl/xpdl/xpdltest"
)

// offeredItem starts an instance of a process whose one manual activity
// offers a work item, on a started engine over db, and returns the
// engine, the instance and the item once the engine is idle (the run
// that offered the item cached the instance).
func offeredItem(t *testing.T, db *gorm.DB) (e *Engine, id, item int64) {
	t.Helper()
	e, err := New(Config{DB: db, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	require.NoError(t, err)
	ctx := t.Context()
	_, err = e.Deploy(ctx, []byte(xpdltest.Package(xpdltest.Process("p", "",
		xpdltest.Activity("M", `<Implementation><No/></Implementation><Performer>clerk</Performer>`, "", ""), ""))))
	require.NoError(t, err)
	require.NoError(t, e.Start(ctx))
	t.Cleanup(func() { require.NoError(t, e.Stop(context.Background())) })
	id, err = e.StartProcess(ctx, StartOptions{Package: "pkg"})
	require.NoError(t, err)
	require.NoError(t, e.WaitIdle(ctx))
	items, err := e.WorkItems(ctx, WorkItemFilter{Instance: id, States: workitem.OpenStates})
	require.NoError(t, err)
	require.Len(t, items.WorkItems, 1)
	_, ok := e.instances.get(id)
	require.True(t, ok, "the run that offered the item cached the instance")
	return e, id, items.WorkItems[0].ID
}

// A work-item command reads its instance from the cache. A cached copy
// that says less than the database (it refuses: the instance is
// suspended in the copy, running in the database) is not the last word:
// the command is asked again from the database and goes through.
func TestItemCommandRefusedFromAStaleCopyAsksTheDatabase(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, db *gorm.DB) {
		e, id, item := offeredItem(t, db)
		stale, _ := e.instances.get(id)
		stale.pi.State = string(wftype.ProcessSuspended)
		e.instances.put(stale)

		require.NoError(t, e.ClaimWorkItem(t.Context(), item, "clerk1", Op{}))
		done, err := e.CompleteWorkItem(t.Context(), item, Completion{User: "clerk1"})
		require.NoError(t, err)
		require.Equal(t, workitem.Completed, done.State)
		require.NoError(t, e.WaitIdle(t.Context()))
		inst, err := e.Instance(t.Context(), id)
		require.NoError(t, err)
		require.Equal(t, wftype.ProcessCompleted, inst.State)
	})
}

// A cached copy that lets a command through that the database refuses
// (the instance was suspended underneath: another node) fails the
// command's write on the instance's version; the command runs again from
// the database and is refused with the state error it would have had
// without the cache.
func TestItemCommandThroughAStaleCopyIsFencedByTheVersion(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, db *gorm.DB) {
		e, id, item := offeredItem(t, db)
		require.NoError(t, db.Exec("UPDATE goxpdl_process_instances SET state = ?, version = version + 1 WHERE id = ?",
			string(wftype.ProcessSuspended), id).Error)
		conflicts := e.Stats().Conflicts

		err := e.ClaimWorkItem(t.Context(), item, "clerk1", Op{})
		var refused *wftype.StateError
		require.ErrorAs(t, err, &refused)
		require.Equal(t, string(wftype.ProcessSuspended), refused.State)
		require.Equal(t, conflicts+1, e.Stats().Conflicts, "the cached copy's write met the new version")
		got, err := e.WorkItem(t.Context(), item)
		require.NoError(t, err)
		require.Equal(t, workitem.Offered, got.State, "nothing changed")
	})
}
