package main

import (
	"bytes"
	"encoding/json"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/goxpdl/goxpdl/engine"
	"github.com/goxpdl/goxpdl/scheduler"
	"github.com/goxpdl/goxpdl/store/gormstore"
	"github.com/goxpdl/goxpdl/xpdl"
)

// The built-in workloads are valid XPDL of the shape their names promise.
func TestWorkloadXPDL(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name      string
		topLevel  []xpdl.ActivityKind
		setLength int
	}{
		{"seq10", []xpdl.ActivityKind{
			xpdl.ActivityTool, xpdl.ActivityTool, xpdl.ActivityTool, xpdl.ActivityTool, xpdl.ActivityTool,
			xpdl.ActivityTool, xpdl.ActivityTool, xpdl.ActivityTool, xpdl.ActivityTool, xpdl.ActivityTool,
		}, 0},
		{"seq10set", []xpdl.ActivityKind{xpdl.ActivityBlock}, 10},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			pkg, err := xpdl.Read(bytes.NewReader(workloadXPDL(tc.name)), nil)
			require.NoError(t, err)
			require.Empty(t, xpdl.Validate(pkg, nil), "the workload has no problems, not even warnings")
			p := pkg.Process(tc.name)
			require.NotNil(t, p)
			var kinds []xpdl.ActivityKind
			for _, a := range p.Activities {
				kinds = append(kinds, a.Kind)
				require.False(t, engine.IsManual(a))
			}
			require.Equal(t, tc.topLevel, kinds)
			if tc.setLength == 0 {
				require.Empty(t, p.ActivitySets)
				require.Len(t, p.Transitions, 9)
				return
			}
			require.Len(t, p.ActivitySets, 1)
			require.Len(t, p.ActivitySets[0].Activities, tc.setLength)
			require.Len(t, p.ActivitySets[0].Transitions, tc.setLength-1)
		})
	}
}

func TestPercentile(t *testing.T) {
	t.Parallel()
	ms := func(ns ...int) []time.Duration {
		out := make([]time.Duration, len(ns))
		for i, n := range ns {
			out[i] = time.Duration(n) * time.Millisecond
		}
		return out
	}
	for _, tc := range []struct {
		name string
		ds   []time.Duration
		p    float64
		want time.Duration
	}{
		{"none", nil, 0.5, 0},
		{"one", ms(7), 0.99, 7 * time.Millisecond},
		{"median of four is the second", ms(4, 1, 3, 2), 0.5, 2 * time.Millisecond},
		{"p99 of 100 is the 99th", ms(100, 99, 98, 97, 96, 95, 94, 93, 92, 91, 90, 89, 88, 87, 86, 85, 84, 83, 82, 81, 80, 79, 78, 77, 76, 75, 74,
			73, 72, 71, 70, 69, 68, 67, 66, 65, 64, 63, 62, 61, 60, 59, 58, 57, 56, 55, 54, 53, 52, 51, 50, 49, 48, 47, 46, 45, 44, 43, 42, 41, 40,
			39, 38, 37, 36, 35, 34, 33, 32, 31, 30, 29, 28, 27, 26, 25, 24, 23, 22, 21, 20, 19, 18, 17, 16, 15, 14, 13, 12, 11, 10, 9, 8, 7, 6, 5,
			4, 3, 2, 1), 0.99, 99 * time.Millisecond},
		{"p99 of ten is the largest", ms(1, 2, 3, 4, 5, 6, 7, 8, 9, 10), 0.99, 10 * time.Millisecond},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			require.Equal(t, tc.want, percentile(tc.ds, tc.p))
		})
	}
}

func TestParseVmHWM(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name, status string
		want         int64
	}{
		{"linux", "Name:\tgoxpdl\nVmPeak:\t 1000 kB\nVmHWM:\t   20480 kB\nVmRSS:\t 100 kB\n", 20480 * 1024},
		{"missing", "Name:\tgoxpdl\n", 0},
		{"unknown unit", "VmHWM:\t 5 MB\n", 0},
		{"garbage", "VmHWM:\t lots kB\n", 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			require.Equal(t, tc.want, parseVmHWM([]byte(tc.status)))
		})
	}
}

