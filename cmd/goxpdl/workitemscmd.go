package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"

	"github.com/goxpdl/goxpdl/engine"
	"github.com/goxpdl/goxpdl/store"
)

const workitemsUsage = `Usage:

	goxpdl workitems --db DSN [--user U] [--json]
	goxpdl workitems claim --db DSN --user U ID
	goxpdl workitems complete --db DSN --user U [--set NAME=VALUE]... ID
	goxpdl workitems reassign --db DSN --to KIND:ID... ID
	goxpdl workitems withdraw --db DSN --user U ID

Workitems lists the open work items: all of them, or with --user the
worklist of that user (the items offered to them, directly or through
their roles and units as --org says, and those they hold), highest
priority first.

	claim     the user takes an offered item (of several users claiming
	          one, exactly one wins; the others are refused)
	complete  the user completes the item (held by them, or offered to
	          them) with the --set values as its outputs, and the process
	          moves on
	reassign  an administrator (--actor) offers the item afresh to the
	          --to principals (repeatable: user:ID, role:ID, unit:ID);
	          whoever held it loses it
	withdraw  the user who completed the item takes it back (追回): a new
	          item of the activity goes to them, and the successors its
	          completion started are cancelled, while none of them has
	          been taken up

Flags (before or after the arguments):

	--user U          the user who acts (claim, complete, withdraw; default:
	                  --actor), or whose worklist to list; the history
	                  names them as the actor unless --actor is given
	--set NAME=VALUE  complete: an output (repeatable), parsed by the type
	                  of the variable's current value (a number, true or
	                  false, JSON for other values, else text)
	--to KIND:ID      reassign: a principal to offer the item to
` + opUsage + `
` + opExitStatus

const workitemsShortUsage = "usage: goxpdl workitems [claim|complete|reassign|withdraw] --db DSN [--user U] [--json] [ID]\n"

func runWorkitems(args []string, _ io.Reader, stdout, stderr io.Writer) int {
	var o opFlags
	sets := pairFlags{}
	var to listFlags
	fs := flag.NewFlagSet("workitems", flag.ContinueOnError)
	o.register(fs)
	user := fs.String("user", "", "user")
	fs.Var(sets, "set", "NAME=VALUE")
	fs.Var(&to, "to", "KIND:ID")
	pos, code, ok := parseOp(fs, cmdSpec{name: "workitems", usage: workitemsUsage, short: workitemsShortUsage, args: anyArgs}, &o, args, stdout, stderr)
	if !ok {
		return code
	}
	// The subcommand is the first argument, wherever the flags are.
	sub := ""
	if len(pos) > 0 && slices.Contains([]string{"claim", "complete", "reassign", "withdraw"}, pos[0]) {
		sub, pos = pos[0], pos[1:]
	}
	name := strings.TrimSpace("workitems " + sub)
	switch {
	case sub == "" && len(pos) > 0:
		printErr(stderr, "goxpdl workitems: unknown subcommand %q: want claim, complete, reassign or withdraw\n%s", pos[0], workitemsShortUsage)
		return exitUsage
	case sub != "" && len(pos) != 1:
		printErr(stderr, "goxpdl %s: want 1 argument (the work item id), got %d\n%s", name, len(pos), workitemsShortUsage)
		return exitUsage
	}
	if sub == "" {
		return listWorkitems(&o, *user, stdout, stderr)
	}
	id, err := parseID("work item", pos[0])
	if err != nil {
		printErr(stderr, "goxpdl %s: %v\n%s", name, err, workitemsShortUsage)
		return exitUsage
	}
	op := o.op()
	if *user == "" {
		*user = o.actor
	} else if sub != "reassign" && !flagGiven(fs, "actor") {
		op.Actor = *user // the user acts; the engine writes them as the actor
	}
	var principals []store.Principal
	if sub == "reassign" {
		if principals, err = parsePrincipals(to); err != nil {
			printErr(stderr, "goxpdl %s: %v\n%s", name, err, workitemsShortUsage)
			return exitUsage
		}
	}
	ctx, s, code := openSession(name, &o, stderr)
	if s == nil {
		return code
	}
	defer s.close()
	wi, err := workItem(ctx, s.e, id)
	if err == nil {
		err = explainWorkItem(applyWorkitem(ctx, s.e, sub, wi, *user, sets, principals, op), id)
	}
	if err != nil {
		return s.refusal(err)
	}
	code = s.settle(ctx)
	after, err := workItem(ctx, s.e, id)
	if err != nil {
		return s.refusal(err)
	}
	row := workItemRowOf(after)
	text := fmt.Sprintf("work item %d (%s of instance %d): %s", row.ID, row.Activity, row.Instance, row.State)
	if row.Owner != "" {
		text += ", held by " + row.Owner
	}
	if row.CompletedBy != "" {
		text += ", completed by " + row.CompletedBy
	}
	if len(row.Assignees) > 0 {
		text += ", offered to " + strings.Join(row.Assignees, ", ")
	}
	return printResult(stdout, stderr, o.json, map[string]any{"command": sub, "workitem": row}, text+"\n", code)
}

