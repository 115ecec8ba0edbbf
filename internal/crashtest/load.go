package main

import (
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"sort"

	"github.com/goxpdl/goxpdl/engine"
	"github.com/goxpdl/goxpdl/xpdl"
)

// appID is the XPDL Application every automatic activity of the load
// calls; the nodes bind it to the journaling application.
const appID = "crashcall"

// counterVar is the INOUT parameter the application increments: at the
// end of an instance it counts the application calls that committed.
const counterVar = "n"

// load is the crash test's work: the XPDL packages of the -defs folder and
// what every instance of their processes must have done once it is
// Completed.
type load struct {
	// files are the XPDL files, in name order.
	files []string
	// packages are their package ids, in the same order.
	packages []string
	// roots are the processes the nodes start instances of: the main
	// process of each package, in file order.
	roots []rootProcess
	// procs holds what is expected of an instance, by process id.
	procs map[string]*processPlan
}

// rootProcess names a process the nodes start.
type rootProcess struct {
	Package, Process string
}

// processPlan is what one Completed instance of a process must show.
type processPlan struct {
	// activities run exactly once per instance.
	activities []string
	// tools call the application; the counter ends as len(tools).
	tools []string
	// manual activities each have exactly one work item.
	manual []string
	// joins are the AND-join activities.
	joins []string
	// subflows start one child instance each.
	subflows []string
	// optional activities (the targets of exception transitions) may not
	// run at all, and run at most once.
	optional []string
}

// readLoad reads every *.xpdl file of dir. The load must stay within what
// the verifier can predict: process ids unique across the packages, and
// no conditional transitions other than exception ones, so that every
// activity reached without an exception runs exactly once.
func readLoad(dir string) (*load, error) {
	files, err := filepath.Glob(filepath.Join(dir, "*.xpdl"))
	if err != nil {
		return nil, fmt.Errorf("load %s: %w", dir, err)
	}
	if len(files) == 0 {
		return nil, fmt.Errorf("load %s: no *.xpdl files (run from the repository root, or name the folder with -defs)", dir)
	}
	sort.Strings(files)
	l := &load{files: files, procs: make(map[string]*processPlan)}
	for _, f := range files {
		pkg, err := xpdl.Load(f, nil)
		if err != nil {
			return nil, fmt.Errorf("load %s: %w", f, err)
		}
		if err := xpdl.Validate(pkg, nil).Err(); err != nil {
			return nil, fmt.Errorf("load %s: %w", f, err)
		}
		if slices.Contains(l.packages, pkg.ID) {
			return nil, fmt.Errorf("load %s: package %s is defined twice", f, pkg.ID)
		}
		l.packages = append(l.packages, pkg.ID)
		main, err := engine.MainProcess(pkg)
		if err != nil {
			return nil, fmt.Errorf("load %s: %w", f, err)
		}
		l.roots = append(l.roots, rootProcess{Package: pkg.ID, Process: main.ID})
		for _, proc := range pkg.Processes {
			if _, dup := l.procs[proc.ID]; dup {
				return nil, fmt.Errorf("load %s: process id %s is used by two packages; the verifier tells processes apart by id", f, proc.ID)
			}
			plan, err := planProcess(proc)
			if err != nil {
				return nil, fmt.Errorf("load %s: process %s: %w", f, proc.ID, err)
			}
			l.procs[proc.ID] = plan
		}
	}
	return l, nil
}

// planProcess works out what an instance of proc does: the activities
// reached from the start activities along transitions that are not
// exception transitions run once each.
func planProcess(proc *xpdl.Process) (*processPlan, error) {
	if len(proc.ActivitySets) > 0 {
		return nil, errors.New("activity sets are not supported by the crash test's verifier")
	}
	plan := &processPlan{}
	var starts []string
	for _, a := range proc.Activities {
		if len(proc.Incoming(a.ID)) == 0 {
			starts = append(starts, a.ID)
		}
	}
	if len(starts) == 0 {
		return nil, errors.New("no start activity")
	}
	normal := reach(proc, starts, func(t *xpdl.Transition) bool { return t.Condition == nil })
	for _, t := range proc.Transitions {
		if t.Condition == nil {
			continue
		}
		switch t.Condition.Type {
		case xpdl.ConditionException, xpdl.ConditionDefaultException:
		default:
			return nil, fmt.Errorf("transition %s has a %s condition; the crash test needs unconditional transitions", t.ID, t.Condition.Type)
		}
	}
	exceptional := reach(proc, starts, func(*xpdl.Transition) bool { return true })
	for _, a := range proc.Activities {
		switch {
		case normal[a.ID]:
			plan.activities = append(plan.activities, a.ID)
		case exceptional[a.ID]:
			plan.optional = append(plan.optional, a.ID)
			continue
		default:
			continue // a boundary event or an unreachable activity
		}
		switch {
		case a.Kind == xpdl.ActivityTool:
			if len(a.Tools) != 1 || a.Tools[0].Application != appID {
				return nil, fmt.Errorf("activity %s: tool activities must call the application %s once", a.ID, appID)
			}
			plan.tools = append(plan.tools, a.ID)
		case a.Kind == xpdl.ActivitySubFlow:
			if a.SubFlow.Execution != xpdl.ExecSynchr {
				return nil, fmt.Errorf("activity %s: subflows must be SYNCHR", a.ID)
			}
			plan.subflows = append(plan.subflows, a.ID)
		case engine.IsManual(a):
			plan.manual = append(plan.manual, a.ID)
		}
		if a.Join.Type == xpdl.GatewayAND {
			plan.joins = append(plan.joins, a.ID)
		}
	}
	return plan, nil
}

// reach returns the activities reachable from starts along the
// transitions follow accepts.
func reach(proc *xpdl.Process, starts []string, follow func(*xpdl.Transition) bool) map[string]bool {
	seen := make(map[string]bool)
	todo := slices.Clone(starts)
	for len(todo) > 0 {
		id := todo[len(todo)-1]
		todo = todo[:len(todo)-1]
		if seen[id] {
			continue
		}
		seen[id] = true
		for _, t := range proc.Outgoing(id) {
			if follow(t) {
				todo = append(todo, t.To)
			}
		}
	}
	return seen
}

// activitySet returns the activities an instance of process must run, by
// id, with true for the optional ones.
func (p *processPlan) activitySet() map[string]bool {
	m := make(map[string]bool, len(p.activities)+len(p.optional))
	for _, id := range p.activities {
		m[id] = false
	}
	for _, id := range p.optional {
		m[id] = true
	}
	return m
}
