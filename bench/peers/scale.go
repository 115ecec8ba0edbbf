package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"
)

// "peers scale" measures goxpdl alone at scale (issue #23 point 3) and
// writes docs/scale.json, which the report renders as its "Scale"
// section:
//
//   - nodes: "goxpdl bench --nodes M" (seq10) for each M, the Ms
//     interleaved (1,2,3,1,2,3,...), each run on a fresh MariaDB database,
//     with the CPU time MariaDB and goxpdl spent (the server's from
//     /proc/PID/stat before and after, goxpdl's from the wait status of
//     the bench process, which includes its nodes);
//   - console: BenchmarkConsoleReads (package engine) at 1,000,000
//     instances on SQLite and MariaDB, the reads the console's dashboard
//     and instance list make, p50 and p99 of each.
//
// Either part can run alone (-only); the other keeps its figures from the
// JSON file. The report is then written again from docs/benchmarks.json
// and the new docs/scale.json, without running the peer suite.

// scaleOptions are the flags of "peers scale".
type scaleOptions struct {
	only        string
	nodes       string
	reps        int
	instances   int
	clients     int
	goxpdl      string
	repo        string
	out         string
	report      string
	suiteJSON   string
	plot        string
	consoleLog  string
	consoleLoad string
	consoleN    int
	mysql       mysqlTarget
	dbPrefix    string
}

// scaleResults is docs/scale.json.
type scaleResults struct {
	Nodes   *nodesSitting   `json:"nodes,omitempty"`
	Console *consoleSitting `json:"console,omitempty"`
}

// nodesSitting is one sitting of the nodes measurement.
type nodesSitting struct {
	Started   time.Time         `json:"started"`
	Minutes   float64           `json:"minutes"`
	Machine   map[string]string `json:"machine"`
	Workload  string            `json:"workload"`
	Instances int               `json:"instances"`
	Clients   int               `json:"clients"`
	Reps      int               `json:"reps"`
	LoadMin   float64           `json:"load_min"`
	LoadMax   float64           `json:"load_max"`
	Runs      []nodesRun        `json:"runs"`
}

// nodesRun is one "goxpdl bench --nodes M" run.
type nodesRun struct {
	Nodes int     `json:"nodes"`
	Rep   int     `json:"rep"`
	Load1 float64 `json:"load1"`
	// Bench is goxpdl bench's JSON report.
	Bench benchJSON `json:"bench"`
	// WallSeconds is the bench command's whole run (the nodes' start and
	// stop included); MariaDBCPUSeconds and GoxpdlCPUSeconds are the CPU
	// time (user and system) of the server and of the bench command with
	// its nodes over it.
	WallSeconds       float64 `json:"wall_seconds"`
	MariaDBCPUSeconds float64 `json:"mariadb_cpu_seconds"`
	GoxpdlCPUSeconds  float64 `json:"goxpdl_cpu_seconds"`
	Note              string  `json:"note,omitempty"`
}

// benchJSON is the part of goxpdl bench's report the section shows.
type benchJSON struct {
	Completed          int       `json:"completed"`
	Failed             int       `json:"failed"`
	Seconds            float64   `json:"seconds"`
	InstancesPerS      float64   `json:"instances_per_s"`
	Activities         int64     `json:"activities"`
	ActivitiesPerS     float64   `json:"activities_per_s"`
	DBTxPerInstance    float64   `json:"db_transactions_per_instance"`
	EventsProcessed    uint64    `json:"events_processed"`
	EventsFailed       uint64    `json:"events_failed"`
	Conflicts          uint64    `json:"conflicts"`
	P50Ms              float64   `json:"p50_ms"`
	P99Ms              float64   `json:"p99_ms"`
	PerNode            []perNode `json:"per_node"`
	CommitsPerInstance float64   `json:"commits_per_instance"`
}

// perNode is one node's line of goxpdl bench's report.
type perNode struct {
	Node            int    `json:"node"`
	Clients         int    `json:"clients"`
	Started         int    `json:"started"`
	Activities      int64  `json:"activities"`
	EventsProcessed uint64 `json:"events_processed"`
	Conflicts       uint64 `json:"conflicts"`
}

