package main

import (
	"fmt"
	"image/color"
	"slices"
	"strings"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
)

// cell is the median of one engine's runs of one workload on one
// database.
type cell struct {
	runs                   int
	rate, p50, p99, max    float64
	rss, peakRSS, dbBytes  float64
	restart                float64
	failed, dupAcc, dupRej int
	failedRuns             int
	unit, note             string
}

// median returns the median of xs (0 for none).
func median(xs []float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	s := slices.Clone(xs)
	slices.Sort(s)
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}

// cells groups the runs by workload, database and engine.
func cells(s suite) map[[3]string]cell {
	type acc struct {
		rate, p50, p99, max, rss, peak, dbb, restart []float64
		c                                            cell
	}
	accs := map[[3]string]*acc{}
	for _, r := range s.Runs {
		k := [3]string{r.Workload, r.DB, r.Engine}
		if r.Workload == "W6" { // W6 may have run at more than one size
			k[0] = w6Key(r.N)
		}
		a := accs[k]
		if a == nil {
			a = &acc{}
			accs[k] = a
		}
		if r.Note != "" {
			a.c.note = r.Note
			a.c.failedRuns++
			continue
		}
		a.c.failed = max(a.c.failed, r.Failed)
		a.c.dupAcc += r.DupAccepted
		a.c.dupRej += r.DupRejected
		a.c.runs++
		a.c.unit = r.RateUnit
		a.rate = append(a.rate, r.Rate)
		a.p50 = append(a.p50, r.P50Ms)
		a.p99 = append(a.p99, r.P99Ms)
		a.max = append(a.max, r.MaxMs)
		a.rss = append(a.rss, float64(r.RSSBytes))
		a.peak = append(a.peak, float64(r.PeakRSSBytes))
		a.dbb = append(a.dbb, float64(r.DBBytes))
		a.restart = append(a.restart, r.RestartMs)
	}
	out := map[[3]string]cell{}
	for k, a := range accs {
		c := a.c
		c.rate, c.p50, c.p99, c.max = median(a.rate), median(a.p50), median(a.p99), median(a.max)
		c.rss, c.peakRSS, c.dbBytes, c.restart = median(a.rss), median(a.peak), median(a.dbb), median(a.restart)
		out[k] = c
	}
	return out
}

func w6Key(n int) string { return fmt.Sprintf("W6/%d", n) }

// w6Sizes lists the sizes W6 ran at, ascending.
func w6Sizes(s suite) []int {
	var out []int
	for _, r := range s.Runs {
		if r.Workload == "W6" && !slices.Contains(out, r.N) {
			out = append(out, r.N)
		}
	}
	slices.Sort(out)
	return out
}

// dbOrder lists the databases that have runs, in a fixed order.
func dbOrder(s suite) []string {
	var out []string
	for _, d := range []string{dbSQLite, dbMariaDB} {
		if slices.ContainsFunc(s.Runs, func(r result) bool { return r.DB == d }) {
			out = append(out, d)
		}
	}
	return out
}

var dbName = map[string]string{dbSQLite: "SQLite", dbMariaDB: "MariaDB"}

func fmtNum(x float64) string {
	switch {
	case x == 0:
		return "0"
	case x >= 100:
		return commas(fmt.Sprintf("%.0f", x))
	case x >= 10:
		return fmt.Sprintf("%.1f", x)
	}
	return fmt.Sprintf("%.2f", x)
}

// commas groups the digits of an integer's text by thousands.
func commas(s string) string {
	if len(s) <= 3 {
		return s
	}
	return commas(s[:len(s)-3]) + "," + s[len(s)-3:]
}

func fmtMiB(b float64) string { return fmt.Sprintf("%.1f MiB", b/(1<<20)) }

// show renders a cell's value, or what went wrong.
func show(c cell, ok bool, v func(cell) string) string {
	switch {
	case !ok:
		return "–"
	case c.runs == 0:
		return "failed: " + strings.ReplaceAll(firstLine(c.note), "|", "/")
	}
	s := v(c)
	if c.failed > 0 {
		s += fmt.Sprintf(" (%d failed)", c.failed)
	}
	if c.failedRuns > 0 { // the median is of the others
		s += fmt.Sprintf(" (of %d runs; %d failed)", c.runs, c.failedRuns)
	}
	return s
}

func firstLine(s string) string {
	s, _, _ = strings.Cut(s, "\n")
	if len(s) > 80 {
		s = s[:80] + "…"
	}
	return s
}

