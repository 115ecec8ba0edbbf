package engine_test

import (
	"context"
	"errors"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/require"
	"gorm.io/gorm"

	"github.com/goxpdl/goxpdl/engine"
	"github.com/goxpdl/goxpdl/store/dbtest"
	"github.com/goxpdl/goxpdl/wftype"
	"github.com/goxpdl/goxpdl/xpdl"
	"github.com/goxpdl/goxpdl/xpdl/xpdltest"
)

func TestControlFlow(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		src     string
		vars    map[string]any
		state   wftype.ProcessState
		started map[string]int
		diag    string
	}{
		{
			name:    "Sequence",
			src:     xpdltest.Graph("A B C", "A>B", "B>C"),
			state:   wftype.ProcessCompleted,
			started: map[string]int{"A": 1, "B": 1, "C": 1},
		},
		{
			name:    "XorSplitOnDataWithJavaEquals",
			src:     xpdltest.Graph("A:/xor B C D", `A>B?s.equals("b")`, "A>C?x > 1", "A>D!otherwise"),
			vars:    map[string]any{"s": "b"},
			state:   wftype.ProcessCompleted,
			started: map[string]int{"A": 1, "B": 1},
		},
		{
			name:    "XorOtherwise",
			src:     xpdltest.Graph("A:/xor B C D", `A>B?s.equals("b")`, "A>C?x > 1", "A>D!otherwise"),
			state:   wftype.ProcessCompleted,
			started: map[string]int{"A": 1, "D": 1},
		},
		{
			name:    "AndSplitAndJoin",
			src:     xpdltest.Graph("A:/and B C D:and E", "A>B", "A>C", "B>D", "C>D", "D>E"),
			state:   wftype.ProcessCompleted,
			started: map[string]int{"A": 1, "B": 1, "C": 1, "D": 1, "E": 1},
		},
		{
			name:    "OrJoinDeadPathEliminated",
			src:     xpdltest.Graph("A:/or B C D:or", "A>B?x == 0", "A>C?x == 1", "B>D", "C>D"),
			state:   wftype.ProcessCompleted,
			started: map[string]int{"A": 1, "B": 1, "D": 1},
		},
		{
			name:    "OrJoinBothBranches",
			src:     xpdltest.Graph("A:/or B C D:or", "A>B?x == 0", "A>C?x < 5", "B>D", "C>D"),
			state:   wftype.ProcessCompleted,
			started: map[string]int{"A": 1, "B": 1, "C": 1, "D": 1},
		},
		{
			name:    "ImplicitSplitAndXorJoin",
			src:     xpdltest.Graph("A B C D", "A>B", "A>C", "B>D", "C>D"),
			state:   wftype.ProcessCompleted,
			started: map[string]int{"A": 1, "B": 1, "C": 1, "D": 2},
		},
		{
			name:    "LockingWithDiagnosis",
			src:     xpdltest.Graph("A:/xor B C D:and", "A>B", "A>C", "B>D", "C>D"),
			state:   wftype.ProcessLocking,
			started: map[string]int{"A": 1, "B": 1},
			diag:    "AND-join D can never fire: it waits for t4 from C (arrived: t3 from B)",
		},
		{
			name:    "ImplicitTerminationAtEndPoints",
			src:     xpdltest.Graph("A:/and B C D", "A>B", "A>C", "C>D"),
			state:   wftype.ProcessCompleted,
			started: map[string]int{"A": 1, "B": 1, "C": 1, "D": 1},
		},
		{
			name:    "LostBranchesLock",
			src:     xpdltest.Graph("A:/and B:/xor C:/xor D E", "A>B", "A>C", "B>D?x > 0", "C>E?x > 0"),
			state:   wftype.ProcessLocking,
			started: map[string]int{"A": 1, "B": 1, "C": 1},
			diag:    "branch lost at B: no successor could fire: t3 [x > 0] is false (x=0); branch lost at C: no successor could fire: t4 [x > 0] is false (x=0)",
		},
		{
			name:    "ConditionErrorLeavesActivityAbnormal",
			src:     xpdltest.Graph("A:/xor B", "A>B?nosuchvar > 0"),
			state:   wftype.ProcessRunning,
			started: map[string]int{"A": 1},
		},
	}
	dbtest.Each(t, func(t *testing.T, db *gorm.DB) {
		h := newHarness(t, db).start()
		for _, tt := range tests {
			t.Run(tt.name, func(t *testing.T) {
				src := strings.Replace(tt.src, `Id="pkg"`, `Id="`+tt.name+`"`, 1)
				h.deploy(src)
				id := h.startProcess(tt.name, "", tt.vars)
				pi := h.requireState(id, tt.state)
				require.Equal(t, tt.started, h.started(id))
				require.Equal(t, tt.diag, pi.Diagnosis)
			})
		}
	})
}

