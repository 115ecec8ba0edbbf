package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/goxpdl/goxpdl/engine"
	"github.com/goxpdl/goxpdl/resource"
	"github.com/goxpdl/goxpdl/wftype"
	"github.com/goxpdl/goxpdl/workitem"
	"github.com/goxpdl/goxpdl/xpdl"
)

// The operator commands (deploy, start, suspend, retry, workitems, ...)
// share the plumbing of this file: flags that may come before or after
// the positional arguments, one engine per process, the --wait mode, and
// the mapping of the engine's refusals to exit status 1.

// exitRefused is the exit status of a command the engine refused (an
// instance in the wrong state, an unknown id, a value of the wrong type):
// the reason is one line on standard error.
const exitRefused = 1

// opUsage documents the flags every operator command takes.
const opUsage = `	--db DSN          the engine's database (required):
	                  ` + dbUsage + `
	--json            print the result as one JSON object
	--actor NAME      who gives the command, written to the history
	                  (default: $USER, or "cli" when it is not set)
	--reason TEXT     why, written to the history with the actor
	--wait            after the command, run the work it caused in this
	                  process, as an engine node, until nothing is left
	                  to do now (as goxpdl recover --until-idle); without
	                  it the command only commits, and the engine nodes
	                  that run on the database take the work up
	--applications M  with --wait, what calls of applications do: noop
	                  (default) makes them succeed doing nothing; fail
	                  makes them fatal (the activity goes Abnormal)
	--org FILE        organisation file (YAML or JSON) that decides who
	                  may take work items; default: anyone
`

// readUsage documents the flags of the commands that only read.
const readUsage = `	--db DSN          the engine's database (required):
	                  ` + dbUsage + `
	--json            print the result as one JSON object
`

// opExitStatus is the exit-status paragraph of the operator commands.
const opExitStatus = `Exit status: 0 done; 1 refused by the engine (the reason is one line on
standard error: an unknown id, an instance or activity in the wrong
state, a value of the wrong type), and nothing was changed; 2 usage
error, or the database cannot be used.
`

// opFlags are the flags every operator command takes.
type opFlags struct {
	db, actor, reason, apps, org string
	json, wait                   bool
}

// register adds the shared flags to fs.
func (o *opFlags) register(fs *flag.FlagSet) {
	fs.StringVar(&o.db, "db", "", "database")
	fs.BoolVar(&o.json, "json", false, "print JSON")
	fs.StringVar(&o.actor, "actor", defaultActor(), "who gives the command")
	fs.StringVar(&o.reason, "reason", "", "why")
	fs.BoolVar(&o.wait, "wait", false, "run the work until idle")
	fs.StringVar(&o.apps, "applications", "noop", "noop|fail")
	fs.StringVar(&o.org, "org", "", "organisation file")
}

// registerRead adds the flags of a command that only reads: --db and
// --json.
func (o *opFlags) registerRead(fs *flag.FlagSet) {
	fs.StringVar(&o.db, "db", "", "database")
	fs.BoolVar(&o.json, "json", false, "print JSON")
	o.apps = "noop"
}

// defaultActor is $USER, or "cli".
func defaultActor() string {
	if u := strings.TrimSpace(os.Getenv("USER")); u != "" {
		return u
	}
	return "cli"
}

// op is the engine.Op of the command.
func (o *opFlags) op() engine.Op { return engine.Op{Actor: o.actor, Reason: o.reason} }

// cmdSpec describes one operator command for parseOp.
type cmdSpec struct {
	name         string // "suspend", "workitems claim"
	usage, short string
	// args is the number of positional arguments wanted; anyArgs or
	// oneOrMore.
	args int
}

// Positional argument counts of cmdSpec.args besides exact numbers.
const (
	oneOrMore = -1
	anyArgs   = -2
)

