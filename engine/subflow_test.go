package engine_test

import (
	"context"
	"errors"
	"os"
	"testing"

	"github.com/stretchr/testify/require"
	"gorm.io/gorm"

	"github.com/goxpdl/goxpdl/engine"
	"github.com/goxpdl/goxpdl/store/dbtest"
	"github.com/goxpdl/goxpdl/wftype"
	"github.com/goxpdl/goxpdl/workitem"
	"github.com/goxpdl/goxpdl/xpdl/xpdltest"
)

// child doubles n (INOUT) and sets label (OUT) from prefix (IN).
var child = xpdltest.Process("child", `<FormalParameters>
    <FormalParameter Id="n" Mode="INOUT"><DataType><BasicType Type="INTEGER"/></DataType></FormalParameter>
    <FormalParameter Id="prefix" Mode="IN"><DataType><BasicType Type="STRING"/></DataType></FormalParameter>
    <FormalParameter Id="label" Mode="OUT"><DataType><BasicType Type="STRING"/></DataType></FormalParameter>
  </FormalParameters>`,
	xpdltest.Activity("Work", `<Implementation><Tool Id="calc"><ActualParameters>
      <ActualParameter>n</ActualParameter><ActualParameter>prefix</ActualParameter><ActualParameter>label</ActualParameter>
    </ActualParameters></Tool></Implementation>`, "", ""), "")

const calcApp = `<Applications><Application Id="calc"><FormalParameters>
    <FormalParameter Id="n" Mode="INOUT"><DataType><BasicType Type="INTEGER"/></DataType></FormalParameter>
    <FormalParameter Id="prefix" Mode="IN"><DataType><BasicType Type="STRING"/></DataType></FormalParameter>
    <FormalParameter Id="label" Mode="OUT"><DataType><BasicType Type="STRING"/></DataType></FormalParameter>
  </FormalParameters><ExtendedAttributes>
    <ExtendedAttribute Name="ToolAgentClass" Value="org.enhydra.shark.toolagent.JavaScriptToolAgent"/>
    <ExtendedAttribute Name="Script" Value="n = n * 2; label = prefix + n;"/>
  </ExtendedAttributes></Application></Applications>`

func subflowActivity(id, execution string) string {
	return xpdltest.Activity(id, `<Implementation><SubFlow Id="child" Execution="`+execution+`"><ActualParameters>
      <ActualParameter>x</ActualParameter><ActualParameter>"n="</ActualParameter><ActualParameter>s</ActualParameter>
    </ActualParameters></SubFlow></Implementation>`, "", "")
}

func TestSubflows(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, db *gorm.DB) {
		h := newHarness(t, db).start()

		t.Run("SynchrMapsParameters", func(t *testing.T) { //nolint:paralleltest // the steps share one engine and build on each other
			src := xpdltest.PackageWith(calcApp, xpdltest.Process("main", "",
				subflowActivity("Call", "SYNCHR")+xpdltest.Activity("After", "<Route/>", "", ""),
				xpdltest.Transition("t1", "Call>After"))+child)
			h.deploy(src)
			id := h.startProcess("pkg", "main", map[string]any{"x": 21})
			h.requireState(id, wftype.ProcessCompleted)
			require.Equal(t, int64(42), h.vars(id)["x"], "INOUT came back")
			require.Equal(t, "n=42", h.vars(id)["s"], "OUT came back")
			kids := children(h, id)
			require.Len(t, kids, 1)
			require.Equal(t, wftype.ProcessCompleted, kids[0].State)
		})

		t.Run("AsynchrDoesNotWait", func(t *testing.T) { //nolint:paralleltest // the steps share one engine and build on each other
			src := xpdltest.PackageWith(calcApp, xpdltest.Process("main", "",
				subflowActivity("Call", "ASYNCHR")+xpdltest.Activity("After", "<Route/>", "", ""),
				xpdltest.Transition("t1", "Call>After"))+child)
			h.deploy(src)
			id := h.startProcess("pkg", "main", map[string]any{"x": 5})
			h.requireState(id, wftype.ProcessCompleted)
			require.Equal(t, int64(5), h.vars(id)["x"], "nothing comes back from an asynchronous subflow")
			kids := children(h, id)
			require.Len(t, kids, 1)
			require.Equal(t, wftype.ProcessCompleted, kids[0].State)
		})

		t.Run("TerminatedChildLeavesParentActivityAbnormal", func(t *testing.T) { //nolint:paralleltest // the steps share one engine and build on each other
			manualChild := xpdltest.Process("child", "", xpdltest.Activity("Wait",
				`<Implementation><No/></Implementation><Performer>clerk</Performer>`, "", ""), "")
			src := xpdltest.Package(xpdltest.Process("main", "",
				xpdltest.Activity("Call", `<Implementation><SubFlow Id="child" Execution="SYNCHR"/></Implementation>`, "", ""), "") + manualChild)
			h.deploy(src)
			id := h.startProcess("pkg", "main", nil)
			h.idle()
			kids := children(h, id)
			require.Len(t, kids, 1)
			require.NoError(t, h.e.Terminate(h.ctx, kids[0].ID, engine.Op{}))
			h.requireState(id, wftype.ProcessRunning)
			acts, err := activitiesOf(h.ctx, h.e, id)
			require.NoError(t, err)
			require.Equal(t, wftype.ActivityAbnormal, acts[0].State)
			require.Contains(t, acts[0].Diagnosis, "Terminated")

			// Terminating the parent now is fine; the child is done.
			require.NoError(t, h.e.Terminate(h.ctx, id, engine.Op{}))
			h.requireState(id, wftype.ProcessTerminated)
		})

		t.Run("TerminatingParentTerminatesChild", func(t *testing.T) { //nolint:paralleltest // the steps share one engine and build on each other
			id := h.startProcess("pkg", "main", nil)
			h.idle()
			kids := children(h, id)
			require.Len(t, kids, 1)
			require.NoError(t, h.e.Terminate(h.ctx, id, engine.Op{}))
			h.requireState(kids[0].ID, wftype.ProcessTerminated)
			items, err := workItemsOf(h.ctx, h.e, engine.WorkItemFilter{Instance: kids[0].ID})
			require.NoError(t, err)
			require.Equal(t, workitem.Withdrawn, items[0].State)
		})
	})
}