func TestAbnormalActivityKeepsItsDiagnosis(t *testing.T) {
	t.Parallel()
	h := newHarness(t, dbtest.OpenSQLite(t)).start()
	h.deploy(xpdltest.Graph("A:/xor B", "A>B?nosuchvar > 0"))
	id := h.startProcess("pkg", "", nil)
	h.requireState(id, wftype.ProcessRunning)
	acts, err := activitiesOf(h.ctx, h.e, id)
	require.NoError(t, err)
	require.Len(t, acts, 1)
	require.Equal(t, wftype.ActivityAbnormal, acts[0].State)
	require.Contains(t, acts[0].Diagnosis, "transition t1")
	require.Contains(t, acts[0].Diagnosis, "nosuchvar")
}

// apps is a package with applications used by the tool tests.
const apps = `<Applications>
  <Application Id="double"><FormalParameters>
    <FormalParameter Id="in" Mode="IN"><DataType><BasicType Type="INTEGER"/></DataType></FormalParameter>
    <FormalParameter Id="out" Mode="OUT"><DataType><BasicType Type="INTEGER"/></DataType></FormalParameter>
  </FormalParameters></Application>
  <Application Id="inc"><FormalParameters>
    <FormalParameter Id="counter" Mode="INOUT"><DataType><BasicType Type="INTEGER"/></DataType></FormalParameter>
  </FormalParameters><ExtendedAttributes>
    <ExtendedAttribute Name="ToolAgentClass" Value="org.enhydra.shark.toolagent.JavaScriptToolAgent"/>
    <ExtendedAttribute Name="Script" Value="counter = counter + 1;"/>
  </ExtendedAttributes></Application>
  <Application Id="risky"/>
</Applications>`

func tool(id, app string, params ...string) string {
	var ap string
	for _, p := range params {
		ap += "<ActualParameter>" + p + "</ActualParameter>"
	}
	return xpdltest.Activity(id, `<Implementation><Tool Id="`+app+`"><ActualParameters>`+ap+`</ActualParameters></Tool></Implementation>`, "", "")
}

func toolPackage(id, activities, transitions string) string {
	src := xpdltest.PackageWith(apps, xpdltest.Process("p", "", activities, transitions))
	return strings.Replace(src, `Id="pkg"`, `Id="`+id+`"`, 1)
}

