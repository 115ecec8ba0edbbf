package scheduler_test

import (
	"context"
	"fmt"
	"log"
	"time"

	"github.com/goxpdl/goxpdl/eventbus"
	"github.com/goxpdl/goxpdl/idgen"
	"github.com/goxpdl/goxpdl/scheduler"
	"github.com/goxpdl/goxpdl/store"
	"github.com/goxpdl/goxpdl/store/gormstore"
	"github.com/goxpdl/goxpdl/timer"
)

// The scheduler is the bus's sink: events published in a transaction are
// dispatched after the commit, and the handler marks each one processed in
// the transaction that applies it.
func Example_eventBus() {
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
	clock := timer.NewFake(time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC))

	sched, err := scheduler.New(scheduler.Config{
		Handler: func(ctx context.Context, ev store.Event) error {
			return st.InTx(ctx, func(ctx context.Context, tx store.Tx) error {
				// ... apply the event to the process instance ...
				return tx.MarkEventsProcessed(ctx, store.MarkEventsProcessedParams{
					IDs: []int64{ev.ID}, ProcessedAt: clock.Now(),
				})
			})
		},
	})
	if err != nil {
		log.Fatal(err)
	}
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
	bus, err := eventbus.New(eventbus.Config{Store: st, Clock: clock, Owner: "node-1", IDs: ids.Next}, sched)
	if err != nil {
		log.Fatal(err)
	}
	if err := sched.Start(ctx); err != nil {
		log.Fatal(err)
	}
	if err := bus.Start(ctx); err != nil {
		log.Fatal(err)
	}

	var published []store.Event
	err = st.InTx(ctx, func(ctx context.Context, tx store.Tx) error {
		var err error
		published, err = bus.Publish(ctx, tx, []store.Event{
			{ProcessInstanceID: 1, Kind: "workitem.completed"},
			{ProcessInstanceID: 1, Kind: "activity.completed"},
			{ProcessInstanceID: 2, Kind: "process.terminate_requested", Critical: true},
		})
		return err
	})
	if err != nil {
		log.Fatal(err)
	}
	bus.Dispatch(published)
	if err := sched.WaitIdle(ctx); err != nil {
		log.Fatal(err)
	}

	// Stop the producer before the consumer.
	if err := bus.Stop(ctx); err != nil {
		log.Fatal(err)
	}
	if err := sched.Stop(ctx); err != nil {
		log.Fatal(err)
	}

	for i, ev := range published {
		stored, err := st.GetEvent(ctx, ev.ID)
		if err != nil {
			log.Fatal(err)
		}
		fmt.Printf("%d %s processed: %v\n", i+1, stored.Kind, stored.ProcessedAt != nil)
	}
	// Output:
	// 1 workitem.completed processed: true
	// 2 activity.completed processed: true
	// 3 process.terminate_requested processed: true
}
