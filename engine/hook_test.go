package engine_test

import (
	"context"
	"errors"
	"testing"

	"github.com/stretchr/testify/require"
	"gorm.io/gorm"

	"github.com/goxpdl/goxpdl/engine"
	"github.com/goxpdl/goxpdl/store/dbtest"
	"github.com/goxpdl/goxpdl/wftype"
	"github.com/goxpdl/goxpdl/workitem"
)

// hookXPDL: Check (automatic) has an onEnter hook, Approve (manual) an
// onFinish hook; the XOR split after Approve reads what the hook set.
const hookXPDL = `<Package xmlns="http://www.wfmc.org/2002/XPDL1.0" Id="hooks">
  <PackageHeader><XPDLVersion>1.0</XPDLVersion><Vendor>t</Vendor><Created>2026</Created></PackageHeader>
  <Participants><Participant Id="clerk"><ParticipantType Type="ROLE"/></Participant></Participants>
  <WorkflowProcesses><WorkflowProcess Id="p">
    <DataFields>
      <DataField Id="checks"><DataType><BasicType Type="INTEGER"/></DataType><InitialValue>0</InitialValue></DataField>
      <DataField Id="verdict"><DataType><BasicType Type="STRING"/></DataType><InitialValue>none</InitialValue></DataField>
    </DataFields>
    <Activities>
      <Activity Id="Check"><Implementation><No/></Implementation><StartMode><Automatic/></StartMode><FinishMode><Automatic/></FinishMode>
        <ExtendedAttributes><ExtendedAttribute Name="hook" Value="com.example.hooks.CountCheck"><HookEventName>automatic:onEnter</HookEventName></ExtendedAttribute></ExtendedAttributes>
      </Activity>
      <Activity Id="Approve"><Implementation><No/></Implementation><Performer>clerk</Performer>
        <TransitionRestrictions><TransitionRestriction><Split Type="XOR"/></TransitionRestriction></TransitionRestrictions>
        <ExtendedAttributes><ExtendedAttribute Name="hook" Value="com.example.hooks.Judge"><HookEventName>task:onFinish</HookEventName></ExtendedAttribute></ExtendedAttributes>
      </Activity>
      <Activity Id="Accepted"><Route/></Activity>
      <Activity Id="Rejected"><Route/></Activity>
    </Activities>
    <Transitions>
      <Transition Id="t1" From="Check" To="Approve"/>
      <Transition Id="t2" From="Approve" To="Accepted"><Condition Type="CONDITION">verdict == "yes"</Condition></Transition>
      <Transition Id="t3" From="Approve" To="Rejected"><Condition Type="OTHERWISE"/></Transition>
    </Transitions>
  </WorkflowProcess></WorkflowProcesses>
</Package>`

func TestBonitaHooks(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, db *gorm.DB) {
		h := newHarness(t, db)
		var calls []string
		refuse := true
		h.e.RegisterToolAgent("com.example.hooks.CountCheck", func(_ context.Context, c *engine.Call) (map[string]any, error) {
			calls = append(calls, c.Hook+" "+c.ActivityID)
			return map[string]any{"checks": c.Params["checks"].(int64) + 1}, nil
		})
		h.e.RegisterToolAgent("Judge", func(_ context.Context, c *engine.Call) (map[string]any, error) {
			calls = append(calls, c.Hook+" "+c.ActivityID)
			if refuse {
				return nil, errors.New("not yet")
			}
			return map[string]any{"verdict": "yes"}, nil
		})
		h.start()
		h.deploy(hookXPDL)
		id := h.startProcess("hooks", "p", nil)
		require.Equal(t, int64(1), h.vars(id)["checks"], "the onEnter hook ran once")

		wi := h.item(id, "Approve")
		err := h.complete(wi.ID, nil)
		require.ErrorContains(t, err, "hook com.example.hooks.Judge of activity Approve: not yet")
		require.Equal(t, workitem.Offered, h.item(id, "Approve").State, "a failing onFinish hook refuses the completion")
		require.Equal(t, "none", h.vars(id)["verdict"])

		refuse = false
		require.NoError(t, h.complete(wi.ID, nil))
		h.requireState(id, wftype.ProcessCompleted)
		require.Equal(t, map[string]int{"Check": 1, "Approve": 1, "Accepted": 1}, h.started(id), "the split saw the hook's verdict")
		require.Equal(t, []string{"automatic:onEnter Check", "task:onFinish Approve", "task:onFinish Approve"}, calls)
	})
}

