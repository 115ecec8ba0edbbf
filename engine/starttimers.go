package engine

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/goxpdl/goxpdl/engine/machine"
	"github.com/goxpdl/goxpdl/store"
	"github.com/goxpdl/goxpdl/timer"
	"github.com/goxpdl/goxpdl/xpdl"
)

// timerStart is a timer of a deployment, armed for a timer start event:
// when it fires, the engine creates an instance of the event's process.
// Key is the event's id; the payload names the process and when the timer
// was first armed (the origin of its cycle).
const timerStart = "start"

// isStartTimer reports whether def is a timer start event of a process's
// top-level flow.
func isStartTimer(def *xpdl.Activity) bool {
	return isTimerEvent(def) && def.Event.Type == xpdl.EventStart
}

// planStartTimers lists the timers of a new deployment: one per timer
// start event with a TimeDate or TimeCycle, due at its first occurrence
// after now. An event without either (as several modelers write it)
// creates nothing; such a process starts by hand only. A time that cannot
// be worked out refuses the deployment with ErrBadTimer.
func (e *Engine) planStartTimers(ctx context.Context, d *deployment, now time.Time) ([]store.Timer, error) {
	var out []store.Timer
	for _, proc := range d.pkg.Processes {
		for _, ev := range proc.Activities {
			if !isStartTimer(ev) {
				continue
			}
			due, ok, err := e.firstStart(ctx, ev.Event.Timer, now)
			if err != nil {
				return nil, fmt.Errorf("%w: timer start event %s of process %s: %w", ErrBadTimer, ev.ID, proc.ID, err)
			}
			if !ok {
				continue
			}
			if _, err := initialValues(declarations(d.pkg, proc), nil); err != nil {
				return nil, fmt.Errorf("%w: process %s starts by timer but has no valid initial values: %w", ErrBadTimer, proc.ID, err)
			}
			out = append(out, store.Timer{
				DefinitionID: d.def.ID, Kind: timerStart, Key: ev.ID, DueAt: due, CreatedAt: now,
				Payload: mustJSON(timerPayload{Process: proc.ID, Since: now}),
			})
		}
	}
	return out, nil
}

// firstStart is when a start timer fires first: its TimeDate (a date, a
// duration from now, or JavaScript without variables), else the first
// occurrence of its TimeCycle after now. Unlike an intermediate event, a
// start event's bare-duration TimeCycle ("PT1H") repeats: it starts an
// instance every hour.
func (e *Engine) firstStart(ctx context.Context, tt *xpdl.TimerTrigger, now time.Time) (time.Time, bool, error) {
	if tt == nil {
		return time.Time{}, false, nil
	}
	if text := strings.TrimSpace(tt.TimeDate.Text); text != "" {
		return e.timeAt(ctx, now, text, func() (map[string]any, error) { return nil, nil })
	}
	if text := strings.TrimSpace(tt.TimeCycle.Text); text != "" {
		c, err := timer.ParseCycle(text, e.cfg.Location)
		if err != nil {
			return time.Time{}, false, err
		}
		due, ok := c.Next(now, 0)
		return due, ok, nil
	}
	return time.Time{}, false, nil
}

// startCycle returns the TimeCycle of a start event, and false when the
// event fires once (a TimeDate, or no cycle that parses).
func (e *Engine) startCycle(ev *xpdl.Activity) (timer.Cycle, bool) {
	tt := ev.Event.Timer
	if tt == nil || strings.TrimSpace(tt.TimeDate.Text) != "" || strings.TrimSpace(tt.TimeCycle.Text) == "" {
		return timer.Cycle{}, false
	}
	c, err := timer.ParseCycle(tt.TimeCycle.Text, e.cfg.Location)
	return c, err == nil
}

