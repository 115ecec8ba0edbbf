package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/goxpdl/goxpdl/engine"
	"github.com/goxpdl/goxpdl/timer"
	"github.com/goxpdl/goxpdl/wftype"
)

// The bulk actions of the command line: "goxpdl batches" lists them and
// "goxpdl batch" starts, shows, pauses, resumes and cancels one
// (engine/batch.go). A batch is run by the batch runner of an engine node
// on the database; a command of its own starts no node unless --wait is
// given, and then runs the batch in this process until it ends.

const batchesUsage = `Usage: goxpdl batches --db DSN [--state S]... [--json]

Batches lists the bulk actions (goxpdl batch start), oldest first, with
their progress: how many of the selected instances were processed, and
how many of those the action was applied to (done), no longer applied to
(skipped: the instance had moved on) or failed on.

Flags:

	--state S         only batches in this state (repeatable): running,
	                  paused, cancelled, completed, failed
` + readUsage + `
Exit status: 0 done; 2 usage error, or the database cannot be used.
`

const batchesShortUsage = "usage: goxpdl batches --db DSN [--state S]... [--json]\n"

const batchUsage = `Usage:

	goxpdl batch start --db DSN ACTION [FILTER FLAGS] [--to VER [--map OLD=NEW]... [--set NAME=VALUE]...] --reason R [--wait]
	goxpdl batch show --db DSN ID
	goxpdl batch cancel|pause|resume --db DSN --reason R [--wait] ID

Batch runs one operator command on every process instance a filter
selects, in the background, as a durable job (engine.StartBatch): the
batch runner of an engine node walks the instances in id order, a chunk
at a time, gives each instance the command with the batch's actor and
reason, and commits the progress after each chunk; a restart, or another
node, goes on from there. ACTION is one of:

	suspend    Running instances
	resume     Suspended instances
	terminate  Running and Suspended instances
	retry      the Abnormal activities of Running instances
	migrate    instances to version --to of their package (--package)

	start   selects the instances now (instances created later are never
	        selected) and prints the batch
	show    the batch's progress, and the instances it skipped or failed
	        on, with why; with --wait, after running it here to its end
	pause   no runner takes it until resume; the chunk in hand finishes
	resume  lets a paused batch go on from where it stopped
	cancel  stops it for good; the chunk in hand finishes

Who runs it. This command's own process runs no batch unless --wait is
given: without it, start (and resume) only commit the batch, and the
engine nodes on the database run it (a host's engine, or goxpdl recover
running as a node); goxpdl batch show follows it. With --wait (start,
show, resume) this
process is such a node until the batch is no longer running (it ended,
or someone paused or cancelled it): it runs the batch, then the work the
commands caused (as --wait does for the other commands), and prints the
batch. Ctrl-C stops it; the batch keeps what it did and goes on from
there on the next node. On a database a host runs, leave --wait out.

Filter flags (start; the instances must match all of them):

	--state S              in this process state (repeatable)
	--process P            of the WorkflowProcess with this id
	--package P            of this package
	--version V            of this version (of --package)
	--business-key K       with this business key
	--started-before T     started before T (RFC 3339, or a date
	                       2006-01-02, UTC)
	--started-after T      started at or after T
	--incident CAUSE       with an open incident of this cause

Migrate flags:

	--to VER          the version of --package to move the instances to
	--map OLD=NEW     an activity id of the old version and its id in the
	                  new one (repeatable)
	--set NAME=VALUE  a variable to set in the same step (repeatable)
` + opUsage + `
Exit status: 0 done; 1 refused (an unknown batch, a batch in a state the
command does not apply to, an unknown version), with the reason on
standard error; 2 usage error, or the database cannot be used.
`

const batchShortUsage = "usage: goxpdl batch start|show|cancel|pause|resume --db DSN [flags] ACTION|ID\n"

// batchStates are the batch states an operator names.
var batchStates = []engine.BatchState{engine.BatchRunning, engine.BatchPaused, engine.BatchCancelled, engine.BatchCompleted, engine.BatchFailed}

