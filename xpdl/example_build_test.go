package xpdl_test

import (
	"errors"
	"fmt"
	"log"
	"os"

	"github.com/goxpdl/goxpdl/xpdl"
)

// ExampleNewPackage builds an order process in Go: a clerk approves, the
// host's "ship" application ships what is approved. Build checks it as
// a deployment checks a file.
func ExampleNewPackage() {
	// begin docblock docs/builder.md
	str := xpdl.Basic(xpdl.BasicString)
	b := xpdl.NewPackage("orders").Name("Orders")
	b.Participant("clerk", "Clerk", xpdl.ParticipantRole)
	b.Application("ship", xpdl.Param("order", xpdl.ModeIn, str), xpdl.Param("parcel", xpdl.ModeOut, str))

	p := xpdl.NewProcess("order")
	p.DataField("orderId", str)
	p.DataField("approved", xpdl.Basic(xpdl.BasicBoolean)).Initial("false")
	p.DataField("tracking", str)
	p.StartEvent("start")
	p.UserTask("approve").Performer("clerk").Deadline(xpdl.ExecAsynchr, "PT4H", "late")
	p.Route("decide", xpdl.GatewayXOR)
	p.ApplicationTask("ship", "ship", "orderId", "tracking")
	p.ManualTask("remind").Performer("clerk")
	p.EndEvent("end")
	p.Sequence("start", "approve", "decide")
	p.Transition("approve", "remind").OnException("late")
	p.Transition("decide", "ship").When("approved")
	p.Transition("decide", "end").Otherwise()
	p.Sequence("ship", "end")
	b.Process(p)

	pkg, err := b.Build()
	if err != nil {
		log.Fatal(err) // a *xpdl.ValidationError with every problem
	}
	// end docblock
	for _, a := range pkg.Process("order").Activities {
		fmt.Printf("%s: kind %s, task %q, split %q\n", a.ID, a.Kind, a.Task, a.Split.Type)
	}
	for _, t := range pkg.Process("order").Transitions {
		fmt.Println(t.ID)
	}
	// Output:
	// start: kind Event, task "", split ""
	// approve: kind No, task "User", split "OR"
	// decide: kind Route, task "", split "XOR"
	// ship: kind Tool, task "Application", split ""
	// remind: kind No, task "Manual", split ""
	// end: kind Event, task "", split ""
	// start_approve
	// approve_decide
	// approve_remind
	// decide_ship
	// decide_end
	// ship_end
}

// ExamplePackageBuilder_Build shows what Build says of a process with
// mistakes: every problem at once, typed.
func ExamplePackageBuilder_Build() {
	p := xpdl.NewProcess("p")
	p.StartEvent("start")
	p.UserTask("work").Performer("nobody")
	p.EndEvent("end")
	p.Sequence("start", "work", "done")
	_, err := xpdl.NewPackage("bad").Process(p).Build()

	var ve *xpdl.ValidationError
	if errors.As(err, &ve) {
		for _, problem := range ve.Problems {
			fmt.Println(problem.Code, problem.Message)
		}
	}
	// Output:
	// unknown-performer activity "work": performer "nobody" is not a declared participant
	// unknown-activity transition "work_done" refers to unknown activity "done"
}

// ExampleWrite writes a built package as XPDL 2.2.
func ExampleWrite() {
	p := xpdl.NewProcess("hello")
	p.DataField("greeting", xpdl.Basic(xpdl.BasicString))
	p.ScriptTask("greet", `greeting = "hello"`)
	pkg, err := xpdl.NewPackage("greetings").Header("example", "2026-11-21").
		Process(p).Build()
	if err != nil {
		log.Fatal(err)
	}
	if err := xpdl.Write(os.Stdout, pkg); err != nil {
		log.Fatal(err)
	}
	// Output:
	// <?xml version="1.0" encoding="UTF-8"?>
	// <Package xmlns="http://www.wfmc.org/2009/XPDL2.2" Id="greetings">
	//   <PackageHeader>
	//     <XPDLVersion>2.2</XPDLVersion>
	//     <Vendor>example</Vendor>
	//     <Created>2026-11-21</Created>
	//   </PackageHeader>
	//   <Script Type="text/javascript"/>
	//   <WorkflowProcesses>
	//     <WorkflowProcess Id="hello">
	//       <ProcessHeader/>
	//       <DataFields>
	//         <DataField Id="greeting">
	//           <DataType>
	//             <BasicType Type="STRING"/>
	//           </DataType>
	//         </DataField>
	//       </DataFields>
	//       <Activities>
	//         <Activity Id="greet">
	//           <Implementation>
	//             <Task>
	//               <TaskScript>
	//                 <Script>greeting = "hello"</Script>
	//               </TaskScript>
	//             </Task>
	//           </Implementation>
	//         </Activity>
	//       </Activities>
	//     </WorkflowProcess>
	//   </WorkflowProcesses>
	// </Package>
}
