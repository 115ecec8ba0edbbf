package xpdl_test

import (
	"bytes"
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/goxpdl/goxpdl/xpdl"
)

// genBlockActivities is how many activities one generated block has.
const genBlockActivities = 10

// genPackage generates an XPDL 1.0 package, JaWE/Shark style, with one
// process of the given number of activities (a multiple of 10), for
// benchmarks. The process is a chain of blocks shaped like real approval
// flows; block k is
//
//	enter (tool) -> review (manual, XOR join) -> decide (XOR split)
//	  decide -[amount > k]-> approve (tool) -> merge
//	  decide -[amount < 0]-> review            (a rework loop)
//	  decide -[OTHERWISE]--> reject (manual) -> merge
//	merge (XOR join, AND split) -> p1 (tool), p2 (manual), p3 (automatic)
//	  -> sync (AND join) -> enter of block k+1
//
// with three participants, two applications with formal parameters, three
// data fields, JavaScript conditions and JaWE layout extended attributes.
func genPackage(activities int) []byte {
	if activities <= 0 || activities%genBlockActivities != 0 {
		panic(fmt.Sprintf("genPackage: %d activities is not a positive multiple of %d", activities, genBlockActivities))
	}
	blocks := activities / genBlockActivities
	var b bytes.Buffer
	b.Grow(activities * 900)
	b.WriteString(`<?xml version="1.0" encoding="UTF-8"?>
<Package xmlns="http://www.wfmc.org/2002/XPDL1.0" Id="generated" Name="Generated">
  <PackageHeader>
    <XPDLVersion>1.0</XPDLVersion>
    <Vendor>goxpdl benchmarks</Vendor>
    <Created>2026-01-01 00:00:00</Created>
  </PackageHeader>
  <ConformanceClass GraphConformance="NON_BLOCKED"/>
  <Script Type="text/javascript"/>
  <Participants>
    <Participant Id="clerk" Name="Clerk"><ParticipantType Type="ROLE"/></Participant>
    <Participant Id="manager" Name="Manager"><ParticipantType Type="ROLE"/></Participant>
    <Participant Id="system" Name="System"><ParticipantType Type="SYSTEM"/></Participant>
  </Participants>
  <Applications>
    <Application Id="compute" Name="Compute">
      <FormalParameters>
        <FormalParameter Id="x" Mode="IN"><DataType><BasicType Type="INTEGER"/></DataType></FormalParameter>
        <FormalParameter Id="y" Mode="OUT"><DataType><BasicType Type="INTEGER"/></DataType></FormalParameter>
      </FormalParameters>
      <ExtendedAttributes><ExtendedAttribute Name="ToolAgentClass" Value="org.enhydra.shark.toolagent.JavaScriptToolAgent"/></ExtendedAttributes>
    </Application>
    <Application Id="notify" Name="Notify">
      <FormalParameters>
        <FormalParameter Id="msg" Mode="IN"><DataType><BasicType Type="STRING"/></DataType></FormalParameter>
      </FormalParameters>
    </Application>
  </Applications>
  <WorkflowProcesses>
    <WorkflowProcess Id="big" Name="Big" AccessLevel="PUBLIC">
      <ProcessHeader DurationUnit="D"/>
      <DataFields>
        <DataField Id="amount" Name="Amount"><DataType><BasicType Type="INTEGER"/></DataType><InitialValue>0</InitialValue></DataField>
        <DataField Id="approved" Name="Approved"><DataType><BasicType Type="BOOLEAN"/></DataType><InitialValue>false</InitialValue></DataField>
        <DataField Id="note" Name="Note"><DataType><BasicType Type="STRING"/></DataType></DataField>
      </DataFields>
      <Activities>
`)
	for k := range blocks {
		p := fmt.Sprintf("b%d_", k)
		y := k * 100
		genTool(&b, p+"enter", "Enter", "compute", "system", y, "amount", "amount")
		genManual(&b, p+"review", "Review", "clerk", y, `<Join Type="XOR"/>`)
		genRoute(&b, p+"decide", y, `<Split Type="XOR"><TransitionRefs>`+
			`<TransitionRef Id="`+p+`t3"/><TransitionRef Id="`+p+`t4"/><TransitionRef Id="`+p+`t5"/></TransitionRefs></Split>`)
		genTool(&b, p+"approve", "Approve", "notify", "system", y, "note")
		genManual(&b, p+"reject", "Reject", "manager", y, "")
		genRoute(&b, p+"merge", y, `<Join Type="XOR"/></TransitionRestriction><TransitionRestriction><Split Type="AND"><TransitionRefs>`+
			`<TransitionRef Id="`+p+`t8"/><TransitionRef Id="`+p+`t9"/><TransitionRef Id="`+p+`t10"/></TransitionRefs></Split>`)
		genTool(&b, p+"p1", "Parallel 1", "compute", "system", y, "amount", "amount")
		genManual(&b, p+"p2", "Parallel 2", "clerk", y, "")
		genAutomatic(&b, p+"p3", "Parallel 3", y)
		genRoute(&b, p+"sync", y, `<Join Type="AND"/>`)
	}
	b.WriteString("      </Activities>\n      <Transitions>\n")
	for k := range blocks {
		p := fmt.Sprintf("b%d_", k)
		genTransition(&b, p+"t1", p+"enter", p+"review", "")
		genTransition(&b, p+"t2", p+"review", p+"decide", "")
		genTransition(&b, p+"t3", p+"decide", p+"approve", fmt.Sprintf(`<Condition Type="CONDITION">amount &gt; %d</Condition>`, k%100))
		genTransition(&b, p+"t4", p+"decide", p+"review", `<Condition Type="CONDITION">amount &lt; 0</Condition>`)
		genTransition(&b, p+"t5", p+"decide", p+"reject", `<Condition Type="OTHERWISE"/>`)
		genTransition(&b, p+"t6", p+"approve", p+"merge", "")
		genTransition(&b, p+"t7", p+"reject", p+"merge", "")
		genTransition(&b, p+"t8", p+"merge", p+"p1", "")
		genTransition(&b, p+"t9", p+"merge", p+"p2", "")
		genTransition(&b, p+"t10", p+"merge", p+"p3", "")
		genTransition(&b, p+"t11", p+"p1", p+"sync", "")
		genTransition(&b, p+"t12", p+"p2", p+"sync", "")
		genTransition(&b, p+"t13", p+"p3", p+"sync", "")
		if k+1 < blocks {
			genTransition(&b, p+"next", p+"sync", fmt.Sprintf("b%d_enter", k+1), "")
		}
	}
	b.WriteString(`      </Transitions>
    </WorkflowProcess>
  </WorkflowProcesses>
  <ExtendedAttributes>
    <ExtendedAttribute Name="EDITING_TOOL" Value="goxpdl"/>
  </ExtendedAttributes>
</Package>
`)
	return b.Bytes()
}

