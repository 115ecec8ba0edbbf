package main

import (
	"context"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// TestWorkloadsTiny runs every workload on both engines with 5 instances
// on SQLite, so that the suite cannot rot: each must complete every
// instance, and W4 must count its duplicate completion.
func TestWorkloadsTiny(t *testing.T) {
	t.Parallel()
	for _, eng := range []string{engineGoxpdl, engineGoWF} {
		for _, w := range []string{"W1", "W1s", "W2", "W3", "W4", "W5"} {
			t.Run(eng+"/"+w, func(t *testing.T) {
				t.Parallel()
				spec := runSpec{Engine: eng, Workload: w, DB: dbSQLite, SQLitePath: filepath.Join(t.TempDir(), "db.sqlite"),
					N: 5, Clients: 2, TimerLead: 3 * time.Second}
				res, err := runOne(context.Background(), spec)
				require.NoError(t, err)
				require.Zero(t, res.Failed)
				require.Positive(t, res.Rate)
				require.Positive(t, res.P50Ms)
				require.LessOrEqual(t, res.P50Ms, res.P99Ms)
				if w == "W4" {
					// Instance 0 of 5 gets its completion twice.
					require.Equal(t, 1, res.DupAccepted+res.DupRejected)
					if eng == engineGoxpdl {
						require.Equal(t, 1, res.DupRejected, "goxpdl refuses a second completion")
					}
				}
			})
		}
	}
}

// TestParkAndRestartTiny runs W6's two phases on one database: five
// parked instances, then a fresh engine that completes one of them.
func TestParkAndRestartTiny(t *testing.T) {
	t.Parallel()
	for _, eng := range []string{engineGoxpdl, engineGoWF} {
		t.Run(eng, func(t *testing.T) {
			t.Parallel()
			spec := runSpec{Engine: eng, Workload: "W6", DB: dbSQLite, SQLitePath: filepath.Join(t.TempDir(), "db.sqlite"),
				N: 5, Clients: 2, Phase: phasePark, WorkerName: w6WorkerName}
			park, err := runOne(context.Background(), spec)
			require.NoError(t, err)
			require.Zero(t, park.Failed)
			require.Positive(t, park.DBBytes)
			spec.Phase = phaseRestart
			restart, err := runOne(context.Background(), spec)
			require.NoError(t, err)
			require.Zero(t, restart.Failed)
			require.Positive(t, restart.RestartMs)
		})
	}
}

// TestRewritePacket: only a whole COM_QUERY packet holding the MySQL-only
// clause changes, and its length header follows the new length.
func TestRewritePacket(t *testing.T) {
	t.Parallel()
	packet := func(seq byte, body string) []byte {
		n := len(body)
		return append([]byte{byte(n), byte(n >> 8), byte(n >> 16), seq}, body...)
	}
	q := "\x03SELECT 1 FROM instances i LIMIT 1 FOR UPDATE OF i SKIP LOCKED"
	out, ok := rewritePacket(packet(0, q))
	require.True(t, ok)
	require.Equal(t, packet(0, "\x03SELECT 1 FROM instances i LIMIT 1 FOR UPDATE SKIP LOCKED"), out)

	for name, p := range map[string][]byte{
		"other query":      packet(0, "\x03SELECT 1 FOR UPDATE SKIP LOCKED"),
		"not a query":      packet(0, "\x16"+q[1:]), // COM_STMT_PREPARE
		"not sequence 0":   packet(1, q),
		"length mismatch":  packet(0, q)[:20],
		"shorter than one": {1, 0},
	} {
		_, ok := rewritePacket(p)
		require.False(t, ok, name)
	}
}

// TestMedian: odd and even counts.
func TestMedian(t *testing.T) {
	t.Parallel()
	require.InDelta(t, 2.0, median([]float64{3, 1, 2}), 0)
	require.InDelta(t, 2.5, median([]float64{4, 1, 2, 3}), 0)
	require.InDelta(t, 0.0, median(nil), 0)
}

// parseStatCPU reads utime and stime (clock ticks) from /proc/PID/stat,
// counting the fields after the command name, which may hold spaces and
// parentheses.
func TestParseStatCPU(t *testing.T) {
	t.Parallel()
	cpu, err := parseStatCPU("1234 (maria db) S 1 1234 1234 0 -1 4194560 5000 0 0 0 250 75 0 0 20 0 40 0 100 0 0")
	require.NoError(t, err)
	require.InDelta(t, 3.25, cpu, 1e-9, "(250 + 75) ticks of 1/100 s")
	_, err = parseStatCPU("1234 (x) S 1 2")
	require.Error(t, err)
	_, err = parseStatCPU("garbage")
	require.Error(t, err)
}

// The scale section renders the medians of each node count, every run,
// and the console's reads per database; without figures it says how to
// measure them.
func TestScaleSection(t *testing.T) {
	t.Parallel()
	empty := scaleSection(scaleResults{})
	require.Contains(t, empty, "## Scale")
	require.Equal(t, 2, strings.Count(empty, "Not measured yet: `make bench-scale` measures it."))
	require.NotContains(t, empty, "{{")

	run := func(m, rep int, acts float64) nodesRun {
		r := nodesRun{Nodes: m, Rep: rep, WallSeconds: 10, MariaDBCPUSeconds: 4, GoxpdlCPUSeconds: 6, Load1: 1.5}
		r.Bench = benchJSON{Completed: 100, Activities: 1000, ActivitiesPerS: acts, P50Ms: 10, P99Ms: 20}
		for k := range m {
			r.Bench.PerNode = append(r.Bench.PerNode, perNode{Node: k + 1, EventsProcessed: uint64(1100 / m)})
		}
		return r
	}
	sc := scaleResults{
		Nodes: &nodesSitting{Machine: map[string]string{"cpus": "2", "mariadb": "10.11"}, Workload: "seq10", Instances: 100, Clients: 8, Reps: 3,
			Runs: []nodesRun{run(1, 1, 100), run(2, 1, 150), run(1, 2, 300), run(2, 2, 180), run(1, 3, 200), run(2, 3, 160)}},
		Console: &consoleSitting{Instances: 1_000_000, Minutes: 12, Loaded: map[string]string{"SQLite": "loaded 1000000 instances in 1m0s"},
			Reads: []consoleRead{{DB: "SQLite", Read: "overview", P50Ms: 12, P99Ms: 66.3}, {DB: "MariaDB", Read: "overview", P50Ms: 26.2, P99Ms: 110}, {DB: "SQLite", Read: "new/read", P50Ms: 0.5, P99Ms: 1}}},
	}
	doc := scaleSection(sc)
	require.NotContains(t, doc, "{{")
	require.NotContains(t, doc, "Not measured yet")
	require.Contains(t, doc, "| 1 | 200 | 1.00× | 10.0 | 20.0 | 0 | 1,100 | 4,000 | 6,000 | 50% |", "1 node: the median run of 100, 300, 200")
	require.Contains(t, doc, "| 2 | 160 | 0.80× | 10.0 | 20.0 | 0 | 550 / 550 |")
	require.Contains(t, doc, "| 2 | 2 | 180 | 10.0 | 20.0 | 0 | 4.0 | 6.0 | 10.0 | 1.50 |", "every run is listed")
	require.Contains(t, doc, "| `Overview` (the dashboard: counts by state, by deployment, incidents, timers, outbox) | 12.0 | 66.3 | 26.2 | 110 |")
	require.Contains(t, doc, "| `new/read` | 0.50 | 1.00 | | |", "a read the table does not know yet is shown by its name")
	require.Contains(t, doc, "SQLite: loaded 1000000 instances in 1m0s.")
}

// parseConsoleReads reads go test -bench -v output of
// BenchmarkConsoleReads (lines as it prints them): the figures per
// database, and the loading line of each.
func TestParseConsoleReads(t *testing.T) {
	t.Parallel()
	out := `goos: linux
BenchmarkConsoleReads
BenchmarkConsoleReads/SQLite
    overview_bench_test.go:67: loaded 1000000 instances, 420000 activities, 210000 timers, 12828 incidents, 200 events in 5m20s (folding the counts: 3.293s more)
BenchmarkConsoleReads/SQLite/overview
BenchmarkConsoleReads/SQLite/overview-2         	       1	15610853686 ns/op	        39.45 p50-ms	       483.8 p99-ms
BenchmarkConsoleReads/SQLite/count/started-day<=10000-2    	       1	3847515507 ns/op	         1.799 p50-ms	       158.5 p99-ms
    overview_bench_test.go:68: 1000000 instances, 200 reads each (naive: a tenth):
        overview                           p50    39.45 ms   p99   483.83 ms
BenchmarkConsoleReads/MySQL
    overview_bench_test.go:67: 1000000 instances found; not loading
BenchmarkConsoleReads/MySQL/page/-id-2         	       1	1156088261 ns/op	         0.3250 p50-ms	        90.29 p99-ms
PASS
`
	loaded, reads, err := parseConsoleReads([]byte(out))
	require.NoError(t, err)
	require.Equal(t, map[string]string{
		"SQLite":  "loaded 1000000 instances, 420000 activities, 210000 timers, 12828 incidents, 200 events in 5m20s (folding the counts: 3.293s more)",
		"MariaDB": "1000000 instances found; not loading",
	}, loaded)
	require.Equal(t, []consoleRead{
		{DB: "SQLite", Read: "overview", P50Ms: 39.45, P99Ms: 483.8},
		{DB: "SQLite", Read: "count/started-day<=10000", P50Ms: 1.799, P99Ms: 158.5},
		{DB: "MariaDB", Read: "page/-id", P50Ms: 0.325, P99Ms: 90.29},
	}, reads)
	_, _, err = parseConsoleReads([]byte("BenchmarkConsoleReads/MySQL\n    x_test.go:1: GOXPDL_MYSQL_DSN not set\n--- SKIP\n"))
	require.Error(t, err, "a skipped benchmark printed nothing to report")
}
