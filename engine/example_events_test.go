package engine_test

import (
	"context"
	"fmt"
	"io"
	"log"
	"log/slog"

	"github.com/goxpdl/goxpdl/engine"
	"github.com/goxpdl/goxpdl/store/gormstore"
)

// paymentXPDL waits for whichever comes first, the payment message or the
// cancel signal: an event-based gateway (deferred choice).
const paymentXPDL = `<?xml version="1.0" encoding="UTF-8"?>
<Package xmlns="http://www.wfmc.org/2009/XPDL2.2" Id="payments" Name="Payments">
  <PackageHeader><XPDLVersion>2.2</XPDLVersion><Vendor>example</Vendor><Created>2026-11-24</Created></PackageHeader>
  <Script Type="text/javascript"/>
  <WorkflowProcesses><WorkflowProcess Id="payment">
    <DataFields><DataField Id="amount"><DataType><BasicType Type="INTEGER"/></DataType></DataField></DataFields>
    <Activities>
      <Activity Id="Start"><Event><StartEvent Trigger="None"/></Event></Activity>
      <Activity Id="Gate"><Route GatewayType="Exclusive" ExclusiveType="Event"/></Activity>
      <Activity Id="Paid"><Event><IntermediateEvent Trigger="Message">
        <TriggerResultMessage CatchThrow="CATCH"><Message Id="paid" Name="paid"/></TriggerResultMessage></IntermediateEvent></Event></Activity>
      <Activity Id="Cancel"><Event><IntermediateEvent Trigger="Signal">
        <TriggerResultSignal CatchThrow="CATCH" Name="cancel-all"/></IntermediateEvent></Event></Activity>
      <Activity Id="Ship"><Event><EndEvent Result="None"/></Event></Activity>
      <Activity Id="Refund"><Event><EndEvent Result="None"/></Event></Activity>
    </Activities>
    <Transitions>
      <Transition Id="t1" From="Start" To="Gate"/>
      <Transition Id="t2" From="Gate" To="Paid"/>
      <Transition Id="t3" From="Gate" To="Cancel"/>
      <Transition Id="t4" From="Paid" To="Ship"/>
      <Transition Id="t5" From="Cancel" To="Refund"/>
    </Transitions>
  </WorkflowProcess></WorkflowProcesses>
</Package>`

// ExampleEngine_Signal races a message against a signal: the message
// event is addressed by its activity id with Send, the signal is
// broadcast by name to every instance waiting for it.
func ExampleEngine_Signal() {
	ctx := context.Background()
	db, err := gormstore.OpenSQLite(gormstore.MemoryPath)
	if err != nil {
		log.Fatal(err)
	}
	if sqlDB, err := db.DB(); err == nil {
		defer func() { _ = sqlDB.Close() }()
	}
	e, err := engine.New(engine.Config{DB: db, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		log.Fatal(err)
	}
	if err := e.Start(ctx); err != nil {
		log.Fatal(err)
	}
	defer func() { _ = e.Stop(ctx) }()
	if _, err := e.Deploy(ctx, []byte(paymentXPDL)); err != nil {
		log.Fatal(err)
	}
	var orders []int64
	for range 2 {
		id, err := e.StartProcess(ctx, engine.StartOptions{Package: "payments"})
		if err != nil {
			log.Fatal(err)
		}
		orders = append(orders, id)
	}
	_ = e.WaitIdle(ctx)

	// The first order is paid: its message event catches the message,
	// and its signal event stops waiting.
	d, err := e.Send(ctx, engine.Message{
		MessageID: "payment-1", Instance: orders[0], Activity: "Paid", Outputs: map[string]any{"amount": 30},
	})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("message:", d.State)

	// The signal reaches only the events waiting for it now.
	// begin docblock docs/engine.md
	b, err := e.Signal(ctx, "cancel-all", engine.SignalOpts{
		Instance:  0,                                  // 0: every instance; else only this one
		Variables: map[string]any{"reason": "closed"}, // set where the process declares them
		SignalID:  "cancel-all-2026-11",               // optional: sending it again delivers nothing
	})
	// b.Receivers: the events that waited for it; empty: nobody did, the signal is lost
	// end docblock
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("signal reached", len(b.Receivers), "waiting event(s)")
	_ = e.WaitIdle(ctx)

	for i, id := range orders {
		acts, _ := e.Activities(ctx, engine.ActivityFilter{Instance: id})
		for _, a := range acts.Activities {
			if a.Activity == "Ship" || a.Activity == "Refund" {
				fmt.Printf("order %d ended at %s\n", i+1, a.Activity)
			}
		}
	}
	// Output:
	// message: Applied
	// signal reached 1 waiting event(s)
	// order 1 ended at Ship
	// order 2 ended at Refund
}