// tables renders the generated part of the report.
func tables(s suite) string {
	cs := cells(s)
	get := func(w, db, eng string) (cell, bool) { c, ok := cs[[3]string{w, db, eng}]; return c, ok }
	var b strings.Builder
	row := func(cols ...string) { b.WriteString("| " + strings.Join(cols, " | ") + " |\n") }
	has := func(w string) bool {
		return slices.ContainsFunc(s.Runs, func(r result) bool { return r.Workload == w })
	}

	b.WriteString("### Throughput\n\nMedians of " + fmt.Sprint(s.Reps) + " runs each; higher is better. p50 / p99: latency of one instance from its start call to its completion (W4: from the claim).\n\n")
	row("workload", "database", "goxpdl", "go-workflows", "goxpdl ÷ go-workflows", "goxpdl p50 / p99 ms", "go-workflows p50 / p99 ms")
	row("---", "---", "---:", "---:", "---:", "---:", "---:")
	for _, w := range []string{"W1", "W2", "W3", "W4"} {
		if !has(w) {
			continue
		}
		for _, db := range dbOrder(s) {
			x, xok := get(w, db, engineGoxpdl)
			g, gok := get(w, db, engineGoWF)
			ratio := "–"
			if xok && gok && x.runs > 0 && g.runs > 0 && g.rate > 0 {
				ratio = fmt.Sprintf("%.1f×", x.rate/g.rate)
			}
			rate := func(c cell) string { return fmtNum(c.rate) + " " + c.unit }
			lat := func(c cell) string { return fmtNum(c.p50) + " / " + fmtNum(c.p99) }
			row(fmt.Sprintf("%s (%s)", w, commas(fmt.Sprint(s.Sizes[w]))), dbName[db], show(x, xok, rate), show(g, gok, rate), ratio, show(x, xok, lat), show(g, gok, lat))
		}
	}
	if has("W4") {
		b.WriteString("\nW4's duplicate completions (every tenth work item completed twice), over all runs:\n\n")
		row("database", "engine", "duplicates refused", "duplicates accepted")
		row("---", "---", "---:", "---:")
		for _, db := range dbOrder(s) {
			for _, eng := range []string{engineGoxpdl, engineGoWF} {
				if c, ok := get("W4", db, eng); ok {
					row(dbName[db], eng, fmt.Sprint(c.dupRej), fmt.Sprint(c.dupAcc))
				}
			}
		}
	}
	if has("W1s") {
		b.WriteString("\n### One instance at a time (W1s)\n\nW1's process, one client, each instance started only after the previous one completed: the latency of one instance on an idle engine. Lower is better.\n\n")
		row("database", "goxpdl p50 / p99 ms", "go-workflows p50 / p99 ms")
		row("---", "---:", "---:")
		for _, db := range dbOrder(s) {
			x, xok := get("W1s", db, engineGoxpdl)
			g, gok := get("W1s", db, engineGoWF)
			lat := func(c cell) string { return fmtNum(c.p50) + " / " + fmtNum(c.p99) }
			row(dbName[db], show(x, xok, lat), show(g, gok, lat))
		}
	}
	if has("W5") {
		b.WriteString("\n### Timers due at once (W5)\n\n" + commas(fmt.Sprint(s.Sizes["W5"])) + " instances each wait for a timer, all due at the same instant; lateness is from that instant to each instance's completion. Lower is better.\n\n")
		row("database", "engine", "p50 ms late", "p99 ms late", "max ms late", "timers/s after due")
		row("---", "---", "---:", "---:", "---:", "---:")
		for _, db := range dbOrder(s) {
			for _, eng := range []string{engineGoxpdl, engineGoWF} {
				c, ok := get("W5", db, eng)
				if !ok {
					continue
				}
				row(dbName[db], eng, show(c, ok, func(c cell) string { return fmtNum(c.p50) }), show(c, ok, func(c cell) string { return fmtNum(c.p99) }),
					show(c, ok, func(c cell) string { return fmtNum(c.max) }), show(c, ok, func(c cell) string { return fmtNum(c.rate) }))
			}
		}
	}
	if has("W6") {
		b.WriteString("\n### Parked instances (W6)\n\nInstances each waiting on a work item. Parking rate, database size once all are parked, peak memory of the process that parked them, memory of a fresh process after the restart, and the restart: from the new process's start to the first instance that completes after its work item is completed.\n\n")
		row("instances", "database", "engine", "runs", "parked/s", "database size", "peak RSS parking", "RSS after restart", "restart → first progress ms")
		row("---:", "---", "---", "---:", "---:", "---:", "---:", "---:", "---:")
		for _, n := range w6Sizes(s) {
			for _, db := range dbOrder(s) {
				for _, eng := range []string{engineGoxpdl, engineGoWF} {
					c, ok := get(w6Key(n), db, eng)
					if !ok {
						continue
					}
					row(commas(fmt.Sprint(n)), dbName[db], eng, fmt.Sprint(c.runs), show(c, ok, func(c cell) string { return fmtNum(c.rate) }), show(c, ok, func(c cell) string { return fmtMiB(c.dbBytes) }),
						show(c, ok, func(c cell) string { return fmtMiB(c.peakRSS) }), show(c, ok, func(c cell) string { return fmtMiB(c.rss) }),
						show(c, ok, func(c cell) string { return fmtNum(c.restart) }))
				}
			}
		}
	}
	var sz []string
	for _, w := range workloadOrder {
		if has(w) {
			sz = append(sz, w+" "+commas(fmt.Sprint(s.Sizes[w])))
		}
	}
	b.WriteString("\nSizes in this sitting: " + strings.Join(sz, ", ") + " (instances; W2: trees).\n")
	if v := s.Machine["mariadb"]; v != "" {
		b.WriteString("MariaDB server " + v + ".\n")
	}
	fmt.Fprintf(&b, "\nThe sitting: %s UTC, %.0f minutes, %d runs; 1-minute load average %.2f to %.2f over the runs (the machine has %s CPUs: above %s, other work was competing). %s; %s.",
		s.Started.Format("2006-01-02 15:04"), s.Minutes, len(s.Runs), s.LoadMin, s.LoadMax, s.Machine["cpus"], s.Machine["cpus"], s.Machine["go"], s.Machine["cpu"])
	if s.Quick {
		b.WriteString(" **Quick run (-quick): small sizes, figures not comparable with a full run.**")
	}
	var failures []string
	for _, r := range s.Runs {
		if r.Note != "" {
			failures = append(failures, fmt.Sprintf("- %s on %s, %s: %s", r.Workload, dbName[r.DB], r.Engine, strings.ReplaceAll(r.Note, "\n", " ")))
		}
	}
	if len(failures) > 0 {
		b.WriteString("\n\nRuns that failed (left out of the medians):\n\n" + strings.Join(failures, "\n") + "\n")
	}
	for _, a := range s.Appended {
		b.WriteString("\nAdded afterwards: " + a + ".")
	}
	for _, sk := range s.Skipped {
		b.WriteString("\nSkipped: " + sk)
	}
	b.WriteString("\n")
	return b.String()
}

