package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/goxpdl/goxpdl/engine"
)

// repairs are the commands that repair or move one instance.
var repairs = []instanceCommand{
	{name: "retry", summary: "run an Abnormal activity again", synopsis: "--db DSN [--reason R] ID ACTIVITY_INSTANCE", args: 2,
		about: `Retry runs an Abnormal activity of a Running instance again, as a new
attempt (its applications get a new idempotency key); a BlockActivity
runs its whole ActivitySet again. Its incident is resolved ("retried").
ACTIVITY_INSTANCE is the activity instance's id (goxpdl incidents and
goxpdl instances show list them).
`,
		setup: plain(func(ctx context.Context, e *engine.Engine, id int64, args []string, op engine.Op) error {
			act, err := parseID("activity instance", args[0])
			if err != nil {
				return usageError{err}
			}
			return explain(e.RetryActivity(ctx, id, act, op), id, act)
		})},
	{name: "skip", summary: "complete an Abnormal activity without running it", synopsis: "--db DSN [--set NAME=VALUE]... [--reason R] ID ACTIVITY_INSTANCE", args: 2,
		about: `Skip completes an Abnormal activity of a Running instance without running
it: the --set values are set (as its OUT values would have been), then it
routes on. Its incident is resolved ("skipped").
`,
		flags: `	--set NAME=VALUE  a variable to set first (repeatable), parsed by its
	                  declared type
`,
		setup: func(fs *flag.FlagSet) applyFunc {
			sets := pairFlags{}
			fs.Var(sets, "set", "NAME=VALUE")
			return func(ctx context.Context, e *engine.Engine, id int64, args []string, op engine.Op) error {
				act, err := parseID("activity instance", args[0])
				if err != nil {
					return usageError{err}
				}
				return explain(e.SkipActivity(ctx, id, act, engine.Values{TextVariables: sets}, op), id, act)
			}
		}},
	{name: "jump", summary: "move an instance to any activity of its process", synopsis: "--db DSN --to ACTIVITY [--cancel ACTIVITY_INSTANCE]... [--reason R] ID", args: 1,
		about: `Jump moves an instance to an activity of its process (free flow): every
open activity is cancelled and ACTIVITY (an XPDL Activity id of the
process's top level) starts. With --cancel only the activity instances
named are cancelled, and the others go on beside the new one.
`,
		flags: `	--to ACTIVITY     the activity to start (required)
	--cancel ID       an activity instance to cancel (repeatable); default:
	                  all open ones
`,
		setup: func(fs *flag.FlagSet) applyFunc {
			to := fs.String("to", "", "activity")
			var cancels listFlags
			fs.Var(&cancels, "cancel", "activity instance")
			return func(ctx context.Context, e *engine.Engine, id int64, _ []string, op engine.Op) error {
				if *to == "" {
					return usageError{fmt.Errorf("--to ACTIVITY is required")}
				}
				if len(cancels) == 0 {
					return e.Jump(ctx, id, *to, op)
				}
				m := engine.Move{Start: []string{*to}}
				for _, c := range cancels {
					act, err := parseID("--cancel", c)
					if err != nil {
						return usageError{err}
					}
					m.Cancel = append(m.Cancel, act)
				}
				return e.MoveInstance(ctx, id, m, op)
			}
		}},
	{name: "rollback", summary: "move an instance back to a completed activity", synopsis: "--db DSN --to ACTIVITY [--reason R] ID", args: 1,
		about: `Rollback moves an instance back to an activity that completed in it
before: every open activity is cancelled and ACTIVITY starts again; a
manual activity's work item goes straight to whoever completed it last.
`,
		flags: `	--to ACTIVITY     the completed activity to go back to (required)
`,
		setup: func(fs *flag.FlagSet) applyFunc {
			to := fs.String("to", "", "activity")
			return func(ctx context.Context, e *engine.Engine, id int64, _ []string, op engine.Op) error {
				if *to == "" {
					return usageError{fmt.Errorf("--to ACTIVITY is required")}
				}
				return e.Rollback(ctx, id, *to, op)
			}
		}},
}

// varsCommand shows and changes variables; runVars runs it.
var varsCommand = instanceCommand{name: "vars", summary: "show or change the variables of an instance", synopsis: "--db DSN [--set NAME=VALUE]... [--reason R] ID", args: 1,
	about: `Vars prints the variables of an instance; with --set it changes them
first, type-checked, all or none, each change written to the history
with its old and new value and the actor and reason. Nothing else moves:
conditions see the new values when the instance next routes.
`,
	flags: `	--set NAME=VALUE  a variable to set (repeatable), parsed by its declared
	                  type
`,
	setup: func(fs *flag.FlagSet) applyFunc {
		sets := pairFlags{}
		fs.Var(sets, "set", "NAME=VALUE")
		return func(ctx context.Context, e *engine.Engine, id int64, _ []string, op engine.Op) error {
			if len(sets) == 0 {
				_, err := instanceState(ctx, e, id)
				return err
			}
			return e.SetVariables(ctx, id, engine.Values{TextVariables: sets}, op)
		}
	}}

