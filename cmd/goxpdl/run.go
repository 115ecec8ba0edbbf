package main

import (
	"fmt"
	"io"
	"strings"
)

// Exit codes shared by every command.
const (
	exitOK       = 0 // success
	exitProblems = 1 // the input has problems (validate: an invalid definition); for the operator commands, exitRefused
	exitUsage    = 2 // usage error, or a file cannot be read or written
)

// command is one subcommand of goxpdl.
type command struct {
	name    string
	summary string // one line for the command list
	usage   string // the full usage text, for "goxpdl help NAME" and -h
	// runFunc runs the command on its arguments (the command name removed)
	// and returns the exit code.
	runFunc func(args []string, stdin io.Reader, stdout, stderr io.Writer) int
}

// commands lists the subcommands in the order "goxpdl help" shows them.
var commands = append([]command{
	{name: "validate", summary: "check XPDL files and report their problems", usage: validateUsage, runFunc: runValidate},
	{name: "convert", summary: "write an XPDL file of any version as XPDL 2.2", usage: convertUsage, runFunc: runConvert},
	{name: "run", summary: "run a process of an XPDL file to its end", usage: runUsage, runFunc: runRun},
	{name: "deploy", summary: "deploy XPDL files into a database as new versions", usage: deployUsage, runFunc: runDeploy},
	{name: "definitions", summary: "list the deployed versions with their instance counts", usage: definitionsUsage, runFunc: runDefinitions},
	{name: "start", summary: "start an instance of a deployed process", usage: startUsage, runFunc: runStart},
	{name: "instances", summary: "count and list the process instances; show one", usage: instancesUsage, runFunc: runInstances},
	{name: "suspend", summary: lifecycle[0].summary, usage: lifecycle[0].usage(), runFunc: lifecycle[0].run},
	{name: "resume", summary: lifecycle[1].summary, usage: lifecycle[1].usage(), runFunc: runResumeOrRecover},
	{name: "terminate", summary: lifecycle[2].summary, usage: lifecycle[2].usage(), runFunc: lifecycle[2].run},
	{name: "incidents", summary: "list what needs an operator, counted by cause", usage: incidentsUsage, runFunc: runIncidents},
}, append(instanceCommands(repairs), []command{
	{name: "vars", summary: varsCommand.summary, usage: varsCommand.usage(), runFunc: runVars},
	{name: "history", summary: "print the audit trail of an instance", usage: historyUsage, runFunc: runHistory},
	{name: "migrate", summary: "move running instances to another version of their package", usage: migrateUsage, runFunc: runMigrate},
	{name: "workitems", summary: "list work items; claim, complete, reassign, withdraw one", usage: workitemsUsage, runFunc: runWorkitems},
	{name: "serve", summary: "run the engine with the administration console, its API and metrics", usage: serveUsage, runFunc: runServe},
	{name: "users", summary: "add, remove and list the users of goxpdl serve", usage: usersUsage, runFunc: runUsers},
	{name: "batches", summary: "list the bulk actions with their progress", usage: batchesUsage, runFunc: runBatches},
	{name: "batch", summary: "start, show, pause, resume or cancel a bulk action", usage: batchUsage, runFunc: runBatch},
	{name: "locks", summary: "list the business-key locks; release one", usage: locksUsage, runFunc: runLocks},
	{name: "recover", summary: "recover a database after a crash and run its pending work", usage: recoverUsage, runFunc: runRecover},
	{name: "bench", summary: "measure the engine's throughput on a database", usage: benchUsage, runFunc: runBench},
	{name: "version", summary: "print the version of goxpdl and of the Go it was built with", usage: versionUsage, runFunc: runVersion},
}...)...)

// instanceCommands are the command-table entries of instance commands.
func instanceCommands(cs []instanceCommand) []command {
	out := make([]command, len(cs))
	for i, c := range cs {
		out[i] = command{name: c.name, summary: c.summary, usage: c.usage(), runFunc: c.run}
	}
	return out
}

func lookup(name string) (command, bool) {
	for _, c := range commands {
		if c.name == name {
			return c, true
		}
	}
	return command{}, false
}

// run is the whole program: it dispatches args (without the program name)
// to a subcommand and returns the exit code.
func run(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		printErr(stderr, "%s", usage())
		return exitUsage
	}
	name, rest := args[0], args[1:]
	switch name {
	case "help", "-h", "-help", "--help":
		return runHelp(rest, stdout, stderr)
	case benchNodeCommand: // hidden: one node of "bench --nodes"
		return runBenchNode(rest, stdin, stdout, stderr)
	}
	c, ok := lookup(name)
	if !ok {
		printErr(stderr, "goxpdl: unknown command %q\n\n%s", name, usage())
		return exitUsage
	}
	return c.runFunc(rest, stdin, stdout, stderr)
}

// runHelp implements "goxpdl help [COMMAND]".
func runHelp(args []string, stdout, stderr io.Writer) int {
	switch len(args) {
	case 0:
		return writeOut(stdout, stderr, usage(), exitOK)
	case 1:
		if c, ok := lookup(args[0]); ok {
			return writeOut(stdout, stderr, c.usage, exitOK)
		}
		printErr(stderr, "goxpdl help: unknown command %q\n\n%s", args[0], usage())
	default:
		printErr(stderr, "goxpdl help: expected at most one command\n\n%s", usage())
	}
	return exitUsage
}

// usage is the program's usage text, listing the commands that exist.
func usage() string {
	var b strings.Builder
	b.WriteString(`goxpdl runs and checks XPDL workflow definitions.

Usage:

	goxpdl <command> [arguments]

Commands:

`)
	for _, c := range commands {
		fmt.Fprintf(&b, "\t%-12s %s\n", c.name, c.summary)
	}
	b.WriteString(`	help         show this text, or the usage of one command

Run "goxpdl help <command>" for the flags and exit codes of a command.
`)
	return b.String()
}

// writeOut writes a command's result to standard output and returns code.
// When the write fails (a closed pipe, a full disk) it says so on standard
// error and returns exitUsage, so that a lost result never looks like a
// success.
func writeOut(stdout, stderr io.Writer, s string, code int) int {
	if _, err := io.WriteString(stdout, s); err != nil {
		printErr(stderr, "goxpdl: write standard output: %v\n", err)
		return exitUsage
	}
	return code
}

// printErr writes a message to standard error. A failure to write there
// cannot be reported anywhere, so it is ignored.
func printErr(stderr io.Writer, format string, args ...any) {
	_, _ = fmt.Fprintf(stderr, format, args...)
}
