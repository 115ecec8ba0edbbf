package eventbus_test

import (
	"context"
	"fmt"
	"log"
	"time"

	"github.com/goxpdl/goxpdl/eventbus"
	"github.com/goxpdl/goxpdl/idgen"
	"github.com/goxpdl/goxpdl/store"
	"github.com/goxpdl/goxpdl/store/gormstore"
	"github.com/goxpdl/goxpdl/timer"
)

// printSink passes deliveries to the example's goroutine, which prints
// them in order.
type printSink chan []store.Event

func (s printSink) Deliver(events []store.Event) { s <- events }

// Publish events in the transaction that produced them, dispatch them after
// the commit, and let the poller pick up an event written by someone else.
func Example() {
	ctx := context.Background()
	db, err := gormstore.OpenSQLite(gormstore.MemoryPath)
	if err != nil {
		log.Fatal(err)
	}
	sqlDB, err := db.DB()
	if err != nil {
		log.Fatal(err)
	}
	defer func() {
		if err := sqlDB.Close(); err != nil {
			log.Fatal(err)
		}
	}()
	st, err := gormstore.New(db)
	if err != nil {
		log.Fatal(err)
	}
	if err := st.Migrate(ctx); err != nil {
		log.Fatal(err)
	}

	sink := make(printSink, 10)
	clock := timer.NewFake(time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC))
	// Every event gets its ID from the node's id allocator.
	ids, err := idgen.New(idgen.Config{Store: st, Clock: clock, Owner: "node-1"})
	if err != nil {
		log.Fatal(err)
	}
	if err := ids.Acquire(ctx); err != nil {
		log.Fatal(err)
	}
	defer func() {
		if err := ids.Stop(ctx); err != nil {
			log.Fatal(err)
		}
	}()
	bus, err := eventbus.New(eventbus.Config{Store: st, Clock: clock, Owner: "node-1", IDs: ids.Next}, sink)
	if err != nil {
		log.Fatal(err)
	}
	if err := bus.Start(ctx); err != nil {
		log.Fatal(err)
	}
	defer func() {
		if err := bus.Stop(ctx); err != nil {
			log.Fatal(err)
		}
	}()

	// The state change and its events commit together...
	var published []store.Event
	err = st.InTx(ctx, func(ctx context.Context, tx store.Tx) error {
		var err error
		published, err = bus.Publish(ctx, tx, []store.Event{
			{EventID: "order-42-approved", ProcessInstanceID: 42, Kind: "activity.completed"},
		})
		return err
	})
	if err != nil {
		log.Fatal(err)
	}
	// ...and are handed to the sink after the commit.
	bus.Dispatch(published)
	for _, ev := range <-sink {
		fmt.Printf("dispatched %s (instance %d), claimed by %s until %s\n",
			ev.EventID, ev.ProcessInstanceID, ev.ClaimedBy, ev.ClaimedUntil.Format(time.TimeOnly))
	}

	// An event written without a claim, as by another node: the poller
	// finds it on its next tick, or sooner when nudged.
	id, err := ids.Next(ctx)
	if err != nil {
		log.Fatal(err)
	}
	_, err = st.InsertEvents(ctx, []store.Event{{
		ID: id, EventID: "order-43-terminate", ProcessInstanceID: 43, Kind: "process.terminate_requested", Critical: true,
		CreatedAt: clock.Now(), AvailableAt: clock.Now(),
	}})
	if err != nil {
		log.Fatal(err)
	}
	bus.Nudge()
	for _, ev := range <-sink {
		fmt.Printf("polled %s (instance %d), attempt %d\n", ev.EventID, ev.ProcessInstanceID, ev.Attempts)
	}
	// Output:
	// dispatched order-42-approved (instance 42), claimed by node-1 until 03:04:35
	// polled order-43-terminate (instance 43), attempt 1
}