// consoleSitting is one run of BenchmarkConsoleReads.
type consoleSitting struct {
	Started   time.Time         `json:"started"`
	Minutes   float64           `json:"minutes"`
	Machine   map[string]string `json:"machine"`
	Instances int               `json:"instances"`
	LoadMin   float64           `json:"load_min"`
	LoadMax   float64           `json:"load_max"`
	// Loaded is the benchmark's own line on what it loaded and how long
	// it took, per database.
	Loaded map[string]string `json:"loaded"`
	// FromLog says the figures were read from a saved log of the run
	// (-console-log), not measured by this program.
	FromLog bool          `json:"from_log,omitempty"`
	Reads   []consoleRead `json:"reads"`
}

// consoleRead is one read's figures on one database.
type consoleRead struct {
	DB    string  `json:"db"`
	Read  string  `json:"read"`
	P50Ms float64 `json:"p50_ms"`
	P99Ms float64 `json:"p99_ms"`
}

func mainScale(ctx context.Context, args []string) error {
	var o scaleOptions
	fs := flag.NewFlagSet("scale", flag.ContinueOnError)
	fs.StringVar(&o.only, "only", "nodes,console", "parts to run: nodes, console")
	fs.StringVar(&o.nodes, "nodes", "1,2,3", "node counts, interleaved in each round")
	fs.IntVar(&o.reps, "reps", 3, "rounds (runs of each node count; the median is reported)")
	fs.IntVar(&o.instances, "n", 2000, "instances per run")
	fs.IntVar(&o.clients, "clients", 8, "clients (and each node's worker pools)")
	fs.StringVar(&o.goxpdl, "goxpdl", "../../bin/goxpdl", "the goxpdl program")
	fs.StringVar(&o.repo, "repo", "../..", "goxpdl's repository (BenchmarkConsoleReads runs there)")
	fs.StringVar(&o.out, "out", "../../docs/scale.json", "the figures")
	fs.StringVar(&o.report, "report", "../../docs/benchmarks.md", "the report to write again")
	fs.StringVar(&o.suiteJSON, "suite", "../../docs/benchmarks.json", "the peer suite's figures the report is written from")
	fs.StringVar(&o.plot, "plot", "benchmarks.svg", "the plot's name, as the report links it")
	fs.StringVar(&o.consoleLog, "console-log", "", "read BenchmarkConsoleReads' output (go test -bench -v) from this file instead of running it")
	fs.StringVar(&o.consoleLoad, "console-load", "", "with -console-log: the load average's range while it ran, as MIN,MAX (when noted)")
	fs.IntVar(&o.consoleN, "console-n", 1_000_000, "instances BenchmarkConsoleReads loads")
	fs.StringVar(&o.mysql.Host, "mysql-host", "127.0.0.1", "MariaDB host (loopback)")
	fs.IntVar(&o.mysql.Port, "mysql-port", 3306, "MariaDB port")
	fs.StringVar(&o.mysql.User, "mysql-user", "root", "MariaDB user")
	fs.StringVar(&o.mysql.Password, "mysql-password", "", "MariaDB password")
	fs.StringVar(&o.dbPrefix, "mysql-db-prefix", "peers_scale", "prefix of the databases made (and dropped) per run")
	if err := fs.Parse(args); err != nil {
		return err
	}
	var res scaleResults
	if data, err := os.ReadFile(o.out); err == nil {
		if err := json.Unmarshal(data, &res); err != nil {
			return fmt.Errorf("%s: %w", o.out, err)
		}
	} else if !errors.Is(err, os.ErrNotExist) {
		return err
	}
	only := strings.Split(o.only, ",")
	for _, part := range only {
		if part != "nodes" && part != "console" && part != "" {
			return fmt.Errorf("-only %q: want nodes, console or both", o.only)
		}
	}
	if slices.Contains(only, "nodes") {
		s, err := runNodes(ctx, o)
		if err != nil {
			return err
		}
		res.Nodes = &s
	}
	if slices.Contains(only, "console") {
		s, err := runConsole(ctx, o)
		if err != nil {
			return err
		}
		res.Console = &s
	}
	data, err := json.MarshalIndent(res, "", "  ")
	if err != nil {
		return err
	}
	if err := os.WriteFile(o.out, append(data, '\n'), 0o644); err != nil {
		return err
	}
	return writeReportFrom(o.suiteJSON, o.out, o.plot, o.report)
}

