package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os/exec"
	"regexp"
	"sort"
	"strings"
	"time"
)

// outcome is what the report says about one row.
type outcome string

const (
	completed    outcome = "completed"
	notCompleted outcome = "not completed"
	timedOut     outcome = "timeout"
	runError     outcome = "error"
	invalid      outcome = "invalid"
	unreadable   outcome = "unreadable"
	noProcess    outcome = "no process"
)

// result is one row of the report: a process run, or a file that was not
// run because validate rejected it.
type result struct {
	File    *corpusFile
	Process string // empty for a file that was not run
	Subflow bool   // another process of the folder calls it
	// Override, when not nil, changes the run (overrides.go).
	Override *override
	// With are the files deployed with File (together.go), inside the
	// corpus.
	With    []string
	Outcome outcome
	// Activities counts the trace's activity.started records; it is -1
	// when it is not known (the file was not run, or the run was killed).
	Activities int
	Why        string
}

// validation is what "goxpdl validate --json FILE" said.
type validation struct {
	outcome outcome // empty: valid
	why     string
}

// validateJSON is the part of validate's --json output used here.
type validateJSON struct {
	Files []struct {
		Error    string `json:"error"`
		Problems []struct {
			Line     int    `json:"line"`
			Severity string `json:"severity"`
			Message  string `json:"message"`
		} `json:"problems"`
	} `json:"files"`
}

// validate runs "goxpdl validate --json" on one file, with the files
// deployed with it after it.
func validate(ctx context.Context, goxpdl string, paths []string, timeout time.Duration) validation {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	var stdout, stderr bytes.Buffer
	cmd := exec.CommandContext(ctx, goxpdl, append([]string{"validate", "--json"}, paths...)...)
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	cmd.WaitDelay = 5 * time.Second
	err := cmd.Run()
	code := exitCode(err)
	var report validateJSON
	jsonErr := json.Unmarshal(stdout.Bytes(), &report)
	switch {
	case ctx.Err() != nil:
		return validation{unreadable, fmt.Sprintf("validate did not finish within %s", timeout)}
	case code == 0:
		return validation{}
	case code == 1 && jsonErr == nil:
		for _, f := range report.Files {
			for _, p := range f.Problems {
				if p.Severity == "error" {
					return validation{invalid, fmt.Sprintf("line %d: %s", p.Line, p.Message)}
				}
			}
		}
		return validation{invalid, "validate exited 1 without naming an error"}
	case code == 2 && jsonErr == nil && len(report.Files) > 0 && report.Files[0].Error != "":
		return validation{unreadable, report.Files[0].Error}
	}
	return validation{unreadable, fmt.Sprintf("validate: %s: %s", describeExit(err), firstLine(stderr.String()))}
}

// runOpts says how to run one process.
type runOpts struct {
	goxpdl string
	// paths are the file and the files deployed with it.
	paths   []string
	process string
	args    []string // more arguments of goxpdl run
	timeout time.Duration
}

// run runs "goxpdl run --workitems auto --trace jsonl" on one process and
// classifies how it ended.
func run(ctx context.Context, o runOpts) (outcome, int, string) {
	ctx, cancel := context.WithTimeout(ctx, o.timeout)
	defer cancel()
	args := []string{"run", "--workitems", "auto", "--process", o.process, "--trace", "jsonl"}
	args = append(args, o.args...)
	args = append(args, o.paths...)
	trace := &traceCounter{}
	stderr := &tailBuffer{max: 64 << 10}
	cmd := exec.CommandContext(ctx, o.goxpdl, args...)
	cmd.Stdout, cmd.Stderr = trace, stderr
	cmd.WaitDelay = 5 * time.Second
	err := cmd.Run()
	trace.flush()
	if errors.Is(ctx.Err(), context.DeadlineExceeded) {
		why := fmt.Sprintf("did not finish within %s", o.timeout)
		if loop := trace.repeated(loopMin, o.process); len(loop) > 0 {
			return timedOut, -1, fmt.Sprintf("%s (a loop the data never leaves?): %s started %d+ times each", why, strings.Join(loop, ", "), loopMin)
		}
		return timedOut, -1, fmt.Sprintf("%s, and no activity started %d times (not a loop: waiting for something?)", why, loopMin)
	}
	if ctx.Err() != nil {
		return runError, -1, "interrupted"
	}
	switch code := exitCode(err); code {
	case 0:
		return completed, trace.started, ""
	case 3:
		return notCompleted, trace.started, stuckReason(stderr.String())
	case 1, 2:
		return runError, trace.started, fmt.Sprintf("exit %d: %s", code, firstLine(stderr.head()))
	default:
		return runError, -1, fmt.Sprintf("%s: %s", describeExit(err), firstLine(stderr.head()))
	}
}