// genTransitionsPerBlock is how many transitions one block has, not
// counting the link to the next block.
const genTransitionsPerBlock = 13

// genAttributes writes an activity's extended attributes: JaWE's layout,
// then the given name=value pairs.
func genAttributes(b *bytes.Buffer, lane string, y int, nameValues ...string) {
	fmt.Fprintf(b, `          <ExtendedAttributes>
            <ExtendedAttribute Name="JaWE_GRAPH_PARTICIPANT_ID" Value="%s"/>
            <ExtendedAttribute Name="JaWE_GRAPH_OFFSET" Value="%d,%d"/>
`, lane, 40+y%700, y)
	for i := 0; i+1 < len(nameValues); i += 2 {
		fmt.Fprintf(b, "            <ExtendedAttribute Name=\"%s\" Value=\"%s\"/>\n", nameValues[i], nameValues[i+1])
	}
	b.WriteString("          </ExtendedAttributes>\n")
}

func genTool(b *bytes.Buffer, id, name, app, performer string, y int, params ...string) {
	fmt.Fprintf(b, `        <Activity Id="%s" Name="%s">
          <Implementation>
            <Tool Id="%s" Type="APPLICATION">
              <ActualParameters>
`, id, name, app)
	for _, p := range params {
		fmt.Fprintf(b, "                <ActualParameter>%s</ActualParameter>\n", p)
	}
	fmt.Fprintf(b, `              </ActualParameters>
            </Tool>
          </Implementation>
          <Performer>%s</Performer>
          <StartMode><Automatic/></StartMode>
          <FinishMode><Automatic/></FinishMode>
`, performer)
	genAttributes(b, performer, y)
	b.WriteString("        </Activity>\n")
}

