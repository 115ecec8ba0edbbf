package main

import (
	"context"
	"errors"
	"flag"
	"io"
	"slices"
	"strings"

	"github.com/goxpdl/goxpdl/engine"
)

// instanceCommand is an operator command on one process instance:
// suspend, resume, terminate, retry, skip, jump, rollback, vars.
type instanceCommand struct {
	name, summary string
	// synopsis is the usage line's arguments and flags after the name.
	synopsis string
	// about explains the command; flags documents its own flags.
	about, flags string
	// args is the number of positional arguments, the instance id first.
	args int
	// setup adds the command's own flags to fs (nil: it has none) and
	// returns what applies the command once they are parsed.
	setup func(fs *flag.FlagSet) applyFunc
}

// applyFunc runs an instance command on instance id with the other
// positional arguments.
type applyFunc func(ctx context.Context, e *engine.Engine, id int64, args []string, op engine.Op) error

// plain is the setup of a command without flags of its own.
func plain(apply applyFunc) func(*flag.FlagSet) applyFunc {
	return func(*flag.FlagSet) applyFunc { return apply }
}

func (c instanceCommand) usage() string {
	return "Usage: goxpdl " + c.name + " " + c.synopsis + "\n\n" + c.about + "\nFlags (before or after the arguments):\n\n" + c.flags + opUsage + "\n" + opExitStatus
}

func (c instanceCommand) short() string {
	return "usage: goxpdl " + c.name + " " + c.synopsis + "\n"
}

func (c instanceCommand) run(args []string, _ io.Reader, stdout, stderr io.Writer) int {
	var o opFlags
	fs := flag.NewFlagSet(c.name, flag.ContinueOnError)
	o.register(fs)
	apply := c.setup(fs)
	pos, code, ok := parseOp(fs, cmdSpec{name: c.name, usage: c.usage(), short: c.short(), args: c.args}, &o, args, stdout, stderr)
	if !ok {
		return code
	}
	id, err := parseID("instance", pos[0])
	if err != nil {
		printErr(stderr, "goxpdl %s: %v\n%s", c.name, err, c.short())
		return exitUsage
	}
	ctx, s, code := openSession(c.name, &o, stderr)
	if s == nil {
		return code
	}
	defer s.close()
	if err := apply(ctx, s.e, id, pos[1:], o.op()); err != nil {
		if _, ok := errors.AsType[usageError](err); ok {
			printErr(stderr, "goxpdl %s: %v\n%s", c.name, err, c.short())
			return exitUsage
		}
		return s.refusal(explain(err, id, 0))
	}
	return s.printInstance(ctx, stdout, &o, c.name, id)
}

// usageError is a bad argument found after the flags were parsed.
type usageError struct{ error }

const suspendAbout = `Suspend pauses a Running process instance: no activity starts until
resume; its work items are suspended and its timers paused.
`

const resumeAbout = `Resume continues a Suspended process instance; what could not start
meanwhile starts now (the engine nodes on the database run it, or this
process with --wait).

"goxpdl resume --until-idle" and "goxpdl resume" with no instance are the
old name of "goxpdl recover": they still recover the database, and say
on standard error that the name is deprecated.
`

const terminateAbout = `Terminate ends a Running or Suspended process instance: its open work
items are withdrawn, its subflow instances terminated.
`

// lifecycle are the commands that suspend, resume and terminate.
var lifecycle = []instanceCommand{
	{name: "suspend", summary: "suspend a running process instance", synopsis: "--db DSN [--reason R] ID", about: suspendAbout, args: 1,
		setup: plain(func(ctx context.Context, e *engine.Engine, id int64, _ []string, op engine.Op) error {
			return e.Suspend(ctx, id, op)
		})},
	{name: "resume", summary: "resume a suspended process instance", synopsis: "--db DSN [--reason R] ID", about: resumeAbout, args: 1,
		setup: plain(func(ctx context.Context, e *engine.Engine, id int64, _ []string, op engine.Op) error {
			return e.Resume(ctx, id, op)
		})},
	{name: "terminate", summary: "terminate a process instance", synopsis: "--db DSN [--reason R] ID", about: terminateAbout, args: 1,
		setup: plain(func(ctx context.Context, e *engine.Engine, id int64, _ []string, op engine.Op) error {
			return e.Terminate(ctx, id, op)
		})},
}

// runResumeOrRecover is "goxpdl resume": the un-suspension of an
// instance, or, with --until-idle or without an instance, the deprecated
// name of recover.
func runResumeOrRecover(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	if legacyResume(args) {
		printErr(stderr, "goxpdl resume: deprecated name of \"goxpdl recover\" (\"goxpdl resume ID\" now resumes a suspended instance)\n")
		return runRecoverAs("resume", args, stdin, stdout, stderr)
	}
	return lifecycle[1].run(args, stdin, stdout, stderr)
}

// legacyResume reports whether resume's arguments are those of the old
// crash-recovery command: --until-idle, or recover's own flags, or no
// instance id.
func legacyResume(args []string) bool {
	for _, a := range args {
		name, _, _ := strings.Cut(strings.TrimLeft(a, "-"), "=")
		if strings.HasPrefix(a, "-") && slices.Contains([]string{"until-idle", "node-id"}, name) {
			return true
		}
		if a == "-h" || a == "-help" || a == "--help" {
			return false
		}
	}
	var o opFlags
	fs := flag.NewFlagSet("resume", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	o.register(fs)
	pos, err := parseInterleaved(fs, args)
	return err == nil && len(pos) == 0
}
