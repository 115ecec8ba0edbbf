package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"

	"github.com/goxpdl/goxpdl/engine"
	"github.com/goxpdl/goxpdl/wftype"
)

const deployUsage = `Usage: goxpdl deploy --db DSN [--json] FILE...

Deploy stores the XPDL files (with the ExternalPackages they reference)
in the engine's database as one deployment: each file a new version of
its package, and a subflow finds its process in the files deployed with
it first (files sharing a package Id do not hide each other). Instances
already running keep their version, new ones start the latest. The files
are read and validated together first, as validate does: when any has
problems, they are printed as validate prints them (FILE:LINE:COL:
message) and nothing is deployed. It prints one line per package: the
deployment id, the package and its version, and its processes.

Flags (before or after the files):

` + opUsage + `
` + opExitStatus

const deployShortUsage = "usage: goxpdl deploy --db DSN [--json] FILE...\n"

// deployRow is one deployed file, as deploy prints it.
type deployRow struct {
	File      string   `json:"file"`
	ID        int64    `json:"id"`
	Package   string   `json:"package"`
	Version   int      `json:"version"`
	Processes []string `json:"processes"`
}

func runDeploy(args []string, _ io.Reader, stdout, stderr io.Writer) int {
	var o opFlags
	fs := flag.NewFlagSet("deploy", flag.ContinueOnError)
	o.register(fs)
	files, code, ok := parseOp(fs, cmdSpec{name: "deploy", usage: deployUsage, short: deployShortUsage, args: oneOrMore}, &o, args, stdout, stderr)
	if !ok {
		return code
	}
	// Read and validate the files together, as validate does, before
	// deploying any.
	if _, code := loadDeployment("deploy", files, stderr); code == exitProblems {
		printErr(stderr, "goxpdl deploy: nothing deployed\n")
		return exitRefused
	} else if code != exitOK {
		return code
	}
	ctx, s, code := openSession("deploy", &o, stderr)
	if s == nil {
		return code
	}
	defer s.close()
	rows := []deployRow{}
	var b strings.Builder
	deps, err := s.e.DeployFiles(ctx, files...)
	if err != nil {
		return s.refusal(err)
	}
	for i, dep := range deps {
		file := dep.File
		if i < len(files) {
			file = files[i]
		}
		rows = append(rows, deployRow{File: file, ID: dep.ID, Package: dep.PackageID, Version: dep.Version, Processes: dep.Processes})
		fmt.Fprintf(&b, "deployed %s: definition %d, package %s version %d, processes %s\n",
			file, dep.ID, dep.PackageID, dep.Version, strings.Join(dep.Processes, ", "))
	}
	return printResult(stdout, stderr, o.json, map[string]any{"deployments": rows}, b.String(), s.settle(ctx))
}

const definitionsUsage = `Usage: goxpdl definitions --db DSN [--json]

Definitions lists the deployed versions of every package, oldest first:
the definition id (what instances name as their definition), the package,
its version, its processes and how many instances of it are in each
state.

Flags:

` + readUsage + `
Exit status: 0 done; 2 usage error, or the database cannot be used.
`

const definitionsShortUsage = "usage: goxpdl definitions --db DSN [--json]\n"

func runDefinitions(args []string, _ io.Reader, stdout, stderr io.Writer) int {
	var o opFlags
	fs := flag.NewFlagSet("definitions", flag.ContinueOnError)
	o.registerRead(fs)
	if _, code, ok := parseOp(fs, cmdSpec{name: "definitions", usage: definitionsUsage, short: definitionsShortUsage, args: 0}, &o, args, stdout, stderr); !ok {
		return code
	}
	ctx, s, code := openSession("definitions", &o, stderr)
	if s == nil {
		return code
	}
	defer s.close()
	rows, err := listDefinitions(ctx, s.e)
	if err != nil {
		return s.refusal(err)
	}
	var b strings.Builder
	w := tabwriter.NewWriter(&b, 0, 4, 2, ' ', 0)
	_, _ = fmt.Fprintln(w, "ID\tPACKAGE\tVERSION\tPROCESSES\tINSTANCES")
	for _, r := range rows {
		_, _ = fmt.Fprintf(w, "%d\t%s\t%d\t%s\t%s\n", r.ID, r.Package, r.Version, strings.Join(r.Processes, ","), formatCounts(r.Instances))
	}
	_ = w.Flush()
	return printResult(stdout, stderr, o.json, map[string]any{"definitions": rows}, b.String(), exitOK)
}

