// Command crashtest proves that the engine loses nothing when its process
// is killed (issue #6). "make crash-test-short" and "make crash-test" run
// it:
//
//	go run ./internal/crashtest -scenario sqlite -instances 200 -kills 5
//
// It deploys the XPDL packages of testdata/crash (automatic activities
// calling an application, an AND-split and AND-join, a synchronous
// subflow, manual activities) and starts -instances process instances in a
// child engine process ("crashtest node", the same binary), which also
// completes the work items as they appear. The orchestrator kills the
// child with SIGKILL at random moments, -kills times, restarts it each
// time, and then lets a last child run until every instance is finished.
// The verifier then reads the engine's tables: every instance Completed,
// every activity completed exactly once, every AND-join instantiated
// once, no open work items, pending timers or unprocessed events. The
// application journals each call outside the engine's transaction
// (crash_calls), so that the calls whose transaction a kill lost are
// counted too: they are the duplicate calls of the report, which
// at-least-once calls allow; lost instances and duplicated transitions
// are not allowed.
//
// Scenarios (-scenario):
//
//   - sqlite: one node on a SQLite file in a temporary directory;
//   - mysql: one node on MySQL/MariaDB (-db or GOXPDL_MYSQL_DSN); the run
//     gets a fresh database named after the DSN's, or, when it may not
//     create one, drops the goxpdl_* and crash_* tables of the DSN's;
//   - multi: three nodes (node-1..node-3) on MySQL; -kills times a random
//     node is killed, the others must take its work over (the takeover
//     time is measured) and it is restarted, except after the last kill;
//   - mysql-restart: MariaDB itself is shut down and started again in the
//     middle of the load (-db-restarts times); the nodes must carry on.
//   - postgres, postgres-multi: mysql and multi on PostgreSQL (-pg or
//     GOXPDL_POSTGRES_DSN); the run gets a fresh database on that server,
//     named after the URL's.
//
// The report (text, or JSON with -json) gives the kills, the instances,
// the lost and duplicated ones, the duplicate application calls and the
// times from each restart to the first progress. The exit status is 0
// when every check passed, 1 when one failed and 2 on a usage or set-up
// error.
//
// It is a development tool, not part of goxpdl: the nodes use only the
// engine's public API; the orchestrator and the verifier read the
// engine's tables with plain SQL.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"syscall"
	"time"
)

func main() {
	os.Exit(mainErr(os.Args[1:], os.Stdout, os.Stderr))
}

// Exit statuses.
const (
	exitOK    = 0
	exitFail  = 1
	exitUsage = 2
)

// errUsage is a command-line error; the flag package has printed why.
var errUsage = errors.New("usage")

func mainErr(args []string, stdout, stderr io.Writer) int {
	if len(args) > 0 && args[0] == "node" {
		return nodeMain(args[1:], stderr)
	}
	cfg, err := parseConfig(args, stderr)
	if err != nil {
		if !errors.Is(err, errUsage) {
			say(stderr, "crashtest: %v\n", err)
		}
		return exitUsage
	}
	level := slog.LevelInfo
	if cfg.quiet {
		level = slog.LevelWarn
	}
	log := slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: level}))
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	rep, err := runScenario(ctx, cfg, log)
	if err != nil {
		say(stderr, "crashtest: %v\n", err)
		return exitUsage
	}
	if cfg.json {
		err = rep.writeJSON(stdout)
	} else {
		err = rep.writeText(stdout)
	}
	if err != nil {
		say(stderr, "crashtest: write the report: %v\n", err)
		return exitUsage
	}
	if !rep.Passed {
		return exitFail
	}
	return exitOK
}

// The scenarios.
const (
	scenarioSQLite       = "sqlite"
	scenarioMySQL        = "mysql"
	scenarioMulti        = "multi"
	scenarioMySQLRestart = "mysql-restart"
	// scenarioPostgres and scenarioPostgresMulti are mysql and multi on
	// PostgreSQL.
	scenarioPostgres      = "postgres"
	scenarioPostgresMulti = "postgres-multi"
)

