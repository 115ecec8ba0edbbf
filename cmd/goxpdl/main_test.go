package main

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"testing"
	"time"

	"github.com/rogpeppe/go-internal/testscript"
	"go.uber.org/goleak"
)

// TestMain lets the test binary double as the goxpdl program, which the
// scripts in testdata/script run as "exec goxpdl ...", and checks for
// leaked goroutines after the tests of this process.
func TestMain(m *testing.M) {
	testscript.Main(leakCheckedM{m}, map[string]func(){"goxpdl": main})
}

// leakCheckedM runs the tests with goleak's check, handing the exit code
// back to testscript.Main (which removes its temporary directory and then
// exits) rather than exiting itself.
type leakCheckedM struct{ m *testing.M }

func (l leakCheckedM) Run() (code int) {
	// ants starts a default pool when its package is initialised; the
	// engine's own pools are released by Stop and stay checked. os/signal
	// runs one goroutine for the process's life once run has asked for
	// SIGINT and SIGTERM (TestRunStopsOnSignal).
	goleak.VerifyTestMain(l.m, goleak.IgnoreCurrent(), goleak.IgnoreTopFunction("os/signal.signal_recv"),
		goleak.Cleanup(func(c int) { code = c }))
	return code
}

func TestScripts(t *testing.T) {
	t.Parallel()
	testscript.Run(t, testscript.Params{
		Dir:                 "testdata/script",
		RequireExplicitExec: true,
		RequireUniqueNames:  true,
		Cmds:                map[string]func(*testscript.TestScript, bool, []string){"status": cmdStatus, "sleep": cmdSleep, "capture": cmdCapture},
		Setup: func(env *testscript.Env) error {
			// $REPO: the repository, for the shared files of testdata/.
			repo, err := filepath.Abs(filepath.Join("..", ".."))
			if err != nil {
				return err
			}
			env.Setenv("REPO", repo)
			// A race-instrumented program sleeps a second as it exits,
			// to let late race reports through; a script runs the
			// program dozens of times and reads its reports anyway.
			env.Setenv("GORACE", "atexit_sleep_ms=0")
			return shareGraphvizCache(env)
		},
	})
}

// cmdStatus implements the script command "status CODE PROGRAM [ARGS...]":
// it runs PROGRAM like exec, so that stdout and stderr can be checked
// after it, and fails unless the exit code is CODE. The exit codes are
// part of the CLI contract, and "! exec" only tells zero from non-zero.
func cmdStatus(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) < 2 {
		ts.Fatalf("usage: status CODE program [args...]")
	}
	want, err := strconv.Atoi(args[0])
	ts.Check(err)
	got := 0
	if err := ts.Exec(args[1], args[2:]...); err != nil {
		var exitErr *exec.ExitError
		if !errors.As(err, &exitErr) {
			ts.Fatalf("%s: %v", args[1], err)
		}
		got = exitErr.ExitCode()
	}
	if got != want {
		ts.Fatalf("%s exited with status %d, want %d", args[1], got, want)
	}
}

// cmdCapture implements the script command "capture NAME REGEXP": it sets
// $NAME to the first group of REGEXP's first match in the last command's
// stdout (multi-line mode), and fails when nothing matches. Activity
// instance ids are the engine's (package idgen), made from the clock, so
// a script reads them from what a command printed before it names them.
func cmdCapture(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 2 {
		ts.Fatalf("usage: capture NAME REGEXP")
	}
	re, err := regexp.Compile("(?m)" + args[1])
	ts.Check(err)
	m := re.FindStringSubmatch(ts.ReadFile("stdout"))
	if len(m) < 2 {
		ts.Fatalf("capture: no match for %q in stdout", args[1])
	}
	ts.Setenv(args[0], m[1])
}

// cmdSleep implements the script command "sleep DURATION": a script that
// leaves a database behind lets real time pass before the next command
// picks it up (timers fall due meanwhile). It waits; it asserts nothing.
func cmdSleep(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 1 {
		ts.Fatalf("usage: sleep DURATION")
	}
	d, err := time.ParseDuration(args[0])
	ts.Check(err)
	time.Sleep(d) //nolint:forbidigo // the commands under test run on the real clock
}

// shareGraphvizCache lets the script's programs use this test process's
// compiled Graphviz. go-graphviz compiles its WebAssembly build when the
// program starts (a package init) and caches the result in
// $TMPDIR/go-graphviz; testscript gives every script a TMPDIR of its own,
// so each script's first command compiled it again: seconds of CPU under
// -race, the larger part of this package's run. The test process has
// compiled it into its own TMPDIR at its start; the script's TMPDIR gets
// a link to that cache.
func shareGraphvizCache(env *testscript.Env) error {
	cache := filepath.Join(os.TempDir(), "go-graphviz")
	if _, err := os.Stat(cache); err != nil {
		return nil // no cache to share: each script compiles its own, as before
	}
	return os.Symlink(cache, filepath.Join(env.Getenv("TMPDIR"), "go-graphviz"))
}
