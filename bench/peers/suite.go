package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"
)

// suiteOptions are the flags of "peers suite".
type suiteOptions struct {
	quick       bool
	reps        int
	only, dbs   string
	out, plot   string
	rawOut      string
	scale       string
	from        string
	appendTo    string
	size        string
	clients     int
	mysql       mysqlTarget
	dbPrefix    string
	childTimout time.Duration
}

// workloadOrder is the order of the workloads in the suite and the report.
var workloadOrder = []string{"W1", "W1s", "W2", "W3", "W4", "W5", "W6"}

func mainSuite(ctx context.Context, args []string) error {
	var o suiteOptions
	fs := flag.NewFlagSet("suite", flag.ContinueOnError)
	fs.BoolVar(&o.quick, "quick", os.Getenv("PEERS_QUICK") != "", "small sizes, for a smoke run (also PEERS_QUICK=1)")
	fs.IntVar(&o.reps, "reps", 3, "runs of each engine per workload and database (the median is reported)")
	fs.StringVar(&o.only, "only", strings.Join(workloadOrder, ","), "workloads to run")
	fs.StringVar(&o.dbs, "dbs", dbSQLite+","+dbMariaDB, "databases to run on")
	fs.StringVar(&o.out, "out", "../../docs/benchmarks.md", "the report")
	fs.StringVar(&o.plot, "plot", "../../docs/benchmarks.svg", "the plot (SVG or PNG, by extension)")
	fs.StringVar(&o.rawOut, "raw", "../../docs/benchmarks.json", "every run's figures, as JSON")
	fs.StringVar(&o.scale, "scale", "../../docs/scale.json", "the scale figures (peers scale) the report shows; a missing file is none")
	fs.StringVar(&o.from, "from", "", "write the report from this JSON of an earlier suite instead of running")
	fs.StringVar(&o.appendTo, "append", "", "add this sitting's runs to those of this JSON of an earlier suite (e.g. W6 at another size)")
	fs.StringVar(&o.size, "size", "", "other sizes than the defaults, as W5=2000,W6=100000")
	fs.IntVar(&o.clients, "clients", 8, "client goroutines")
	fs.StringVar(&o.mysql.Host, "mysql-host", "127.0.0.1", "MariaDB host (loopback)")
	fs.IntVar(&o.mysql.Port, "mysql-port", 3306, "MariaDB port")
	fs.StringVar(&o.mysql.User, "mysql-user", "root", "MariaDB user")
	fs.StringVar(&o.mysql.Password, "mysql-password", "", "MariaDB password")
	fs.StringVar(&o.dbPrefix, "mysql-db-prefix", "peers_bench", "prefix of the databases made (and dropped) per run")
	fs.DurationVar(&o.childTimout, "run-timeout", 3*time.Hour, "limit of one measurement (W6 at 100,000 on MariaDB parks at 15 to 120 instances/s on go-workflows here: up to two hours)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	var s suite
	if o.from != "" {
		data, err := os.ReadFile(o.from)
		if err != nil {
			return err
		}
		if err := json.Unmarshal(data, &s); err != nil {
			return fmt.Errorf("%s: %w", o.from, err)
		}
	} else {
		var err error
		if s, err = runSuite(ctx, o); err != nil {
			return err
		}
		if o.appendTo != "" {
			if s, err = appendSuite(o.appendTo, s); err != nil {
				return err
			}
		}
		data, err := json.MarshalIndent(s, "", "  ")
		if err != nil {
			return err
		}
		if err := os.WriteFile(o.rawOut, append(data, '\n'), 0o644); err != nil {
			return err
		}
	}
	if err := writePlot(s, o.plot); err != nil {
		return fmt.Errorf("plot: %w", err)
	}
	sc, err := readScale(o.scale)
	if err != nil {
		return err
	}
	doc, err := renderReport(s, sc, filepath.Base(o.plot))
	if err != nil {
		return err
	}
	return os.WriteFile(o.out, []byte(doc), 0o644)
}

// appendSuite adds s's runs to those of the suite in file.
func appendSuite(file string, s suite) (suite, error) {
	data, err := os.ReadFile(file)
	if err != nil {
		return s, err
	}
	var base suite
	if err := json.Unmarshal(data, &base); err != nil {
		return s, fmt.Errorf("%s: %w", file, err)
	}
	var what []string
	for _, w := range workloadOrder {
		if slices.ContainsFunc(s.Runs, func(r result) bool { return r.Workload == w }) {
			what = append(what, fmt.Sprintf("%s at %s", w, commas(strconv.Itoa(s.Sizes[w]))))
		}
	}
	base.Appended = append(base.Appended, fmt.Sprintf("%s, %d run(s) of each engine, %s UTC, %.0f minutes, load average %.2f to %.2f",
		strings.Join(what, ", "), s.Reps, s.Started.Format("2006-01-02 15:04"), s.Minutes, s.LoadMin, s.LoadMax))
	base.Runs = append(base.Runs, s.Runs...)
	base.Skipped = append(base.Skipped, s.Skipped...)
	return base, nil
}

// suite is everything one sitting measured.
type suite struct {
	Started time.Time         `json:"started"`
	Minutes float64           `json:"minutes"`
	Quick   bool              `json:"quick"`
	Reps    int               `json:"reps"`
	Sizes   map[string]int    `json:"sizes"`
	Machine map[string]string `json:"machine"`
	LoadMin float64           `json:"load_min"`
	LoadMax float64           `json:"load_max"`
	Runs    []result          `json:"runs"`
	Skipped []string          `json:"skipped,omitempty"`
	// Appended describes the sittings whose runs were added to this
	// one's (-append).
	Appended  []string `json:"appended,omitempty"`
	GoWFFixed bool     `json:"gowf_mariadb_fix"`
}

// runSuite runs every measurement: for each workload and database, reps
// rounds of goxpdl then go-workflows (A B A B A B), each in a child
// process on a fresh database.
func runSuite(ctx context.Context, o suiteOptions) (suite, error) {
	exe, err := os.Executable()
	if err != nil {
		return suite{}, err
	}
	s := suite{Started: clock.Now().UTC(), Quick: o.quick, Reps: o.reps, Sizes: sizes(o.quick), Machine: machine(), LoadMin: loadAverage(), LoadMax: loadAverage()}
	for kv := range strings.SplitSeq(o.size, ",") {
		if kv == "" {
			continue
		}
		k, v, _ := strings.Cut(kv, "=")
		n, err := strconv.Atoi(v)
		if _, known := s.Sizes[k]; !known || err != nil || n < 1 {
			return s, fmt.Errorf("-size %q: want WORKLOAD=N, as W5=2000", kv)
		}
		s.Sizes[k] = n
	}
	only := strings.Split(o.only, ",")
	dbs := strings.Split(o.dbs, ",")
	if slices.Contains(dbs, dbMariaDB) {
		probe := o.mysql
		probe.Database = fmt.Sprintf("%s_probe_%d", o.dbPrefix, os.Getpid())
		if err := createDatabase(ctx, probe); err != nil {
			fmt.Fprintf(os.Stderr, "peers: MariaDB is not usable, its runs are skipped: %v\n", err)
			s.Skipped = append(s.Skipped, "MariaDB: "+err.Error())
			dbs = slices.DeleteFunc(dbs, func(d string) bool { return d == dbMariaDB })
		} else {
			if v, err := mariadbVersion(ctx, o.mysql); err == nil {
				s.Machine["mariadb"] = v
			}
			if err := dropDatabase(ctx, probe); err != nil {
				return s, err
			}
		}
	}
	seq := 0
	for _, w := range workloadOrder {
		if !slices.Contains(only, w) {
			continue
		}
		for _, db := range dbs {
			for rep := range o.reps {
				for _, eng := range []string{engineGoxpdl, engineGoWF} {
					seq++
					spec := runSpec{Engine: eng, Workload: w, DB: db, N: s.Sizes[w], Clients: o.clients, MySQL: o.mysql}
					spec.MySQL.Database = fmt.Sprintf("%s_%d_%d", o.dbPrefix, os.Getpid(), seq)
					load := loadAverage()
					s.LoadMin, s.LoadMax = min(s.LoadMin, load), max(s.LoadMax, load)
					r, err := measure(ctx, exe, spec, o.childTimout)
					if ctx.Err() != nil {
						return s, ctx.Err()
					}
					if err != nil {
						if r.Note == "" {
							r.Note = err.Error()
						}
						fmt.Fprintf(os.Stderr, "peers: %s %s %s run %d: %v\n", w, db, eng, rep+1, err)
					}
					r.Engine, r.Workload, r.DB, r.N, r.Load1 = eng, w, db, spec.N, load
					s.Runs = append(s.Runs, r)
					fmt.Fprintf(os.Stderr, "peers: %-3s %-7s %-12s run %d: %10.1f %-13s p50 %9.1f ms  load %.2f\n",
						w, db, eng, rep+1, r.Rate, r.RateUnit, r.P50Ms, load)
				}
			}
		}
	}
	s.Minutes = round(clock.Now().Sub(s.Started).Minutes(), 1)
	s.GoWFFixed = true
	return s, nil
}

// measure runs spec in a child process on a fresh database, which it
// removes afterwards. W6 runs two children on the same database: park,
// then restart.
func measure(ctx context.Context, exe string, spec runSpec, limit time.Duration) (result, error) {
	ctx, cancel := context.WithTimeout(ctx, limit)
	defer cancel()
	switch spec.DB {
	case dbSQLite:
		dir, err := os.MkdirTemp("", "peers-")
		if err != nil {
			return result{}, err
		}
		defer func() {
			if err := os.RemoveAll(dir); err != nil {
				fmt.Fprintf(os.Stderr, "peers: %v\n", err)
			}
		}()
		spec.SQLitePath = filepath.Join(dir, "bench.sqlite")
	case dbMariaDB:
		if err := createDatabase(ctx, spec.MySQL); err != nil {
			return result{}, err
		}
		defer func() {
			dropCtx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			if err := dropDatabase(dropCtx, spec.MySQL); err != nil {
				fmt.Fprintf(os.Stderr, "peers: %v\n", err)
			}
		}()
	}
	if spec.Workload != "W6" {
		return child(ctx, exe, spec)
	}
	spec.Phase, spec.WorkerName = phasePark, w6WorkerName
	park, err := child(ctx, exe, spec)
	if err != nil {
		return park, err
	}
	spec.Phase = phaseRestart
	restart, err := child(ctx, exe, spec)
	park.RestartMs, park.RSSBytes = restart.RestartMs, restart.RSSBytes
	park.Failed += restart.Failed
	return park, err
}

// child runs "peers one" for spec and reads its result.
func child(ctx context.Context, exe string, spec runSpec) (result, error) {
	args := []string{"one", "-engine", spec.Engine, "-workload", spec.Workload, "-db", spec.DB,
		"-n", strconv.Itoa(spec.N), "-clients", strconv.Itoa(spec.Clients), "-phase", spec.Phase, "-worker-name", spec.WorkerName}
	if spec.DB == dbSQLite {
		args = append(args, "-sqlite", spec.SQLitePath)
	} else {
		m := spec.MySQL
		args = append(args, "-mysql-host", m.Host, "-mysql-port", strconv.Itoa(m.Port), "-mysql-user", m.User,
			"-mysql-password", m.Password, "-mysql-db", m.Database)
	}
	cmd := exec.CommandContext(ctx, exe, args...)
	var out bytes.Buffer
	cmd.Stdout = &out
	cmd.Stderr = os.Stderr
	runErr := cmd.Run()
	var r result
	sc := bufio.NewScanner(&out)
	var last string
	for sc.Scan() {
		if strings.HasPrefix(sc.Text(), "{") {
			last = sc.Text()
		}
	}
	if last == "" {
		return r, errors.Join(errors.New("no result"), runErr)
	}
	if err := json.Unmarshal([]byte(last), &r); err != nil {
		return r, err
	}
	if runErr != nil {
		return r, fmt.Errorf("%s %s %s: %w", spec.Engine, spec.Workload, spec.DB, runErr)
	}
	return r, nil
}

// machine describes where the suite ran.
func machine() map[string]string {
	m := map[string]string{}
	if out, err := exec.Command("go", "version").Output(); err == nil {
		m["go"] = strings.TrimSpace(string(out))
	}
	if data, err := os.ReadFile("/proc/cpuinfo"); err == nil {
		cpus := 0
		for line := range strings.SplitSeq(string(data), "\n") {
			if strings.HasPrefix(line, "processor") {
				cpus++
			}
			if name, ok := strings.CutPrefix(line, "model name"); ok && m["cpu"] == "" {
				m["cpu"] = strings.TrimSpace(strings.TrimPrefix(strings.TrimSpace(name), ":"))
			}
		}
		m["cpus"] = strconv.Itoa(cpus)
	}
	if out, err := exec.Command("mariadb", "--version").Output(); err == nil {
		m["mariadb_client"] = strings.TrimSpace(string(out))
	}
	return m
}
