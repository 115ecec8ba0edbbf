// Command peers runs goxpdl and go-workflows through the same workloads
// on the same databases and writes docs/benchmarks.md (make bench-peers).
//
//	peers suite [-quick] [-reps 3] [-only W1,W2] [-dbs sqlite,mariadb] [-out FILE.md]
//	peers one -engine goxpdl|go-workflows -workload W1 -db sqlite|mariadb -n N ...
//	peers scale [-only nodes,console] [-nodes 1,2,3] [-reps 3] [-n 2000] ...
//
// "suite" runs every measurement in a child process of its own ("one"),
// alternating the engines, and writes the report; "one" runs one and
// prints its result as JSON. "scale" measures goxpdl alone at scale
// (several engine nodes on one MariaDB; the console's reads over a
// million instances, make bench-scale), writes docs/scale.json and the
// report again. It is a separate module (bench/peers/go.mod)
// so that goxpdl's own module does not depend on its peers.
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"runtime/pprof"
)

// programStart is when this process began (W6's restart is measured from
// it).
var programStart = clock.Now()

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	if len(os.Args) < 2 {
		fmt.Fprintln(os.Stderr, "usage: peers suite [flags] | peers one [flags] | peers scale [flags]")
		os.Exit(2)
	}
	var err error
	switch os.Args[1] {
	case "one":
		err = mainOne(ctx, os.Args[2:])
	case "suite":
		err = mainSuite(ctx, os.Args[2:])
	case "scale":
		err = mainScale(ctx, os.Args[2:])
	default:
		err = fmt.Errorf("unknown command %q: want suite, one or scale", os.Args[1])
	}
	if err != nil {
		fmt.Fprintf(os.Stderr, "peers: %v\n", err)
		os.Exit(1)
	}
}

// mainOne runs one measurement and prints its result.
func mainOne(ctx context.Context, args []string) error {
	var spec runSpec
	fs := flag.NewFlagSet("one", flag.ContinueOnError)
	fs.StringVar(&spec.Engine, "engine", engineGoxpdl, "goxpdl | go-workflows")
	fs.StringVar(&spec.Workload, "workload", "W1", "W1 | W1s | W2 | W3 | W4 | W5 | W6")
	fs.StringVar(&spec.DB, "db", dbSQLite, "sqlite | mariadb")
	fs.StringVar(&spec.SQLitePath, "sqlite", "", "SQLite file (-db sqlite)")
	fs.StringVar(&spec.MySQL.Host, "mysql-host", "127.0.0.1", "MariaDB host")
	fs.IntVar(&spec.MySQL.Port, "mysql-port", 3306, "MariaDB port")
	fs.StringVar(&spec.MySQL.User, "mysql-user", "root", "MariaDB user")
	fs.StringVar(&spec.MySQL.Password, "mysql-password", "", "MariaDB password")
	fs.StringVar(&spec.MySQL.Database, "mysql-db", "", "MariaDB database (-db mariadb; it must exist)")
	fs.IntVar(&spec.N, "n", 0, "size: instances, trees or timers (default: the workload's)")
	fs.IntVar(&spec.Clients, "clients", 8, "client goroutines")
	fs.StringVar(&spec.Phase, "phase", phasePark, "W6: park | restart")
	fs.StringVar(&spec.WorkerName, "worker-name", "", "go-workflows' worker name (default: a new random one)")
	cpuProfile := fs.String("cpuprofile", "", "write a CPU profile of the whole measurement to this file, for \"go tool pprof\"")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if spec.N == 0 {
		spec.N = sizes(false)[spec.Workload]
	}
	if *cpuProfile != "" {
		stop, err := startCPUProfile(*cpuProfile)
		if err != nil {
			return err
		}
		defer stop()
	}
	res, err := runOne(ctx, spec)
	if err != nil {
		res.Note = err.Error()
	}
	data, jerr := json.Marshal(res)
	if jerr != nil {
		return jerr
	}
	fmt.Println(string(data))
	return err
}

// runOne runs spec on its engine.
func runOne(ctx context.Context, spec runSpec) (result, error) {
	switch spec.Engine {
	case engineGoxpdl:
		return runGoxpdl(ctx, spec)
	case engineGoWF:
		return runGoWF(ctx, spec)
	}
	return result{}, fmt.Errorf("unknown engine %q", spec.Engine)
}

// sizes are the workloads' default sizes; quick ones for a smoke run.
func sizes(quick bool) map[string]int {
	if quick {
		return map[string]int{"W1": 100, "W1s": 20, "W2": 5, "W3": 50, "W4": 50, "W5": 300, "W6": 300}
	}
	return map[string]int{"W1": 2000, "W1s": 200, "W2": 100, "W3": 500, "W4": 1000, "W5": 10000, "W6": 10000}
}

// startCPUProfile starts writing a CPU profile to path; the function it
// returns stops it and closes the file.
func startCPUProfile(path string) (func(), error) {
	f, err := os.Create(path)
	if err != nil {
		return nil, err
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		_ = f.Close()
		return nil, err
	}
	return func() {
		pprof.StopCPUProfile()
		if err := f.Close(); err != nil {
			fmt.Fprintf(os.Stderr, "peers: cpuprofile: %v\n", err)
		}
	}, nil
}