// parseOp parses args into fs (whose flags include opFlags), allowing
// flags before and after the positional arguments, and checks the shared
// ones. It returns the positional arguments, or false with the exit code
// when the command should stop (help, or a usage error).
func parseOp(fs *flag.FlagSet, spec cmdSpec, o *opFlags, args []string, stdout, stderr io.Writer) ([]string, int, bool) {
	fs.SetOutput(stderr)
	fs.Usage = func() { printErr(stderr, "%s", spec.short) }
	pos, err := parseInterleaved(fs, args)
	if err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return nil, writeOut(stdout, stderr, spec.usage, exitOK), false
		}
		return nil, exitUsage, false
	}
	switch {
	case spec.args >= 0 && len(pos) != spec.args:
		printErr(stderr, "goxpdl %s: want %d argument%s, got %d\n%s", spec.name, spec.args, plural(spec.args), len(pos), spec.short)
		return nil, exitUsage, false
	case spec.args == oneOrMore && len(pos) == 0:
		printErr(stderr, "goxpdl %s: no arguments given\n%s", spec.name, spec.short)
		return nil, exitUsage, false
	case o.db == "":
		printErr(stderr, "goxpdl %s: --db is required (a new in-memory database holds nothing)\n%s", spec.name, spec.short)
		return nil, exitUsage, false
	case o.apps != "noop" && o.apps != "fail":
		printErr(stderr, "goxpdl %s: --applications %q: want noop or fail\n", spec.name, o.apps)
		return nil, exitUsage, false
	}
	return pos, exitOK, true
}

func plural(n int) string {
	if n == 1 {
		return ""
	}
	return "s"
}

// parseInterleaved parses args into fs, flags before, between and after
// the positional arguments, which it returns in order. Everything after
// "--" is positional.
func parseInterleaved(fs *flag.FlagSet, args []string) ([]string, error) {
	var pos []string
	for {
		if err := fs.Parse(args); err != nil {
			return nil, err
		}
		rest := fs.Args()
		if len(rest) == 0 {
			return pos, nil
		}
		if consumed := len(args) - len(rest); consumed > 0 && args[consumed-1] == "--" {
			return append(pos, rest...), nil
		}
		pos = append(pos, rest[0])
		args = rest[1:]
	}
}

// parseID parses a positional id argument.
func parseID(what, s string) (int64, error) {
	id, err := strconv.ParseInt(s, 10, 64)
	if err != nil || id <= 0 {
		return 0, fmt.Errorf("%s %q: want a positive number", what, s)
	}
	return id, nil
}

// session is an engine on the database of a command.
type session struct {
	e       *engine.Engine
	name    string
	wait    bool
	closeDB func()
	stderr  io.Writer
	stopSig func()
}

// openSession opens the database and an engine on it. With --wait the
// engine starts as a node (recovering, then processing events and
// timers) before the command; without it the engine is not started: the
// command only commits, and the events it writes are claimed for an
// instant only, so that the nodes running on the database take them at
// their next poll.
//
// The returned context ends on SIGINT or SIGTERM; close stops the engine
// and the signal handling.
func openSession(name string, o *opFlags, stderr io.Writer) (context.Context, *session, int) {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	var directory resource.Directory = resource.Anyone{}
	if o.org != "" {
		org, err := resource.LoadOrgFile(o.org)
		if err != nil {
			stop()
			printErr(stderr, "goxpdl %s: %v\n", name, err)
			return nil, nil, exitUsage
		}
		directory = org
	}
	db, closeDB, err := openDB(o.db)
	if err != nil {
		stop()
		printErr(stderr, "goxpdl %s: %v\n", name, err)
		return nil, nil, exitUsage
	}
	cfg := engine.Config{
		DB: db, Directory: directory, NoOpUnboundApplications: o.apps == "noop",
		Logger: slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: slog.LevelWarn})),
	}
	if !o.wait {
		// This process never processes what it writes: a claim that
		// has already run out leaves the events to the running nodes.
		cfg.EventLease = time.Nanosecond
	}
	e, err := engine.New(cfg)
	if err != nil {
		closeDB()
		stop()
		printErr(stderr, "goxpdl %s: %v (is %s an engine database?)\n", name, err, describeDB(o.db))
		return nil, nil, exitUsage
	}
	s := &session{e: e, name: name, wait: o.wait, closeDB: closeDB, stderr: stderr, stopSig: stop}
	if o.wait {
		if err := e.Start(ctx); err != nil {
			s.close()
			printErr(stderr, "goxpdl %s: %v\n", name, err)
			return nil, nil, exitUsage
		}
	}
	return ctx, s, exitOK
}

// settle runs, with --wait, the work the command caused until nothing is
// left to do now; without it, it does nothing.
func (s *session) settle(ctx context.Context) int {
	if !s.wait {
		return exitOK
	}
	if err := s.e.WaitQuiet(ctx); err != nil {
		printErr(s.stderr, "goxpdl %s: %v\n", s.name, err)
		return exitUsage
	}
	return exitOK
}