func TestApplications(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, db *gorm.DB) {
		require.NoError(t, db.Exec("CREATE TABLE business (k VARCHAR(64) NOT NULL)").Error)
		h := newHarness(t, db)
		var calls []engine.Call
		h.e.RegisterApplication("double", func(_ context.Context, c *engine.Call) (map[string]any, error) {
			calls = append(calls, *c)
			if err := c.Tx.Exec("INSERT INTO business (k) VALUES (?)", c.IdempotencyKey).Error; err != nil {
				return nil, err
			}
			return map[string]any{"out": c.Params["in"].(int64) * 2}, nil
		})
		var riskyCalls atomic.Int64
		h.e.RegisterApplication("risky", func(_ context.Context, c *engine.Call) (map[string]any, error) {
			n := riskyCalls.Add(1)
			switch {
			case n == 1:
				return nil, engine.Retryable(errors.New("try again"))
			case strings.HasPrefix(c.ActivityID, "Exc"):
				return nil, &engine.ApplicationException{Name: "Overdrawn"}
			case strings.HasPrefix(c.ActivityID, "Fatal"):
				return nil, errors.New("disk on fire")
			}
			return nil, nil
		})
		h.start()

		t.Run("OutParametersAndHostWrites", func(t *testing.T) { //nolint:paralleltest // the steps share one engine and build on each other
			h.deploy(toolPackage("tools", tool("A", "double", "x", "x")+tool("B", "inc", "x"), xpdltest.Transition("t1", "A>B")))
			id := h.startProcess("tools", "", map[string]any{"x": 21})
			h.requireState(id, wftype.ProcessCompleted)
			require.Equal(t, int64(43), h.vars(id)["x"], "double then the JavaScript tool agent's increment")
			require.Len(t, calls, 1)
			require.Equal(t, map[string]any{"in": int64(21), "out": int64(21)}, calls[0].Params, "OUT parameters come with their current value")
			require.NotEmpty(t, calls[0].IdempotencyKey)
			var keys []string
			require.NoError(t, db.Raw("SELECT k FROM business").Scan(&keys).Error)
			require.Equal(t, []string{calls[0].IdempotencyKey}, keys, "the host's write committed with the step")
		})

		t.Run("RetryableThenException", func(t *testing.T) { //nolint:paralleltest // the steps share one engine and build on each other
			h.deploy(toolPackage("exc",
				tool("Exc", "risky")+xpdltest.Activity("Normal", "<Route/>", "", "")+xpdltest.Activity("Handler", "<Route/>", "", ""),
				xpdltest.Transition("t1", "Exc>Normal")+xpdltest.Transition("t2", "Exc>Handler!exception=Overdrawn")))
			id := h.startProcess("exc", "", nil)
			h.requireState(id, wftype.ProcessCompleted)
			require.Equal(t, map[string]int{"Exc": 1, "Handler": 1}, h.started(id))
			require.Equal(t, int64(2), riskyCalls.Load(), "the retryable failure was retried")
		})

		t.Run("FatalGoesAbnormal", func(t *testing.T) { //nolint:paralleltest // the steps share one engine and build on each other
			h.deploy(toolPackage("fatal", tool("Fatal", "risky")+xpdltest.Activity("B", "<Route/>", "", ""), xpdltest.Transition("t1", "Fatal>B")))
			id := h.startProcess("fatal", "", nil)
			h.requireState(id, wftype.ProcessRunning)
			acts, err := activitiesOf(h.ctx, h.e, id)
			require.NoError(t, err)
			require.Len(t, acts, 1)
			require.Equal(t, wftype.ActivityAbnormal, acts[0].State)
			require.Contains(t, acts[0].Diagnosis, "disk on fire")
		})

		t.Run("UnboundApplicationIsFatalByDefault", func(t *testing.T) { //nolint:paralleltest // the steps share one engine and build on each other
			src := strings.ReplaceAll(toolPackage("unbound", tool("A", "nobody"), ""), `<Application Id="risky"/>`, `<Application Id="nobody"/>`)
			h.deploy(src)
			id := h.startProcess("unbound", "", nil)
			h.requireState(id, wftype.ProcessRunning)
			acts, err := activitiesOf(h.ctx, h.e, id)
			require.NoError(t, err)
			require.Contains(t, acts[0].Diagnosis, engine.ErrNoApplication.Error())
		})
	})
}

func TestNoOpUnboundApplications(t *testing.T) {
	t.Parallel()
	h := newHarness(t, dbtest.OpenSQLite(t), func(c *engine.Config) { c.NoOpUnboundApplications = true }).start()
	h.deploy(toolPackage("noop", tool("A", "double", "x", "x"), ""))
	id := h.startProcess("noop", "", map[string]any{"x": 5})
	h.requireState(id, wftype.ProcessCompleted)
	require.Equal(t, int64(5), h.vars(id)["x"], "a no-op leaves OUT parameters alone")
}