// runVars is the vars command: it prints the variables after the change.
func runVars(args []string, _ io.Reader, stdout, stderr io.Writer) int {
	c := varsCommand
	var o opFlags
	fs := flag.NewFlagSet(c.name, flag.ContinueOnError)
	o.register(fs)
	apply := c.setup(fs)
	pos, code, ok := parseOp(fs, cmdSpec{name: c.name, usage: c.usage(), short: c.short(), args: 1}, &o, args, stdout, stderr)
	if !ok {
		return code
	}
	id, err := parseID("instance", pos[0])
	if err != nil {
		printErr(stderr, "goxpdl vars: %v\n%s", err, c.short())
		return exitUsage
	}
	ctx, s, code := openSession(c.name, &o, stderr)
	if s == nil {
		return code
	}
	defer s.close()
	if err := apply(ctx, s.e, id, nil, o.op()); err != nil {
		return s.refusal(explain(err, id, 0))
	}
	code = s.settle(ctx)
	vars, err := variables(ctx, s.e, id)
	if err != nil {
		return s.refusal(err)
	}
	return printResult(stdout, stderr, o.json, map[string]any{"instance": id, "variables": vars}, formatVariables(vars), code)
}

// formatVariables prints NAME = VALUE lines, sorted, values as JSON.
func formatVariables(vars map[string]any) string {
	names := make([]string, 0, len(vars))
	for n := range vars {
		names = append(names, n)
	}
	slices.Sort(names)
	var b strings.Builder
	for _, n := range names {
		fmt.Fprintf(&b, "%s = %s\n", n, jsonText(vars[n]))
	}
	return b.String()
}

// jsonText is v as compact JSON, or with %v when it does not encode.
func jsonText(v any) string {
	data, err := json.Marshal(v)
	if err != nil {
		return fmt.Sprint(v)
	}
	return string(data)
}

const incidentsUsage = `Usage: goxpdl incidents --db DSN [--cause C]... [--instance ID] [--all] [--json]

Incidents lists what needs an operator, oldest first: Abnormal
activities (an application failed, its retries ran out, a condition
could not be evaluated, an exception nobody handles, a subflow that
failed), applications that keep failing while they are retried, and
Locking processes. Each line names the instance, the activity instance
(what retry and skip take), the cause, the attempts and the error; the
open incidents are counted by cause first.

Flags:

	--cause C         only this cause (repeatable): application, failing,
	                  retries-exhausted, condition, exception, subflow,
	                  locking, other
	--instance ID     only the incidents of this instance
	--all             resolved incidents too
` + readUsage + `
Exit status: 0 done; 2 usage error, or the database cannot be used.
`

const incidentsShortUsage = "usage: goxpdl incidents --db DSN [--cause C]... [--instance ID] [--all] [--json]\n"

var incidentCauses = []engine.IncidentCause{
	engine.CauseApplication, engine.CauseFailing, engine.CauseRetriesExhausted, engine.CauseCondition,
	engine.CauseException, engine.CauseSubflow, engine.CauseLocking, engine.CauseOther,
}