// close stops the engine and closes the database.
func (s *session) close() {
	stopCtx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := s.e.Stop(stopCtx); err != nil {
		printErr(s.stderr, "goxpdl %s: stop: %v\n", s.name, err)
	}
	s.closeDB()
	s.stopSig()
}

// refusal reports err: exit 1 with one line for a refusal of the engine,
// exit 2 for anything else (the database failed).
func (s *session) refusal(err error) int { return report(s.name, err, s.stderr) }

// report prints err for command name and returns its exit status: 1 for
// the engine's refusals, 2 otherwise.
func report(name string, err error, stderr io.Writer) int {
	printErr(stderr, "goxpdl %s: %s\n", name, describeErr(err))
	if refused(err) {
		return exitRefused
	}
	return exitUsage
}

// refused reports whether err is one of the engine's typed refusals.
func refused(err error) bool {
	for _, target := range []error{
		engine.ErrNotFound, engine.ErrIllegalState, engine.ErrInstanceFinished, engine.ErrUnknownVariable,
		engine.ErrWrongType, engine.ErrConflict, engine.ErrCannotSkip, engine.ErrWrongInstance, engine.ErrCannotMove,
		engine.ErrNotAllowed, engine.ErrCompletedDifferently, engine.ErrKeyReused, engine.ErrEmptyProcess,
		engine.ErrConfig, engine.ErrBadArgument, engine.ErrBadTimer, engine.ErrCannotMigrate, engine.ErrBadBatch, engine.ErrBadFilter, engine.ErrLocked, xpdl.ErrInvalid,
	} {
		if errors.Is(err, target) {
			return true
		}
	}
	return false
}

// describeErr is an error in one line.
func describeErr(err error) string {
	return strings.ReplaceAll(err.Error(), "\n", "; ")
}

// stateRefusal is a state refusal of the engine said with the ids of the
// command: "activity instance 12 is Running: retry refused".
type stateRefusal struct {
	msg string
	err error
}

func (e *stateRefusal) Error() string { return e.msg }

func (e *stateRefusal) Unwrap() error { return e.err }

// explain words err, when it is a refusal because of a state, with the
// process instance and activity instance (0: none) the command named;
// other errors are returned as they are.
func explain(err error, instance, activity int64) error {
	se, ok := errors.AsType[*wftype.StateError](err)
	if !ok {
		return err
	}
	if _, done := errors.AsType[*stateRefusal](err); done {
		return err
	}
	subject := se.Subject
	switch {
	case subject == "process" && instance != 0:
		subject = fmt.Sprintf("process instance %d", instance)
	case subject == "activity" && activity != 0:
		subject = fmt.Sprintf("activity instance %d", activity)
	}
	state := se.State
	if se.Finished {
		subject, state = fmt.Sprintf("process instance %d", instance), se.State+" (finished)"
	}
	return &stateRefusal{msg: fmt.Sprintf("%s is %s: %s refused", subject, state, se.Command), err: err}
}

// explainWorkItem words err, when a work item refused a command in its
// state, with the item's id: "work item 4 is Allocated: allocate refused".
func explainWorkItem(err error, item int64) error {
	te, ok := errors.AsType[*workitem.TransitionError](err)
	if !ok {
		return err
	}
	return &stateRefusal{msg: fmt.Sprintf("work item %d is %s: %s refused", item, te.State, te.Command), err: err}
}

// printResult prints v as indented JSON with --json, or text otherwise.
func printResult(stdout, stderr io.Writer, asJSON bool, v any, text string, code int) int {
	if !asJSON {
		return writeOut(stdout, stderr, text, code)
	}
	out, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		printErr(stderr, "goxpdl: %v\n", err)
		return exitUsage
	}
	return writeOut(stdout, stderr, string(out)+"\n", code)
}

// pairFlags collects repeated KEY=VALUE flags in order of the keys given.
type pairFlags map[string]string

func (p pairFlags) String() string { return fmt.Sprint(map[string]string(p)) }

func (p pairFlags) Set(v string) error { return setPair(p, v, "NAME=VALUE") }

// listFlags collects a repeated flag's values.
type listFlags []string

func (l *listFlags) String() string { return strings.Join(*l, ",") }

func (l *listFlags) Set(v string) error {
	*l = append(*l, v)
	return nil
}