func TestWorkItems(t *testing.T) {
	t.Parallel()
	manual := xpdltest.Package(xpdltest.Process("p", "",
		xpdltest.Activity("Approve", `<Implementation><No/></Implementation><Performer>clerk</Performer>`, "", "xor")+
			xpdltest.Activity("Yes", "<Route/>", "", "")+xpdltest.Activity("No", "<Route/>", "", ""),
		xpdltest.Transition("t1", "Approve>Yes?x > 0")+xpdltest.Transition("t2", "Approve>No!otherwise")))
	dbtest.Each(t, func(t *testing.T, db *gorm.DB) {
		h := newHarness(t, db).start()
		h.deploy(manual)
		id := h.startProcess("pkg", "", nil)
		items := h.openItems(id)
		require.Len(t, items, 1)
		require.Equal(t, "clerk", items[0].Performer)
		acts, err := activitiesOf(h.ctx, h.e, id)
		require.NoError(t, err)
		require.Equal(t, wftype.ActivityInActive, acts[0].State)

		err = h.complete(items[0].ID, map[string]any{"x": "lots"})
		require.ErrorIs(t, err, engine.ErrWrongType)
		err = h.complete(items[0].ID, map[string]any{"nope": 1})
		require.ErrorIs(t, err, engine.ErrUnknownVariable)
		require.Len(t, h.openItems(id), 1, "refused completions change nothing")
		require.Equal(t, int64(0), h.vars(id)["x"])

		require.NoError(t, h.complete(items[0].ID, map[string]any{"x": 3}))
		h.requireState(id, wftype.ProcessCompleted)
		require.Equal(t, map[string]int{"Approve": 1, "Yes": 1}, h.started(id))

		err = h.complete(items[0].ID, nil)
		require.ErrorIs(t, err, engine.ErrIllegalState, "a second completion")
		err = h.complete(987654, nil)
		require.ErrorIs(t, err, engine.ErrNotFound)
	})
}

func TestAdministration(t *testing.T) {
	t.Parallel()
	manual := xpdltest.Package(xpdltest.Process("p", "",
		xpdltest.Activity("A", `<Implementation><No/></Implementation><Performer>clerk</Performer>`, "", "")+
			xpdltest.Activity("B", `<Implementation><No/></Implementation><Performer>clerk</Performer>`, "", ""),
		xpdltest.Transition("t1", "A>B")))
	dbtest.Each(t, func(t *testing.T, db *gorm.DB) {
		h := newHarness(t, db).start()
		h.deploy(manual)

		t.Run("SuspendResume", func(t *testing.T) { //nolint:paralleltest // the steps share one engine and build on each other
			id := h.startProcess("pkg", "", nil)
			items := h.openItems(id)
			require.Len(t, items, 1)
			require.NoError(t, h.e.Suspend(h.ctx, id, engine.Op{}))
			require.ErrorIs(t, h.e.Suspend(h.ctx, id, engine.Op{}), engine.ErrIllegalState)
			require.ErrorIs(t, h.complete(items[0].ID, nil), engine.ErrIllegalState, "work waits while suspended")
			require.NoError(t, h.e.Resume(h.ctx, id, engine.Op{}))
			err := h.e.Resume(h.ctx, id, engine.Op{})
			require.ErrorIs(t, err, engine.ErrIllegalState, "a second Resume")
			var se *wftype.StateError
			require.ErrorAs(t, err, &se)
			require.NoError(t, h.complete(items[0].ID, nil))
			h.completeAll()
			h.requireState(id, wftype.ProcessCompleted)
			require.ErrorIs(t, h.e.Terminate(h.ctx, id, engine.Op{}), engine.ErrInstanceFinished)
		})

		t.Run("TerminateWithdrawsWorkItems", func(t *testing.T) { //nolint:paralleltest // the steps share one engine and build on each other
			id := h.startProcess("pkg", "", nil)
			items := h.openItems(id)
			require.Len(t, items, 1)
			require.NoError(t, h.e.Terminate(h.ctx, id, engine.Op{}))
			h.requireState(id, wftype.ProcessTerminated)
			require.Empty(t, h.openItems(id))
			require.ErrorIs(t, h.complete(items[0].ID, nil), engine.ErrInstanceFinished)
			require.ErrorIs(t, h.e.Resume(h.ctx, id, engine.Op{}), engine.ErrInstanceFinished)
		})

		t.Run("UnknownInstance", func(t *testing.T) { //nolint:paralleltest // the steps share one engine and build on each other
			require.ErrorIs(t, h.e.Suspend(h.ctx, 424242, engine.Op{}), engine.ErrNotFound)
			_, err := h.e.Instance(h.ctx, 424242)
			require.ErrorIs(t, err, engine.ErrNotFound)
		})

		t.Run("History", func(t *testing.T) { //nolint:paralleltest // the steps share one engine and build on each other
			id := h.startProcess("pkg", "", nil)
			h.completeAll()
			h.requireState(id, wftype.ProcessCompleted)
			var procStates []string
			for _, e := range h.history(id) {
				if e.Subject == engine.SubjectProcess {
					procStates = append(procStates, e.From+">"+e.To)
				}
			}
			require.Equal(t, []string{">Initiated", "Initiated>Running", "Running>Completed"}, procStates)
		})
	})
}

