package main

import (
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"strings"
	"time"
)

// Report is the outcome of one crash-test run.
type Report struct {
	Scenario string `json:"scenario"`
	Database string `json:"database"`
	WorkDir  string `json:"work_dir"`
	// Source is the commit (and uncommitted files) the nodes ran.
	Source    string `json:"source"`
	Seed      uint64 `json:"seed"`
	Nodes     int    `json:"nodes"`
	Instances int    `json:"instances"`
	// Kills counts the SIGKILLs; KillsSurvived those after which the
	// load made progress again (the restarted node, or for multi the
	// other nodes, moved the killed node's instances on).
	Kills         int `json:"kills"`
	KillsSurvived int `json:"kills_survived"`
	DBRestarts    int `json:"db_restarts"`

	Lost                  int   `json:"lost"`
	DuplicatedTransitions int   `json:"duplicated_transitions"`
	AppCalls              int64 `json:"app_calls"`
	DuplicateAppCalls     int64 `json:"duplicate_app_calls"`

	// The times, in milliseconds, from a restart of a node to the first
	// state change committed after it, and to the processing of every
	// event that was left unprocessed before it; for multi, from a kill
	// to the first change of an instance the killed node had claimed
	// events of, and to the processing of all of those events; for
	// mysql-restart, from the database answering again to the first
	// change.
	RestartToProgress    durations `json:"restart_to_first_progress"`
	RestartToBacklogDone durations `json:"restart_to_backlog_processed"`
	TakeoverToProgress   durations `json:"takeover_to_first_progress"`
	TakeoverToProcessed  durations `json:"takeover_to_claimed_processed"`
	DBUpToProgress       durations `json:"db_restart_to_first_progress"`
	DBUpToBacklogDone    durations `json:"db_restart_to_backlog_processed"`

	Final        finalRun          `json:"final_run"`
	Runs         []runRecord       `json:"runs"`
	Takeovers    []takeoverRecord  `json:"takeovers,omitempty"`
	DBRestartLog []dbRestartRecord `json:"db_restart_log,omitempty"`
	Verification verification      `json:"verification"`
	// Failures are what went wrong while the load ran: a node that
	// exited by itself, made no progress, or was not taken over.
	Failures []string     `json:"failures"`
	Notes    []string     `json:"notes,omitempty"`
	NodeLogs []logSummary `json:"node_logs"`
	// MachineBefore and MachineAfter are the machine's load and free disk
	// before the load and after the final run.
	MachineBefore machineState `json:"machine_before"`
	MachineAfter  machineState `json:"machine_after"`
	// Stacks summarise the goroutine dumps of the nodes that were still
	// running when the final run was given up (hung, or too slow).
	Stacks []stackDump `json:"stacks,omitempty"`
	// NodeCounters totals the engine's and the driver's counters of the
	// runs that were stopped (NodeCounterRuns of them); killed runs
	// cannot report theirs.
	NodeCounters    map[string]int64 `json:"node_counters"`
	NodeCounterRuns int              `json:"node_counter_runs"`
	ElapsedS        float64          `json:"elapsed_s"`
	Passed          bool             `json:"passed"`
}

// durations summarizes measured times, in milliseconds.
type durations struct {
	// Count is how many were measured; Missing how many were not
	// (the node was killed or the run ended first).
	Count    int     `json:"count"`
	Missing  int     `json:"missing"`
	MedianMS float64 `json:"median_ms"`
	MaxMS    float64 `json:"max_ms"`
}

func summarize(values []*float64) durations {
	var got []float64
	d := durations{}
	for _, v := range values {
		if v == nil {
			d.Missing++
			continue
		}
		got = append(got, *v)
	}
	d.Count = len(got)
	if len(got) == 0 {
		return d
	}
	slices.Sort(got)
	d.MaxMS = got[len(got)-1]
	if n := len(got); n%2 == 1 {
		d.MedianMS = got[n/2]
	} else {
		d.MedianMS = (got[n/2-1] + got[n/2]) / 2
	}
	return d
}

// ms converts a measured duration for the report.
func ms(d time.Duration, ok bool) *float64 {
	if !ok {
		return nil
	}
	v := float64(d.Microseconds()) / 1000
	return &v
}

// runRecord is one run of one node process.
type runRecord struct {
	Node string `json:"node"`
	Run  int    `json:"run"`
	// Backlog is how many events were unprocessed when it started.
	Backlog int64   `json:"backlog"`
	RanMS   float64 `json:"ran_ms"`
	// ReadyMS is how long the node took to start its engine.
	ReadyMS *float64 `json:"ready_ms"`
	// End is "killed", "stopped", or how it exited by itself.
	End        string   `json:"end"`
	ProgressMS *float64 `json:"progress_ms"`
	BacklogMS  *float64 `json:"backlog_processed_ms"`
	// BacklogLeft counts the events of the backlog still unprocessed
	// when the run ended, and Leftovers describes the first of them.
	BacklogLeft int64    `json:"backlog_left,omitempty"`
	Leftovers   []string `json:"leftovers,omitempty"`
}

