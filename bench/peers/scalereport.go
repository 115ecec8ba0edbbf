package main

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
)

// scaleSection is the report's "Scale" section: the prose of doc.go
// around the tables of sc, or how to measure when sc holds nothing.
func scaleSection(sc scaleResults) string {
	doc := scaleText
	nodes := "Not measured yet: `make bench-scale` measures it.\n"
	if sc.Nodes != nil && len(sc.Nodes.Runs) > 0 {
		nodes = nodesTables(*sc.Nodes)
	}
	console := "Not measured yet: `make bench-scale` measures it.\n"
	if sc.Console != nil && len(sc.Console.Reads) > 0 {
		console = consoleTable(*sc.Console)
	}
	doc = strings.Replace(doc, "{{NODES}}", nodes, 1)
	return strings.Replace(doc, "{{CONSOLE}}", console, 1)
}

// nodeCounts are the node counts of s's runs, ascending.
func nodeCounts(s nodesSitting) []int {
	var out []int
	for _, r := range s.Runs {
		if !slices.Contains(out, r.Nodes) {
			out = append(out, r.Nodes)
		}
	}
	slices.Sort(out)
	return out
}

// medianRun is the run of runs whose activities/s is the median (the
// lower middle one of an even count).
func medianRun(runs []nodesRun) nodesRun {
	sorted := slices.Clone(runs)
	slices.SortFunc(sorted, func(a, b nodesRun) int {
		switch {
		case a.Bench.ActivitiesPerS < b.Bench.ActivitiesPerS:
			return -1
		case a.Bench.ActivitiesPerS > b.Bench.ActivitiesPerS:
			return 1
		}
		return 0
	})
	return sorted[(len(sorted)-1)/2]
}

// medianOf is the median of f over runs.
func medianOf(runs []nodesRun, f func(nodesRun) float64) float64 {
	xs := make([]float64, len(runs))
	for i, r := range runs {
		xs[i] = f(r)
	}
	return median(xs)
}

// nodesTables is the medians per node count and every run.
func nodesTables(s nodesSitting) string {
	var b strings.Builder
	cpus, _ := strconv.Atoi(s.Machine["cpus"])
	fmt.Fprintf(&b, "`goxpdl bench --nodes M --workload %s --instances %s --concurrency %d` on MariaDB %s, %d runs of each M in the sitting of %s UTC (%.0f minutes), M interleaved, each on a fresh database; load average %.2f to %.2f; %s CPUs (%s). Medians:\n\n",
		s.Workload, commas(strconv.Itoa(s.Instances)), s.Clients, s.Machine["mariadb"], s.Reps, s.Started.Format("2006-01-02 15:04"), s.Minutes,
		s.LoadMin, s.LoadMax, s.Machine["cpus"], s.Machine["cpu"])
	b.WriteString("| nodes | activities/s | vs 1 node | p50 ms | p99 ms | conflicts | events processed per node (median run) | MariaDB CPU µs/activity | goxpdl CPU µs/activity | CPU busy |\n")
	b.WriteString("|---:|---:|---:|---:|---:|---:|---|---:|---:|---:|\n")
	var base float64
	for _, m := range nodeCounts(s) {
		var runs []nodesRun
		for _, r := range s.Runs {
			if r.Nodes == m && r.Note == "" && r.Bench.Failed == 0 {
				runs = append(runs, r)
			}
		}
		if len(runs) == 0 {
			fmt.Fprintf(&b, "| %d | every run failed | | | | | | | | |\n", m)
			continue
		}
		acts := medianOf(runs, func(r nodesRun) float64 { return r.Bench.ActivitiesPerS })
		if m == 1 || base == 0 {
			base = acts
		}
		perAct := func(sec func(nodesRun) float64) float64 {
			return medianOf(runs, func(r nodesRun) float64 {
				if r.Bench.Activities == 0 {
					return 0
				}
				return sec(r) * 1e6 / float64(r.Bench.Activities)
			})
		}
		busy := medianOf(runs, func(r nodesRun) float64 {
			if r.WallSeconds == 0 || cpus == 0 {
				return 0
			}
			return (r.MariaDBCPUSeconds + r.GoxpdlCPUSeconds) / r.WallSeconds / float64(cpus)
		})
		mid := medianRun(runs)
		var split []string
		for _, n := range mid.Bench.PerNode {
			split = append(split, commas(strconv.FormatUint(n.EventsProcessed, 10)))
		}
		fmt.Fprintf(&b, "| %d | %s | %.2f× | %s | %s | %s | %s | %s | %s | %.0f%% |\n",
			m, fmtNum(acts), acts/base,
			fmtNum(medianOf(runs, func(r nodesRun) float64 { return r.Bench.P50Ms })),
			fmtNum(medianOf(runs, func(r nodesRun) float64 { return r.Bench.P99Ms })),
			fmtNum(medianOf(runs, func(r nodesRun) float64 { return float64(r.Bench.Conflicts) })),
			strings.Join(split, " / "),
			fmtNum(perAct(func(r nodesRun) float64 { return r.MariaDBCPUSeconds })),
			fmtNum(perAct(func(r nodesRun) float64 { return r.GoxpdlCPUSeconds })),
			busy*100)
	}
	b.WriteString("\nEvery run, in the order they ran:\n\n")
	b.WriteString("| round | nodes | activities/s | p50 ms | p99 ms | conflicts | MariaDB CPU s | goxpdl CPU s | wall s | load |\n")
	b.WriteString("|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n")
	for _, r := range s.Runs {
		if r.Note != "" {
			fmt.Fprintf(&b, "| %d | %d | failed: %s | | | | | | | %.2f |\n", r.Rep, r.Nodes, firstLine(r.Note), r.Load1)
			continue
		}
		fmt.Fprintf(&b, "| %d | %d | %s | %s | %s | %d | %.1f | %.1f | %.1f | %.2f |\n",
			r.Rep, r.Nodes, fmtNum(r.Bench.ActivitiesPerS), fmtNum(r.Bench.P50Ms), fmtNum(r.Bench.P99Ms), r.Bench.Conflicts,
			r.MariaDBCPUSeconds, r.GoxpdlCPUSeconds, r.WallSeconds, r.Load1)
	}
	return b.String()
}