func runIncidents(args []string, _ io.Reader, stdout, stderr io.Writer) int {
	var o opFlags
	var causes listFlags
	var instance int64
	var all bool
	fs := flag.NewFlagSet("incidents", flag.ContinueOnError)
	o.registerRead(fs)
	fs.Var(&causes, "cause", "cause")
	fs.Int64Var(&instance, "instance", 0, "instance")
	fs.BoolVar(&all, "all", false, "resolved too")
	if _, code, ok := parseOp(fs, cmdSpec{name: "incidents", usage: incidentsUsage, short: incidentsShortUsage, args: 0}, &o, args, stdout, stderr); !ok {
		return code
	}
	var want []engine.IncidentCause
	for _, c := range causes {
		if !slices.Contains(incidentCauses, engine.IncidentCause(c)) {
			printErr(stderr, "goxpdl incidents: --cause %q: want one of %s\n", c, causeNames())
			return exitUsage
		}
		want = append(want, engine.IncidentCause(c))
	}
	ctx, s, code := openSession("incidents", &o, stderr)
	if s == nil {
		return code
	}
	defer s.close()
	list, err := listIncidents(ctx, s.e, instance, want, all)
	if err != nil {
		return s.refusal(err)
	}
	counts, err := incidentCounts(ctx, s.e)
	if err != nil {
		return s.refusal(err)
	}
	var b strings.Builder
	w := tabwriter.NewWriter(&b, 0, 4, 2, ' ', 0)
	for _, c := range incidentCauses {
		if n := counts[string(c)]; n > 0 {
			_, _ = fmt.Fprintf(w, "%s\t%d\n", c, n)
		}
	}
	_ = w.Flush()
	if len(list) > 0 {
		if b.Len() > 0 {
			b.WriteString("\n")
		}
		w = tabwriter.NewWriter(&b, 0, 4, 2, ' ', 0)
		_, _ = fmt.Fprintln(w, "ID\tINSTANCE\tPROCESS\tACTIVITY\tCAUSE\tATTEMPTS\tSTATE\tLAST FAILURE\tERROR")
		for _, inc := range list {
			act := "-"
			if inc.ActivityInstance != 0 {
				act = fmt.Sprintf("%d (%s)", inc.ActivityInstance, inc.Activity)
			}
			_, _ = fmt.Fprintf(w, "%d\t%d\t%s\t%s\t%s\t%d\t%s\t%s\t%s\n", inc.ID, inc.Instance, inc.Process, act, inc.Cause, inc.Attempts,
				inc.State, inc.LastFailure.UTC().Format(time.RFC3339), oneLine(inc.Error))
		}
		_ = w.Flush()
	}
	return printResult(stdout, stderr, o.json, map[string]any{"counts": counts, "incidents": list}, b.String(), exitOK)
}

func causeNames() string {
	names := make([]string, len(incidentCauses))
	for i, c := range incidentCauses {
		names[i] = string(c)
	}
	return strings.Join(names, ", ")
}

// oneLine is s on one line.
func oneLine(s string) string { return strings.Join(strings.Fields(s), " ") }

const historyUsage = `Usage: goxpdl history --db DSN [--json] ID

History prints the audit trail of an instance, oldest first: every state
change of the process, its activities and work items, and every variable
an operator changed, with who did it, why (--reason) and when.

Flags (before or after the argument):

` + readUsage + `
Exit status: 0 done; 1 no such instance; 2 usage error, or the database
cannot be used.
`

const historyShortUsage = "usage: goxpdl history --db DSN [--json] ID\n"

func runHistory(args []string, _ io.Reader, stdout, stderr io.Writer) int {
	var o opFlags
	fs := flag.NewFlagSet("history", flag.ContinueOnError)
	o.registerRead(fs)
	pos, code, ok := parseOp(fs, cmdSpec{name: "history", usage: historyUsage, short: historyShortUsage, args: 1}, &o, args, stdout, stderr)
	if !ok {
		return code
	}
	id, err := parseID("instance", pos[0])
	if err != nil {
		printErr(stderr, "goxpdl history: %v\n%s", err, historyShortUsage)
		return exitUsage
	}
	ctx, s, code := openSession("history", &o, stderr)
	if s == nil {
		return code
	}
	defer s.close()
	entries, err := history(ctx, s.e, id)
	if err != nil {
		return s.refusal(err)
	}
	return printResult(stdout, stderr, o.json, map[string]any{"instance": id, "history": entries}, formatHistory(entries), exitOK)
}

// formatHistory is one line per entry: time, subject, change, actor,
// reason.
func formatHistory(entries []historyRow) string {
	var b strings.Builder
	w := tabwriter.NewWriter(&b, 0, 4, 2, ' ', 0)
	_, _ = fmt.Fprintln(w, "AT\tSUBJECT\tCHANGE\tACTOR\tREASON")
	for _, h := range entries {
		subject := h.Subject
		switch {
		case h.Subject == engine.SubjectVariable:
			subject = "variable " + h.Variable
		case h.WorkItem != 0:
			subject = fmt.Sprintf("workitem %d (%s)", h.WorkItem, h.Activity)
		case h.ActivityInstance != 0:
			subject = fmt.Sprintf("activity %d (%s)", h.ActivityInstance, h.Activity)
		}
		change := h.From + " -> " + h.To
		if h.From == "" {
			change = h.To
		}
		if h.Subject == engine.SubjectVariable {
			change = jsonText(h.Old) + " -> " + jsonText(h.New)
		}
		if h.Diagnosis != "" {
			change += ": " + oneLine(h.Diagnosis)
		}
		_, _ = fmt.Fprintf(w, "%s\t%s\t%s\t%s\t%s\n", h.At.UTC().Format(time.RFC3339), subject, change, h.Actor, oneLine(h.Reason))
	}
	_ = w.Flush()
	return b.String()
}
