package xpdl_test

import (
	"fmt"
	"strings"

	"github.com/goxpdl/goxpdl/xpdl"
)

// ExampleExplain shows the model the engine runs for a loop whose entry
// is also a join: Rewrite puts a generated Route in front of it, and the
// explanation lists it with the reason. docs/reentrancy.md shows the
// marked part.
func ExampleExplain() {
	const doc = `<Package xmlns="http://www.wfmc.org/2002/XPDL1.0" Id="paper">
  <WorkflowProcesses><WorkflowProcess Id="paper">
    <Activities>
      <Activity Id="submit"><Implementation><No/></Implementation></Activity>
      <Activity Id="reviewer1"><Implementation><No/></Implementation></Activity>
      <Activity Id="reviewer2"><Implementation><No/></Implementation></Activity>
      <Activity Id="decide"><Implementation><No/></Implementation></Activity>
      <Activity Id="rework"><Implementation><No/></Implementation></Activity>
      <Activity Id="publish"><Implementation><No/></Implementation></Activity>
    </Activities>
    <Transitions>
      <Transition Id="t1" From="submit" To="reviewer1"/>
      <Transition Id="t2" From="submit" To="reviewer2"/>
      <Transition Id="t3" From="reviewer1" To="decide"/>
      <Transition Id="t4" From="reviewer2" To="decide"/>
      <Transition Id="t5" From="decide" To="rework"><Condition Type="CONDITION">revise</Condition></Transition>
      <Transition Id="t6" From="rework" To="decide"/>
      <Transition Id="t7" From="decide" To="publish"><Condition Type="OTHERWISE"/></Transition>
    </Transitions>
  </WorkflowProcess></WorkflowProcesses>
</Package>`
	pkg, err := xpdl.Read(strings.NewReader(doc), &xpdl.ReadOpts{Name: "paper.xpdl"})
	if err != nil {
		fmt.Println(err)
		return
	}
	// begin docblock docs/reentrancy.md
	rewritten, steps, err := xpdl.Rewrite(pkg)
	if err != nil {
		// A race that cannot be rewritten: report it with the validator's
		// findings.
		for _, p := range xpdl.RewriteProblems(err) {
			fmt.Println(p)
		}
		return
	}
	e := xpdl.Explain(rewritten, steps) // JSON: {"processes":[...],"rewrites":[...]}
	fmt.Print(e.Text())                 // as goxpdl validate --explain prints it
	// end docblock

	// Output:
	// process "paper"
	//   activities:
	//     ID             KIND               JOIN            SPLIT          REENTRANT
	//     submit         No                 -               OR (implicit)  yes (default)
	//     reviewer1      No                 -               -              yes (default)
	//     reviewer2      No                 -               -              yes (default)
	//     decide__entry  Route (generated)  XOR             -              no
	//     decide         No                 XOR (implicit)  OR (implicit)  yes (default)
	//     rework         No                 -               -              yes (default)
	//     publish        No                 -               -              yes (default)
	//   transitions:
	//     ID                  FROM           TO             CONDITION
	//     t1                  submit         reviewer1      -
	//     t2                  submit         reviewer2      -
	//     t3                  reviewer1      decide__entry  -
	//     t4                  reviewer2      decide__entry  -
	//     t5                  decide         rework         CONDITION: revise
	//     t6                  rework         decide         -
	//     t7                  decide         publish        OTHERWISE
	//     decide__entry__out  decide__entry  decide         -
	// rewrites:
	//   1. loop-entry in process "paper": activity "decide" is the entry of a loop (loop-back "t6") and also the XOR join of 2 transitions from outside it ("t3", "t4"); the generated non-reentrant Route "decide__entry" now takes those, so that "decide" starts once for them (the first to arrive) and again on every loop-back
	//      activities: decide; transitions: t3, t4; generated: decide__entry, decide__entry__out
}
