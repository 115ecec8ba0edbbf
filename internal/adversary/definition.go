package adversary

import (
	"fmt"

	"github.com/goxpdl/goxpdl/resource"
)

// PackageID is the id of the XPDL package the suite deploys, and Process
// that of its one WorkflowProcess.
const (
	PackageID = "adv"
	Process   = "flow"
)

// The activities of the process. Review, Chase and Approve are manual
// (one work item each, performer the role clerk); Book calls the
// application of the same name; Begin and Done are routes.
//
//	Begin -> Review (XOR join, SYNCHR deadline DeadlineAfter, exception "late")
//	Review -> Book           Review -late-> Chase -> Book
//	Book (XOR join; calls "book" with amount; fails fatally when amount < 0)
//	Book -> Approve (XOR split)
//	Approve -ok-> Done       Approve -otherwise-> Review (a loop)
const (
	ActBegin   = "Begin"
	ActReview  = "Review"
	ActChase   = "Chase"
	ActBook    = "Book"
	ActApprove = "Approve"
	ActDone    = "Done"
)

// DeadlineAfter is the SYNCHR deadline of Review, from when its work
// item is offered.
const DeadlineAfter = 60 * 60 * 1000 // milliseconds, as XPDL writes it

// Source returns the XPDL of the suite's package; rev goes into the
// package's Name so that redeployments are new sources (the engine
// stores every deployment as a new version either way).
func Source(rev int) []byte {
	return fmt.Appendf(nil, `<?xml version="1.0" encoding="UTF-8"?>
<Package xmlns="http://www.wfmc.org/2002/XPDL1.0" Id="%[1]s" Name="adversary rev %[2]d">
  <PackageHeader><XPDLVersion>1.0</XPDLVersion><Vendor>goxpdl</Vendor><Created>2026-01-01</Created></PackageHeader>
  <Script Type="text/javascript"/>
  <Participants><Participant Id="clerk"><ParticipantType Type="ROLE"/></Participant></Participants>
  <Applications>
    <Application Id="book">
      <FormalParameters>
        <FormalParameter Id="amount" Mode="IN"><DataType><BasicType Type="INTEGER"/></DataType></FormalParameter>
      </FormalParameters>
    </Application>
  </Applications>
  <DataFields>
    <DataField Id="amount"><DataType><BasicType Type="INTEGER"/></DataType><InitialValue>0</InitialValue></DataField>
    <DataField Id="note"><DataType><BasicType Type="STRING"/></DataType><InitialValue></InitialValue></DataField>
    <DataField Id="ok"><DataType><BasicType Type="BOOLEAN"/></DataType><InitialValue>false</InitialValue></DataField>
    <DataField Id="rate"><DataType><BasicType Type="FLOAT"/></DataType><InitialValue>0</InitialValue></DataField>
    <DataField Id="memo"><DataType><BasicType Type="STRING"/></DataType></DataField>
  </DataFields>
  <WorkflowProcesses>
    <WorkflowProcess Id="%[3]s">
      <Activities>
        <Activity Id="Begin"><Route/></Activity>
        <Activity Id="Review"><Implementation><No/></Implementation><Performer>clerk</Performer>
          <Deadline Execution="SYNCHR"><DeadlineCondition>%[4]d</DeadlineCondition><ExceptionName>late</ExceptionName></Deadline>
          <TransitionRestrictions><TransitionRestriction><Join Type="XOR"/></TransitionRestriction></TransitionRestrictions>
        </Activity>
        <Activity Id="Chase"><Implementation><No/></Implementation><Performer>clerk</Performer></Activity>
        <Activity Id="Book">
          <Implementation><Tool Id="book" Type="APPLICATION"><ActualParameters><ActualParameter>amount</ActualParameter></ActualParameters></Tool></Implementation>
          <TransitionRestrictions><TransitionRestriction><Join Type="XOR"/></TransitionRestriction></TransitionRestrictions>
        </Activity>
        <Activity Id="Approve"><Implementation><No/></Implementation><Performer>clerk</Performer>
          <TransitionRestrictions><TransitionRestriction><Split Type="XOR"/></TransitionRestriction></TransitionRestrictions>
        </Activity>
        <Activity Id="Done"><Route/></Activity>
      </Activities>
      <Transitions>
        <Transition Id="t1" From="Begin" To="Review"/>
        <Transition Id="t2" From="Review" To="Book"/>
        <Transition Id="t3" From="Review" To="Chase"><Condition Type="EXCEPTION">late</Condition></Transition>
        <Transition Id="t4" From="Chase" To="Book"/>
        <Transition Id="t5" From="Book" To="Approve"/>
        <Transition Id="t6" From="Approve" To="Done"><Condition Type="CONDITION">ok == true</Condition></Transition>
        <Transition Id="t7" From="Approve" To="Review"><Condition Type="OTHERWISE"/></Transition>
      </Transitions>
    </WorkflowProcess>
  </WorkflowProcesses>
</Package>`, PackageID, rev, Process, DeadlineAfter)
}

// The users of the suite's organisation: Clerks hold the role clerk the
// manual activities are offered to; Outsider holds no role and may take
// no work item.
var (
	Clerks   = []string{"ann", "bob", "cy"}
	Outsider = "eve"
)

const orgYAML = `users:
  - id: ann
    roles: [clerk]
  - id: bob
    roles: [clerk]
  - id: cy
    roles: [clerk]
  - id: eve
roles:
  - id: clerk
`

// Directory returns the suite's organisation (Clerks, Outsider), the
// engine's Config.Directory.
func Directory() (resource.Directory, error) {
	return resource.ParseOrg([]byte(orgYAML), resource.FormatYAML)
}
