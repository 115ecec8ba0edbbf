package enginetest_test

import (
	"context"
	"fmt"
	"regexp"
	"strings"
	"time"

	"github.com/goxpdl/goxpdl/engine"
	"github.com/goxpdl/goxpdl/enginetest"
	"github.com/goxpdl/goxpdl/resource"
	"github.com/goxpdl/goxpdl/wftype"
	"github.com/goxpdl/goxpdl/xpdl"
)

// exampleT stands in for the *testing.T an Example does not have: in a
// test, pass t to enginetest.New.
type exampleT struct {
	cleanups []func()
}

func (*exampleT) Helper()                           {}
func (*exampleT) Context() context.Context          { return context.Background() }
func (*exampleT) Logf(format string, args ...any)   { fmt.Printf(format+"\n", args...) }
func (*exampleT) Errorf(format string, args ...any) { fmt.Printf(format+"\n", args...) }
func (*exampleT) Fatalf(format string, args ...any) { panic(fmt.Sprintf(format, args...)) }
func (t *exampleT) Cleanup(fn func())               { t.cleanups = append(t.cleanups, fn) }

// finish runs the cleanups, last first, as a test's end does.
func (t *exampleT) finish() {
	for i := len(t.cleanups) - 1; i >= 0; i-- {
		t.cleanups[i]()
	}
}

// A process from start to end: deploy, start, complete the clerk's
// work item, and let the engine run the host's application.
func ExampleNew() {
	t := &exampleT{} // in a test: its *testing.T
	defer t.finish()

	h := enginetest.New(t, enginetest.WithApplication("ship", ship))
	h.DeployFile("testdata/approval.xpdl")
	id := h.Start("approval", map[string]any{"amount": int64(120)})
	h.CompleteWorkItem(id, "Review", map[string]any{"approved": true})
	pi := h.RunUntil(id, wftype.ProcessCompleted)
	fmt.Println(pi.State, h.Vars(id)["tracking"])
	// Output: Completed TRK-120
}

// RunUntil settles the engine and checks the instance's state.
func ExampleHarness_RunUntil() {
	t := &exampleT{}
	defer t.finish()

	h := enginetest.New(t, enginetest.WithApplication("ship", ship))
	h.DeployFile("testdata/approval.xpdl")
	id := h.Start("approval", nil)
	h.CompleteWorkItem(id, "Review", map[string]any{"approved": false})
	pi := h.RunUntil(id, wftype.ProcessCompleted)
	fmt.Println(pi.Process, pi.State)
	for _, a := range h.Activities(id) {
		fmt.Println(a.Activity, a.State)
	}
	// Output:
	// approval Completed
	// Review Completed
	// Rejected Completed
}

// WaitForState goes through the instance's history in order, one
// transition per call.
func ExampleHarness_WaitForState() {
	t := &exampleT{}
	defer t.finish()

	h := enginetest.New(t, enginetest.WithApplication("ship", ship))
	h.DeployFile("testdata/approval.xpdl")
	id := h.Start("approval", nil)
	h.CompleteWorkItem(id, "Review", map[string]any{"approved": true})

	h.WaitForState(id, "Review", wftype.ActivityInActive) // waiting for the clerk
	h.WaitForState(id, "Review", wftype.ActivityCompleted)
	ship := h.WaitForState(id, "Ship", wftype.ActivityActive)
	fmt.Println(ship.Activity, "is now", ship.State)
	// Output: Ship is now Completed
}

// Advance moves the clock: the review's two-hour deadline passes and the
// work goes to a manager.
func ExampleHarness_Advance() {
	t := &exampleT{}
	defer t.finish()

	h := enginetest.New(t, enginetest.WithApplication("ship", ship))
	h.DeployFile("testdata/approval.xpdl")
	id := h.Start("approval", nil)
	h.Advance(time.Hour)
	fmt.Println(h.Now().Format(time.Kitchen), h.WorkItem(id, "Review").Performer)
	h.Advance(time.Hour)
	fmt.Println(h.Now().Format(time.Kitchen), h.WorkItem(id, "Escalate").Performer)
	// Output:
	// 10:00AM clerk
	// 11:00AM manager
}

// CompleteWorkItem finds the activity's open work item and completes it
// as a user who may.
func ExampleHarness_CompleteWorkItem() {
	t := &exampleT{}
	defer t.finish()

	h := enginetest.New(t, enginetest.WithApplication("ship", ship))
	h.DeployFile("testdata/approval.xpdl")
	id := h.Start("approval", map[string]any{"amount": int64(5)})
	item := h.CompleteWorkItem(id, "Review", map[string]any{"approved": true})
	fmt.Println(item.Activity, item.State, "by", item.CompletedBy)
	fmt.Println(h.Vars(id)["tracking"])
	// Output:
	// Review Completed by tester
	// TRK-5
}