func TestUnboundHookFailsTheActivity(t *testing.T) {
	t.Parallel()
	h := newHarness(t, dbtest.OpenSQLite(t)).start()
	h.deploy(hookXPDL)
	id := h.startProcess("hooks", "p", nil)
	h.idle()
	acts, err := activitiesOf(h.ctx, h.e, id)
	require.NoError(t, err)
	require.Len(t, acts, 1)
	require.Equal(t, wftype.ActivityAbnormal, acts[0].State)
	require.Contains(t, acts[0].Diagnosis, "hook com.example.hooks.CountCheck of activity Check")
}

// TestScriptAgents plays hook classes in JavaScript: a hook hands back
// the variables it changed and leaves the others alone, an empty script
// does nothing, and a script bound to an application's class returns its
// OUT parameters.
func TestScriptAgents(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, db *gorm.DB) {
		h := newHarness(t, db)
		h.e.RegisterScriptAgent("com.example.hooks.CountCheck", "checks = checks + 2")
		h.e.RegisterScriptAgent("Judge", "")
		h.start()
		h.deploy(hookXPDL)
		id := h.startProcess("hooks", "p", nil)
		require.Equal(t, map[string]any{"checks": int64(2), "verdict": "none"}, h.vars(id), "the onEnter script raised checks only")

		require.NoError(t, h.complete(h.item(id, "Approve").ID, nil))
		h.requireState(id, wftype.ProcessCompleted)
		require.Equal(t, map[string]int{"Check": 1, "Approve": 1, "Rejected": 1}, h.started(id), "the empty onFinish script set no verdict")
	})
}

const scriptAppXPDL = `<Package xmlns="http://www.wfmc.org/2002/XPDL1.0" Id="scripted">
  <PackageHeader><XPDLVersion>1.0</XPDLVersion><Vendor>t</Vendor><Created>2026</Created></PackageHeader>
  <Applications><Application Id="double">
    <FormalParameters>
      <FormalParameter Id="x" Mode="IN"><DataType><BasicType Type="INTEGER"/></DataType></FormalParameter>
      <FormalParameter Id="y" Mode="OUT"><DataType><BasicType Type="INTEGER"/></DataType></FormalParameter>
    </FormalParameters>
    <ExtendedAttributes><ExtendedAttribute Name="ToolAgentClass" Value="com.example.Doubler"/></ExtendedAttributes>
  </Application></Applications>
  <WorkflowProcesses><WorkflowProcess Id="p">
    <DataFields>
      <DataField Id="a"><DataType><BasicType Type="INTEGER"/></DataType><InitialValue>21</InitialValue></DataField>
      <DataField Id="b"><DataType><BasicType Type="INTEGER"/></DataType><InitialValue>0</InitialValue></DataField>
    </DataFields>
    <Activities>
      <Activity Id="Double"><Implementation><Tool Id="double" Type="APPLICATION"><ActualParameters>
        <ActualParameter>a</ActualParameter><ActualParameter>b</ActualParameter>
      </ActualParameters></Tool></Implementation></Activity>
    </Activities>
  </WorkflowProcess></WorkflowProcesses>
</Package>`

func TestScriptAgentReturnsOutParameters(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, db *gorm.DB) {
		h := newHarness(t, db)
		h.e.RegisterScriptAgent("Doubler", "y = x * 2; x = 0")
		h.start()
		h.deploy(scriptAppXPDL)
		id := h.startProcess("scripted", "p", nil)
		h.requireState(id, wftype.ProcessCompleted)
		require.Equal(t, map[string]any{"a": int64(21), "b": int64(42)}, h.vars(id), "only the OUT parameter is handed back")
	})
}
