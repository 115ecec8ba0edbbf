package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/goxpdl/goxpdl/engine"
)

const locksUsage = `Usage:

	goxpdl locks --db DSN [--key K] [--process [PACKAGE:]PROCESS | --global] [--state held|waiting] [--instance ID] [--json]
	goxpdl locks release --db DSN [--process [PACKAGE:]PROCESS | --global] --reason R KEY

Locks lists the business-key locks (engine.Locks), held and waited for,
in the order they were asked for (a key's waiting starts in queue
order): the key (its scope: global, or local to a process), the instance
that holds it or waits for it, and since when.

release frees the held lock on business key KEY (engine.ReleaseLock): its
holder runs on without it, the release is written to the holder's
history with --actor and --reason, and the starts queued for the key get
it as when a holder ends. --process names the process of a local lock
(PACKAGE:PROCESS, or PROCESS when one package holds such a lock on KEY),
--global the global lock; without either, the one lock held on KEY.

Flags (before or after the arguments):

	--key K           list: only locks of this business key
	--process P       only the local locks of this process
	--global          only the global locks
	--state S         list: only held or only waiting locks
	--instance ID     list: only the locks of this instance
` + opUsage + `
Exit status: 0 done; 1 refused (no lock held on KEY in that scope), with
the reason on standard error; 2 usage error (also when KEY has several
held locks and neither --process nor --global says which), or the
database cannot be used.
`

const locksShortUsage = "usage: goxpdl locks [release KEY] --db DSN [--key K] [--process [PACKAGE:]PROCESS | --global] [--state held|waiting] [--json]\n"

// lockRow is a lock as the command line prints it.
type lockRow struct {
	ID          int64      `json:"id"`
	Scope       string     `json:"scope"`
	Package     string     `json:"package,omitempty"`
	Process     string     `json:"process,omitempty"`
	BusinessKey string     `json:"business_key"`
	Instance    int64      `json:"instance"`
	State       string     `json:"state"`
	Requested   time.Time  `json:"requested"`
	HeldSince   *time.Time `json:"held_since,omitempty"`
}

func lockRowOf(l engine.Lock) lockRow {
	return lockRow{ID: l.ID, Scope: string(l.Key.Scope), Package: l.Key.Package, Process: l.Key.Process, BusinessKey: l.Key.BusinessKey,
		Instance: l.Instance, State: string(l.State), Requested: l.Requested, HeldSince: l.HeldSince}
}

// scopeText is "global" or "local PACKAGE:PROCESS".
func (r lockRow) scopeText() string {
	if r.Scope == string(engine.LockGlobal) {
		return "global"
	}
	return "local " + r.Package + ":" + r.Process
}

// lockSelection is what --process and --global select.
type lockSelection struct {
	global        bool
	pkg, process  string // process without pkg: any package's
	scopeSelected bool
}

func (sel lockSelection) matches(l engine.Lock) bool {
	switch {
	case !sel.scopeSelected:
		return true
	case sel.global:
		return l.Key.Scope == engine.LockGlobal
	}
	return l.Key.Scope == engine.LockLocal && l.Key.Process == sel.process && (sel.pkg == "" || l.Key.Package == sel.pkg)
}