// summaryLine matches run's summary line, "instance 1 of process P: STATE...".
var summaryLine = regexp.MustCompile(`(?m)^instance \d+ of process \S+: (.*)$`)

// The engine's instance and work item numbers in a summary depend on the
// order parallel branches ran in, so the report leaves them out to stay
// stable.
var (
	activityInstance = regexp.MustCompile(` \(instance \d+ of process instance \d+\)`)
	workItemNumber   = regexp.MustCompile(`\b\d+ \(`)
)

const openItems = "; open work items: "

// stuckReason is the why of a run that ended with exit 3: the last
// summary line on stderr, without its "instance N of process P:" prefix.
func stuckReason(stderr string) string {
	m := summaryLine.FindAllStringSubmatch(stderr, -1)
	if m == nil {
		return "exit 3 without a summary line: " + firstLine(stderr)
	}
	why := activityInstance.ReplaceAllString(m[len(m)-1][1], "")
	// run ends the summary with the open work items, "N (performer), ...".
	if i := strings.LastIndex(why, openItems); i >= 0 {
		why = why[:i] + openItems + workItemNumber.ReplaceAllString(why[i+len(openItems):], "(")
	}
	return why
}

// exitCode is the exit status of a finished command, or -1.
func exitCode(err error) int {
	if err == nil {
		return 0
	}
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		return ee.ExitCode()
	}
	return -1
}

// describeExit says how a command ended that did not exit normally.
func describeExit(err error) string {
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		return ee.String() // "exit status N" or "signal: killed"
	}
	return err.Error()
}

// firstLine returns s's first non-empty line, trimmed.
func firstLine(s string) string {
	for line := range strings.Lines(s) {
		if line = strings.TrimSpace(line); line != "" {
			return line
		}
	}
	return "(no output)"
}

// loopMin is how many times an activity must have started in a run that
// was killed to be reported as part of the loop it was caught in.
const loopMin = 10

// traceCounter counts the activity.started records of a JSON Lines trace
// as it is written, in all and per activity, without keeping the trace.
type traceCounter struct {
	partial []byte
	started int
	// perActivity counts the starts of each activity, named
	// "process/activity".
	perActivity map[string]int
}

func (t *traceCounter) Write(p []byte) (int, error) {
	n := len(p)
	for {
		i := bytes.IndexByte(p, '\n')
		if i < 0 {
			t.partial = append(t.partial, p...)
			return n, nil
		}
		t.line(append(t.partial, p[:i]...))
		t.partial = t.partial[:0]
		p = p[i+1:]
	}
}

// flush counts a last line that has no newline.
func (t *traceCounter) flush() {
	if len(t.partial) > 0 {
		t.line(t.partial)
		t.partial = nil
	}
}

func (t *traceCounter) line(l []byte) {
	if !bytes.Contains(l, []byte("activity.started")) {
		return
	}
	var rec struct {
		Type     string `json:"type"`
		Process  string `json:"process"`
		Activity string `json:"activity"`
	}
	if json.Unmarshal(l, &rec) == nil && rec.Type == "activity.started" {
		t.started++
		if t.perActivity == nil {
			t.perActivity = map[string]int{}
		}
		t.perActivity[rec.Process+"/"+rec.Activity]++
	}
}

// repeated returns the activities that started at least n times, sorted,
// those of process by their id alone.
func (t *traceCounter) repeated(n int, process string) []string {
	var names []string
	for name, c := range t.perActivity {
		if c >= n {
			names = append(names, strings.TrimPrefix(name, process+"/"))
		}
	}
	sort.Strings(names)
	return names
}

// tailBuffer keeps the first and the last max bytes written to it, so
// that a run that logs without end cannot exhaust memory.
type tailBuffer struct {
	max        int
	first, end []byte
}

func (b *tailBuffer) Write(p []byte) (int, error) {
	n := len(p)
	if room := b.max - len(b.first); room > 0 {
		k := min(room, len(p))
		b.first = append(b.first, p[:k]...)
		p = p[k:]
	}
	b.end = append(b.end, p...)
	if len(b.end) > b.max {
		b.end = append(b.end[:0], b.end[len(b.end)-b.max:]...)
	}
	return n, nil
}

// head is the start of what was written.
func (b *tailBuffer) head() string { return string(b.first) }

// String is the start and the end of what was written; a summary line at
// the end is whole unless it is longer than max.
func (b *tailBuffer) String() string { return string(b.first) + "\n" + string(b.end) }
