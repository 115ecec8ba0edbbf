package xpdl

import (
	"errors"
	"fmt"
	"strings"
	"unicode/utf8"
)

// Explanation is the model the engine runs, after Rewrite, with the
// rewrites made: what "goxpdl validate --explain" prints (Text) and
// writes as JSON, and what the console shows of a deployed version.
type Explanation struct {
	Processes []ExplainedProcess `json:"processes"`
	Rewrites  []RewriteStep      `json:"rewrites"`
}

// ExplainedProcess is one process of an Explanation.
type ExplainedProcess struct {
	ID string `json:"id"`
	// Generated marks a process Rewrite generated (an extracted race).
	Generated bool `json:"generated"`
	ExplainedFlow
	ActivitySets []ExplainedSet `json:"activitySets,omitempty"`
}

// ExplainedSet is one activity set of an ExplainedProcess.
type ExplainedSet struct {
	ID string `json:"id"`
	ExplainedFlow
}

// ExplainedFlow is the activities and transitions of a process's top
// level or of an activity set, in document order (generated ones where
// Rewrite put them).
type ExplainedFlow struct {
	Activities  []ExplainedActivity   `json:"activities"`
	Transitions []ExplainedTransition `json:"transitions"`
}

// ExplainedActivity is one activity as the engine runs it.
type ExplainedActivity struct {
	ID   string `json:"id"`
	Kind string `json:"kind"`
	// Calls is the process a SubFlow activity starts, or the activity
	// set a BlockActivity runs.
	Calls        string `json:"calls,omitempty"`
	Join         string `json:"join,omitempty"`
	JoinImplicit bool   `json:"joinImplicit,omitempty"`
	Split        string `json:"split,omitempty"`
	// SplitImplicit: the split was filled in for lack of a declaration.
	SplitImplicit bool `json:"splitImplicit,omitempty"`
	// Reentrant is what the engine does; ReentrantDeclared says whether
	// the definition (or the rewrite) said so, rather than the default.
	Reentrant         bool `json:"reentrant"`
	ReentrantDeclared bool `json:"reentrantDeclared"`
	Generated         bool `json:"generated"`
}

// ExplainedTransition is one transition as the engine runs it.
type ExplainedTransition struct {
	ID   string `json:"id"`
	From string `json:"from"`
	To   string `json:"to"`
	// Condition is the condition type, followed by ": " and the
	// expression when there is one; empty for an unconditional one.
	Condition string `json:"condition,omitempty"`
}

// Explain describes a rewritten package: rewritten and steps are what
// Rewrite returned.
func Explain(rewritten *Package, steps []RewriteStep) *Explanation {
	e := &Explanation{Processes: make([]ExplainedProcess, 0, len(rewritten.Processes)), Rewrites: steps}
	if e.Rewrites == nil {
		e.Rewrites = []RewriteStep{} // "rewrites": [] rather than null
	}
	for _, p := range rewritten.Processes {
		ep := ExplainedProcess{ID: p.ID, Generated: p.IsGenerated(), ExplainedFlow: explainFlow(&p.Flow)}
		for _, s := range p.ActivitySets {
			ep.ActivitySets = append(ep.ActivitySets, ExplainedSet{ID: s.ID, ExplainedFlow: explainFlow(&s.Flow)})
		}
		e.Processes = append(e.Processes, ep)
	}
	return e
}

func explainFlow(f *Flow) ExplainedFlow {
	ef := ExplainedFlow{
		Activities:  make([]ExplainedActivity, 0, len(f.Activities)),
		Transitions: make([]ExplainedTransition, 0, len(f.Transitions)),
	}
	for _, a := range f.Activities {
		ea := ExplainedActivity{
			ID: a.ID, Kind: string(a.Kind),
			Join: string(a.Join.Type), JoinImplicit: a.Join.Implicit,
			Split: string(a.Split.Type), SplitImplicit: a.Split.Implicit,
			Reentrant: a.IsReentrant(), ReentrantDeclared: a.Reentrant != nil,
			Generated: a.IsGenerated(),
		}
		switch {
		case a.SubFlow != nil:
			ea.Calls = a.SubFlow.Process
		case a.Block != nil:
			ea.Calls = a.Block.ActivitySet
		}
		ef.Activities = append(ef.Activities, ea)
	}
	for _, t := range f.Transitions {
		et := ExplainedTransition{ID: t.ID, From: t.From, To: t.To}
		if c := t.Condition; c != nil {
			et.Condition = string(c.Type)
			if x := strings.Join(strings.Fields(c.Expression.Text), " "); x != "" {
				et.Condition += ": " + x
			}
		}
		ef.Transitions = append(ef.Transitions, et)
	}
	return ef
}