// batchRow is a batch as the command line prints it with --json.
type batchRow struct {
	engine.Batch
	Processed int64                 `json:"processed"`
	Failures  []engine.BatchFailure `json:"failures,omitempty"`
}

func runBatches(args []string, _ io.Reader, stdout, stderr io.Writer) int {
	var o opFlags
	var states listFlags
	fs := flag.NewFlagSet("batches", flag.ContinueOnError)
	o.registerRead(fs)
	fs.Var(&states, "state", "state")
	if _, code, ok := parseOp(fs, cmdSpec{name: "batches", usage: batchesUsage, short: batchesShortUsage, args: 0}, &o, args, stdout, stderr); !ok {
		return code
	}
	f := engine.BatchFilter{Limit: 1000}
	for _, st := range states {
		s, ok := batchStateNamed(st)
		if !ok {
			printErr(stderr, "goxpdl batches: --state %q: want one of %s\n", st, batchStateNames())
			return exitUsage
		}
		f.States = append(f.States, s)
	}
	ctx, s, code := openSession("batches", &o, stderr)
	if s == nil {
		return code
	}
	defer s.close()
	rows := []batchRow{}
	for {
		page, err := s.e.Batches(ctx, f)
		if err != nil {
			return s.refusal(err)
		}
		for _, b := range page.Batches {
			rows = append(rows, batchRow{Batch: b, Processed: b.Processed()})
		}
		if page.Next == 0 {
			break
		}
		f.After = page.Next
	}
	var b strings.Builder
	w := tabwriter.NewWriter(&b, 0, 4, 2, ' ', 0)
	_, _ = fmt.Fprintln(w, "ID\tACTION\tSTATE\tPROCESSED\tDONE\tSKIPPED\tFAILED\tACTOR\tREASON")
	for _, r := range rows {
		_, _ = fmt.Fprintf(w, "%d\t%s\t%s\t%d of %d\t%d\t%d\t%d\t%s\t%s\n", r.ID, r.Action, r.State, r.Processed, r.Total,
			r.Done, r.Skipped, r.Failed, r.Actor, oneLine(r.Reason))
	}
	_ = w.Flush()
	return printResult(stdout, stderr, o.json, map[string]any{"batches": rows}, b.String(), exitOK)
}

// batchFlags are the flags of "goxpdl batch".
type batchFlags struct {
	states                                                           listFlags
	process, pkg, businessKey, startedBefore, startedAfter, incident string
	version, to                                                      int
	mapping, sets                                                    pairFlags
}

func (f *batchFlags) register(fs *flag.FlagSet) {
	f.mapping, f.sets = pairFlags{}, pairFlags{}
	fs.Var(&f.states, "state", "process state")
	fs.StringVar(&f.process, "process", "", "process id")
	fs.StringVar(&f.pkg, "package", "", "package id")
	fs.IntVar(&f.version, "version", 0, "version")
	fs.StringVar(&f.businessKey, "business-key", "", "business key")
	fs.StringVar(&f.startedBefore, "started-before", "", "time")
	fs.StringVar(&f.startedAfter, "started-after", "", "time")
	fs.StringVar(&f.incident, "incident", "", "incident cause")
	fs.IntVar(&f.to, "to", 0, "version to migrate to")
	fs.Var(f.mapping, "map", "OLD=NEW")
	fs.Var(f.sets, "set", "NAME=VALUE")
}

