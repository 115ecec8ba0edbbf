package diagram_test

import (
	"context"
	"fmt"
	"log"
	"strings"

	"github.com/goxpdl/goxpdl/console/diagram"
	"github.com/goxpdl/goxpdl/wftype"
	"github.com/goxpdl/goxpdl/xpdl"
)

// Lay a process out once (keep the *Layout per definition version) and
// draw it with an instance's state.
func Example() {
	const src = `<Package xmlns="http://www.wfmc.org/2002/XPDL1.0" Id="orders">
<WorkflowProcesses><WorkflowProcess Id="order">
<Activities>
  <Activity Id="enter" Name="Enter order"><Implementation><No/></Implementation></Activity>
  <Activity Id="approve" Name="Approve &lt;b&gt;big&lt;/b&gt; orders"><Implementation><No/></Implementation></Activity>
</Activities>
<Transitions><Transition Id="t1" From="enter" To="approve"/></Transitions>
</WorkflowProcess></WorkflowProcesses></Package>`
	pkg, err := xpdl.Read(strings.NewReader(src), nil)
	if err != nil {
		log.Fatal(err)
	}
	l, err := diagram.NewLayout(context.Background(), pkg, "order", diagram.Options{})
	if err != nil {
		log.Fatal(err)
	}
	svg := string(l.SVG(diagram.State{
		Activities: map[string]diagram.ActivityState{
			"enter":   {State: wftype.ActivityCompleted, Count: 1},
			"approve": {State: wftype.ActivityInActive, Count: 1, Current: true},
		},
		Taken: map[string]bool{"t1": true},
	}))
	fmt.Println(l.Source, len(l.Nodes), len(l.Edges))
	fmt.Println(strings.Contains(svg, `<g class="node task waiting current" data-activity="approve">`))
	fmt.Println(strings.Contains(svg, `Approve &lt;b&gt;big&lt;/b&gt; orders`))
	fmt.Println(strings.Contains(svg, `<g class="edge taken" data-transition="t1"`))
	// Output:
	// auto 2 1
	// true
	// true
	// true
}
