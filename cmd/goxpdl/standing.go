package main

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/goxpdl/goxpdl/engine"
	"github.com/goxpdl/goxpdl/wftype"
)

// defaultRunTimeout is how long run waits for the instance by default
// (--timeout).
const defaultRunTimeout = 60 * time.Second

// snapshotTimeout bounds the reads that say where an instance stands
// after run stopped waiting for it.
const snapshotTimeout = 10 * time.Second

// standing is where an instance and its subflow instances stand when run
// stops waiting for them: on --timeout, SIGINT or SIGTERM.
type standing struct {
	root engine.ProcessInstance
	// why says what stopped the run.
	why string
	// activities are the activity instances that are not Completed, of
	// the instances that have not ended.
	activities []engine.ActivityInstance
	items      []engine.WorkItem
	timers     []engine.Timer
}

// whereItStands reads the instance tree of id: its open activities, work
// items and timers.
func whereItStands(ctx context.Context, e *engine.Engine, id int64, why string) (standing, error) {
	tree, err := instanceTree(ctx, e, id)
	if err != nil {
		return standing{}, err
	}
	s := standing{root: tree[0], why: why}
	for _, pi := range tree {
		if pi.State.IsFinal() {
			continue
		}
		acts, err := allActivities(ctx, e, pi.ID)
		if err != nil {
			return standing{}, err
		}
		for _, a := range acts {
			if a.State != wftype.ActivityCompleted {
				s.activities = append(s.activities, a)
			}
		}
		items, err := openWorkItems(ctx, e, pi.ID)
		if err != nil {
			return standing{}, err
		}
		s.items = append(s.items, items...)
		timers, err := allTimers(ctx, e, pi.ID)
		if err != nil {
			return standing{}, err
		}
		s.timers = append(s.timers, timers...)
	}
	return s, nil
}

// String is run's summary line for a run that was stopped.
func (s standing) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "instance %d of process %s: %s", s.root.ID, s.root.Process, s.root.State)
	if s.root.Diagnosis != "" {
		fmt.Fprintf(&b, ": %s", s.root.Diagnosis)
	}
	fmt.Fprintf(&b, "; stopped: %s", s.why)
	if len(s.activities) > 0 {
		list := make([]string, len(s.activities))
		for i, a := range s.activities {
			list[i] = fmt.Sprintf("%s (instance %d%s) %s", a.Activity, a.ID, s.ofSubflow(a.Instance), a.State)
			if a.Diagnosis != "" {
				list[i] += ": " + a.Diagnosis
			}
		}
		fmt.Fprintf(&b, "; open activities: %s", strings.Join(list, ", "))
	}
	if len(s.items) > 0 {
		list := make([]string, len(s.items))
		for i, wi := range s.items {
			list[i] = fmt.Sprintf("%d (%s) %s", wi.ID, wi.Performer, wi.State)
		}
		fmt.Fprintf(&b, "; open work items: %s", strings.Join(list, ", "))
	}
	if len(s.timers) > 0 {
		list := make([]string, len(s.timers))
		for i, t := range s.timers {
			list[i] = fmt.Sprintf("%s %s due %s%s", t.State, t.Kind, t.DueAt.UTC().Format(time.RFC3339), s.ofSubflow(t.Instance))
			if t.ActivityInstance != 0 {
				list[i] += fmt.Sprintf(" (activity instance %d)", t.ActivityInstance)
			}
		}
		fmt.Fprintf(&b, "; timers: %s", strings.Join(list, ", "))
	}
	return b.String()
}

// ofSubflow names the process instance a row belongs to when it is not the
// root.
func (s standing) ofSubflow(processInstanceID int64) string {
	if processInstanceID == s.root.ID {
		return ""
	}
	return fmt.Sprintf(" of process instance %d", processInstanceID)
}

// withRunTimeout is ctx, ended after d (never for 0) with a cause that
// names --timeout.
func withRunTimeout(ctx context.Context, d time.Duration) (context.Context, context.CancelFunc) {
	if d == 0 {
		return context.WithCancel(ctx)
	}
	return context.WithTimeoutCause(ctx, d, fmt.Errorf("--timeout %v passed", d))
}

// stopAndRead stops the engine, so that nothing moves any more, and reads
// where instance id stands; why says what stopped the run.
func stopAndRead(e *engine.Engine, id int64, why error) (standing, error) {
	ctx, cancel := context.WithTimeout(context.Background(), snapshotTimeout)
	defer cancel()
	if err := e.Stop(ctx); err != nil {
		return standing{}, fmt.Errorf("stop: %w", err)
	}
	return whereItStands(ctx, e, id, why.Error())
}