// Steps is the history in short; AssertHistory checks steps in order.
func ExampleHarness_Steps() {
	t := &exampleT{}
	defer t.finish()

	h := enginetest.New(t, enginetest.WithApplication("ship", ship))
	h.DeployFile("testdata/approval.xpdl")
	id := h.Start("approval", nil)
	h.CompleteWorkItem(id, "Review", map[string]any{"approved": true})
	h.AssertHistory(id, "workitem Review Completed", "activity Ship Completed", "process Completed")
	fmt.Println(strings.Join(h.Steps(id), "\n"))
	// Output:
	// process Initiated
	// activity Review Initiated
	// process Running
	// activity Review InActive
	// workitem Review Offered
	// workitem Review Completed
	// activity Review Completed
	// activity Ship Initiated
	// activity Ship Active
	// activity Ship Completed
	// process Completed
}

// engineIDs matches the ids the engine makes (package idgen).
var engineIDs = regexp.MustCompile(`[1-9][0-9]{12,15}`)

// Report is what a failing helper prints: here, an application that
// keeps failing leaves Ship Abnormal with an incident.
func ExampleHarness_Report() {
	t := &exampleT{}
	defer t.finish()

	refuse := func(context.Context, *engine.Call) (map[string]any, error) {
		return nil, fmt.Errorf("carrier closed")
	}
	h := enginetest.New(t, enginetest.WithApplication("ship", refuse))
	h.DeployFile("testdata/approval.xpdl")
	id := h.Start("approval", nil)
	h.CompleteWorkItem(id, "Review", map[string]any{"approved": true})
	// The ids are the engine's, made from the (fake) clock: <id> here.
	fmt.Println(engineIDs.ReplaceAllString(h.Report(id), "<id>"))
	// Output:
	// instance <id> of process approval (package orders, version 1) is Running
	//   clock: 2026-01-05T09:00:00Z
	//   activities: 1 completed, 1 not:
	//     Ship (#<id>) Abnormal: carrier closed
	//   open incidents:
	//     #<id> application on Ship (#<id>) after 1 attempt(s): carrier closed
	//   history (last 10 of 10):
	//     09:00:00.000 process Initiated by host
	//     09:00:00.000 activity Review Initiated by host
	//     09:00:00.000 process Running
	//     09:00:00.000 activity Review InActive
	//     09:00:00.000 workitem Review Offered
	//     09:00:00.000 workitem Review Completed by tester
	//     09:00:00.000 activity Review Completed by tester
	//     09:00:00.000 activity Ship Initiated by tester
	//     09:00:00.000 activity Ship Active
	//     09:00:00.000 activity Ship Abnormal: carrier closed
}

// A process built in Go (package xpdl's builder) runs as one read from a
// file does.
func ExampleHarness_DeployPackage() {
	t := &exampleT{}
	defer t.finish()

	str := xpdl.Basic(xpdl.BasicString)
	b := xpdl.NewPackage("greetings")
	p := xpdl.NewProcess("greet")
	p.DataField("name", str)
	p.DataField("greeting", str)
	p.StartEvent("start")
	p.ScriptTask("compose", `greeting = "Hello, " + name`)
	p.EndEvent("end")
	p.Sequence("start", "compose", "end")
	b.Process(p)
	pkg, err := b.Build()
	if err != nil {
		panic(err)
	}

	h := enginetest.New(t)
	h.DeployPackage(pkg)
	id := h.Start("greet", map[string]any{"name": "Ada"})
	h.RunUntil(id, wftype.ProcessCompleted)
	fmt.Println(h.Vars(id)["greeting"])
	// Output: Hello, Ada
}

// With a directory (interface I3) work items go to people: the clerk's
// review is offered to the holders of the role, and CompleteWorkItem acts
// as the first of them.
func ExampleWithDirectory() {
	t := &exampleT{}
	defer t.finish()

	org, err := resource.ParseOrg([]byte(`
users:
  - id: carol
    roles: [clerk]
  - id: dave
    roles: [manager]
roles:
  - id: clerk
  - id: manager
`), resource.FormatYAML)
	if err != nil {
		panic(err)
	}
	h := enginetest.New(t, enginetest.WithDirectory(org), enginetest.WithApplication("ship", ship))
	h.DeployFile("testdata/approval.xpdl")
	id := h.Start("approval", nil)
	users, _ := h.Engine().EligibleUsers(h.Context(), h.WorkItem(id, "Review").ID)
	fmt.Println("Review may be done by", users)
	item := h.CompleteWorkItem(id, "Review", map[string]any{"approved": true})
	fmt.Println("completed by", item.CompletedBy)
	// Output:
	// Review may be done by [carol]
	// completed by carol
}