func TestBadInput(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, db *gorm.DB) {
		h := newHarness(t, db).start()

		_, err := h.e.Deploy(h.ctx, []byte(xpdltest.Graph("A B", "A>C")))
		require.ErrorIs(t, err, xpdl.ErrInvalid)
		var ve *xpdl.ValidationError
		require.ErrorAs(t, err, &ve)
		deps, err := h.e.Deployments(h.ctx)
		require.NoError(t, err)
		require.Empty(t, deps, "an invalid definition is not stored")

		_, err = h.e.Deploy(h.ctx, []byte("<!DOCTYPE x><Package/>"))
		require.ErrorIs(t, err, xpdl.ErrInvalid)

		h.deploy(xpdltest.Graph("A B", "A>B"))
		_, err = h.e.StartProcess(h.ctx, engine.StartOptions{Package: "pkg", Process: "nope"})
		require.ErrorIs(t, err, engine.ErrNotFound)
		_, err = h.e.StartProcess(h.ctx, engine.StartOptions{Package: "nope"})
		require.ErrorIs(t, err, engine.ErrNotFound)
		_, err = h.e.StartProcess(h.ctx, engine.StartOptions{Package: "pkg", Variables: map[string]any{"x": "seven"}})
		require.ErrorIs(t, err, engine.ErrWrongType)
		_, err = h.e.StartProcess(h.ctx, engine.StartOptions{Package: "pkg", Variables: map[string]any{"x": 1.5}})
		require.ErrorIs(t, err, engine.ErrWrongType)
		_, err = h.e.StartProcess(h.ctx, engine.StartOptions{Package: "pkg", Variables: map[string]any{"y": 1}})
		require.ErrorIs(t, err, engine.ErrUnknownVariable)
		n, err := h.e.Instances(h.ctx, engine.InstanceFilter{})
		require.NoError(t, err)
		require.Empty(t, n.Instances, "refused starts leave nothing behind")
	})
}

func TestVersions(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, db *gorm.DB) {
		h := newHarness(t, db).start()
		v1 := h.deploy(xpdltest.Package(xpdltest.Process("p", "",
			xpdltest.Activity("A", `<Implementation><No/></Implementation><Performer>clerk</Performer>`, "", ""), "")))
		old := h.startProcess("pkg", "", nil)
		require.Len(t, h.openItems(old), 1)
		v2 := h.deploy(xpdltest.Graph("A B", "A>B"))
		require.Equal(t, 1, v1.Version)
		require.Equal(t, 2, v2.Version)
		fresh := h.startProcess("pkg", "", nil)
		h.requireState(fresh, wftype.ProcessCompleted)
		h.completeAll()
		pi := h.requireState(old, wftype.ProcessCompleted)
		require.Equal(t, v1.ID, pi.DefinitionID, "a running instance keeps its version")
		require.Equal(t, map[string]int{"A": 1}, h.started(old))
	})
}

func TestStartProcessTx(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, db *gorm.DB) {
		h := newHarness(t, db).start()
		h.deploy(xpdltest.Graph("A B", "A>B"))
		var rolledBack int64
		err := db.Transaction(func(tx *gorm.DB) error {
			id, err := h.e.StartProcessTx(h.ctx, tx, engine.StartOptions{Package: "pkg"})
			rolledBack = id
			require.NoError(t, err)
			return errors.New("host changes its mind")
		})
		require.Error(t, err)
		_, err = h.e.Instance(h.ctx, rolledBack)
		require.ErrorIs(t, err, engine.ErrNotFound)

		var id int64
		require.NoError(t, db.Transaction(func(tx *gorm.DB) error {
			id, err = h.e.StartProcessTx(h.ctx, tx, engine.StartOptions{Package: "pkg"})
			return err
		}))
		// The poller picks the committed instance up; wait for it.
		done := make(chan struct{})
		unsubscribe := h.e.Subscribe(func(r engine.Record) {
			if r.Instance == id && r.Type == engine.RecordProcessCompleted {
				close(done)
			}
		})
		defer unsubscribe()
		select {
		case <-done:
		case <-h.ctx.Done():
			t.Fatal(h.ctx.Err())
		}
		h.requireState(id, wftype.ProcessCompleted)
	})
}
