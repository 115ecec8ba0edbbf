package engine_test

import (
	"context"
	"fmt"
	"io"
	"log"
	"log/slog"
	"strconv"
	"strings"

	"github.com/goxpdl/goxpdl/engine"
	"github.com/goxpdl/goxpdl/store/gormstore"
)

// Every operator command is in the audit log, with who gave it, on what,
// why and what came of it, refusals included; a front end shows it with
// a filter.
func ExampleEngine_Audit() {
	ctx := context.Background()
	db, err := gormstore.OpenSQLite(gormstore.MemoryPath)
	if err != nil {
		log.Fatal(err)
	}
	e, err := engine.New(engine.Config{DB: db, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		log.Fatal(err)
	}
	if err := e.Start(ctx); err != nil {
		log.Fatal(err)
	}
	deps, err := e.DeployAs(ctx, engine.Op{Actor: "ops", Reason: "release 7"}, engine.Source{XPDL: []byte(claimXPDL("review", ""))})
	if err != nil {
		log.Fatal(err)
	}
	id, err := e.StartProcess(ctx, engine.StartOptions{Package: "claims", Op: &engine.Op{Actor: "alice", Reason: "phone claim"}})
	if err != nil {
		log.Fatal(err)
	}
	_ = e.WaitIdle(ctx)
	op := engine.Op{Actor: "bob", Reason: "waiting for documents", Data: map[string]any{"ticket": "T-9"}}
	if err := e.Suspend(ctx, id, op); err != nil {
		log.Fatal(err)
	}
	fmt.Println(e.Suspend(ctx, id, op)) // refused, and audited too

	// begin docblock docs/operations.md
	page, err := e.Audit(ctx, engine.AuditFilter{Instance: id, Limit: 20})
	if err != nil {
		log.Fatal(err)
	}
	for _, a := range page.Entries { // newest first
		fmt.Printf("%s %s %s %s: %s %v\n", a.Actor, a.Action, a.TargetKind, a.Result, a.Reason, a.Data)
	}
	// end docblock

	refused, _ := e.Audit(ctx, engine.AuditFilter{Results: []engine.AuditResult{engine.AuditRefused}})
	fmt.Println(refused.Entries[0].Error)
	deployed, _ := e.Audit(ctx, engine.AuditFilter{Actions: []engine.AuditAction{engine.AuditDeploy}})
	// The detail names the deployment by its id (the engine's, made from
	// the clock), which this prints as D.
	fmt.Println(deployed.Entries[0].Actor, "deployed", strings.ReplaceAll(deployed.Entries[0].Detail, strconv.FormatInt(deps[0].ID, 10), "D"))

	_ = e.Stop(ctx)
	if sqlDB, err := db.DB(); err == nil {
		_ = sqlDB.Close()
	}
	// Output:
	// process: suspend refused in state Suspended
	// bob instance.suspend instance refused: waiting for documents map[ticket:T-9]
	// bob instance.suspend instance ok: waiting for documents map[ticket:T-9]
	// alice instance.start instance ok: phone claim map[]
	// process: suspend refused in state Suspended
	// ops deployed claims version 1 (deployment D)
}
