package main

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/goxpdl/goxpdl/store/gormstore"
	"github.com/goxpdl/goxpdl/wftype"
)

// instancesUsage is the full usage text of "goxpdl instances".
const instancesUsage = `Usage:

	goxpdl instances --db DSN [--json] [--state STATE] [--process P] [--business-key K] [--limit N]
	goxpdl instances show --db DSN [--json] ID

Instances counts the process instances of an engine database by state
and lists them, oldest first. It only reads: it can run beside the
engine nodes.

"instances show ID" prints everything about one instance: its state, its
activity instances (with the ids retry, skip and jump --cancel take),
variables, work items, timers, incidents (resolved ones too), subflow
instances and history.

Flags:

	--db DSN        the engine's database (required):
	                ` + dbUsage + `
	--json          print one JSON object: "counts" maps each process
	                state (Initiated, Running, Suspended, Completed,
	                Terminated, Locking) to a count, "total" is their sum,
	                "instances" lists the instances shown
	--state STATE   list only instances in this state (the counts cover
	                all)
	--process P     list only instances of the WorkflowProcess with id P
	--business-key K
	                list only instances started with business key K
	--limit N       list at most N instances (default 100; 0 lists none)

Exit status: 0 on success; 2 on a usage error or when the database
cannot be read.
`

const instancesShortUsage = "usage: goxpdl instances [show ID] --db DSN [--json] [--state STATE] [--process P] [--business-key K] [--limit N]\n"

// instanceRow is one listed instance, as --json prints it.
type instanceRow struct {
	ID         int64  `json:"id"`
	Process    string `json:"process"`
	Definition int64  `json:"definition"`
	State      string `json:"state"`
	Parent     *int64 `json:"parent,omitempty"`
	// BusinessKey is the host's key of the instance; "" for none.
	BusinessKey string     `json:"business_key,omitempty"`
	Diagnosis   string     `json:"diagnosis,omitempty"`
	CreatedAt   time.Time  `json:"created_at"`
	UpdatedAt   time.Time  `json:"updated_at"`
	EndedAt     *time.Time `json:"ended_at,omitempty"`
}

// instancesReport is what "goxpdl instances --json" prints.
type instancesReport struct {
	DB        string           `json:"db"`
	Counts    map[string]int64 `json:"counts"`
	Total     int64            `json:"total"`
	Instances []instanceRow    `json:"instances"`
}

