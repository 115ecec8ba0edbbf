package scheduler_test

import (
	"context"
	"fmt"
	"log"
	"sync"

	"github.com/goxpdl/goxpdl/scheduler"
	"github.com/goxpdl/goxpdl/store"
)

// Events of one process instance are handled one at a time and in ID
// order, whatever order they arrive in; a duplicate is dropped.
func Example() {
	ctx := context.Background()
	var (
		mu      sync.Mutex
		handled = map[int64][]string{}
	)
	s, err := scheduler.New(scheduler.Config{
		CriticalWorkers: 1,
		NormalWorkers:   4,
		Handler: func(_ context.Context, ev store.Event) error {
			mu.Lock()
			defer mu.Unlock()
			handled[ev.ProcessInstanceID] = append(handled[ev.ProcessInstanceID], fmt.Sprintf("%d:%s", ev.ID, ev.Kind))
			return nil
		},
	})
	if err != nil {
		log.Fatal(err)
	}
	if err := s.Start(ctx); err != nil {
		log.Fatal(err)
	}

	s.Deliver([]store.Event{
		{ID: 3, ProcessInstanceID: 1, Kind: "activity.completed"},
		{ID: 1, ProcessInstanceID: 1, Kind: "workitem.created"},
		{ID: 2, ProcessInstanceID: 2, Kind: "workitem.created"},
		{ID: 4, ProcessInstanceID: 1, Kind: "process.terminate_requested", Critical: true},
		{ID: 1, ProcessInstanceID: 1, Kind: "workitem.created"}, // again
	})
	if err := s.WaitIdle(ctx); err != nil {
		log.Fatal(err)
	}
	if err := s.Stop(ctx); err != nil {
		log.Fatal(err)
	}

	fmt.Println("instance 1:", handled[1])
	fmt.Println("instance 2:", handled[2])
	stats := s.Stats()
	fmt.Println("processed:", stats.EventsProcessed, "duplicates:", stats.EventsDuplicate)
	// Output:
	// instance 1: [1:workitem.created 3:activity.completed 4:process.terminate_requested]
	// instance 2: [2:workitem.created]
	// processed: 4 duplicates: 1
}
