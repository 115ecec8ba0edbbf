package enginetest

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/goxpdl/goxpdl/engine"
	"github.com/goxpdl/goxpdl/wftype"
	"github.com/goxpdl/goxpdl/workitem"
)

// RecentHistory is how many of an instance's last history entries a
// failure prints.
const RecentHistory = 25

// Step is the short form of a history entry that Steps returns and
// AssertHistory matches:
//
//	process Running            the process entered a state
//	activity Review Active     an activity (by XPDL id) entered a state
//	workitem Review Offered    a work item of an activity entered a state
//	variable amount            a command changed a variable
func Step(e engine.HistoryEntry) string {
	switch e.Subject {
	case engine.SubjectProcess:
		return "process " + e.To
	case engine.SubjectActivity:
		return "activity " + e.Activity + " " + e.To
	case engine.SubjectWorkItem:
		return "workitem " + e.Activity + " " + e.To
	case engine.SubjectVariable:
		return "variable " + e.Variable
	default:
		return strings.TrimSpace(e.Subject + " " + e.Activity + " " + e.To)
	}
}

// Report describes instance id as a failure of the harness does: its
// state, the activities not completed, open incidents, work items and
// timers, the engine's backlog and the recent history. It reads with a
// context of its own, bounded by WithTimeout, so that it also works
// after the test's context ended and never hangs on a busy database.
func (h *Harness) Report(id int64) string {
	ctx, cancel := h.lookContext()
	defer cancel()
	return report(ctx, h.e, h.clock.Now(), id)
}

// lookContext is the context of a failure's reads: not the test's, which
// may have ended, but as bounded.
func (h *Harness) lookContext() (context.Context, context.CancelFunc) {
	return context.WithTimeout(context.WithoutCancel(h.ctx), h.timeout)
}

func report(ctx context.Context, e *engine.Engine, now time.Time, id int64) string {
	var b strings.Builder
	pi, err := e.Instance(ctx, id)
	if err != nil {
		return fmt.Sprintf("instance %d: %v", id, err)
	}
	fmt.Fprintf(&b, "instance %d of process %s (package %s, version %d) is %s", id, pi.Process, pi.Package, pi.Version, pi.State)
	if pi.Diagnosis != "" {
		fmt.Fprintf(&b, ": %s", pi.Diagnosis)
	}
	fmt.Fprintf(&b, "\n  clock: %s\n", now.Format(time.RFC3339Nano))

	names := map[int64]string{}
	if acts, err := activities(ctx, e, id); err != nil {
		fmt.Fprintf(&b, "  activities: %v\n", err)
	} else {
		for _, a := range acts {
			names[a.ID] = fmt.Sprintf("%s (#%d)", a.Activity, a.ID)
		}
		done := 0
		var open []string
		for _, a := range acts {
			if a.State == wftype.ActivityCompleted {
				done++
				continue
			}
			line := fmt.Sprintf("%s (#%d) %s", a.Activity, a.ID, a.State)
			if a.Diagnosis != "" {
				line += ": " + a.Diagnosis
			}
			open = append(open, line)
		}
		fmt.Fprintf(&b, "  activities: %d completed, %d not:\n", done, len(open))
		writeLines(&b, open)
	}
	if inc, err := incidents(ctx, e, id); err != nil {
		fmt.Fprintf(&b, "  incidents: %v\n", err)
	} else if len(inc) > 0 {
		fmt.Fprintf(&b, "  open incidents:\n")
		var lines []string
		for _, i := range inc {
			lines = append(lines, fmt.Sprintf("#%d %s on %s (#%d) after %d attempt(s): %s", i.ID, i.Cause, i.Activity, i.ActivityInstance, i.Attempts, i.Error))
		}
		writeLines(&b, lines)
	}
	if items, err := workItems(ctx, e, engine.WorkItemFilter{Instance: id, States: workitem.OpenStates}); err != nil {
		fmt.Fprintf(&b, "  work items: %v\n", err)
	} else if len(items) > 0 {
		fmt.Fprintf(&b, "  open work items:\n")
		var lines []string
		for _, w := range items {
			lines = append(lines, describeItem(w))
		}
		writeLines(&b, lines)
	}
	if ts, err := timers(ctx, e, engine.TimerFilter{Instance: id, States: []engine.TimerState{engine.TimerPending, engine.TimerPaused}}); err != nil {
		fmt.Fprintf(&b, "  timers: %v\n", err)
	} else if len(ts) > 0 {
		fmt.Fprintf(&b, "  timers (Advance moves the clock):\n")
		var lines []string
		for _, t := range ts {
			of := "of the process"
			if t.ActivityInstance != 0 {
				of = "of " + names[t.ActivityInstance]
			}
			lines = append(lines, fmt.Sprintf("%s %s due %s (in %s), %s", t.Kind, of, t.DueAt.Format(time.RFC3339Nano), t.DueAt.Sub(now), t.State))
		}
		writeLines(&b, lines)
	}
	if bl, err := e.Backlog(ctx); err == nil && bl.EventsWaiting > 0 {
		fmt.Fprintf(&b, "  events waiting for a retry's backoff: %d (Advance moves the clock)\n", bl.EventsWaiting)
	}
	if entries, err := history(ctx, e, id, 0); err != nil {
		fmt.Fprintf(&b, "  history: %v\n", err)
	} else {
		from := max(0, len(entries)-RecentHistory)
		fmt.Fprintf(&b, "  history (last %d of %d):\n", len(entries)-from, len(entries))
		var lines []string
		for _, en := range entries[from:] {
			lines = append(lines, describeEntry(en))
		}
		writeLines(&b, lines)
	}
	return strings.TrimRight(b.String(), "\n")
}

func writeLines(b *strings.Builder, lines []string) {
	for _, l := range lines {
		fmt.Fprintf(b, "    %s\n", l)
	}
}

func describeItem(w engine.WorkItem) string {
	s := fmt.Sprintf("#%d %s %s", w.ID, w.Activity, w.State)
	if w.Owner != "" {
		s += ", held by " + w.Owner
	} else if len(w.Assignees) > 0 {
		var to []string
		for _, p := range w.Assignees {
			to = append(to, string(p.Kind)+":"+p.ID)
		}
		s += ", offered to " + strings.Join(to, ", ")
	} else if w.Performer != "" {
		s += ", for " + w.Performer
	}
	return s
}

// describeEntry is one line of history in a failure: the time, the step,
// who, and why.
func describeEntry(en engine.HistoryEntry) string {
	s := en.At.Format("15:04:05.000") + " " + Step(en)
	if en.Subject == engine.SubjectVariable {
		s += " = " + short(en.New)
	}
	if en.Actor != "" && en.Actor != "engine" {
		s += " by " + en.Actor
	}
	if en.Diagnosis != "" {
		s += ": " + en.Diagnosis
	}
	if en.Reason != "" {
		s += " (" + en.Reason + ")"
	}
	return s
}

// short is a value as JSON, cut to a line.
func short(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Sprint(v)
	}
	const most = 80
	if len(b) > most {
		return string(b[:most]) + "..."
	}
	return string(b)
}
