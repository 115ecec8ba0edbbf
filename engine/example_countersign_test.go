package engine_test

import (
	"context"
	"fmt"
	"log"

	"github.com/goxpdl/goxpdl/engine"
	"github.com/goxpdl/goxpdl/store/gormstore"
	"github.com/goxpdl/goxpdl/workitem"
)

// countersignXPDL is a contract review by three reviewers, two of whom
// must approve (docs/countersign.md): each reviewer's vote and comment
// are formal parameters of Review, kept with their own instance, and the
// decision goes into the data field decision.
const countersignXPDL = `<?xml version="1.0" encoding="UTF-8"?>
<Package xmlns="http://www.wfmc.org/2009/XPDL2.2" Id="contracts">
  <PackageHeader><XPDLVersion>2.2</XPDLVersion></PackageHeader>
  <Script Type="text/javascript"/>
  <Participants><Participant Id="legal"><ParticipantType Type="ROLE"/></Participant></Participants>
  <WorkflowProcesses>
    <WorkflowProcess Id="contract">
      <DataFields>
        <DataField Id="decision"><DataType><BasicType Type="STRING"/></DataType><InitialValue></InitialValue></DataField>
      </DataFields>
      <Activities>
        <Activity Id="Review" Name="Review the contract">
          <FormalParameters>
            <FormalParameter Id="approve" Mode="OUT"><DataType><BasicType Type="BOOLEAN"/></DataType></FormalParameter>
            <FormalParameter Id="comment" Mode="OUT"><DataType><BasicType Type="STRING"/></DataType></FormalParameter>
          </FormalParameters>
          <Implementation><Task><TaskUser/></Task></Implementation>
          <Performers><Performer>'reviewer' + loopCounter</Performer></Performers>
          <ExtendedAttributes>
            <ExtendedAttribute Name="goxpdl.Countersign" Value="vote=approve; rule=2; result=decision"/>
          </ExtendedAttributes>
          <Loop LoopType="MultiInstance">
            <LoopMultiInstance MI_Ordering="Parallel"><MI_Condition><Expression>3</Expression></MI_Condition></LoopMultiInstance>
          </Loop>
        </Activity>
        <Activity Id="Decided"><Route GatewayType="Exclusive"/></Activity>
        <Activity Id="Sign"><Implementation><Task><TaskUser/></Task></Implementation><Performers><Performer>legal</Performer></Performers></Activity>
        <Activity Id="Renegotiate"><Implementation><Task><TaskUser/></Task></Implementation><Performers><Performer>legal</Performer></Performers></Activity>
      </Activities>
      <Transitions>
        <Transition Id="t1" From="Review" To="Decided"/>
        <Transition Id="t2" From="Decided" To="Sign"><Condition Type="CONDITION"><Expression>decision == 'approved'</Expression></Condition></Transition>
        <Transition Id="t3" From="Decided" To="Renegotiate"><Condition Type="OTHERWISE"/></Transition>
      </Transitions>
    </WorkflowProcess>
  </WorkflowProcesses>
</Package>`

// Example_countersign runs a countersign (会签): three reviewers vote on a
// contract, two approvals decide, and the reviewer who has not voted by
// then has their work item withdrawn. LoopResults shows each reviewer's outputs
// and how the votes were counted; docs/countersign.md shows the marked
// part.
func Example_countersign() {
	ctx := context.Background()
	db, err := gormstore.OpenSQLite(gormstore.MemoryPath)
	if err != nil {
		log.Fatal(err)
	}
	e, err := engine.New(engine.Config{DB: db})
	if err != nil {
		log.Fatal(err)
	}
	if err := e.Start(ctx); err != nil {
		log.Fatal(err)
	}
	defer func() { _ = e.Stop(ctx) }()
	if _, err := e.Deploy(ctx, []byte(countersignXPDL)); err != nil {
		log.Fatal(err)
	}
	id, err := e.StartProcess(ctx, engine.StartOptions{Package: "contracts"})
	if err != nil {
		log.Fatal(err)
	}
	_ = e.WaitIdle(ctx)
	// The work item each reviewer holds: the items are offered to
	// reviewer1, reviewer2 and reviewer3.
	itemOf := map[string]int64{}
	page, err := e.WorkItems(ctx, engine.WorkItemFilter{Instance: id, Activity: "Review", States: workitem.OpenStates})
	if err != nil {
		log.Fatal(err)
	}
	for _, wi := range page.WorkItems {
		itemOf[wi.Assignees[0].ID] = wi.ID
	}

	// begin docblock docs/countersign.md
	votes := []struct {
		user    string
		outputs map[string]any
	}{
		{"reviewer1", map[string]any{"approve": true, "comment": "fine"}},
		{"reviewer3", map[string]any{"approve": true}}, // the second approval decides
	}
	for _, v := range votes {
		_, err := e.CompleteWorkItem(ctx, itemOf[v.user], engine.Completion{User: v.user, Outputs: v.outputs})
		if err != nil {
			log.Fatal(err)
		}
	}
	_ = e.WaitIdle(ctx)
	acts, err := e.Activities(ctx, engine.ActivityFilter{Instance: id})
	if err != nil {
		log.Fatal(err)
	}
	res, err := e.LoopResults(ctx, acts.Activities[0].ID) // the loop of Review
	if err != nil {
		log.Fatal(err)
	}
	c := res.Countersign
	fmt.Printf("%s by rule %s: %d approved, %d rejected, %d withdrawn\n", c.Decision, c.Rule, c.Approved, c.Rejected, c.Withdrawn)
	for _, in := range res.Instances {
		if in.Withdrawn {
			fmt.Println(in.Index, "withdrawn")
			continue
		}
		fmt.Println(in.Index, in.Ballot, in.Outputs)
	}
	// end docblock
	vars, err := e.Variables(ctx, id)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("decision:", vars["decision"])
	open, err := e.WorkItems(ctx, engine.WorkItemFilter{Instance: id, States: workitem.OpenStates})
	if err != nil {
		log.Fatal(err)
	}
	for _, wi := range open.WorkItems {
		fmt.Println("next:", wi.Activity)
	}
	// The withdrawn reviewer's late vote is refused.
	_, err = e.CompleteWorkItem(ctx, itemOf["reviewer2"], engine.Completion{User: "reviewer2", Outputs: map[string]any{"approve": false}})
	fmt.Println(err)
	_ = e.Stop(ctx)
	if sqlDB, err := db.DB(); err == nil {
		_ = sqlDB.Close()
	}
	// Output:
	// approved by rule 2: 2 approved, 0 rejected, 1 withdrawn
	// 1 approve map[approve:true comment:fine]
	// 2 withdrawn
	// 3 approve map[approve:true]
	// decision: approved
	// next: Sign
	// work item: complete refused: the item is Withdrawn
}
