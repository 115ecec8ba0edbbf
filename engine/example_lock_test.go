package engine_test

import (
	"context"
	"errors"
	"fmt"
	"log"

	"github.com/goxpdl/goxpdl/engine"
	"github.com/goxpdl/goxpdl/store/gormstore"
	"github.com/goxpdl/goxpdl/workitem"
)

// accountXPDL is a one-step process: a clerk closes an account.
const accountXPDL = `<?xml version="1.0" encoding="UTF-8"?>
<Package xmlns="http://www.wfmc.org/2002/XPDL1.0" Id="accounts" Name="Accounts">
  <PackageHeader><XPDLVersion>1.0</XPDLVersion><Vendor>example</Vendor><Created>2026-11-26</Created></PackageHeader>
  <Participants><Participant Id="clerk"><ParticipantType Type="ROLE"/></Participant></Participants>
  <WorkflowProcesses><WorkflowProcess Id="close">
    <Activities>
      <Activity Id="review"><Implementation><No/></Implementation><Performer>clerk</Performer></Activity>
    </Activities>
  </WorkflowProcess></WorkflowProcesses>
</Package>`

// At most one instance works on an account at a time: each start takes
// a lock on the account's business key. A second start is refused,
// naming the instance that holds the lock; a start that may wait is
// queued and runs when the holder ends.
func ExampleLockOptions() {
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
	if _, err := e.Deploy(ctx, []byte(accountXPDL)); err != nil {
		log.Fatal(err)
	}
	start := func(wait bool) (int64, error) {
		return e.StartProcess(ctx, engine.StartOptions{
			Package: "accounts", BusinessKey: "acct-1001",
			Lock: &engine.LockOptions{Scope: engine.LockLocal, Wait: wait},
		})
	}
	first, err := start(false)
	if err != nil {
		log.Fatal(err)
	}
	_, err = start(false)
	if le, ok := errors.AsType[*engine.LockedError](err); ok {
		fmt.Println(errors.Is(err, engine.ErrLocked), le.Holder == first)
	}
	second, err := start(true)
	if err != nil {
		log.Fatal(err)
	}
	_ = e.WaitIdle(ctx)
	pi, _ := e.Instance(ctx, second)
	fmt.Println("second:", pi.State)
	page, _ := e.Locks(ctx, engine.LockFilter{BusinessKey: "acct-1001"})
	for _, l := range page.Locks {
		fmt.Println(l.Key.Scope, l.Key.Process, l.State, l.Instance == first)
	}

	// The clerk closes the first account's review: the first instance
	// completes and the second gets the lock in the same transaction.
	page2, _ := e.WorkItems(ctx, engine.WorkItemFilter{Instance: first, States: workitem.OpenStates})
	if _, err := e.CompleteWorkItem(ctx, page2.WorkItems[0].ID, engine.Completion{User: "clerk1"}); err != nil {
		log.Fatal(err)
	}
	_ = e.WaitIdle(ctx)
	pi, _ = e.Instance(ctx, second)
	fmt.Println("second:", pi.State, pi.BusinessKey)

	_ = e.Stop(ctx)
	if sqlDB, err := db.DB(); err == nil {
		_ = sqlDB.Close()
	}
	// Output:
	// true true
	// second: Queued
	// local close held true
	// local close waiting false
	// second: Running acct-1001
}