// isMulti reports a scenario of several nodes.
func isMulti(scenario string) bool {
	return scenario == scenarioMulti || scenario == scenarioPostgresMulti
}

// isPostgres reports a scenario on PostgreSQL.
func isPostgres(scenario string) bool {
	return scenario == scenarioPostgres || scenario == scenarioPostgresMulti
}

// config is the orchestrator's command line.
type config struct {
	scenario  string
	db        string // MySQL DSN (go-sql-driver form, "mysql://" optional)
	pg        string // PostgreSQL URL (postgres://...)
	defs      string // folder of the XPDL load
	instances int
	kills     int
	seedBatch int
	// killWhenSeeded holds the first kill until every root instance
	// exists: the restart then recovers the whole load in flight.
	killWhenSeeded bool
	nodes          int
	dbRestarts     int
	seed           uint64
	killMin        time.Duration
	killMax        time.Duration
	dbDown         time.Duration
	appSleep       time.Duration
	lease          time.Duration
	final          time.Duration
	stall          time.Duration
	takeover       time.Duration
	workDir        string
	dbStart        string
	dbStop         string
	json           bool
	quiet          bool
}

func parseConfig(args []string, stderr io.Writer) (config, error) {
	var cfg config
	fset := flag.NewFlagSet("crashtest", flag.ContinueOnError)
	fset.SetOutput(stderr)
	fset.Usage = func() {
		say(stderr, "usage: crashtest [flags]\n       crashtest node [flags] (started by crashtest itself)\n\nflags:\n")
		fset.PrintDefaults()
	}
	fset.StringVar(&cfg.scenario, "scenario", scenarioSQLite, "sqlite, mysql, multi, mysql-restart, postgres or postgres-multi")
	fset.StringVar(&cfg.db, "db", os.Getenv("GOXPDL_MYSQL_DSN"), "MySQL DSN for mysql, multi and mysql-restart (default $GOXPDL_MYSQL_DSN)")
	fset.StringVar(&cfg.pg, "pg", os.Getenv("GOXPDL_POSTGRES_DSN"), "PostgreSQL URL for postgres and postgres-multi (default $GOXPDL_POSTGRES_DSN)")
	fset.StringVar(&cfg.defs, "defs", "testdata/crash", "folder of the XPDL packages to load")
	fset.IntVar(&cfg.instances, "instances", 200, "process instances to start")
	fset.IntVar(&cfg.kills, "kills", 5, "how many times a node is killed (SIGKILL)")
	fset.IntVar(&cfg.seedBatch, "seed-batch", 1, "root instances the seeder starts per transaction (more seeds a large load faster)")
	fset.BoolVar(&cfg.killWhenSeeded, "kill-when-seeded", false, "sqlite and mysql: hold the first kill until every root instance exists, so that the restart recovers the whole load in flight")
	fset.IntVar(&cfg.nodes, "nodes", 0, "engine nodes (default 3 for multi and postgres-multi, 1 otherwise)")
	fset.IntVar(&cfg.dbRestarts, "db-restarts", 1, "mysql-restart: how many times MariaDB is restarted")
	fset.Uint64Var(&cfg.seed, "seed", 0, "seed of the random kill times and nodes (default: from the clock; the report prints it)")
	fset.DurationVar(&cfg.killMin, "kill-min", 300*time.Millisecond, "shortest time a node runs before it is killed")
	fset.DurationVar(&cfg.killMax, "kill-max", 3*time.Second, "longest time a node runs before it is killed")
	fset.DurationVar(&cfg.dbDown, "db-down", 3*time.Second, "mysql-restart: how long MariaDB stays down")
	fset.DurationVar(&cfg.appSleep, "app-sleep", 2*time.Millisecond, "how long each application call sleeps, inside the engine's transaction")
	fset.DurationVar(&cfg.lease, "lease", 0, "engine.Config.EventLease of the nodes (default the engine's)")
	fset.DurationVar(&cfg.final, "final-timeout", 5*time.Minute, "how long the last run may take to finish every instance")
	fset.DurationVar(&cfg.stall, "stall-timeout", time.Minute, "how long the last run may go without any state change before it counts as hung")
	fset.DurationVar(&cfg.takeover, "takeover-timeout", 2*time.Minute, "multi: how long the other nodes may take to process a killed node's claimed events")
	fset.StringVar(&cfg.workDir, "work", "", "folder for databases and node logs (default a new temporary folder, kept)")
	fset.StringVar(&cfg.dbStop, "db-stop", "mariadb-admin -uroot shutdown", "mysql-restart: command that stops the database server")
	fset.StringVar(&cfg.dbStart, "db-start", "start-stop-daemon --start --oknodo --background --exec /usr/sbin/mariadbd -- --user=mysql",
		"mysql-restart: command that starts the database server")
	fset.BoolVar(&cfg.json, "json", false, "print the report as JSON")
	fset.BoolVar(&cfg.quiet, "q", false, "log only warnings")
	if err := fset.Parse(args); err != nil {
		return cfg, errUsage
	}
	if fset.NArg() != 0 {
		fset.Usage()
		return cfg, errUsage
	}
	switch cfg.scenario {
	case scenarioSQLite, scenarioMySQL, scenarioMulti, scenarioMySQLRestart, scenarioPostgres, scenarioPostgresMulti:
	default:
		return cfg, fmt.Errorf("-scenario %q: want %s, %s, %s, %s, %s or %s", cfg.scenario, scenarioSQLite, scenarioMySQL, scenarioMulti,
			scenarioMySQLRestart, scenarioPostgres, scenarioPostgresMulti)
	}
	switch {
	case isPostgres(cfg.scenario):
		if cfg.pg == "" {
			return cfg, fmt.Errorf("-scenario %s needs a PostgreSQL URL: -pg or GOXPDL_POSTGRES_DSN", cfg.scenario)
		}
	case cfg.scenario != scenarioSQLite && cfg.db == "":
		return cfg, fmt.Errorf("-scenario %s needs a MySQL DSN: -db or GOXPDL_MYSQL_DSN", cfg.scenario)
	}
	if cfg.nodes == 0 {
		cfg.nodes = 1
		if isMulti(cfg.scenario) {
			cfg.nodes = 3
		}
	}
	switch {
	case cfg.instances < 1:
		return cfg, fmt.Errorf("-instances %d: want at least 1", cfg.instances)
	case cfg.seedBatch < 1:
		return cfg, fmt.Errorf("-seed-batch %d: want at least 1", cfg.seedBatch)
	case cfg.kills < 0 || cfg.dbRestarts < 0:
		return cfg, errors.New("-kills and -db-restarts cannot be negative")
	case cfg.nodes < 1:
		return cfg, fmt.Errorf("-nodes %d: want at least 1", cfg.nodes)
	case isMulti(cfg.scenario) && cfg.nodes < 2:
		return cfg, fmt.Errorf("-scenario %s needs at least 2 nodes, not %d", cfg.scenario, cfg.nodes)
	case cfg.killMin < 0 || cfg.killMax < cfg.killMin:
		return cfg, fmt.Errorf("-kill-min %v, -kill-max %v: want 0 <= min <= max", cfg.killMin, cfg.killMax)
	case cfg.final <= 0 || cfg.takeover <= 0 || cfg.stall <= 0:
		return cfg, errors.New("-final-timeout, -stall-timeout and -takeover-timeout must be positive")
	}
	return cfg, nil
}

// say prints to w; a failed write to the terminal has nowhere to be
// reported.
func say(w io.Writer, format string, args ...any) {
	_, _ = fmt.Fprintf(w, format, args...)
}