// writeReportFrom writes the report from the suite's JSON and the scale
// JSON (which may be missing).
func writeReportFrom(suiteJSON, scaleJSON, plot, out string) error {
	data, err := os.ReadFile(suiteJSON)
	if err != nil {
		return err
	}
	var s suite
	if err := json.Unmarshal(data, &s); err != nil {
		return fmt.Errorf("%s: %w", suiteJSON, err)
	}
	sc, err := readScale(scaleJSON)
	if err != nil {
		return err
	}
	doc, err := renderReport(s, sc, plot)
	if err != nil {
		return err
	}
	return os.WriteFile(out, []byte(doc), 0o644)
}

// readScale reads the scale JSON; a missing file is no figures.
func readScale(path string) (scaleResults, error) {
	var sc scaleResults
	data, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return sc, nil
	}
	if err != nil {
		return sc, err
	}
	if err := json.Unmarshal(data, &sc); err != nil {
		return sc, fmt.Errorf("%s: %w", path, err)
	}
	return sc, nil
}

// runNodes runs "goxpdl bench --nodes M" reps times for each M, the Ms
// interleaved, each on a fresh database.
func runNodes(ctx context.Context, o scaleOptions) (nodesSitting, error) {
	var counts []int
	for f := range strings.SplitSeq(o.nodes, ",") {
		m, err := strconv.Atoi(f)
		if err != nil || m < 1 {
			return nodesSitting{}, fmt.Errorf("-nodes %q: want counts from 1 up, as 1,2,3", o.nodes)
		}
		counts = append(counts, m)
	}
	exe, err := filepath.Abs(o.goxpdl)
	if err != nil {
		return nodesSitting{}, err
	}
	s := nodesSitting{
		Started: clock.Now().UTC(), Machine: machine(), Workload: "seq10", Instances: o.instances, Clients: o.clients, Reps: o.reps,
		LoadMin: loadAverage(), LoadMax: loadAverage(),
	}
	if v, err := mariadbVersion(ctx, o.mysql); err == nil {
		s.Machine["mariadb"] = v
	}
	seq := 0
	for rep := range o.reps {
		for _, m := range counts {
			seq++
			target := o.mysql
			target.Database = fmt.Sprintf("%s_%d_%d", o.dbPrefix, os.Getpid(), seq)
			load := loadAverage()
			s.LoadMin, s.LoadMax = min(s.LoadMin, load), max(s.LoadMax, load)
			r, err := nodesOnce(ctx, exe, target, m, o)
			if ctx.Err() != nil {
				return s, ctx.Err()
			}
			if err != nil {
				r.Note = err.Error()
				fmt.Fprintf(os.Stderr, "peers: %d node(s), run %d: %v\n", m, rep+1, err)
			}
			r.Nodes, r.Rep, r.Load1 = m, rep+1, load
			s.Runs = append(s.Runs, r)
			fmt.Fprintf(os.Stderr, "peers: %d node(s) run %d: %8.1f activities/s  p50 %7.1f ms  MariaDB CPU %5.1f s  goxpdl CPU %5.1f s  wall %5.1f s  load %.2f\n",
				m, rep+1, r.Bench.ActivitiesPerS, r.Bench.P50Ms, r.MariaDBCPUSeconds, r.GoxpdlCPUSeconds, r.WallSeconds, load)
		}
	}
	s.Minutes = round(clock.Now().Sub(s.Started).Minutes(), 1)
	return s, nil
}

// nodesOnce runs goxpdl bench --nodes m on a fresh database, which it
// drops afterwards.
func nodesOnce(ctx context.Context, exe string, target mysqlTarget, m int, o scaleOptions) (nodesRun, error) {
	var r nodesRun
	if err := createDatabase(ctx, target); err != nil {
		return r, err
	}
	defer func() {
		dropCtx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		if err := dropDatabase(dropCtx, target); err != nil {
			fmt.Fprintf(os.Stderr, "peers: %v\n", err)
		}
	}()
	pid, err := mariadbPID()
	if err != nil {
		return r, err
	}
	cpu0, err := processCPU(pid)
	if err != nil {
		return r, err
	}
	cmd := exec.CommandContext(ctx, exe, "bench", "--nodes", strconv.Itoa(m), "--instances", strconv.Itoa(o.instances),
		"--concurrency", strconv.Itoa(o.clients), "--json", "--db", "mysql://"+target.goDSN())
	// On Ctrl-C the terminal interrupts bench too; otherwise it gets
	// SIGINT and stops its nodes itself.
	cmd.Cancel = func() error { return cmd.Process.Signal(os.Interrupt) }
	cmd.WaitDelay = 2 * time.Minute
	var out bytes.Buffer
	cmd.Stdout = &out
	cmd.Stderr = os.Stderr
	start := clock.Now()
	runErr := cmd.Run()
	r.WallSeconds = round(clock.Now().Sub(start).Seconds(), 3)
	cpu1, err := processCPU(pid)
	if err != nil {
		return r, err
	}
	r.MariaDBCPUSeconds = round(cpu1-cpu0, 2)
	if cmd.ProcessState != nil {
		// The wait status of bench counts the nodes it waited for.
		r.GoxpdlCPUSeconds = round((cmd.ProcessState.UserTime() + cmd.ProcessState.SystemTime()).Seconds(), 2)
	}
	if err := json.Unmarshal(out.Bytes(), &r.Bench); err != nil {
		return r, errors.Join(fmt.Errorf("goxpdl bench's report: %w", err), runErr)
	}
	return r, runErr
}