// formatCounts is "Running 2, Completed 1" in state order, "-" for none.
func formatCounts(counts map[string]int64) string {
	var parts []string
	for _, st := range wftype.ProcessStates {
		if n := counts[string(st)]; n > 0 {
			parts = append(parts, fmt.Sprintf("%s %d", st, n))
		}
	}
	if len(parts) == 0 {
		return "-"
	}
	return strings.Join(parts, ", ")
}

const startUsage = `Usage: goxpdl start --db DSN [--set NAME=VALUE]... [--business-key K [--lock local|global [--queue]]] [--wait] [--json] PACKAGE[:PROCESS]

Start creates an instance of a process of the latest deployed version of
PACKAGE: PROCESS is the WorkflowProcess id (default: the one no other
process of the package uses as a subflow). It prints the instance id.

The instance is created Initiated. Without --wait that is all this
process does: the engine nodes running on the database (a host, goxpdl
recover) schedule it. With --wait this process runs it, as an engine node,
until nothing is left to do now (it completes, or waits for people,
timers or messages), and prints its state.

Flags (before or after the argument):

	--set NAME=VALUE  initial value of a data field (repeatable), parsed by
	                  the field's type
	--business-key K  the host's key of the instance (an order number):
	                  kept on it, inherited by its subflows, and what
	                  "goxpdl instances --business-key K" finds
	--lock SCOPE      lock the business key while the instance runs:
	                  local (one instance of this process per key) or
	                  global (one per key across processes); a start
	                  whose key is locked is refused (exit 1, naming the
	                  holder), and goxpdl locks lists the locks
	--queue           with --lock: queue the start instead (the instance
	                  is Queued until the lock is free)
` + opUsage + `
` + opExitStatus

const startShortUsage = "usage: goxpdl start --db DSN [--set NAME=VALUE]... [--business-key K [--lock local|global [--queue]]] [--wait] [--json] PACKAGE[:PROCESS]\n"

func runStart(args []string, _ io.Reader, stdout, stderr io.Writer) int {
	var o opFlags
	sets := pairFlags{}
	fs := flag.NewFlagSet("start", flag.ContinueOnError)
	o.register(fs)
	fs.Var(sets, "set", "NAME=VALUE")
	businessKey := fs.String("business-key", "", "the instance's business key")
	lock := fs.String("lock", "", "local|global")
	queue := fs.Bool("queue", false, "queue while locked")
	pos, code, ok := parseOp(fs, cmdSpec{name: "start", usage: startUsage, short: startShortUsage, args: 1}, &o, args, stdout, stderr)
	if !ok {
		return code
	}
	pkg, proc, _ := strings.Cut(pos[0], ":")
	if pkg == "" {
		printErr(stderr, "goxpdl start: %q names no package\n%s", pos[0], startShortUsage)
		return exitUsage
	}
	opts := engine.StartOptions{Package: pkg, Process: proc, TextVariables: sets, Actor: o.actor, BusinessKey: *businessKey}
	switch {
	case *lock != "" && *lock != string(engine.LockLocal) && *lock != string(engine.LockGlobal):
		printErr(stderr, "goxpdl start: --lock %q: want local or global\n%s", *lock, startShortUsage)
		return exitUsage
	case *lock != "" && *businessKey == "":
		printErr(stderr, "goxpdl start: --lock needs --business-key K\n%s", startShortUsage)
		return exitUsage
	case *queue && *lock == "":
		printErr(stderr, "goxpdl start: --queue needs --lock\n%s", startShortUsage)
		return exitUsage
	case *lock != "":
		opts.Lock = &engine.LockOptions{Scope: engine.LockScope(*lock), Wait: *queue}
	}
	ctx, s, code := openSession("start", &o, stderr)
	if s == nil {
		return code
	}
	defer s.close()
	id, err := s.e.StartProcess(ctx, opts)
	if err != nil {
		return s.refusal(err)
	}
	return s.printInstance(ctx, stdout, &o, "start", id)
}

// commandResult is what a command on one instance prints with --json.
type commandResult struct {
	Command  string      `json:"command"`
	Instance instanceRow `json:"instance"`
}

// printInstance settles the command's work (--wait) and prints the
// instance as it stands then.
func (s *session) printInstance(ctx context.Context, stdout io.Writer, o *opFlags, command string, id int64) int {
	code := s.settle(ctx)
	row, err := instanceState(ctx, s.e, id)
	if err != nil {
		return s.refusal(err)
	}
	text := fmt.Sprintf("instance %d of process %s: %s", row.ID, row.Process, row.State)
	if row.Diagnosis != "" {
		text += ": " + row.Diagnosis
	}
	return printResult(stdout, s.stderr, o.json, commandResult{Command: command, Instance: row}, text+"\n", code)
}