// replaceStartTimers arms the start timers of deployment d and deletes
// those of the package's earlier versions: a new version takes over the
// schedule, as it takes over new instances.
func (e *Engine) replaceStartTimers(ctx context.Context, tx store.Tx, d *deployment, armed []store.Timer) error {
	older, err := tx.ListDefinitions(ctx, store.ListDefinitionsParams{PackageID: d.def.PackageID})
	if err != nil {
		return err
	}
	var stale []int64
	for _, def := range older {
		if def.ID == d.def.ID {
			continue
		}
		timers, err := tx.ListTimers(ctx, store.ListTimersParams{DefinitionID: def.ID, Kinds: []string{timerStart}})
		if err != nil {
			return err
		}
		for _, t := range timers {
			stale = append(stale, t.ID)
		}
	}
	if len(stale) > 0 {
		if _, err := tx.DeleteTimers(ctx, store.DeleteTimersParams{IDs: stale}); err != nil {
			return err
		}
	}
	for i := range armed {
		armed[i].DefinitionID = d.def.ID
		if armed[i].ID, err = e.ids.Next(ctx); err != nil {
			return err
		}
	}
	if len(armed) == 0 {
		return nil
	}
	_, err = tx.InsertTimers(ctx, armed)
	return err
}

// fireStartTimer handles a start timer that fired, in the timer service's
// transaction: it creates an instance of the event's process, which
// begins past the event, deletes the spent timer and, for a cycle, arms
// the next occurrence after now (occurrences missed while no engine ran
// are covered by this one firing; see timer.Cycle.CatchUp). The returned
// function runs after commit.
func (e *Engine) fireStartTimer(ctx context.Context, tx store.Tx, t store.Timer) (func(), error) {
	if _, err := tx.DeleteTimers(ctx, store.DeleteTimersParams{IDs: []int64{t.ID}}); err != nil {
		return nil, err
	}
	var p timerPayload
	if err := json.Unmarshal(t.Payload, &p); err != nil {
		e.log.Error("dropping a start timer with a malformed payload", "timer", t.ID, "err", err)
		return nil, nil
	}
	dep, err := e.definition(ctx, tx, t.DefinitionID)
	if err != nil {
		return nil, err
	}
	proc := dep.pkg.Process(p.Process)
	var ev *xpdl.Activity
	if proc != nil {
		ev = proc.Activity(t.Key)
	}
	if ev == nil || !isStartTimer(ev) {
		e.log.Error("dropping a start timer whose event is not in its deployment", "timer", t.ID,
			"deployment", t.DefinitionID, "process", p.Process, "event", t.Key)
		return nil, nil
	}
	r := e.newRun(ctx, tx, "timer")
	child, err := e.createInstance(r, dep, proc, nil, nil, &firedStart{event: ev, due: t.DueAt})
	if err != nil {
		return nil, err
	}
	if err := child.drain(); err != nil {
		return nil, err
	}
	if err := child.flush(false); err != nil {
		return nil, err
	}
	firedEvents(ctx, child.published)
	var next time.Time
	if c, ok := e.startCycle(ev); ok {
		if due, fired, more := c.Upcoming(p.Since, t.Count+1, child.now); more {
			again := t
			again.State, again.DueAt, again.Count, again.FiredAt = store.TimerPending, due, fired, nil
			again.CreatedAt = child.now
			if again.ID, err = e.ids.Next(ctx); err != nil {
				return nil, err
			}
			if _, err := tx.InsertTimers(ctx, []store.Timer{again}); err != nil {
				return nil, err
			}
			next = due
		}
	}
	return func() {
		e.remember(child)
		e.publish(child.records) // before the events that make records of their own
		e.deliver(child.observed)
		e.bus.Dispatch(child.published)
		if !next.IsZero() {
			e.timers.Armed(next)
		}
	}, nil
}

// startFired completes a timer start event whose timer created the
// instance: it happened before the instance existed.
func (r *run) startFired(a *act) error {
	if err := r.setActivity(a, machine.ActivityStart, ""); err != nil {
		return err
	}
	r.recordActivity(a, Record{Type: RecordTimerFired, Activity: a.def.ID, Detail: "started the instance"})
	return r.complete(a, "")
}
