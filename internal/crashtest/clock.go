package main

import (
	"context"
	"time"

	"github.com/goxpdl/goxpdl/timer"
)

// clock is where the crash test reads the time: the real clock, through
// the timer package like the rest of goxpdl (STYLE §7).
var clock = timer.Real()

// pause waits for d, or until ctx ends (and then returns its error).
func pause(ctx context.Context, d time.Duration) error {
	if d <= 0 {
		return ctx.Err()
	}
	t := clock.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C():
		return nil
	}
}