// takeoverRecord is what happened after a kill in the multi scenario.
type takeoverRecord struct {
	Node          string   `json:"node"`
	ClaimedEvents int      `json:"claimed_events"`
	Instances     int      `json:"instances"`
	ProgressMS    *float64 `json:"first_progress_ms"`
	ProcessedMS   *float64 `json:"claimed_processed_ms"`
}

// dbRestartRecord is one restart of the database server.
type dbRestartRecord struct {
	DownMS     float64  `json:"down_ms"`
	ProgressMS *float64 `json:"progress_ms"`
	NodesAlive int      `json:"nodes_alive"`
	// Backlog is how many events were unprocessed when the database
	// answered again, and BacklogMS how long after that they all were.
	Backlog   int64    `json:"backlog"`
	BacklogMS *float64 `json:"backlog_processed_ms"`
}

// finalRun is the last phase, which runs until every instance finished.
type finalRun struct {
	ReachedIdle bool       `json:"reached_idle"`
	DurationMS  float64    `json:"duration_ms"`
	Status      loadStatus `json:"status"`
}

// finish works out the summary fields.
func (r *Report) finish() {
	var prog, backlog, tprog, tall, dbprog []*float64
	for _, run := range r.Runs {
		if run.Run == 1 {
			continue // a first start is no restart
		}
		prog = append(prog, run.ProgressMS)
		if run.Backlog > 0 {
			backlog = append(backlog, run.BacklogMS)
		}
	}
	for _, t := range r.Takeovers {
		if t.Instances > 0 {
			tprog = append(tprog, t.ProgressMS)
		}
		tall = append(tall, t.ProcessedMS)
	}
	var dbbacklog []*float64
	for _, d := range r.DBRestartLog {
		dbprog = append(dbprog, d.ProgressMS)
		dbbacklog = append(dbbacklog, d.BacklogMS)
	}
	r.DBUpToBacklogDone = summarize(dbbacklog)
	r.RestartToProgress, r.RestartToBacklogDone = summarize(prog), summarize(backlog)
	r.TakeoverToProgress, r.TakeoverToProcessed = summarize(tprog), summarize(tall)
	r.DBUpToProgress = summarize(dbprog)
	v := r.Verification
	r.Lost, r.DuplicatedTransitions = v.Lost, v.DuplicatedTransitions
	r.AppCalls, r.DuplicateAppCalls = v.AppCalls, v.DuplicateAppCalls
	r.Passed = len(r.Failures) == 0 && v.passed()
}

func (r *Report) writeJSON(w io.Writer) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(r)
}

// maxLogLines bounds the node-log summary of the text report.
const maxLogLines = 15

// stackDump is the summary of one node's goroutine dump: groups of
// goroutines waiting in the same place, most frequent first.
type stackDump struct {
	Node   string   `json:"node"`
	Run    int      `json:"run"`
	Log    string   `json:"log"`
	Groups []string `json:"groups"`
}