func TestBlockActivityRunsItsSetInOneTransaction(t *testing.T) {
	t.Parallel()
	set := `<ActivitySets><ActivitySet Id="S"><Activities>` +
		xpdltest.Activity("S1", `<Implementation><Tool Id="write"/></Implementation>`, "", "and") +
		xpdltest.Activity("S2", "<Route/>", "", "") + xpdltest.Activity("S3", "<Route/>", "", "") +
		xpdltest.Activity("S4", `<Implementation><Tool Id="flaky"/></Implementation>`, "and", "") +
		`</Activities><Transitions>` +
		xpdltest.Transition("s1", "S1>S2") + xpdltest.Transition("s2", "S1>S3") +
		xpdltest.Transition("s3", "S2>S4") + xpdltest.Transition("s4", "S3>S4") +
		`</Transitions></ActivitySet></ActivitySets>`
	src := xpdltest.PackageWith(`<Applications><Application Id="write"/><Application Id="flaky"/></Applications>`,
		xpdltest.Process("p", set,
			xpdltest.Activity("Before", "<Route/>", "", "")+
				xpdltest.Activity("Block", `<BlockActivity BlockId="S"/>`, "", "")+
				xpdltest.Activity("After", "<Route/>", "", ""),
			xpdltest.Transition("t1", "Before>Block")+xpdltest.Transition("t2", "Block>After")))
	dbtest.Each(t, func(t *testing.T, db *gorm.DB) {
		require.NoError(t, db.Exec("CREATE TABLE business (k VARCHAR(64) NOT NULL)").Error)
		h := newHarness(t, db)
		writes, flakes := 0, 0
		h.e.RegisterApplication("write", func(_ context.Context, c *engine.Call) (map[string]any, error) {
			writes++
			return nil, c.Tx.Exec("INSERT INTO business (k) VALUES ('w')").Error
		})
		h.e.RegisterApplication("flaky", func(context.Context, *engine.Call) (map[string]any, error) {
			flakes++
			if flakes == 1 {
				return nil, engine.Retryable(errors.New("not yet"))
			}
			return nil, nil
		})
		h.start()
		h.deploy(src)
		id := h.startProcess("pkg", "", nil)
		h.requireState(id, wftype.ProcessCompleted)
		require.Equal(t, map[string]int{"Before": 1, "Block": 1, "S1": 1, "S2": 1, "S3": 1, "S4": 1, "After": 1}, h.started(id))
		require.Equal(t, 2, writes, "S1 ran again when S4's failure rolled the whole set back")
		var n int64
		require.NoError(t, db.Raw("SELECT COUNT(*) FROM business").Scan(&n).Error)
		require.Equal(t, int64(1), n, "the first run's write rolled back with the set's transaction")
	})
}

// TestTerminatedParentDropsChildsEnd: terminating a parent terminates its
// running subflow, whose end comes back to the parent as an event. The
// parent is Terminated by then; the event has nothing to do and is done.
// It used to fail (the Waiting activity cannot go Abnormal in a finished
// process) and be retried forever, a minute apart, found by the fault
// suite (TestSpecFaults), whose recovery moves the clock on.
func TestTerminatedParentDropsChildsEnd(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, db *gorm.DB) {
		t.Parallel()
		h := newHarness(t, db).start()
		src, err := os.ReadFile("../testdata/patterns/wcp20-cancel-case.xpdl")
		require.NoError(t, err)
		dep := h.deploy(string(src))
		id := h.startProcess(dep.PackageID, "main", nil)
		require.NoError(t, h.e.WaitQuiet(h.ctx))
		require.NoError(t, h.e.Terminate(h.ctx, id, engine.Op{}))
		require.NoError(t, h.e.WaitQuiet(h.ctx))
		b, err := h.e.Backlog(h.ctx)
		require.NoError(t, err)
		require.Zero(t, b.EventsAvailable+b.EventsWaiting, "an event is left to retry: %+v", b)
		require.Equal(t, wftype.ProcessTerminated, h.instance(id).State)
	})
}
