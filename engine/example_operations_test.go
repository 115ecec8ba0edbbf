package engine_test

import (
	"context"
	"errors"
	"fmt"
	"log"
	"sync/atomic"

	"github.com/goxpdl/goxpdl/engine"
	"github.com/goxpdl/goxpdl/store/gormstore"
)

// chargeXPDL calls the host's "charge" application, then ends.
const chargeXPDL = `<?xml version="1.0" encoding="UTF-8"?>
<Package xmlns="http://www.wfmc.org/2002/XPDL1.0" Id="billing" Name="Billing">
  <PackageHeader><XPDLVersion>1.0</XPDLVersion><Vendor>example</Vendor><Created>2026-11-26</Created></PackageHeader>
  <Applications><Application Id="charge"/></Applications>
  <WorkflowProcesses><WorkflowProcess Id="bill">
    <Activities>
      <Activity Id="charge"><Implementation><Tool Id="charge"/></Implementation></Activity>
    </Activities>
  </WorkflowProcess></WorkflowProcesses>
</Package>`

// An application fails with an error that is not retryable: its activity
// goes Abnormal and an incident says why. Once the cause is fixed, an
// operator retries the activity and the instance completes.
func ExampleEngine_RetryActivity() {
	ctx := context.Background()
	db, err := gormstore.OpenSQLite(gormstore.MemoryPath)
	if err != nil {
		log.Fatal(err)
	}
	e, err := engine.New(engine.Config{DB: db})
	if err != nil {
		log.Fatal(err)
	}
	var cardValid atomic.Bool
	e.RegisterApplication("charge", func(context.Context, *engine.Call) (map[string]any, error) {
		if !cardValid.Load() {
			return nil, errors.New("card expired")
		}
		return nil, nil
	})
	if err := e.Start(ctx); err != nil {
		log.Fatal(err)
	}
	if _, err := e.Deploy(ctx, []byte(chargeXPDL)); err != nil {
		log.Fatal(err)
	}
	id, err := e.StartProcess(ctx, engine.StartOptions{Package: "billing"})
	if err != nil {
		log.Fatal(err)
	}
	_ = e.WaitIdle(ctx)

	page, err := e.Incidents(ctx, engine.IncidentFilter{Instance: id})
	if err != nil {
		log.Fatal(err)
	}
	inc := page.Incidents[0]
	fmt.Println(inc.Cause, inc.Activity, inc.Error)

	cardValid.Store(true) // the customer updated the card
	op := engine.Op{Actor: "ops", Reason: "card updated", Data: map[string]any{"ticket": "T-17"}}
	if err := e.RetryActivity(ctx, id, inc.ActivityInstance, op); err != nil {
		log.Fatal(err)
	}
	_ = e.WaitIdle(ctx)
	pi, _ := e.Instance(ctx, id)
	open, _ := e.IncidentCounts(ctx)
	fmt.Println(pi.State, len(open))

	_ = e.Stop(ctx)
	if sqlDB, err := db.DB(); err == nil {
		_ = sqlDB.Close()
	}
	// Output:
	// application charge card expired
	// Completed 0
}

// claimXPDL is version 1 or 2 of a one-step review process: a clerk's
// manual activity, named step, and the data fields given.
func claimXPDL(step, fields string) string {
	return `<?xml version="1.0" encoding="UTF-8"?>
<Package xmlns="http://www.wfmc.org/2002/XPDL1.0" Id="claims" Name="Claims">
  <PackageHeader><XPDLVersion>1.0</XPDLVersion><Vendor>example</Vendor><Created>2026-11-26</Created></PackageHeader>
  <Participants><Participant Id="clerk"><ParticipantType Type="ROLE"/></Participant></Participants>
  <WorkflowProcesses><WorkflowProcess Id="claim">
    <DataFields>` + fields + `</DataFields>
    <Activities>
      <Activity Id="` + step + `"><Implementation><No/></Implementation><Performer>clerk</Performer></Activity>
    </Activities>
  </WorkflowProcess></WorkflowProcesses>
</Package>`
}

// A running instance moves to a new version of its definition, whose
// review step has another id and which adds a variable.
func ExampleEngine_Migrate() {
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
	if _, err := e.Deploy(ctx, []byte(claimXPDL("review", ""))); err != nil {
		log.Fatal(err)
	}
	id, err := e.StartProcess(ctx, engine.StartOptions{Package: "claims"})
	if err != nil {
		log.Fatal(err)
	}
	_ = e.WaitIdle(ctx)
	v2, err := e.Deploy(ctx, []byte(claimXPDL("assess",
		`<DataField Id="risk"><DataType><BasicType Type="STRING"/></DataType><InitialValue>low</InitialValue></DataField>`)))
	if err != nil {
		log.Fatal(err)
	}

	m := engine.Migration{To: v2.ID, Activities: map[string]string{"review": "assess"}}
	plan, err := e.PlanMigration(ctx, id, m) // checks everything, changes nothing
	if err != nil {
		log.Fatal(err)
	}
	fmt.Printf("v%d -> v%d: %s -> %s, new %v\n", plan.FromVersion, plan.ToVersion,
		plan.Activities[0].From, plan.Activities[0].To, plan.NewVariables)
	if err := e.Migrate(ctx, id, m, engine.Op{Actor: "ops", Reason: "review became assessment"}); err != nil {
		log.Fatal(err)
	}
	versions, _ := e.Versions(ctx, "claims")
	for _, v := range versions {
		fmt.Printf("version %d: %d open\n", v.Version, v.Open())
	}
	vars, _ := e.Variables(ctx, id)
	fmt.Println("risk:", vars["risk"])

	_ = e.Stop(ctx)
	if sqlDB, err := db.DB(); err == nil {
		_ = sqlDB.Close()
	}
	// Output:
	// v1 -> v2: review -> assess, new [risk]
	// version 1: 0 open
	// version 2: 1 open
	// risk: low
}
