package engine_test

import (
	"context"
	"fmt"
	"log"

	"github.com/goxpdl/goxpdl/engine"
	"github.com/goxpdl/goxpdl/store/gormstore"
)

// A parent and a child file that share the package Id "loans", as Bonita
// exports do: the parent's SubFlow calls the child file's process.
const (
	loanParentXPDL = `<Package xmlns="http://www.wfmc.org/2002/XPDL1.0" Id="loans">
  <PackageHeader><XPDLVersion>1.0</XPDLVersion><Vendor>example</Vendor><Created>2026-11-26</Created></PackageHeader>
  <WorkflowProcesses><WorkflowProcess Id="loan"><Activities>
    <Activity Id="check"><Implementation><SubFlow Id="scoring" Execution="SYNCHR"/></Implementation></Activity>
  </Activities></WorkflowProcess></WorkflowProcesses>
</Package>`
	loanChildXPDL = `<Package xmlns="http://www.wfmc.org/2002/XPDL1.0" Id="loans">
  <PackageHeader><XPDLVersion>1.0</XPDLVersion><Vendor>example</Vendor><Created>2026-11-26</Created></PackageHeader>
  <WorkflowProcesses><WorkflowProcess Id="scoring"><Activities>
    <Activity Id="score"><Route/></Activity>
  </Activities></WorkflowProcess></WorkflowProcesses>
</Package>`
)

// ExampleEngine_DeployTogether deploys two files as one deployment: each
// is its own package (a version of "loans" each), and the parent's
// subflow finds its process in the file deployed with it.
func ExampleEngine_DeployTogether() {
	ctx := context.Background()
	db, err := gormstore.OpenSQLite(gormstore.MemoryPath)
	if err != nil {
		log.Fatal(err)
	}
	if sqlDB, err := db.DB(); err == nil {
		defer func() { _ = sqlDB.Close() }()
	}
	e, err := engine.New(engine.Config{DB: db})
	if err != nil {
		log.Fatal(err)
	}
	if err := e.Start(ctx); err != nil {
		log.Fatal(err)
	}
	defer func() { _ = e.Stop(ctx) }()

	ds, err := e.DeployTogether(ctx,
		engine.Source{File: "loan.xpdl", XPDL: []byte(loanParentXPDL)},
		engine.Source{File: "loan-scoring.xpdl", XPDL: []byte(loanChildXPDL)})
	if err != nil {
		log.Fatal(err)
	}
	for _, d := range ds {
		fmt.Printf("%s: package %s version %d, processes %v\n", d.File, d.PackageID, d.Version, d.Processes)
	}
	id, err := e.StartProcess(ctx, engine.StartOptions{DefinitionID: ds[0].ID})
	if err != nil {
		log.Fatal(err)
	}
	_ = e.WaitIdle(ctx)
	pi, err := e.Instance(ctx, id)
	if err != nil {
		log.Fatal(err)
	}
	kids, err := e.Instances(ctx, engine.InstanceFilter{Parent: id})
	if err != nil {
		log.Fatal(err)
	}
	kid := kids.Instances[0]
	fmt.Println(pi.Process, pi.State, "- subflow", kid.Process, kid.State, "of", ds[1].File)
	// Output:
	// loan.xpdl: package loans version 1, processes [loan]
	// loan-scoring.xpdl: package loans version 2, processes [scoring]
	// loan Completed - subflow scoring Completed of loan-scoring.xpdl
}