// writePlot draws the throughput workloads as grouped bars on a log
// scale, goxpdl beside go-workflows, one group per workload and database.
func writePlot(s suite, path string) error {
	cs := cells(s)
	var labels []string
	var xs, gs plotter.Values
	for _, w := range []string{"W1", "W2", "W3", "W4"} {
		for _, db := range dbOrder(s) {
			x, xok := cs[[3]string{w, db, engineGoxpdl}]
			g, gok := cs[[3]string{w, db, engineGoWF}]
			if !xok && !gok {
				continue
			}
			labels = append(labels, fmt.Sprintf("%s %s", w, dbName[db]))
			// The bars stand on 1 (see base below): a log scale has no 0.
			xs, gs = append(xs, max(x.rate, 0)), append(gs, max(g.rate, 0))
		}
	}
	if len(labels) == 0 {
		return nil
	}
	p := plot.New()
	p.Title.Text = "Throughput, median of runs (log scale; higher is better)"
	p.Y.Label.Text = "activities/s (W4: round trips/s)"
	p.Y.Scale = plot.LogScale{}
	p.Y.Tick.Marker = plot.LogTicks{Prec: -1}
	p.Y.Min = 1
	top := 1.0
	for i := range xs {
		top = max(top, xs[i]+1, gs[i]+1)
	}
	p.Y.Max = top * 6 // room for the legend above the bars
	w := vg.Points(14)
	base := make(plotter.Values, len(labels))
	for i := range base {
		base[i] = 1
	}
	bars := func(vals plotter.Values, c color.Color, off vg.Length) (*plotter.BarChart, error) {
		under, err := plotter.NewBarChart(base, w)
		if err != nil {
			return nil, err
		}
		under.LineStyle.Width = 0
		under.Color = color.Transparent
		b, err := plotter.NewBarChart(vals, w)
		if err != nil {
			return nil, err
		}
		b.StackOn(under)
		b.Color = c
		b.LineStyle.Width = 0
		b.Offset = off
		under.Offset = off
		return b, nil
	}
	bx, err := bars(xs, color.RGBA{R: 0x1f, G: 0x77, B: 0xb4, A: 0xff}, -w/2)
	if err != nil {
		return err
	}
	bg, err := bars(gs, color.RGBA{R: 0xff, G: 0x7f, B: 0x0e, A: 0xff}, w/2)
	if err != nil {
		return err
	}
	p.Add(bx, bg, plotter.NewGrid())
	p.Legend.Add(engineGoxpdl, bx)
	p.Legend.Add(engineGoWF+" v1.2.0", bg)
	p.Legend.Top = true
	p.NominalX(labels...)
	p.X.Tick.Label.Rotation = 0.5
	p.X.Tick.Label.XAlign = -0.9
	width := max(16*vg.Centimeter, vg.Length(len(labels))*2*vg.Centimeter+3*vg.Centimeter)
	return p.Save(width, 10*vg.Centimeter, path)
}
