package enginetest

import (
	"time"

	"github.com/goxpdl/goxpdl/engine"
	"github.com/goxpdl/goxpdl/workitem"
)

// DefaultUser is who completes a work item when nobody holds it and the
// directory names nobody who may take it (resource.Anyone).
const DefaultUser = "tester"

// MaxAdvanceSteps bounds how many times one Advance stops the clock at a
// timer or a retry: more means timers keep arming timers due at once.
const MaxAdvanceSteps = 100_000

// WorkItem lets the engine settle and returns the open work item of the
// activity with XPDL id activity of instance id. The test fails when the
// activity has none (with the instance's state) or several (a
// multi-instance loop: complete them with Engine().CompleteWorkItem and
// Settle).
func (h *Harness) WorkItem(id int64, activity string) engine.WorkItem {
	h.tb.Helper()
	h.Settle()
	ctx, cancel := h.bounded()
	defer cancel()
	items, err := workItems(ctx, h.e, engine.WorkItemFilter{Instance: id, Activity: activity, States: workitem.OpenStates})
	h.check(err, "read the work items of instance %d", id)
	switch len(items) {
	case 1:
		return items[0]
	case 0:
		h.fatalf("activity %s of instance %d has no open work item, and the engine is quiet\n%s", activity, id, h.Report(id))
	default:
		ids := make([]int64, len(items))
		for i, w := range items {
			ids[i] = w.ID
		}
		h.fatalf("activity %s of instance %d has %d open work items %v; complete them by id (Engine().CompleteWorkItem)", activity, id, len(items), ids)
	}
	return engine.WorkItem{}
}

// CompleteWorkItem completes the open work item of activity (WorkItem)
// with outputs, as the user who holds it, or else the first user the
// directory says may take it (engine.Engine.EligibleUsers), or else
// DefaultUser, and returns the completed item once the engine is quiet.
// A refusal (a wrong type, a variable the activity may not write) fails
// the test.
func (h *Harness) CompleteWorkItem(id int64, activity string, outputs map[string]any) engine.WorkItem {
	h.tb.Helper()
	item := h.WorkItem(id, activity)
	user := item.Owner
	if user == "" {
		ctx, cancel := h.bounded()
		defer cancel()
		users, err := h.e.EligibleUsers(ctx, item.ID)
		h.check(err, "users who may take work item %d", item.ID)
		user = DefaultUser
		if len(users) > 0 {
			user = users[0]
		}
	}
	return h.complete(id, item, user, outputs)
}

// CompleteWorkItemAs completes the open work item of activity (WorkItem)
// as user, with outputs, and returns it once the engine is quiet. The
// engine's refusal (the user may not take the item) fails the test.
func (h *Harness) CompleteWorkItemAs(id int64, activity, user string, outputs map[string]any) engine.WorkItem {
	h.tb.Helper()
	return h.complete(id, h.WorkItem(id, activity), user, outputs)
}

func (h *Harness) complete(id int64, item engine.WorkItem, user string, outputs map[string]any) engine.WorkItem {
	h.tb.Helper()
	ctx, cancel := h.bounded()
	defer cancel()
	done, err := h.e.CompleteWorkItem(ctx, item.ID, engine.Completion{User: user, Outputs: outputs})
	if err != nil {
		h.fatalf("complete work item %d (%s) of instance %d as %s: %v\n%s", item.ID, item.Activity, id, user, err, h.Report(id))
	}
	h.Settle()
	return done
}

// Advance moves the fake clock on by d and lets the engine do what falls
// due, in order: the clock stops at each pending timer due by then (and
// at each retry of a failing application) in turn, the engine settles,
// and only then moves on, so that a timer armed by another timer fires
// too if it falls due within d, and the outcome does not depend on the
// machine's speed. It returns once the clock reads Now()+d and the engine
// is quiet.
func (h *Harness) Advance(d time.Duration) {
	h.tb.Helper()
	if d < 0 {
		h.fatalf("Advance(%s): the clock does not go back", d)
	}
	target := h.clock.Now().Add(d)
	h.Settle()
	for range MaxAdvanceSteps {
		next, ok := h.nextWake(target)
		if !ok {
			if target.After(h.clock.Now()) {
				h.clock.Set(target)
			}
			h.Settle()
			return
		}
		if next.After(h.clock.Now()) {
			h.clock.Set(next)
		}
		h.Settle()
	}
	h.fatalf("Advance(%s): the clock stopped %d times at timers or retries and the end is not reached; timers keep falling due at once\n%s",
		d, MaxAdvanceSteps, h.backlog())
}

// nextWake returns the earliest time, up to target, at which the engine
// has something to do without being asked: a pending timer falls due or
// an event waits out its backoff. The engine is quiet.
func (h *Harness) nextWake(target time.Time) (time.Time, bool) {
	h.tb.Helper()
	ctx, cancel := h.bounded()
	defer cancel()
	now := h.clock.Now()
	page, err := h.e.Timers(ctx, engine.TimerFilter{States: []engine.TimerState{engine.TimerPending}, Limit: 1})
	h.check(err, "read the timers")
	next, ok := time.Time{}, false
	if len(page.Timers) > 0 && !page.Timers[0].DueAt.After(target) {
		next, ok = page.Timers[0].DueAt, true
		if !next.After(now) {
			h.fatalf("timer %d is due at %s, the clock reads %s, and the engine is quiet: it does not fire\n%s",
				page.Timers[0].ID, next.Format(time.RFC3339Nano), now.Format(time.RFC3339Nano), h.backlog())
		}
	}
	if at, found := h.nextRetry(now, target); found && (!ok || at.Before(next)) {
		next, ok = at, true
	}
	return next, ok
}

// nextRetry returns the earliest time in (now, target] at which an event
// waiting for a retry's backoff becomes available (the store's
// NextEventAvailable).
func (h *Harness) nextRetry(now, target time.Time) (time.Time, bool) {
	h.tb.Helper()
	ctx, cancel := h.bounded()
	defer cancel()
	at, ok, err := h.e.Store().NextEventAvailable(ctx, now)
	h.check(err, "read when the next event is available")
	if !ok || at.After(target) {
		return time.Time{}, false
	}
	return at, true
}