func genManual(b *bytes.Buffer, id, name, performer string, y int, restriction string) {
	fmt.Fprintf(b, `        <Activity Id="%s" Name="%s">
          <Implementation><No/></Implementation>
          <Performer>%s</Performer>
          <StartMode><Manual/></StartMode>
          <FinishMode><Manual/></FinishMode>
`, id, name, performer)
	if restriction != "" {
		fmt.Fprintf(b, "          <TransitionRestrictions><TransitionRestriction>%s</TransitionRestriction></TransitionRestrictions>\n", restriction)
	}
	genAttributes(b, performer, y, "VariableToProcess_UPDATE", "amount", "VariableToProcess_VIEW", "note")
	b.WriteString("        </Activity>\n")
}

func genAutomatic(b *bytes.Buffer, id, name string, y int) {
	fmt.Fprintf(b, `        <Activity Id="%s" Name="%s">
          <Implementation><No/></Implementation>
          <Performer>system</Performer>
          <StartMode><Automatic/></StartMode>
          <FinishMode><Automatic/></FinishMode>
`, id, name)
	genAttributes(b, "system", y)
	b.WriteString("        </Activity>\n")
}

func genRoute(b *bytes.Buffer, id string, y int, restriction string) {
	fmt.Fprintf(b, `        <Activity Id="%s">
          <Route/>
          <TransitionRestrictions><TransitionRestriction>%s</TransitionRestriction></TransitionRestrictions>
`, id, restriction)
	genAttributes(b, "system", y)
	b.WriteString("        </Activity>\n")
}

func genTransition(b *bytes.Buffer, id, from, to, condition string) {
	fmt.Fprintf(b, `        <Transition Id="%s" From="%s" To="%s">%s
          <ExtendedAttributes><ExtendedAttribute Name="JaWE_GRAPH_TRANSITION_STYLE" Value="NO_ROUTING_ORTHOGONAL"/></ExtendedAttributes>
        </Transition>
`, id, from, to, condition)
}

// TestGenPackage checks that the benchmark package generator writes what
// it says: the right counts, and a package the validator accepts.
func TestGenPackage(t *testing.T) {
	t.Parallel()
	for _, n := range []int{10, 1000} {
		t.Run(fmt.Sprint(n), func(t *testing.T) {
			t.Parallel()
			src := genPackage(n)
			pkg, err := xpdl.Read(bytes.NewReader(src), &xpdl.ReadOpts{Name: "generated.xpdl"})
			require.NoError(t, err)
			require.Len(t, pkg.Processes, 1)
			proc := pkg.Processes[0]
			blocks := n / genBlockActivities
			require.Len(t, proc.Activities, n)
			require.Len(t, proc.Transitions, blocks*genTransitionsPerBlock+blocks-1)

			review := proc.Activity("b0_review")
			require.Equal(t, xpdl.GatewayXOR, review.Join.Type)
			require.Len(t, proc.Incoming("b0_review"), 2, "enter and the rework loop")
			merge := proc.Activity("b0_merge")
			require.Equal(t, xpdl.GatewayAND, merge.Split.Type)
			require.Len(t, merge.Split.TransitionRefs, 3)
			require.True(t, proc.Transition("b0_t3").Condition.IsRule())

			ps := xpdl.Validate(pkg, nil)
			require.Empty(t, ps.Errors(), "the generated package must be valid:\n%s", problemLines(ps))
		})
	}
}

func problemLines(ps xpdl.Problems) string {
	var lines []string
	for _, p := range ps {
		lines = append(lines, p.String())
	}
	return strings.Join(lines, "\n")
}
