package main

import (
	"errors"
	"fmt"
	"strings"
	"unicode/utf8"

	"github.com/goxpdl/goxpdl/xpdl"
)

// explanation is what "goxpdl validate --explain" shows of a valid file:
// the model the engine runs, after xpdl.Rewrite, and the rewrites made.
// It is also the JSON form of a file's "explain".
type explanation struct {
	Processes []explainedProcess `json:"processes"`
	Rewrites  []xpdl.RewriteStep `json:"rewrites"`
}

type explainedProcess struct {
	ID        string `json:"id"`
	Generated bool   `json:"generated"`
	explainedFlow
	ActivitySets []explainedSet `json:"activitySets,omitempty"`
}

type explainedSet struct {
	ID string `json:"id"`
	explainedFlow
}

type explainedFlow struct {
	Activities  []explainedActivity   `json:"activities"`
	Transitions []explainedTransition `json:"transitions"`
}

type explainedActivity struct {
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

type explainedTransition struct {
	ID   string `json:"id"`
	From string `json:"from"`
	To   string `json:"to"`
	// Condition is the condition type, followed by ": " and the
	// expression when there is one; empty for an unconditional one.
	Condition string `json:"condition,omitempty"`
}

// explainModel describes a rewritten package.
func explainModel(pkg *xpdl.Package, steps []xpdl.RewriteStep) *explanation {
	e := &explanation{Processes: make([]explainedProcess, 0, len(pkg.Processes)), Rewrites: steps}
	if e.Rewrites == nil {
		e.Rewrites = []xpdl.RewriteStep{} // "rewrites": [] rather than null
	}
	for _, p := range pkg.Processes {
		ep := explainedProcess{ID: p.ID, Generated: p.IsGenerated(), explainedFlow: explainFlow(&p.Flow)}
		for _, s := range p.ActivitySets {
			ep.ActivitySets = append(ep.ActivitySets, explainedSet{ID: s.ID, explainedFlow: explainFlow(&s.Flow)})
		}
		e.Processes = append(e.Processes, ep)
	}
	return e
}

func explainFlow(f *xpdl.Flow) explainedFlow {
	ef := explainedFlow{
		Activities:  make([]explainedActivity, 0, len(f.Activities)),
		Transitions: make([]explainedTransition, 0, len(f.Transitions)),
	}
	for _, a := range f.Activities {
		ea := explainedActivity{
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
		et := explainedTransition{ID: t.ID, From: t.From, To: t.To}
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

// rewriteProblems turns the refusals of xpdl.Rewrite into problems.
func rewriteProblems(err error) xpdl.Problems {
	if joined, ok := err.(interface{ Unwrap() []error }); ok { //nolint:errorlint // the list of errors.Join
		var out xpdl.Problems
		for _, e := range joined.Unwrap() {
			out = append(out, rewriteProblems(e)...)
		}
		return out
	}
	var race *xpdl.RaceRegionError
	if errors.As(err, &race) {
		return xpdl.Problems{race.Problem()}
	}
	// Rewrite documents no other error; should one come, it still makes
	// the file invalid.
	return xpdl.Problems{{Severity: xpdl.SeverityError, Code: "rewrite", Message: err.Error()}}
}

// writeExplanation writes the text form of an explanation of file:
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
func writeExplanation(b *strings.Builder, file string, e *explanation) {
	fmt.Fprintf(b, "%s: rewritten model\n", file)
	for _, p := range e.Processes {
		fmt.Fprintf(b, "process %q", p.ID)
		if p.Generated {
			b.WriteString(" (generated)")
		}
		b.WriteByte('\n')
		writeFlow(b, "  ", p.explainedFlow)
		for _, s := range p.ActivitySets {
			fmt.Fprintf(b, "  activity set %q\n", s.ID)
			writeFlow(b, "    ", s.explainedFlow)
		}
	}
	if len(e.Rewrites) == 0 {
		b.WriteString("rewrites: none; the model runs as written\n")
		return
	}
	b.WriteString("rewrites:\n")
	for i, r := range e.Rewrites {
		where := fmt.Sprintf("process %q", r.Process)
		if r.ActivitySet != "" {
			where = fmt.Sprintf("activity set %q of %s", r.ActivitySet, where)
		}
		fmt.Fprintf(b, "  %d. %s in %s: %s\n", i+1, r.Kind, where, r.Reason)
		fmt.Fprintf(b, "     activities: %s; transitions: %s; generated: %s\n",
			strings.Join(r.Activities, ", "), strings.Join(r.Transitions, ", "), strings.Join(r.Generated, ", "))
	}
}

// writeFlow writes a flow's activities and transitions as two tables.
func writeFlow(b *strings.Builder, indent string, f explainedFlow) {
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
		acts = append(acts, []string{a.ID, kind, gateway(a.Join, a.JoinImplicit), gateway(a.Split, a.SplitImplicit), reentrant})
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

// gateway is a join or split in the table: its type, marked when
// implicit, "-" for none.
func gateway(typ string, implicit bool) string {
	switch {
	case typ == "":
		return "-"
	case implicit:
		return typ + " (implicit)"
	}
	return typ
}
