package engine_test

import (
	"context"
	"fmt"
	"log"

	"github.com/goxpdl/goxpdl/engine"
	"github.com/goxpdl/goxpdl/store/gormstore"
	"github.com/goxpdl/goxpdl/workitem"
)

// orderXPDL is a small order process: a clerk approves, then the engine
// calls the host's "ship" application when the order is approved.
const orderXPDL = `<?xml version="1.0" encoding="UTF-8"?>
<Package xmlns="http://www.wfmc.org/2002/XPDL1.0" Id="orders" Name="Orders">
  <PackageHeader><XPDLVersion>1.0</XPDLVersion><Vendor>example</Vendor><Created>2026-11-21</Created></PackageHeader>
  <Script Type="text/javascript"/>
  <Participants><Participant Id="clerk"><ParticipantType Type="ROLE"/></Participant></Participants>
  <Applications><Application Id="ship"><FormalParameters>
    <FormalParameter Id="order" Mode="IN"><DataType><BasicType Type="STRING"/></DataType></FormalParameter>
    <FormalParameter Id="tracking" Mode="OUT"><DataType><BasicType Type="STRING"/></DataType></FormalParameter>
  </FormalParameters></Application></Applications>
  <WorkflowProcesses><WorkflowProcess Id="order">
    <DataFields>
      <DataField Id="orderId"><DataType><BasicType Type="STRING"/></DataType></DataField>
      <DataField Id="approved"><DataType><BasicType Type="BOOLEAN"/></DataType></DataField>
      <DataField Id="tracking"><DataType><BasicType Type="STRING"/></DataType></DataField>
    </DataFields>
    <Activities>
      <Activity Id="approve"><Implementation><No/></Implementation><Performer>clerk</Performer>
        <TransitionRestrictions><TransitionRestriction><Split Type="XOR"/></TransitionRestriction></TransitionRestrictions></Activity>
      <Activity Id="ship"><Implementation><Tool Id="ship"><ActualParameters>
        <ActualParameter>orderId</ActualParameter><ActualParameter>tracking</ActualParameter>
      </ActualParameters></Tool></Implementation></Activity>
      <Activity Id="reject"><Route/></Activity>
    </Activities>
    <Transitions>
      <Transition Id="ok" From="approve" To="ship"><Condition Type="CONDITION">approved</Condition></Transition>
      <Transition Id="no" From="approve" To="reject"><Condition Type="OTHERWISE"/></Transition>
    </Transitions>
  </WorkflowProcess></WorkflowProcesses>
</Package>`

// Example embeds the engine: deploy a process, bind its application to Go
// code, start an instance and complete its work item. README.md shows
// the marked part.
func Example() {
	ctx := context.Background()
	xpdlBytes := []byte(orderXPDL)
	// begin docblock README.md
	db, err := gormstore.OpenSQLite(gormstore.MemoryPath) // a file path, or the host's own *gorm.DB (SQLite or MySQL)
	if err != nil {
		log.Fatal(err)
	}
	e, err := engine.New(engine.Config{DB: db}) // migrates the goxpdl_* tables
	if err != nil {
		log.Fatal(err)
	}
	e.RegisterApplication("ship", func(_ context.Context, call *engine.Call) (map[string]any, error) {
		// call.Tx is the engine's transaction: business writes commit with the step.
		return map[string]any{"tracking": "TRK-" + call.Params["order"].(string)}, nil
	})
	if err := e.Start(ctx); err != nil {
		log.Fatal(err)
	}
	defer func() { _ = e.Stop(ctx) }()

	if _, err := e.Deploy(ctx, xpdlBytes); err != nil { // refused with every validation problem if invalid
		log.Fatal(err)
	}
	id, err := e.StartProcess(ctx, engine.StartOptions{Package: "orders", Variables: map[string]any{"orderId": "42"}})
	if err != nil {
		log.Fatal(err)
	}
	_ = e.WaitIdle(ctx) // the instance runs in the background: let it offer its work item
	open, err := e.WorkItems(ctx, engine.WorkItemFilter{Instance: id, States: workitem.OpenStates})
	if err != nil {
		log.Fatal(err)
	}
	item := open.WorkItems[0]
	fmt.Println("work item for", item.Performer)

	completion := engine.Completion{User: "alice", Outputs: map[string]any{"approved": true}}
	if _, err := e.CompleteWorkItem(ctx, item.ID, completion); err != nil {
		log.Fatal(err)
	}
	_ = e.WaitIdle(ctx)
	pi, _ := e.Instance(ctx, id)
	vars, _ := e.Variables(ctx, id)
	fmt.Println(pi.State, vars["tracking"])
	// end docblock
	_ = e.Stop(ctx) // before the database closes; the deferred Stop does nothing
	if sqlDB, err := db.DB(); err == nil {
		_ = sqlDB.Close()
	}
	// Output:
	// work item for clerk
	// Completed TRK-42
}