func (r *Report) writeText(w io.Writer) error {
	var b strings.Builder
	p := func(format string, args ...any) { fmt.Fprintf(&b, format, args...) }
	v := r.Verification
	p("crash test %s on %s: %d node(s), seed %d, %.1fs\n", r.Scenario, r.Database, r.Nodes, r.Seed, r.ElapsedS)
	p("  source                  %s\n", r.Source)
	p("  machine                 before: %s; after: %s\n", r.MachineBefore.text(), r.MachineAfter.text())
	p("  instances               %d asked for; %d roots, %d instances, %d Completed\n", r.Instances, v.Roots, v.Instances, v.Completed)
	p("  kills                   %d (%d survived)\n", r.Kills, r.KillsSurvived)
	if r.Scenario == scenarioMySQLRestart {
		p("  database restarts       %d\n", r.DBRestarts)
	}
	p("  lost                    %d (instances %d, activities %d, updates %d)\n", r.Lost, v.LostInstances, v.LostActivities, v.LostUpdates)
	p("  duplicated transitions  %d (activities %d, of which AND-joins %d; history %d; subflows %d; work items %d; updates %d)\n",
		r.DuplicatedTransitions, v.DuplicatedActivities, v.DuplicatedJoins, v.DuplicatedHistory, v.DuplicatedSubflows, v.DuplicatedWorkItems, v.DuplicatedUpdates)
	p("  application calls       %d; duplicate calls %d (allowed: at-least-once); re-executed activities %d; calls of lost transactions %d\n",
		r.AppCalls, r.DuplicateAppCalls, v.ReexecutedActivities, v.OrphanCalls)
	p("  restart -> progress     %s\n", r.RestartToProgress.text())
	p("  restart -> backlog done %s\n", r.RestartToBacklogDone.text())
	if isMulti(r.Scenario) {
		p("  kill -> takeover        %s\n", r.TakeoverToProgress.text())
		p("  kill -> claimed done    %s\n", r.TakeoverToProcessed.text())
	}
	if r.Scenario == scenarioMySQLRestart {
		p("  db up -> progress       %s\n", r.DBUpToProgress.text())
		p("  db up -> backlog done   %s\n", r.DBUpToBacklogDone.text())
	}
	idle := "reached idle"
	if !r.Final.ReachedIdle {
		idle = "did NOT reach idle"
	}
	p("  final run               %s after %.1fs (roots %d, unfinished %d, unprocessed events %d)\n",
		idle, r.Final.DurationMS/1000, r.Final.Status.Roots, r.Final.Status.Unfinished, r.Final.Status.Unprocessed)
	// What explains a failure comes before the long lists: CI shows a
	// window of the output.
	for _, f := range r.Failures {
		p("FAILURE: %s\n", f)
	}
	for _, n := range r.Notes {
		p("note: %s\n", n)
	}
	for _, d := range r.Stacks {
		p("goroutines of %s run %d when the final run was given up (%s):\n", d.Node, d.Run, d.Log)
		for _, g := range d.Groups {
			p("  %s\n", g)
		}
	}
	if len(r.NodeLogs) > 0 {
		p("node logs (level, count, message; first example):\n")
		for i, l := range r.NodeLogs {
			if i == maxLogLines {
				p("  ... %d more kinds of line (see the JSON report or %s)\n", len(r.NodeLogs)-i, r.WorkDir)
				break
			}
			p("  %-5s %5d× %s\n        %s\n", l.Level, l.Count, l.Message, l.Example)
		}
	}
	p("checks:\n")
	for _, c := range v.Checks {
		mark := "ok  "
		if !c.OK {
			mark = "FAIL"
		}
		p("  %s %s: %s\n", mark, c.Name, c.Detail)
	}
	p("runs:\n")
	for _, run := range r.Runs {
		p("  %s run %d: ran %.1fs, %s; ready after %s; backlog %d at start; progress after %s, backlog processed after %s\n",
			run.Node, run.Run, run.RanMS/1000, run.End, msText(run.ReadyMS), run.Backlog, msText(run.ProgressMS), msText(run.BacklogMS))
		if run.BacklogLeft > 0 {
			p("    %d of the backlog still unprocessed at its end: %s\n", run.BacklogLeft, strings.Join(run.Leftovers, "; "))
		}
	}
	for _, t := range r.Takeovers {
		p("  takeover of %s: %d claimed events of %d instances; first progress after %s, all processed after %s\n",
			t.Node, t.ClaimedEvents, t.Instances, msText(t.ProgressMS), msText(t.ProcessedMS))
	}
	for i, d := range r.DBRestartLog {
		p("  database restart %d: down %.1fs; after it answered: progress after %s, the %d events then unprocessed processed after %s; %d node(s) alive\n",
			i+1, d.DownMS/1000, msText(d.ProgressMS), d.Backlog, msText(d.BacklogMS), d.NodesAlive)
	}
	if len(r.NodeCounters) > 0 {
		p("node counters of the %d run(s) stopped, not killed: %s\n", r.NodeCounterRuns, countersText(r.NodeCounters))
	}
	verdict := "PASS"
	if !r.Passed {
		verdict = "FAIL"
	}
	p("verdict: %s (lost %d, duplicated transitions %d, failed checks %d, failures %d); logs and databases in %s\n",
		verdict, r.Lost, r.DuplicatedTransitions, failedChecks(v.Checks), len(r.Failures), r.WorkDir)
	_, err := io.WriteString(w, b.String())
	return err
}

func countersText(m map[string]int64) string {
	parts := make([]string, 0, len(m))
	for _, k := range sortedKeys(m) {
		parts = append(parts, fmt.Sprintf("%s %d", k, m[k]))
	}
	return strings.Join(parts, ", ")
}

func failedChecks(cs []check) int {
	n := 0
	for _, c := range cs {
		if !c.OK {
			n++
		}
	}
	return n
}

func (d durations) text() string {
	if d.Count == 0 {
		if d.Missing == 0 {
			return "none measured"
		}
		return fmt.Sprintf("none measured (%d runs ended first)", d.Missing)
	}
	s := fmt.Sprintf("n=%d median %s max %s", d.Count, msText(&d.MedianMS), msText(&d.MaxMS))
	if d.Missing > 0 {
		s += fmt.Sprintf(" (%d not measured: the run ended first)", d.Missing)
	}
	return s
}

func msText(v *float64) string {
	switch {
	case v == nil:
		return "-"
	case *v >= 1000:
		return fmt.Sprintf("%.2fs", *v/1000)
	}
	return fmt.Sprintf("%.0fms", *v)
}