// The figures follow from the counts: commits per instance are the
// StartProcess calls plus the events processed during the run, and the
// ratios divide by the baseline.
func TestReportFill(t *testing.T) {
	t.Parallel()
	base := 1000.0
	r := benchReport{Instances: 4, BaselineCommitsPerS: &base}
	res := benchResult{
		latencies:  []time.Duration{4 * time.Millisecond, time.Millisecond, 3 * time.Millisecond},
		activities: 30,
		rootFailed: map[int64]string{9: "instance 9: ended Terminated: "},
	}
	before := engine.Stats{Scheduler: scheduler.Stats{EventsProcessed: 7, EventsFailed: 1}, Conflicts: 2}
	after := engine.Stats{Scheduler: scheduler.Stats{EventsProcessed: 47, EventsFailed: 1}, Conflicts: 5}
	r.fill(res, 2*time.Second, after, before)
	require.Equal(t, 3, r.Completed)
	require.Equal(t, 1, r.Failed)
	require.InDelta(t, 2.0, r.Seconds, 1e-9)
	require.InDelta(t, 1.5, r.InstancesPerS, 1e-9)
	require.InDelta(t, 15.0, r.ActivitiesPerS, 1e-9)
	require.Equal(t, uint64(40), r.EventsProcessed)
	require.Equal(t, uint64(0), r.EventsFailed)
	require.Equal(t, uint64(3), r.Conflicts)
	require.InDelta(t, 11.0, r.CommitsPerInstance, 1e-9, "(4 starts + 40 events) / 4 instances")
	require.InDelta(t, 3.0, r.P50Ms, 1e-9)
	require.InDelta(t, 4.0, r.P99Ms, 1e-9)
	require.InDelta(t, 0.015, *r.ActivitiesPerBaselineCommit, 1e-9)
	require.InDelta(t, 0.002, *r.InstancesPerBaselineCommit, 1e-9, "1.5/1000, rounded to 3 digits")
}

// TestBenchOnServers runs a small bench, baseline included, on MySQL/
// MariaDB and PostgreSQL (each when its variable names a server): the
// baseline writes its scratch table with the driver's own statements.
func TestBenchOnServers(t *testing.T) {
	t.Parallel()
	for name, db := range serveDBs(t) {
		if name == "SQLite" {
			continue // bench.txtar
		}
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			var stdout, stderr bytes.Buffer
			code := run([]string{"bench", "--instances", "3", "--concurrency", "2", "--baseline", "--json", "--db", db(t)}, strings.NewReader(""), &stdout, &stderr)
			require.Equal(t, exitOK, code, stderr.String())
			var rep struct {
				Completed int     `json:"completed"`
				Baseline  float64 `json:"baseline_commits_per_s"`
			}
			require.NoError(t, json.Unmarshal(stdout.Bytes(), &rep), stdout.String())
			require.Equal(t, 3, rep.Completed)
			require.Positive(t, rep.Baseline)
		})
	}
}

// TestBenchNodes runs bench with two node processes on one MySQL/MariaDB
// and one PostgreSQL database (each when its variable names a server) and
// checks in the database that every instance ran exactly once: all
// completed, each of the 10 activities of each once. The clients were
// spread over the nodes, and the nodes' counters add up to the whole.
func TestBenchNodes(t *testing.T) {
	t.Parallel()
	for name, db := range serveDBs(t) {
		if name == "SQLite" {
			continue // refused: bench.txtar
		}
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			dsn := db(t) // skips, saying why, without the server's variable
			const n = 24
			var stdout, stderr bytes.Buffer
			code := run([]string{"bench", "--nodes", "2", "--instances", strconv.Itoa(n), "--concurrency", "4", "--json", "--db", dsn}, strings.NewReader(""), &stdout, &stderr)
			require.Equal(t, exitOK, code, stderr.String())
			var rep benchReport
			require.NoError(t, json.Unmarshal(stdout.Bytes(), &rep), stdout.String())
			require.Equal(t, 2, rep.Nodes)
			require.Equal(t, n, rep.Completed)
			require.Zero(t, rep.Failed)
			require.Equal(t, int64(10*n), rep.Activities)
			require.Len(t, rep.PerNode, 2)
			var started int
			var acts int64
			var events uint64
			for i, node := range rep.PerNode {
				require.Equal(t, i+1, node.Node)
				require.Equal(t, 2, node.Clients, "4 clients over 2 nodes")
				require.Equal(t, n/2, node.Started, "the instances are spread like the clients")
				started += node.Started
				acts += node.Activities
				events += node.EventsProcessed
			}
			require.Equal(t, n, started)
			require.Equal(t, rep.Activities, acts)
			require.Equal(t, rep.EventsProcessed, events)

			gdb, err := gormstore.OpenDSN(dsn)
			require.NoError(t, err)
			t.Cleanup(func() {
				if sqlDB, err := gdb.DB(); err == nil {
					_ = sqlDB.Close()
				}
			})
			var states []struct {
				State string
				N     int
			}
			require.NoError(t, gdb.Raw("SELECT state, COUNT(*) AS n FROM goxpdl_process_instances GROUP BY state").Scan(&states).Error)
			require.Equal(t, []struct {
				State string
				N     int
			}{{"Completed", n}}, states)
			var acts2 []struct {
				State string
				N     int
				Max   int
			}
			require.NoError(t, gdb.Raw(`SELECT state, COUNT(*) AS n, MAX(k) AS max FROM (
				SELECT state, COUNT(*) AS k FROM goxpdl_activity_instances GROUP BY process_instance_id, activity_def_id, state) t
				GROUP BY state`).Scan(&acts2).Error)
			require.Equal(t, []struct {
				State string
				N     int
				Max   int
			}{{"Completed", 10 * n, 1}}, acts2, "each activity of each instance ran once")
		})
	}
}
