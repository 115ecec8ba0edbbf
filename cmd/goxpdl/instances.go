package main

import (
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

	"github.com/goxpdl/goxpdl/store"
	"github.com/goxpdl/goxpdl/store/gormstore"
	"github.com/goxpdl/goxpdl/wftype"
)

// instancesUsage is the full usage text of "goxpdl instances".
const instancesUsage = `Usage: goxpdl instances --db DSN [--json] [--state STATE] [--limit N]

Instances counts the process instances of an engine database by state
and lists them, oldest first. It only reads: it can run beside the
engine nodes.

Flags:

	--db DSN        the engine's database (required):
	                ` + dbUsage + `
	--json          print one JSON object: "counts" maps each process
	                state (Initiated, Running, Suspended, Completed,
	                Terminated, Locking) to a count, "total" is their sum,
	                "instances" lists the instances shown
	--state STATE   list only instances in this state (the counts cover
	                all)
	--limit N       list at most N instances (default 100; 0 lists none)

Exit status: 0 on success; 2 on a usage error or when the database
cannot be read.
`

const instancesShortUsage = "usage: goxpdl instances --db DSN [--json] [--state STATE] [--limit N]\n"

// instanceRow is one listed instance, as --json prints it.
type instanceRow struct {
	ID         int64      `json:"id"`
	Process    string     `json:"process"`
	Definition int64      `json:"definition"`
	State      string     `json:"state"`
	Parent     *int64     `json:"parent,omitempty"`
	Diagnosis  string     `json:"diagnosis,omitempty"`
	CreatedAt  time.Time  `json:"created_at"`
	UpdatedAt  time.Time  `json:"updated_at"`
	EndedAt    *time.Time `json:"ended_at,omitempty"`
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
	limit := fs.Int("limit", 100, "list at most N")
	if code, ok := parseDBCommand(fs, args, dsn, instancesUsage, instancesShortUsage, stdout, stderr); !ok {
		return code
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
	rep, err := readInstances(ctx, st, *state, *limit)
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

// readInstances counts the instances by state and lists up to limit of
// them (in state when not empty).
func readInstances(ctx context.Context, st store.Store, state string, limit int) (instancesReport, error) {
	counts, err := st.CountProcessInstancesByState(ctx)
	if err != nil {
		return instancesReport{}, err
	}
	rep := instancesReport{Counts: make(map[string]int64, len(wftype.ProcessStates)), Instances: []instanceRow{}}
	for _, s := range wftype.ProcessStates {
		rep.Counts[string(s)] = counts[string(s)]
		rep.Total += counts[string(s)]
	}
	if limit == 0 {
		return rep, nil
	}
	params := store.ListProcessInstancesParams{Limit: limit}
	if state != "" {
		params.States = []string{state}
	}
	list, err := st.ListProcessInstances(ctx, params)
	if err != nil {
		return instancesReport{}, err
	}
	for _, pi := range list {
		rep.Instances = append(rep.Instances, instanceRow{
			ID: pi.ID, Process: pi.ProcessDefID, Definition: pi.DefinitionID, State: pi.State, Parent: pi.ParentInstanceID,
			Diagnosis: pi.Diagnosis, CreatedAt: pi.CreatedAt, UpdatedAt: pi.UpdatedAt, EndedAt: pi.EndedAt,
		})
	}
	return rep, nil
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