// filter is the instance filter the flags give, or a usage error.
func (f *batchFlags) filter() (engine.InstanceFilter, error) {
	out := engine.InstanceFilter{Process: f.process, Package: f.pkg, Version: f.version, BusinessKey: f.businessKey}
	for _, st := range f.states {
		if !knownState(st) {
			return out, fmt.Errorf("--state %q: want one of %s", st, stateNames())
		}
		out.States = append(out.States, wftype.ProcessState(st))
	}
	if f.version < 0 {
		return out, fmt.Errorf("--version %d: want a positive number", f.version)
	}
	var err error
	if out.StartedBefore, err = parseWhen("--started-before", f.startedBefore); err != nil {
		return out, err
	}
	if out.StartedAfter, err = parseWhen("--started-after", f.startedAfter); err != nil {
		return out, err
	}
	if f.incident != "" {
		if !slices.Contains(incidentCauses, engine.IncidentCause(f.incident)) {
			return out, fmt.Errorf("--incident %q: want one of %s", f.incident, causeNames())
		}
		out.IncidentCause = engine.IncidentCause(f.incident)
	}
	return out, nil
}

// parseWhen reads a time flag: RFC 3339, or a date (midnight UTC).
func parseWhen(flagName, s string) (time.Time, error) {
	if s == "" {
		return time.Time{}, nil
	}
	if t, err := time.Parse(time.RFC3339, s); err == nil {
		return t, nil
	}
	if t, err := time.Parse(time.DateOnly, s); err == nil {
		return t, nil
	}
	return time.Time{}, fmt.Errorf("%s %q: want a time (2006-01-02T15:04:05Z07:00) or a date (2006-01-02)", flagName, s)
}

func runBatch(args []string, _ io.Reader, stdout, stderr io.Writer) int {
	var o opFlags
	var bf batchFlags
	fs := flag.NewFlagSet("batch", flag.ContinueOnError)
	o.register(fs)
	bf.register(fs)
	pos, code, ok := parseOp(fs, cmdSpec{name: "batch", usage: batchUsage, short: batchShortUsage, args: anyArgs}, &o, args, stdout, stderr)
	if !ok {
		return code
	}
	subs := []string{"start", "show", "cancel", "pause", "resume"}
	if len(pos) == 0 || !slices.Contains(subs, pos[0]) {
		what := "no subcommand"
		if len(pos) > 0 {
			what = fmt.Sprintf("unknown subcommand %q", pos[0])
		}
		printErr(stderr, "goxpdl batch: %s: want start, show, cancel, pause or resume\n%s", what, batchShortUsage)
		return exitUsage
	}
	sub, pos := pos[0], pos[1:]
	name := "batch " + sub
	if len(pos) != 1 {
		want := "the batch id"
		if sub == "start" {
			want = "the action"
		}
		printErr(stderr, "goxpdl %s: want 1 argument (%s), got %d\n%s", name, want, len(pos), batchShortUsage)
		return exitUsage
	}
	if sub == "start" {
		return startBatch(name, pos[0], &o, &bf, stdout, stderr)
	}
	id, err := parseID("batch", pos[0])
	if err != nil {
		printErr(stderr, "goxpdl %s: %v\n%s", name, err, batchShortUsage)
		return exitUsage
	}
	ctx, s, code := openSession(name, &o, stderr)
	if s == nil {
		return code
	}
	defer s.close()
	var b engine.Batch
	switch sub {
	case "show":
		b, err = s.e.Batch(ctx, id)
	case "cancel":
		b, err = s.e.CancelBatch(ctx, id, o.op())
	case "pause":
		b, err = s.e.PauseBatch(ctx, id, o.op())
	default: // resume
		b, err = s.e.ResumeBatch(ctx, id, o.op())
	}
	if err != nil {
		return s.refusal(explainBatch(err, id))
	}
	return s.printBatch(ctx, stdout, &o, b, sub == "show")
}

