package engine

import (
	"fmt"
	"strings"
	"time"

	"github.com/goxpdl/goxpdl/timer"
	"github.com/goxpdl/goxpdl/xpdl"
)

// DefaultMinTimerCycle is Config.MinTimerCycle's default: a repeating
// timer fires at most once a second.
const DefaultMinTimerCycle = time.Second

// checkTimerRates refuses a deployment with a timer that repeats more
// often than Config.MinTimerCycle: a TimeCycle of a timer event (a start
// event's starts an instance each time; "R/PT0.001S" would start a
// thousand a second for ever) or the every of a Reminder policy. The
// error matches ErrBadTimer and names the activity, the text and the
// limit.
func (e *Engine) checkTimerRates(d *deployment) error {
	min := e.cfg.MinTimerCycle
	if min < 0 {
		return nil
	}
	for _, proc := range d.pkg.Processes {
		flows := []*xpdl.Flow{&proc.Flow}
		for _, set := range proc.ActivitySets {
			flows = append(flows, &set.Flow)
		}
		for _, f := range flows {
			for _, a := range f.Activities {
				if err := e.checkTimerRate(proc, a, min); err != nil {
					return err
				}
			}
		}
	}
	return nil
}

// checkTimerRate checks the repeating timers of one activity.
func (e *Engine) checkTimerRate(proc *xpdl.Process, a *xpdl.Activity, min time.Duration) error {
	tooOften := func(what, text string, every time.Duration) error {
		return fmt.Errorf("%w: %s of activity %s in process %s, %q, repeats every %v, more often than Config.MinTimerCycle (%v)",
			ErrBadTimer, what, a.ID, proc.ID, text, every, min)
	}
	timerEvent := a.Kind == xpdl.ActivityEvent && a.Event != nil && a.Event.Trigger == xpdl.TriggerTimer && a.Event.Timer != nil
	if timerEvent && strings.TrimSpace(a.Event.Timer.TimeDate.Text) == "" { // attached to an activity or not
		text := strings.TrimSpace(a.Event.Timer.TimeCycle.Text)
		_, bare := xpdl.ParseDuration(text)
		repeats := text != "" && (!bare || a.Event.Type == xpdl.EventStart) // elsewhere a bare duration is a delay
		if repeats {
			// A TimeCycle that does not parse is refused or reported
			// where it is used; only its rate is checked here.
			if c, err := timer.ParseCycle(text, e.cfg.Location); err == nil && c.Every > 0 && c.Every < min && c.Repetitions != 1 {
				return tooOften("the TimeCycle", text, c.Every)
			}
		}
	}
	if text, ok := a.ExtendedAttributes.Get(AttrReminder); ok {
		if p, err := timer.ParseReminderPolicy(text, e.cfg.Location); err == nil && p.Every > 0 && p.Every < min {
			return tooOften("the Reminder policy", text, p.Every)
		}
	}
	return nil
}