func runInstances(args []string, _ io.Reader, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("instances", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() { printErr(stderr, "%s", instancesShortUsage) }
	dsn := fs.String("db", "", "database")
	asJSON := fs.Bool("json", false, "print JSON")
	state := fs.String("state", "", "list only this state")
	process := fs.String("process", "", "list only this process")
	businessKey := fs.String("business-key", "", "list only instances with this business key")
	limit := fs.Int("limit", 100, "list at most N")
	pos, code, ok := parseInstancesArgs(fs, args, dsn, stdout, stderr)
	if !ok {
		return code
	}
	if len(pos) == 2 {
		return showInstanceCmd(pos[1], *dsn, *asJSON, stdout, stderr)
	}
	switch {
	case *limit < 0:
		printErr(stderr, "goxpdl instances: --limit %d: want 0 or more\n", *limit)
		return exitUsage
	case *state != "" && !knownState(*state):
		printErr(stderr, "goxpdl instances: --state %q: want one of %s\n", *state, stateNames())
		return exitUsage
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	db, closeDB, err := openDB(*dsn)
	if err != nil {
		printErr(stderr, "goxpdl instances: %v\n", err)
		return exitUsage
	}
	defer closeDB()
	st, err := gormstore.New(db)
	if err != nil {
		printErr(stderr, "goxpdl instances: %v\n", err)
		return exitUsage
	}
	rep, err := readInstances(ctx, st, instanceFilter{state: *state, process: *process, businessKey: *businessKey, limit: *limit})
	if err != nil {
		printErr(stderr, "goxpdl instances: %v (is %s an engine database?)\n", err, describeDB(*dsn))
		return exitUsage
	}
	rep.DB = describeDB(*dsn)
	if *asJSON {
		out, err := json.MarshalIndent(rep, "", "  ")
		if err != nil {
			printErr(stderr, "goxpdl instances: %v\n", err)
			return exitUsage
		}
		return writeOut(stdout, stderr, string(out)+"\n", exitOK)
	}
	return writeOut(stdout, stderr, formatInstances(rep), exitOK)
}

// formatInstances is the text form: the counts, then the list.
func formatInstances(rep instancesReport) string {
	var b strings.Builder
	w := tabwriter.NewWriter(&b, 0, 4, 2, ' ', 0)
	for _, s := range wftype.ProcessStates {
		_, _ = fmt.Fprintf(w, "%s\t%d\n", s, rep.Counts[string(s)])
	}
	_, _ = fmt.Fprintf(w, "total\t%d\n", rep.Total)
	_ = w.Flush()
	if len(rep.Instances) == 0 {
		return b.String()
	}
	b.WriteString("\n")
	w = tabwriter.NewWriter(&b, 0, 4, 2, ' ', 0)
	_, _ = fmt.Fprintln(w, "ID\tPROCESS\tDEFINITION\tSTATE\tUPDATED")
	for _, r := range rep.Instances {
		_, _ = fmt.Fprintf(w, "%d\t%s\t%d\t%s\t%s\n", r.ID, r.Process, r.Definition, r.State, r.UpdatedAt.Format(time.RFC3339))
	}
	_ = w.Flush()
	return b.String()
}

func knownState(s string) bool {
	for _, st := range wftype.ProcessStates {
		if string(st) == s {
			return true
		}
	}
	return false
}

func stateNames() string {
	names := make([]string, len(wftype.ProcessStates))
	for i, s := range wftype.ProcessStates {
		names[i] = string(s)
	}
	return strings.Join(names, ", ")
}

// parseDBCommand parses the flags of a command that works on an existing
// database (instances, resume): no arguments, and --db required. It
// reports false with the exit code when the command should stop (help was
// asked for, or a usage error).
func parseDBCommand(fs *flag.FlagSet, args []string, dsn *string, usage, short string, stdout, stderr io.Writer) (int, bool) {
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return writeOut(stdout, stderr, usage, exitOK), false
		}
		return exitUsage, false
	}
	switch {
	case fs.NArg() != 0:
		printErr(stderr, "goxpdl %s: unexpected arguments %q\n%s", fs.Name(), fs.Args(), short)
		return exitUsage, false
	case *dsn == "":
		printErr(stderr, "goxpdl %s: --db is required (a new in-memory database holds nothing)\n%s", fs.Name(), short)
		return exitUsage, false
	}
	return exitOK, true
}

// parseInstancesArgs parses the arguments of instances: none, or "show
// ID", flags before or after them; --db is required.
func parseInstancesArgs(fs *flag.FlagSet, args []string, dsn *string, stdout, stderr io.Writer) ([]string, int, bool) {
	pos, err := parseInterleaved(fs, args)
	if err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return nil, writeOut(stdout, stderr, instancesUsage, exitOK), false
		}
		return nil, exitUsage, false
	}
	switch {
	case len(pos) != 0 && (pos[0] != "show" || len(pos) != 2):
		printErr(stderr, "goxpdl instances: unexpected arguments %q\n%s", pos, instancesShortUsage)
		return nil, exitUsage, false
	case *dsn == "":
		printErr(stderr, "goxpdl instances: --db is required (a new in-memory database holds nothing)\n%s", instancesShortUsage)
		return nil, exitUsage, false
	}
	return pos, exitOK, true
}