// RewriteProblems turns an error of Rewrite into problems, so that a
// refused rewrite is reported with the validator's findings: a
// *RaceRegionError as its Problem (code "race-region"), several joined
// with errors.Join as one each.
func RewriteProblems(err error) Problems {
	if err == nil {
		return nil
	}
	if joined, ok := err.(interface{ Unwrap() []error }); ok { //nolint:errorlint // the list of errors.Join
		var out Problems
		for _, e := range joined.Unwrap() {
			out = append(out, RewriteProblems(e)...)
		}
		return out
	}
	var race *RaceRegionError
	if errors.As(err, &race) {
		return Problems{race.Problem()}
	}
	// Rewrite documents no other error; should one come, it still makes
	// the file invalid.
	return Problems{{Severity: SeverityError, Code: "rewrite", Message: err.Error()}}
}

// Text is the explanation as "goxpdl validate --explain" prints it after
// its "FILE: rewritten model" line: per process its activities and
// transitions as two aligned tables, then each rewrite with its reason:
//
//	process "main"
//	  activities:
//	    ID  KIND  JOIN  SPLIT  REENTRANT
//	    ...
//	  transitions:
//	    ID  FROM  TO  CONDITION
//	    ...
//	rewrites:
//	  1. race in process "main": reason
//	     activities: ...; transitions: ...; generated: ...
func (e *Explanation) Text() string {
	var b strings.Builder
	for _, p := range e.Processes {
		fmt.Fprintf(&b, "process %q", p.ID)
		if p.Generated {
			b.WriteString(" (generated)")
		}
		b.WriteByte('\n')
		writeFlow(&b, "  ", p.ExplainedFlow)
		for _, s := range p.ActivitySets {
			fmt.Fprintf(&b, "  activity set %q\n", s.ID)
			writeFlow(&b, "    ", s.ExplainedFlow)
		}
	}
	if len(e.Rewrites) == 0 {
		b.WriteString("rewrites: none; the model runs as written\n")
		return b.String()
	}
	b.WriteString("rewrites:\n")
	for i, r := range e.Rewrites {
		where := fmt.Sprintf("process %q", r.Process)
		if r.ActivitySet != "" {
			where = fmt.Sprintf("activity set %q of %s", r.ActivitySet, where)
		}
		fmt.Fprintf(&b, "  %d. %s in %s: %s\n", i+1, r.Kind, where, r.Reason)
		fmt.Fprintf(&b, "     activities: %s; transitions: %s; generated: %s\n",
			strings.Join(r.Activities, ", "), strings.Join(r.Transitions, ", "), strings.Join(r.Generated, ", "))
	}
	return b.String()
}

// writeFlow writes a flow's activities and transitions as two tables.
func writeFlow(b *strings.Builder, indent string, f ExplainedFlow) {
	acts := [][]string{{"ID", "KIND", "JOIN", "SPLIT", "REENTRANT"}}
	for _, a := range f.Activities {
		kind := a.Kind
		if a.Calls != "" {
			kind += " " + a.Calls
		}
		if a.Generated {
			kind += " (generated)"
		}
		reentrant := "no"
		if a.Reentrant {
			reentrant = "yes"
		}
		if !a.ReentrantDeclared {
			reentrant += " (default)"
		}
		acts = append(acts, []string{a.ID, kind, gatewayCell(a.Join, a.JoinImplicit), gatewayCell(a.Split, a.SplitImplicit), reentrant})
	}
	trans := [][]string{{"ID", "FROM", "TO", "CONDITION"}}
	for _, t := range f.Transitions {
		cond := t.Condition
		if cond == "" {
			cond = "-"
		}
		trans = append(trans, []string{t.ID, t.From, t.To, cond})
	}
	b.WriteString(indent + "activities:\n")
	writeTable(b, indent+"  ", acts)
	b.WriteString(indent + "transitions:\n")
	writeTable(b, indent+"  ", trans)
}

// writeTable writes rows with their columns aligned, two spaces apart.
func writeTable(b *strings.Builder, indent string, rows [][]string) {
	var widths []int
	for _, row := range rows {
		for i, cell := range row {
			if i == len(widths) {
				widths = append(widths, 0)
			}
			widths[i] = max(widths[i], utf8.RuneCountInString(cell))
		}
	}
	for _, row := range rows {
		b.WriteString(indent)
		for i, cell := range row {
			b.WriteString(cell)
			if i < len(row)-1 {
				b.WriteString(strings.Repeat(" ", widths[i]-utf8.RuneCountInString(cell)+2))
			}
		}
		b.WriteByte('\n')
	}
}

// gatewayCell is a join or split in the table: its type, marked when
// implicit, "-" for none.
func gatewayCell(typ string, implicit bool) string {
	switch {
	case typ == "":
		return "-"
	case implicit:
		return typ + " (implicit)"
	}
	return typ
}
