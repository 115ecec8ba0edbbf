package main

import (
	"fmt"
	"io"
)

// Exit codes shared by every command.
const (
	exitOK       = 0 // success
	exitProblems = 1 // the input has problems (validate: an invalid definition)
	exitUsage    = 2 // usage error, or a file cannot be read
)

// command is one subcommand of goxpdl.
type command struct {
	name    string
	summary string // one line for the command list
	// runFunc runs the command on its arguments (the command name removed)
	// and returns the exit code.
	runFunc func(args []string, stdin io.Reader, stdout, stderr io.Writer) int
	// usageFunc writes the command's full usage text.
	usageFunc func(w io.Writer)
}

// commands lists the subcommands in the order "goxpdl help" shows them.
var commands = []command{
	{name: "validate", summary: "check XPDL files and report their problems", runFunc: runValidate, usageFunc: validateUsage},
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
		usage(stderr)
		return exitUsage
	}
	name, rest := args[0], args[1:]
	switch name {
	case "help", "-h", "-help", "--help":
		return runHelp(rest, stdout, stderr)
	}
	c, ok := lookup(name)
	if !ok {
		fmt.Fprintf(stderr, "goxpdl: unknown command %q\n\n", name)
		usage(stderr)
		return exitUsage
	}
	return c.runFunc(rest, stdin, stdout, stderr)
}

// runHelp implements "goxpdl help [COMMAND]".
func runHelp(args []string, stdout, stderr io.Writer) int {
	switch len(args) {
	case 0:
		usage(stdout)
		return exitOK
	case 1:
		if c, ok := lookup(args[0]); ok {
			c.usageFunc(stdout)
			return exitOK
		}
		fmt.Fprintf(stderr, "goxpdl help: unknown command %q\n\n", args[0])
	default:
		fmt.Fprintf(stderr, "goxpdl help: expected at most one command\n\n")
	}
	usage(stderr)
	return exitUsage
}

func usage(w io.Writer) {
	fmt.Fprint(w, `goxpdl runs and checks XPDL workflow definitions.

Usage:

	goxpdl <command> [arguments]

Commands:

`)
	for _, c := range commands {
		fmt.Fprintf(w, "	%-10s %s\n", c.name, c.summary)
	}
	fmt.Fprint(w, `	help       show this text, or the usage of one command

Run "goxpdl help <command>" for the flags and exit codes of a command.
`)
}