// startBatch is "goxpdl batch start ACTION".
func startBatch(name, action string, o *opFlags, bf *batchFlags, stdout, stderr io.Writer) int {
	req := engine.BatchRequest{Action: engine.BatchAction(action), Op: o.op()}
	if !slices.Contains(engine.BatchActions, req.Action) {
		printErr(stderr, "goxpdl %s: unknown action %q: want one of %s\n%s", name, action, batchActionNames(), batchShortUsage)
		return exitUsage
	}
	filter, err := bf.filter()
	if err == nil {
		switch migrate := req.Action == engine.BatchMigrate; {
		case migrate && (bf.pkg == "" || bf.to <= 0):
			err = errors.New("migrate needs --package P and --to VERSION (a version of P)")
		case !migrate && (bf.to != 0 || len(bf.mapping) > 0 || len(bf.sets) > 0):
			err = fmt.Errorf("--to, --map and --set are for migrate, not %s", action)
		}
	}
	if err != nil {
		printErr(stderr, "goxpdl %s: %v\n%s", name, err, batchShortUsage)
		return exitUsage
	}
	req.Filter = filter
	ctx, s, code := openSession(name, o, stderr)
	if s == nil {
		return code
	}
	defer s.close()
	if req.Action == engine.BatchMigrate {
		dst, err := versionOf(ctx, s.e, bf.pkg, bf.to)
		if err != nil {
			return s.refusal(err)
		}
		req.Migration = &engine.Migration{To: dst.ID, Activities: bf.mapping, Variables: engine.Values{TextVariables: bf.sets}}
	}
	b, err := s.e.StartBatch(ctx, req)
	if err != nil {
		return s.refusal(err)
	}
	return s.printBatch(ctx, stdout, o, b, false)
}

// printBatch waits for the batch with --wait, then prints it, with its
// failures when show is set.
func (s *session) printBatch(ctx context.Context, stdout io.Writer, o *opFlags, b engine.Batch, show bool) int {
	code := exitOK
	if s.wait && b.State == engine.BatchRunning {
		var err error
		if b, err = waitBatch(ctx, s.e, b.ID); err != nil {
			printErr(s.stderr, "goxpdl %s: %v (batch %d keeps what it did and goes on from there on a running node)\n", s.name, err, b.ID)
			return exitUsage
		}
	}
	if c := s.settle(ctx); c != exitOK {
		code = c
	}
	row := batchRow{Batch: b, Processed: b.Processed()}
	if show {
		f := engine.BatchFailureFilter{Batch: b.ID, Limit: 1000}
		for {
			page, err := s.e.BatchFailures(ctx, f)
			if err != nil {
				return s.refusal(err)
			}
			row.Failures = append(row.Failures, page.Failures...)
			if page.Next == 0 {
				break
			}
			f.After = page.Next
		}
	}
	return printResult(stdout, s.stderr, o.json, map[string]any{"batch": row}, formatBatch(row, show, s.wait), code)
}

// waitBatch waits until batch id is no longer Running (it ended, or was
// paused or cancelled), while this process's engine node (--wait) runs
// it; it looks again whenever this node's runner lets go of it and every
// quarter second, since another node may be the one running it.
func waitBatch(ctx context.Context, e *engine.Engine, id int64) (engine.Batch, error) {
	stopped := make(chan struct{}, 1)
	defer e.Subscribe(func(r engine.Record) {
		if r.Type == engine.RecordBatchStopped && r.Batch == id {
			select {
			case stopped <- struct{}{}:
			default:
			}
		}
	})()
	for {
		b, err := e.Batch(ctx, id)
		if err != nil || b.State != engine.BatchRunning {
			return b, err
		}
		t := timer.Real().NewTimer(250 * time.Millisecond) // a look, not a schedule: the runner runs on its own
		select {
		case <-ctx.Done():
			t.Stop()
			return b, ctx.Err()
		case <-stopped:
			t.Stop()
		case <-t.C():
		}
	}
}