// clockTicks is USER_HZ, the unit of /proc/PID/stat's times: 100 on
// every Linux architecture Go runs on.
const clockTicks = 100

// mariadbPID finds the database server's process (mariadbd, or mysqld of
// older versions) on this machine.
func mariadbPID() (int, error) {
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return 0, err
	}
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		comm, err := os.ReadFile(filepath.Join("/proc", e.Name(), "comm"))
		if err != nil {
			continue
		}
		if name := strings.TrimSpace(string(comm)); name == "mariadbd" || name == "mysqld" {
			return pid, nil
		}
	}
	return 0, errors.New("no mariadbd or mysqld process on this machine: its CPU time cannot be read")
}

// processCPU is the user and system CPU time of process pid, in seconds
// (fields 14 and 15 of /proc/PID/stat).
func processCPU(pid int) (float64, error) {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, err
	}
	return parseStatCPU(string(data))
}

// parseStatCPU reads utime and stime from the text of /proc/PID/stat.
// The command name (field 2) is in parentheses and may hold spaces, so
// the fields are counted from its closing parenthesis.
func parseStatCPU(stat string) (float64, error) {
	i := strings.LastIndexByte(stat, ')')
	if i < 0 {
		return 0, fmt.Errorf("/proc stat %q: no command name", stat)
	}
	f := strings.Fields(stat[i+1:]) // from field 3, the state
	if len(f) < 13 {
		return 0, fmt.Errorf("/proc stat: %d fields after the name, want 13 or more", len(f))
	}
	utime, err1 := strconv.ParseUint(f[11], 10, 64)
	stime, err2 := strconv.ParseUint(f[12], 10, 64)
	if err := errors.Join(err1, err2); err != nil {
		return 0, fmt.Errorf("/proc stat: %w", err)
	}
	return float64(utime+stime) / clockTicks, nil
}

