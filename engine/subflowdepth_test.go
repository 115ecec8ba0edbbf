package engine_test

import (
	"context"
	"errors"
	"fmt"
	"log"
	"testing"

	"github.com/stretchr/testify/require"
	"gorm.io/gorm"

	"github.com/goxpdl/goxpdl/engine"
	"github.com/goxpdl/goxpdl/store/dbtest"
	"github.com/goxpdl/goxpdl/store/gormstore"
	"github.com/goxpdl/goxpdl/wftype"
	"github.com/goxpdl/goxpdl/xpdl/xpdltest"
)

// callsSubflow is an activity that calls process proc.
func callsSubflow(id, proc, execution string) string {
	return xpdltest.Activity(id, `<Implementation><SubFlow Id="`+proc+`" Execution="`+execution+`"/></Implementation>`, "", "")
}

// A process that calls itself without end (issue #24) stops at
// Config.MaxSubflowDepth: here through another process (A calls B calls
// A), at the default cap.
func TestSubflowDepthCapsMutualRecursion(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, db *gorm.DB) {
		h := newHarness(t, db).start()
		require.Equal(t, engine.DefaultMaxSubflowDepth, h.e.Settings().MaxSubflowDepth)
		h.deploy(xpdltest.Package(
			xpdltest.Process("a", "", callsSubflow("CallB", "b", "SYNCHR"), "") +
				xpdltest.Process("b", "", callsSubflow("CallA", "a", "SYNCHR"), "")))
		top := h.startProcess("pkg", "a", nil)
		h.idle()

		all, err := h.e.Instances(h.ctx, engine.InstanceFilter{Limit: 1000})
		require.NoError(t, err)
		require.Len(t, all.Instances, engine.DefaultMaxSubflowDepth+1, "the top instance and one a level")
		for _, pi := range all.Instances {
			require.Equal(t, wftype.ProcessRunning, pi.State)
		}

		page, err := h.e.Incidents(h.ctx, engine.IncidentFilter{})
		require.NoError(t, err)
		require.Len(t, page.Incidents, 1)
		inc := page.Incidents[0]
		require.Equal(t, engine.CauseSubflow, inc.Cause)
		// Depth 64 is the 65th instance, of a (a is at the even
		// depths): its CallB would start b at 65.
		require.Equal(t, "CallB", inc.Activity)
		want := &engine.SubflowDepthError{Activity: "CallB", Process: "b", Depth: 65, Max: 64}
		require.Equal(t, want.Error(), inc.Error)
		require.ErrorIs(t, want, engine.ErrSubflowDepth)
		require.Contains(t, inc.Error, "Config.MaxSubflowDepth (64)")
		kids := children(h, inc.Instance)
		require.Empty(t, kids, "the refused child was not created")

		// The engine goes on: terminating the top ends the chain.
		require.NoError(t, h.e.Terminate(h.ctx, top, engine.Op{Actor: "ops"}))
		h.idle()
		all, err = h.e.Instances(h.ctx, engine.InstanceFilter{Limit: 1000})
		require.NoError(t, err)
		for _, pi := range all.Instances {
			require.Equal(t, wftype.ProcessTerminated, pi.State, "instance %d", pi.ID)
		}
	})
}

// ASYNCHR subflows count too, here at a cap of two.
func TestSubflowDepthCapsAsynchr(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, db *gorm.DB) {
		h := newHarness(t, db, func(c *engine.Config) { c.MaxSubflowDepth = 2 }).start()
		require.Equal(t, 2, h.e.Settings().MaxSubflowDepth)
		h.deploy(xpdltest.Package(xpdltest.Process("spawn", "", callsSubflow("Fire", "spawn", "ASYNCHR"), "")))
		h.startProcess("pkg", "spawn", nil)
		h.idle()
		all, err := h.e.Instances(h.ctx, engine.InstanceFilter{Limit: 1000})
		require.NoError(t, err)
		require.Len(t, all.Instances, 3)
		page, err := h.e.Incidents(h.ctx, engine.IncidentFilter{})
		require.NoError(t, err)
		require.Len(t, page.Incidents, 1)
		require.Equal(t, "subflow depth limit exceeded: activity Fire would start process spawn at depth 3, more than Config.MaxSubflowDepth (2)", page.Incidents[0].Error)
	})
}

// selfXPDL's only activity calls its own process: a recursion without end.
const selfXPDL = `<Package xmlns="http://www.wfmc.org/2002/XPDL1.0" Id="hostile" Name="Hostile">
  <PackageHeader><XPDLVersion>1.0</XPDLVersion><Vendor>example</Vendor><Created>2026-11-26</Created></PackageHeader>
  <WorkflowProcesses><WorkflowProcess Id="self">
    <Activities>
      <Activity Id="Again"><Implementation><SubFlow Id="self" Execution="SYNCHR"/></Implementation></Activity>
    </Activities>
  </WorkflowProcess></WorkflowProcesses>
</Package>`

// Config.MaxSubflowDepth stops a process that calls itself: the SubFlow
// activity that would start a child too deep goes Abnormal, with an
// incident naming the limit.
func ExampleConfig_maxSubflowDepth() {
	ctx := context.Background()
	db, err := gormstore.OpenSQLite(gormstore.MemoryPath)
	if err != nil {
		log.Fatal(err)
	}
	e, err := engine.New(engine.Config{DB: db, MaxSubflowDepth: 2})
	if err != nil {
		log.Fatal(err)
	}
	if err := e.Start(ctx); err != nil {
		log.Fatal(err)
	}
	if _, err := e.Deploy(ctx, []byte(selfXPDL)); err != nil {
		log.Fatal(err)
	}
	if _, err := e.StartProcess(ctx, engine.StartOptions{Package: "hostile"}); err != nil {
		log.Fatal(err)
	}
	_ = e.WaitIdle(ctx)

	all, _ := e.Instances(ctx, engine.InstanceFilter{})
	page, _ := e.Incidents(ctx, engine.IncidentFilter{})
	inc := page.Incidents[0]
	fmt.Println(len(all.Instances), "instances")
	fmt.Println(inc.Cause, inc.Activity, inc.Error)
	err = &engine.SubflowDepthError{Activity: "Again", Process: "self", Depth: 3, Max: 2}
	fmt.Println(errors.Is(err, engine.ErrSubflowDepth))

	_ = e.Stop(ctx)
	if sqlDB, err := db.DB(); err == nil {
		_ = sqlDB.Close()
	}
	// Output:
	// 3 instances
	// subflow Again subflow depth limit exceeded: activity Again would start process self at depth 3, more than Config.MaxSubflowDepth (2)
	// true
}