func runLocks(args []string, _ io.Reader, stdout, stderr io.Writer) int {
	var o opFlags
	fs := flag.NewFlagSet("locks", flag.ContinueOnError)
	o.register(fs)
	key := fs.String("key", "", "business key")
	process := fs.String("process", "", "[PACKAGE:]PROCESS")
	global := fs.Bool("global", false, "global locks")
	state := fs.String("state", "", "held|waiting")
	instance := fs.Int64("instance", 0, "instance")
	pos, code, ok := parseOp(fs, cmdSpec{name: "locks", usage: locksUsage, short: locksShortUsage, args: anyArgs}, &o, args, stdout, stderr)
	if !ok {
		return code
	}
	name := "locks"
	release := len(pos) > 0 && pos[0] == "release"
	if release {
		name, pos = "locks release", pos[1:]
	}
	sel := lockSelection{global: *global, scopeSelected: *global || *process != ""}
	if *process != "" {
		if pkg, proc, found := strings.Cut(*process, ":"); found {
			sel.pkg, sel.process = pkg, proc
		} else {
			sel.process = *process
		}
	}
	var usageErr string
	switch {
	case !release && len(pos) > 0:
		usageErr = fmt.Sprintf("unknown subcommand %q: want release, or no argument to list", pos[0])
	case release && len(pos) != 1:
		usageErr = fmt.Sprintf("want 1 argument (the business key), got %d", len(pos))
	case *global && *process != "":
		usageErr = "--process and --global exclude each other"
	case *process != "" && (sel.process == "" || strings.Contains(sel.process, ":")):
		usageErr = fmt.Sprintf("--process %q: want PACKAGE:PROCESS or PROCESS", *process)
	case *state != "" && *state != string(engine.LockHeld) && *state != string(engine.LockWaiting):
		usageErr = fmt.Sprintf("--state %q: want held or waiting", *state)
	case release && (*key != "" || *state != "" || *instance != 0):
		usageErr = "release takes the key as its argument, and no --key, --state or --instance"
	}
	if usageErr != "" {
		printErr(stderr, "goxpdl %s: %s\n%s", name, usageErr, locksShortUsage)
		return exitUsage
	}
	ctx, s, code := openSession(name, &o, stderr)
	if s == nil {
		return code
	}
	defer s.close()
	if release {
		return releaseLock(ctx, s, stdout, &o, pos[0], sel)
	}
	f := engine.LockFilter{BusinessKey: *key, Instance: *instance, State: engine.LockState(*state)}
	locks, err := listLocks(ctx, s.e, f, sel)
	if err != nil {
		return s.refusal(err)
	}
	rows := make([]lockRow, len(locks))
	var b strings.Builder
	w := tabwriter.NewWriter(&b, 0, 4, 2, ' ', 0)
	_, _ = fmt.Fprintln(w, "ID\tKEY\tSCOPE\tINSTANCE\tSTATE\tREQUESTED\tHELD SINCE")
	for i, l := range locks {
		rows[i] = lockRowOf(l)
		since := "-"
		if l.HeldSince != nil {
			since = l.HeldSince.UTC().Format(time.RFC3339)
		}
		_, _ = fmt.Fprintf(w, "%d\t%s\t%s\t%d\t%s\t%s\t%s\n", l.ID, l.Key.BusinessKey, rows[i].scopeText(), l.Instance, l.State,
			l.Requested.UTC().Format(time.RFC3339), since)
	}
	_ = w.Flush()
	return printResult(stdout, stderr, o.json, map[string]any{"locks": rows}, b.String(), exitOK)
}

// listLocks reads every lock f and sel select, page by page.
func listLocks(ctx context.Context, e *engine.Engine, f engine.LockFilter, sel lockSelection) ([]engine.Lock, error) {
	switch {
	case sel.global:
		f.Scope = engine.LockGlobal
	case sel.pkg != "":
		f.Scope, f.Package, f.Process = engine.LockLocal, sel.pkg, sel.process
	}
	f.Limit = 1000
	var out []engine.Lock
	for {
		page, err := e.Locks(ctx, f)
		if err != nil {
			return nil, err
		}
		for _, l := range page.Locks {
			if sel.matches(l) {
				out = append(out, l)
			}
		}
		if page.Next == 0 {
			return out, nil
		}
		f.After = page.Next
	}
}

// releaseLock is "goxpdl locks release KEY": it finds the held lock sel
// names on key and releases it.
func releaseLock(ctx context.Context, s *session, stdout io.Writer, o *opFlags, key string, sel lockSelection) int {
	held, err := listLocks(ctx, s.e, engine.LockFilter{BusinessKey: key, State: engine.LockHeld}, sel)
	if err != nil {
		return s.refusal(err)
	}
	switch len(held) {
	case 0:
		what := fmt.Sprintf("no lock is held on %q", key)
		if sel.scopeSelected {
			what += " in that scope"
		}
		return s.refusal(&stateRefusal{msg: what, err: engine.ErrNotFound})
	case 1:
	default:
		var names []string
		for _, l := range held {
			names = append(names, lockRowOf(l).scopeText())
		}
		printErr(s.stderr, "goxpdl locks release: %d locks are held on %q (%s): name one with --process PACKAGE:PROCESS or --global\n",
			len(held), key, strings.Join(names, ", "))
		return exitUsage
	}
	lock := held[0]
	if err := s.e.ReleaseLock(ctx, lock.Key, o.op()); err != nil {
		return s.refusal(err)
	}
	code := s.settle(ctx)
	after, err := listLocks(ctx, s.e, engine.LockFilter{BusinessKey: key, State: engine.LockHeld}, lockSelection{})
	if err != nil {
		return s.refusal(err)
	}
	text := fmt.Sprintf("released the %s (held by instance %d)", lock.Key, lock.Instance)
	var now []lockRow
	for _, l := range after {
		now = append(now, lockRowOf(l))
		text += fmt.Sprintf("; %s now held by instance %d", lockRowOf(l).scopeText(), l.Instance)
	}
	return printResult(stdout, s.stderr, o.json, map[string]any{"released": lockRowOf(lock), "held": now}, text+"\n", code)
}