// formatBatch is a batch in text: one line, and with show its filter,
// who asked and why, and its failures.
func formatBatch(r batchRow, show, waited bool) string {
	var b strings.Builder
	fmt.Fprintf(&b, "batch %d: %s, %s: %d of %d (done %d, skipped %d, failed %d)", r.ID, r.Action, r.State,
		r.Processed, r.Total, r.Done, r.Skipped, r.Failed)
	if r.State == engine.BatchRunning && !waited && !show {
		fmt.Fprintf(&b, "; an engine node on the database runs it (goxpdl batch show %d --wait runs it here)", r.ID)
	}
	b.WriteString("\n")
	if r.Error != "" {
		fmt.Fprintf(&b, "error: %s\n", oneLine(r.Error))
	}
	if !show {
		return b.String()
	}
	fmt.Fprintf(&b, "filter: %s\n", filterText(r.Filter, r.Migration))
	fmt.Fprintf(&b, "asked by: %s", r.Actor)
	if r.Reason != "" {
		fmt.Fprintf(&b, ": %s", oneLine(r.Reason))
	}
	b.WriteString("\n")
	if r.Note != "" {
		fmt.Fprintf(&b, "last change: %s\n", oneLine(r.Note))
	}
	fmt.Fprintf(&b, "created %s", r.CreatedAt.UTC().Format(time.RFC3339))
	if r.EndedAt != nil {
		fmt.Fprintf(&b, ", ended %s", r.EndedAt.UTC().Format(time.RFC3339))
	}
	fmt.Fprintf(&b, "; cursor: instance %d of at most %d\n", r.Cursor, r.MaxInstance)
	if len(r.Failures) > 0 {
		b.WriteString("\n")
		w := tabwriter.NewWriter(&b, 0, 4, 2, ' ', 0)
		_, _ = fmt.Fprintln(w, "INSTANCE\tOUTCOME\tAT\tWHY")
		for _, f := range r.Failures {
			outcome := "failed"
			if f.Skipped {
				outcome = "skipped"
			}
			_, _ = fmt.Fprintf(w, "%d\t%s\t%s\t%s\n", f.Instance, outcome, f.At.UTC().Format(time.RFC3339), oneLine(f.Error))
		}
		_ = w.Flush()
	}
	return b.String()
}

// filterText is a batch's filter in the words of the flags.
func filterText(f engine.InstanceFilter, m *engine.Migration) string {
	var parts []string
	add := func(name string, v any) { parts = append(parts, fmt.Sprintf("--%s %v", name, v)) }
	for _, st := range f.States {
		add("state", st)
	}
	if f.Package != "" {
		add("package", f.Package)
	}
	if f.Version != 0 {
		add("version", f.Version)
	}
	if f.DefinitionID != 0 {
		add("definition", f.DefinitionID)
	}
	if f.Process != "" {
		add("process", f.Process)
	}
	if f.BusinessKey != "" {
		add("business-key", f.BusinessKey)
	}
	if !f.StartedBefore.IsZero() {
		add("started-before", f.StartedBefore.UTC().Format(time.RFC3339))
	}
	if !f.StartedAfter.IsZero() {
		add("started-after", f.StartedAfter.UTC().Format(time.RFC3339))
	}
	if f.IncidentCause != "" {
		add("incident", f.IncidentCause)
	}
	if m != nil {
		add("to-definition", m.To)
		for _, old := range sortedKeys(m.Activities) {
			add("map", old+"="+m.Activities[old])
		}
	}
	if len(parts) == 0 {
		return "every instance"
	}
	return strings.Join(parts, " ")
}

func sortedKeys(m map[string]string) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

// explainBatch words a refusal of a batch in its state with its id:
// "batch 3 is Completed: cancel refused".
func explainBatch(err error, id int64) error {
	se, ok := errors.AsType[*wftype.StateError](err)
	if !ok {
		return err
	}
	return &stateRefusal{msg: fmt.Sprintf("batch %d is %s: %s refused", id, se.State, se.Command), err: err}
}

func batchStateNamed(s string) (engine.BatchState, bool) {
	for _, st := range batchStates {
		if strings.EqualFold(string(st), s) {
			return st, true
		}
	}
	return "", false
}

func batchStateNames() string {
	names := make([]string, len(batchStates))
	for i, s := range batchStates {
		names[i] = string(s)
	}
	return strings.Join(names, ", ")
}

func batchActionNames() string {
	names := make([]string, len(engine.BatchActions))
	for i, a := range engine.BatchActions {
		names[i] = string(a)
	}
	return strings.Join(names, ", ")
}
