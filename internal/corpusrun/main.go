// Command corpusrun runs every process of the XPDL corpus with
// "goxpdl run --workitems auto" and writes a Markdown report of which
// complete and why the others do not. "make corpus-run" runs it:
//
//	go run ./internal/corpusrun -goxpdl bin/goxpdl -corpus ../shared/xpdl-corpus -out docs/corpus-run.md
//
// It is a development tool, not part of goxpdl: it only drives the
// goxpdl binary, as a user would, so the report shows what the command
// line does. The report is deterministic (no dates or timings), so that
// regenerating it after an engine change shows only what changed.
package main

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/signal"
	"runtime"
	"sync"
	"time"
)

func main() {
	os.Exit(mainErr(os.Args[1:], os.Stderr))
}

// config is the command line.
type config struct {
	goxpdl, corpus, out string
	timeout             time.Duration
	workers             int
}

func mainErr(args []string, stderr io.Writer) int {
	var cfg config
	fset := flag.NewFlagSet("corpusrun", flag.ContinueOnError)
	fset.SetOutput(stderr)
	fset.StringVar(&cfg.goxpdl, "goxpdl", "bin/goxpdl", "the goxpdl binary to run")
	fset.StringVar(&cfg.corpus, "corpus", "../shared/xpdl-corpus", "the corpus folder (with xpdl1/ and xpdl2/)")
	fset.StringVar(&cfg.out, "out", "docs/corpus-run.md", "the report to write")
	fset.DurationVar(&cfg.timeout, "timeout", 20*time.Second, "how long one process may run before it is killed")
	// Most of the wall time is the runs that loop until the timeout kills
	// them; the rest finish in well under a second, so two commands per
	// core keep the cores busy without putting the timeout at risk.
	fset.IntVar(&cfg.workers, "workers", min(4, 2*runtime.NumCPU()), "how many goxpdl commands run at once")
	if err := fset.Parse(args); err != nil {
		return 2
	}
	if fset.NArg() != 0 || cfg.workers < 1 || cfg.timeout <= 0 {
		say(stderr, "usage: corpusrun [-goxpdl BIN] [-corpus DIR] [-out FILE] [-timeout D] [-workers N]\n")
		return 2
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	if err := corpusRun(ctx, cfg, stderr); err != nil {
		say(stderr, "corpusrun: %v\n", err)
		return 1
	}
	return 0
}

func corpusRun(ctx context.Context, cfg config, stderr io.Writer) error {
	if _, err := os.Stat(cfg.corpus); errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("no corpus at %s: the XPDL corpus is expected next to the repository (see ../shared/xpdl-corpus/SOURCES.md), or name it with -corpus", cfg.corpus)
	}
	if _, err := os.Stat(cfg.goxpdl); err != nil {
		return fmt.Errorf("goxpdl binary: %w (build it with: go build -o bin/goxpdl ./cmd/goxpdl)", err)
	}
	files, err := listCorpus(cfg.corpus)
	if err != nil {
		return err
	}
	if err := checkOverrides(files); err != nil {
		return err
	}
	if err := checkTogether(files); err != nil {
		return err
	}
	called := subflows(files)
	progress := &progress{w: stderr}

	// Validate every file, then run every process of the valid ones.
	checks := make([]validation, len(files))
	progress.start("validate", len(files))
	parallel(cfg.workers, len(files), func(i int) {
		paths := append([]string{files[i].Path}, corpusPaths(cfg.corpus, withFor(files[i].Rel()))...)
		checks[i] = validate(ctx, cfg.goxpdl, paths, cfg.timeout)
		progress.done(files[i].Rel(), string(orValid(checks[i].outcome)))
	})
	if err := ctx.Err(); err != nil {
		return err
	}

	var results []result
	for i, f := range files {
		c := checks[i]
		if c.outcome == "" && f.parseErr != nil {
			c = validation{unreadable, "goxpdl accepts it, but its processes could not be listed: " + f.parseErr.Error()}
		}
		if c.outcome != "" {
			results = append(results, result{File: f, Outcome: c.outcome, Activities: -1, Why: c.why})
			continue
		}
		if len(f.Processes) == 0 {
			results = append(results, result{File: f, Outcome: noProcess, Activities: -1,
				Why: "the package defines no WorkflowProcess"})
			continue
		}
		for _, p := range f.Processes {
			r := result{File: f, Process: p, Subflow: called[subflowKey{f.Dir, p}], With: withFor(f.Rel())}
			if o, ok := overrideFor(f.Rel(), p); ok {
				r.Override = &o
			}
			results = append(results, r)
		}
	}
	todo := make([]int, 0, len(results))
	for i, r := range results {
		if r.Process != "" {
			todo = append(todo, i)
		}
	}
	progress.start("run", len(todo))
	parallel(cfg.workers, len(todo), func(k int) {
		r := &results[todo[k]]
		r.Outcome, r.Activities, r.Why = run(ctx, runOpts{
			goxpdl: cfg.goxpdl, paths: append([]string{r.File.Path}, corpusPaths(cfg.corpus, r.With)...),
			process: r.Process, args: r.Override.args(), timeout: cfg.timeout,
		})
		progress.done(r.File.Rel()+" "+r.Process, string(r.Outcome))
	})
	if err := ctx.Err(); err != nil {
		return err
	}

	// results are in report order: listCorpus sorts the files and
	// parseProcesses each file's processes.
	var buf bytes.Buffer
	if err := writeReport(&buf, results, len(files), cfg.timeout); err != nil {
		return err
	}
	if err := os.WriteFile(cfg.out, buf.Bytes(), 0o644); err != nil {
		return fmt.Errorf("write report: %w", err)
	}
	t := count(results, len(files))
	say(stderr, "wrote %s: %d files (%d invalid), %d processes: %d completed, %d not completed (%d timeouts, %d errors)\n",
		cfg.out, t.files, t.invalidFiles, t.processes, t.completed, t.processes-t.completed, t.timeouts, t.errors)
	return nil
}

// checkOverrides fails if an override names a process the corpus does
// not have.
func checkOverrides(files []*corpusFile) error {
	for _, o := range overrides {
		found := false
		for _, f := range files {
			if f.Rel() == o.File {
				for _, p := range f.Processes {
					found = found || p == o.Process
				}
			}
		}
		if !found {
			return fmt.Errorf("override for %s process %s: no such process in the corpus; update overrides.go", o.File, o.Process)
		}
	}
	return nil
}

func orValid(o outcome) outcome {
	if o == "" {
		return "valid"
	}
	return o
}

// parallel calls do(0..n-1) on at most workers goroutines and returns
// when every call has returned.
func parallel(workers, n int, do func(i int)) {
	next := make(chan int)
	var wg sync.WaitGroup
	for range min(workers, n) {
		wg.Go(func() {
			for i := range next {
				do(i)
			}
		})
	}
	for i := range n {
		next <- i
	}
	close(next)
	wg.Wait()
}

// progress prints one line per finished command to standard error.
type progress struct {
	mu          sync.Mutex
	w           io.Writer
	phase       string
	total, seen int
}

func (p *progress) start(phase string, total int) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.phase, p.total, p.seen = phase, total, 0
}

func (p *progress) done(what, outcome string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.seen++
	say(p.w, "%s %3d/%d %s: %s\n", p.phase, p.seen, p.total, what, outcome)
}

// say prints a message or progress line to standard error; if that
// fails there is nowhere left to say so.
func say(w io.Writer, format string, args ...any) {
	_, _ = fmt.Fprintf(w, format, args...)
}