// applyWorkitem runs a workitems subcommand on wi; op (--actor, or the
// user, and --reason) goes to the history with each.
func applyWorkitem(ctx context.Context, e *engine.Engine, sub string, wi engine.WorkItem, user string, sets pairFlags, to []store.Principal, op engine.Op) error {
	switch sub {
	case "claim":
		return e.ClaimWorkItem(ctx, wi.ID, user, op)
	case "complete":
		outputs, err := textOutputs(ctx, e, wi.Instance, sets)
		if err != nil {
			return err
		}
		_, err = e.CompleteWorkItem(ctx, wi.ID, engine.Completion{User: user, Outputs: outputs, Op: op})
		return err
	case "reassign":
		return e.ReassignWorkItem(ctx, wi.ID, op.Actor, to, op)
	default: // withdraw
		return e.Withdraw(ctx, wi.ID, user, op)
	}
}

// parsePrincipals reads KIND:ID principals.
func parsePrincipals(to []string) ([]store.Principal, error) {
	if len(to) == 0 {
		return nil, fmt.Errorf("reassign needs --to KIND:ID (user:, role: or unit:)")
	}
	out := make([]store.Principal, len(to))
	for i, t := range to {
		kind, id, ok := strings.Cut(t, ":")
		switch k := store.PrincipalKind(kind); {
		case !ok || id == "":
			return nil, fmt.Errorf("--to %q: want KIND:ID", t)
		case k != store.PrincipalUser && k != store.PrincipalRole && k != store.PrincipalUnit:
			return nil, fmt.Errorf("--to %q: KIND is user, role or unit", t)
		default:
			out[i] = store.Principal{Kind: k, ID: id}
		}
	}
	return out, nil
}

// textOutputs turns --set text into outputs of the types the instance's
// variables hold now: the engine's Completion takes typed values, and a
// command line has only text. A variable without a value, or one the
// instance does not have, gets JSON when the text is JSON, else the text
// (the engine refuses what does not fit).
func textOutputs(ctx context.Context, e *engine.Engine, instance int64, sets pairFlags) (map[string]any, error) {
	if len(sets) == 0 {
		return nil, nil
	}
	current, err := variables(ctx, e, instance)
	if err != nil {
		return nil, err
	}
	out := make(map[string]any, len(sets))
	for name, text := range sets {
		var v any = text
		var perr error
		switch current[name].(type) {
		case string:
		case int64:
			v, perr = strconv.ParseInt(strings.TrimSpace(text), 10, 64)
		case float64:
			v, perr = strconv.ParseFloat(strings.TrimSpace(text), 64)
		case bool:
			v, perr = strconv.ParseBool(strings.TrimSpace(text))
		default:
			var j any
			if json.Unmarshal([]byte(text), &j) == nil {
				v = j
			}
		}
		if perr != nil {
			return nil, fmt.Errorf("%w: variable %q: %q is not a %s", engine.ErrWrongType, name, text, goTypeName(current[name]))
		}
		out[name] = v
	}
	return out, nil
}

func listWorkitems(o *opFlags, user string, stdout, stderr io.Writer) int {
	ctx, s, code := openSession("workitems", o, stderr)
	if s == nil {
		return code
	}
	defer s.close()
	rows, err := listWorkItems(ctx, s.e, user)
	if err != nil {
		return s.refusal(err)
	}
	var b strings.Builder
	w := tabwriter.NewWriter(&b, 0, 4, 2, ' ', 0)
	_, _ = fmt.Fprintln(w, "ID\tINSTANCE\tPROCESS\tACTIVITY\tSTATE\tOFFERED TO\tOWNER")
	for _, r := range rows {
		owner := r.Owner
		if owner == "" {
			owner = "-"
		}
		_, _ = fmt.Fprintf(w, "%d\t%d\t%s\t%s\t%s\t%s\t%s\n", r.ID, r.Instance, r.Process, r.Activity, r.State, strings.Join(r.Assignees, ","), owner)
	}
	_ = w.Flush()
	return printResult(stdout, stderr, o.json, map[string]any{"workitems": rows}, b.String(), exitOK)
}

// goTypeName names the type of a variable's value for an operator.
func goTypeName(v any) string {
	switch v.(type) {
	case int64:
		return "whole number"
	case float64:
		return "number"
	case bool:
		return "boolean (true or false)"
	}
	return fmt.Sprintf("%T", v)
}

// flagGiven reports whether the flag name was set on the command line.
func flagGiven(fs *flag.FlagSet, name string) bool {
	given := false
	fs.Visit(func(f *flag.Flag) { given = given || f.Name == name })
	return given
}