// consoleReadNames describes BenchmarkConsoleReads' reads, in the order
// the table shows them.
var consoleReadNames = []struct{ key, label string }{
	{"overview", "`Overview` (the dashboard: counts by state, by deployment, incidents, timers, outbox)"},
	{"page/id", "instance list, first page, by id"},
	{"page/-id", "first page, newest first (by id descending)"},
	{"page/started", "first page, by start time"},
	{"page/-started", "first page, by start time descending"},
	{"deep/id", "page after a cursor half-way, by id"},
	{"deep/-started", "page after a cursor half-way, by start descending"},
	{"state/-id", "state Running, newest first"},
	{"state/-started", "state Running, by start descending"},
	{"definition/-id", "one deployment, newest first"},
	{"definition/-started", "one deployment, by start descending"},
	{"package/-id", "a package (4 deployments), newest first"},
	{"package+state/-id", "a package and a state, newest first"},
	{"businesskey", "a business key"},
	{"started-day/-started", "started within a day, by start descending"},
	{"started-day/id", "started within a day, by id"},
	{"incident/-id", "open incident of a cause, newest first"},
	{"count/all", "`CountInstances`, no filter"},
	{"count/state", "`CountInstances`, a state"},
	{"count/package+state", "`CountInstances`, a package and a state"},
	{"count/started-day<=10000", "`CountInstances`, started within a day, up to 10,000"},
	{"count/incident<=10000", "`CountInstances`, an incident cause, up to 10,000"},
	{"naive/count-group-by-state", "for comparison: `COUNT(*) GROUP BY state`"},
	{"naive/count-group-by-definition", "for comparison: `COUNT(*) GROUP BY` deployment, process, state"},
}

// consoleTable is the console's reads, p50 and p99 per database.
func consoleTable(s consoleSitting) string {
	var b strings.Builder
	dbs := []string{}
	for _, r := range s.Reads {
		if !slices.Contains(dbs, r.DB) {
			dbs = append(dbs, r.DB)
		}
	}
	when := fmt.Sprintf("the sitting of %s UTC (%.0f minutes), load average %.2f to %.2f", s.Started.Format("2006-01-02 15:04"), s.Minutes, s.LoadMin, s.LoadMax)
	if s.FromLog {
		when = fmt.Sprintf("the run of %s UTC (%.0f minutes, read from its log)", s.Started.Format("2006-01-02 15:04"), s.Minutes)
		if s.LoadMax > 0 {
			when += fmt.Sprintf(", load average %.2f to %.2f", s.LoadMin, s.LoadMax)
		}
	}
	fmt.Fprintf(&b, "`BenchmarkConsoleReads` at %s instances, %s. Milliseconds per read, p50 and p99 of 200 reads (the two for comparison: 20):\n\n",
		commas(strconv.Itoa(s.Instances)), when)
	b.WriteString("| read (50 a page) |")
	sep := "|---|"
	for _, db := range dbs {
		fmt.Fprintf(&b, " %s p50 | p99 |", db)
		sep += "---:|---:|"
	}
	b.WriteString("\n" + sep + "\n")
	cell := func(db, key string) (consoleRead, bool) {
		for _, r := range s.Reads {
			if r.DB == db && r.Read == key {
				return r, true
			}
		}
		return consoleRead{}, false
	}
	known := map[string]bool{}
	row := func(key, label string) {
		fmt.Fprintf(&b, "| %s |", label)
		for _, db := range dbs {
			if r, ok := cell(db, key); ok {
				fmt.Fprintf(&b, " %s | %s |", fmtNum(r.P50Ms), fmtNum(r.P99Ms))
			} else {
				b.WriteString(" | |")
			}
		}
		b.WriteString("\n")
	}
	for _, n := range consoleReadNames {
		known[n.key] = true
		if slices.ContainsFunc(s.Reads, func(r consoleRead) bool { return r.Read == n.key }) {
			row(n.key, n.label)
		}
	}
	for _, r := range s.Reads { // reads the benchmark gained since
		if !known[r.Read] {
			known[r.Read] = true
			row(r.Read, "`"+r.Read+"`")
		}
	}
	b.WriteString("\n")
	for _, db := range dbs {
		if l, ok := s.Loaded[db]; ok {
			fmt.Fprintf(&b, "%s: %s.\n", db, l)
		}
	}
	return b.String()
}