// showInstanceCmd is "instances show ID".
func showInstanceCmd(arg, dsn string, asJSON bool, stdout, stderr io.Writer) int {
	id, err := parseID("instance", arg)
	if err != nil {
		printErr(stderr, "goxpdl instances show: %v\n%s", err, instancesShortUsage)
		return exitUsage
	}
	o := opFlags{db: dsn, apps: "noop"}
	ctx, s, code := openSession("instances show", &o, stderr)
	if s == nil {
		return code
	}
	defer s.close()
	d, err := showInstance(ctx, s.e, id)
	if err != nil {
		return s.refusal(err)
	}
	return printResult(stdout, stderr, asJSON, d, formatDetail(d), exitOK)
}

// formatDetail is the text form of instances show.
func formatDetail(d instanceDetail) string {
	var b strings.Builder
	fmt.Fprintf(&b, "instance %d of process %s (definition %d): %s\n", d.ID, d.Process, d.Definition, d.State)
	if d.Diagnosis != "" {
		fmt.Fprintf(&b, "diagnosis: %s\n", oneLine(d.Diagnosis))
	}
	if d.Parent != nil {
		fmt.Fprintf(&b, "parent: instance %d\n", *d.Parent)
	}
	if d.BusinessKey != "" {
		fmt.Fprintf(&b, "business key: %s\n", d.BusinessKey)
	}
	section := func(title string, header string, rows func(w io.Writer)) {
		fmt.Fprintf(&b, "\n%s:\n", title)
		w := tabwriter.NewWriter(&b, 0, 4, 2, ' ', 0)
		_, _ = fmt.Fprintln(w, "  "+header)
		rows(w)
		_ = w.Flush()
	}
	section("activities", "ID\tACTIVITY\tSTATE\tDIAGNOSIS", func(w io.Writer) {
		for _, a := range d.Activities {
			_, _ = fmt.Fprintf(w, "  %d\t%s\t%s\t%s\n", a.ID, a.Activity, a.State, oneLine(a.Diagnosis))
		}
	})
	fmt.Fprintf(&b, "\nvariables:\n")
	for _, line := range strings.Split(strings.TrimSuffix(formatVariables(d.Variables), "\n"), "\n") {
		if line != "" {
			fmt.Fprintf(&b, "  %s\n", line)
		}
	}
	if len(d.WorkItems) > 0 {
		section("work items", "ID\tACTIVITY\tSTATE\tOFFERED TO\tOWNER", func(w io.Writer) {
			for _, wi := range d.WorkItems {
				_, _ = fmt.Fprintf(w, "  %d\t%s\t%s\t%s\t%s\n", wi.ID, wi.Activity, wi.State, strings.Join(wi.Assignees, ","), cmp.Or(wi.Owner, wi.CompletedBy, "-"))
			}
		})
	}
	if len(d.Timers) > 0 {
		section("timers", "ID\tKIND\tSTATE\tDUE", func(w io.Writer) {
			for _, t := range d.Timers {
				_, _ = fmt.Fprintf(w, "  %d\t%s\t%s\t%s\n", t.ID, t.Kind, t.State, t.DueAt.UTC().Format(time.RFC3339))
			}
		})
	}
	if len(d.Incidents) > 0 {
		section("incidents", "ID\tACTIVITY\tCAUSE\tSTATE\tERROR", func(w io.Writer) {
			for _, inc := range d.Incidents {
				_, _ = fmt.Fprintf(w, "  %d\t%d (%s)\t%s\t%s\t%s\n", inc.ID, inc.ActivityInstance, inc.Activity, inc.Cause, inc.State, oneLine(inc.Error))
			}
		})
	}
	if len(d.Children) > 0 {
		section("subflow instances", "ID\tPROCESS\tSTATE", func(w io.Writer) {
			for _, c := range d.Children {
				_, _ = fmt.Fprintf(w, "  %d\t%s\t%s\n", c.ID, c.Process, c.State)
			}
		})
	}
	fmt.Fprintf(&b, "\nhistory:\n")
	for _, line := range strings.Split(strings.TrimSuffix(formatHistory(d.History), "\n"), "\n") {
		fmt.Fprintf(&b, "  %s\n", line)
	}
	return b.String()
}