// runConsole runs BenchmarkConsoleReads at o.consoleN instances (or reads
// its output from o.consoleLog) and collects its figures.
func runConsole(ctx context.Context, o scaleOptions) (consoleSitting, error) {
	s := consoleSitting{Started: clock.Now().UTC(), Machine: machine(), Instances: o.consoleN, LoadMin: loadAverage(), LoadMax: loadAverage()}
	var text []byte
	if o.consoleLog != "" {
		var err error
		if text, err = os.ReadFile(o.consoleLog); err != nil {
			return s, err
		}
		if info, err := os.Stat(o.consoleLog); err == nil {
			// The log was last written at the end; go test's "ok" line
			// says how long the run took.
			s.Started = info.ModTime().UTC()
			if m := goTestOK.FindSubmatch(text); m != nil {
				if secs, err := strconv.ParseFloat(string(m[1]), 64); err == nil {
					s.Started = s.Started.Add(-time.Duration(secs * float64(time.Second))).Truncate(time.Minute)
					s.Minutes = round(secs/60, 1)
				}
			}
		}
		s.FromLog = true
		s.LoadMin, s.LoadMax = 0, 0 // unknown unless noted: not this sitting's
		if o.consoleLoad != "" {
			lo, hi, _ := strings.Cut(o.consoleLoad, ",")
			var err1, err2 error
			s.LoadMin, err1 = strconv.ParseFloat(lo, 64)
			s.LoadMax, err2 = strconv.ParseFloat(hi, 64)
			if err := errors.Join(err1, err2); err != nil {
				return s, fmt.Errorf("-console-load %q: want MIN,MAX: %w", o.consoleLoad, err)
			}
		}
	} else {
		if v, err := mariadbVersion(ctx, o.mysql); err == nil {
			s.Machine["mariadb"] = v
		}
		// The benchmark makes a database of its own on this server
		// (dbtest.OpenMySQL) and drops it at its end.
		server := o.mysql
		server.Database = ""
		cmd := exec.CommandContext(ctx, "go", "test", "-run", "^$", "-bench", "BenchmarkConsoleReads", "-benchtime", "1x", "-timeout", "3h", "-v", "./engine/")
		cmd.Dir = o.repo
		cmd.Env = append(os.Environ(), "GOXPDL_BENCH_INSTANCES="+strconv.Itoa(o.consoleN), "GOXPDL_MYSQL_DSN="+server.goDSN())
		var out bytes.Buffer
		cmd.Stdout = io.MultiWriter(&out, os.Stderr)
		cmd.Stderr = os.Stderr
		// The load average is sampled while it runs (every 10 s).
		done := make(chan struct{})
		sampled := make(chan struct{})
		go func() {
			defer close(sampled)
			for {
				t := clock.NewTimer(10 * time.Second)
				select {
				case <-done:
					t.Stop()
					return
				case <-t.C():
					l := loadAverage()
					s.LoadMin, s.LoadMax = min(s.LoadMin, l), max(s.LoadMax, l)
				}
			}
		}()
		err := cmd.Run()
		close(done)
		<-sampled
		if err != nil {
			return s, fmt.Errorf("BenchmarkConsoleReads: %w", err)
		}
		text = out.Bytes()
	}
	var err error
	s.Loaded, s.Reads, err = parseConsoleReads(text)
	if err != nil {
		return s, err
	}
	if o.consoleLog == "" {
		s.Minutes = round(clock.Now().Sub(s.Started).Minutes(), 1)
	}
	return s, nil
}

// The lines of BenchmarkConsoleReads' output that parseConsoleReads
// reads: a result line per read, and the log line on the loading.
var (
	consoleResultLine = regexp.MustCompile(`^BenchmarkConsoleReads/(SQLite|MySQL)/(\S+?)(?:-\d+)?\s+\d+\s+.*?\s([0-9.]+) p50-ms\s+([0-9.]+) p99-ms`)
	consoleDBLine     = regexp.MustCompile(`^BenchmarkConsoleReads/(SQLite|MySQL)(?:-\d+)?$`)
	goTestOK          = regexp.MustCompile(`(?m)^ok\s+\S+\s+([0-9.]+)s$`)
	consoleLoadedLine = regexp.MustCompile(`^\s+\S+\.go:\d+: (loaded \d+ instances.*|\d+ instances found; not loading)$`)
)

// parseConsoleReads reads the output of go test -bench -v of
// BenchmarkConsoleReads: each read's p50 and p99 per database, and the
// loading line per database.
func parseConsoleReads(text []byte) (map[string]string, []consoleRead, error) {
	loaded := map[string]string{}
	var reads []consoleRead
	db := ""
	sc := bufio.NewScanner(bytes.NewReader(text))
	for sc.Scan() {
		line := sc.Text()
		if m := consoleDBLine.FindStringSubmatch(line); m != nil {
			db = dbLabel(m[1])
			continue
		}
		if m := consoleLoadedLine.FindStringSubmatch(line); m != nil && db != "" {
			if _, ok := loaded[db]; !ok {
				loaded[db] = m[1]
			}
			continue
		}
		m := consoleResultLine.FindStringSubmatch(line)
		if m == nil {
			continue
		}
		p50, err1 := strconv.ParseFloat(m[3], 64)
		p99, err2 := strconv.ParseFloat(m[4], 64)
		if err := errors.Join(err1, err2); err != nil {
			return nil, nil, fmt.Errorf("%q: %w", line, err)
		}
		reads = append(reads, consoleRead{DB: dbLabel(m[1]), Read: m[2], P50Ms: p50, P99Ms: p99})
	}
	if len(reads) == 0 {
		return nil, nil, errors.New("BenchmarkConsoleReads printed no figures (was it skipped?)")
	}
	return loaded, reads, sc.Err()
}

// dbLabel names the benchmark's sub-benchmark's database as the report
// does.
func dbLabel(sub string) string {
	if sub == "MySQL" {
		return "MariaDB"
	}
	return sub
}
