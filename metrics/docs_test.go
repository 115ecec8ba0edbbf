package metrics

import (
	"bufio"
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	"github.com/stretchr/testify/require"

	"github.com/goxpdl/goxpdl/engine"
	"github.com/goxpdl/goxpdl/sink"
	"github.com/goxpdl/goxpdl/store/dbtest"
)

// documented is one row of the table in docs/metrics.md.
type documented struct {
	kind   kind
	labels []string
}

// docTable reads the metrics table of docs/metrics.md: rows whose first
// cell is a goxpdl_ metric name in backquotes.
func docTable(t *testing.T) map[string]documented {
	t.Helper()
	f, err := os.Open(filepath.Join("..", "docs", "metrics.md"))
	require.NoError(t, err)
	defer func() { require.NoError(t, f.Close()) }()
	rows := map[string]documented{}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := sc.Text()
		if !strings.HasPrefix(line, "| `goxpdl_") {
			continue
		}
		cells := strings.Split(strings.Trim(line, "|"), "|")
		require.GreaterOrEqual(t, len(cells), 4, "docs/metrics.md: %s", line)
		name := strings.Trim(strings.TrimSpace(cells[0]), "`")
		var labels []string
		for l := range strings.SplitSeq(cells[2], ",") {
			if l = strings.Trim(strings.TrimSpace(l), "`"); l != "" {
				labels = append(labels, l)
			}
		}
		_, dup := rows[name]
		require.False(t, dup, "docs/metrics.md lists %s twice", name)
		require.NotEmpty(t, strings.TrimSpace(cells[3]), "docs/metrics.md: %s has no meaning", name)
		rows[name] = documented{kind: kind(strings.TrimSpace(cells[1])), labels: labels}
	}
	require.NoError(t, sc.Err())
	return rows
}

// The table of docs/metrics.md lists exactly the catalog's metrics, with
// their types and labels.
func TestDocsListEveryMetric(t *testing.T) {
	t.Parallel()
	rows := docTable(t)
	for _, d := range catalog {
		row, ok := rows[d.name]
		if !ok {
			t.Errorf("docs/metrics.md does not list %s (%s, labels %v)", d.name, d.kind, d.labels)
			continue
		}
		require.Equal(t, d.kind, row.kind, "docs/metrics.md: the type of %s", d.name)
		require.Equal(t, d.labels, row.labels, "docs/metrics.md: the labels of %s", d.name)
		delete(rows, d.name)
	}
	for name := range rows {
		t.Errorf("docs/metrics.md lists %s, which the collector does not export", name)
	}
}

// What the collector registers and exports is the catalog: every metric,
// once the engine is attached and every kind of observation was made.
func TestCollectorExportsTheCatalog(t *testing.T) {
	t.Parallel()
	m := New(WithConstLabels(prometheus.Labels{"node": "n1"}))
	e, err := engine.New(engine.Config{DB: dbtest.OpenSQLiteMemory(t), Observer: m,
		Publish: sink.Func(func(context.Context, []sink.Message) error { return nil })}) // the sink's metrics too
	require.NoError(t, err)
	require.NoError(t, m.Attach(e))
	m.InstanceFinished(engine.InstanceFinished{Package: "p", Process: "q", Outcome: engine.InstanceCompleted, Duration: time.Second})
	m.ActivityFinished(engine.ActivityFinished{Package: "p", Process: "q", Type: engine.ActivityManual, Outcome: engine.ActivitySkipped})
	m.EventProcessed(engine.EventProcessed{Kind: engine.EventKindTimer, Critical: true, Result: engine.EventRetried})
	m.ApplicationCalled(engine.ApplicationCalled{Hook: engine.HookOnEnter, ToolAgentClass: "org.example.Hook", Result: engine.CallOK})
	m.TimerFired(engine.FiredTimer{Kind: engine.TimerReminder, Lateness: time.Millisecond})
	m.GroupCommitted(engine.GroupCommitted{Members: 3, Failed: true})
	m.IncidentOpened(engine.IncidentOpened{Cause: engine.CauseLocking})
	m.IncidentsResolved(engine.IncidentsResolved{Count: 2, Resolution: "retried"})

	reg := prometheus.NewPedanticRegistry() // checks Collect against Describe
	require.NoError(t, reg.Register(m))
	families, err := reg.Gather()
	require.NoError(t, err)
	exported := map[string]*dto.MetricFamily{}
	for _, f := range families {
		exported[f.GetName()] = f
	}
	for _, d := range catalog {
		f, ok := exported[d.name]
		if !ok {
			t.Errorf("%s is in the catalog and not exported", d.name)
			continue
		}
		require.Equal(t, string(d.kind), strings.ToLower(f.GetType().String()), d.name)
		for _, metric := range f.GetMetric() {
			var labels []string
			for _, lp := range metric.GetLabel() {
				if lp.GetName() != "node" {
					labels = append(labels, lp.GetName())
				} else {
					require.Equal(t, "n1", lp.GetValue())
				}
			}
			want := slices.Clone(d.labels)
			slices.Sort(want)
			require.Equal(t, want, labels, d.name) // the exposition sorts them
		}
		delete(exported, d.name)
	}
	for name := range exported {
		t.Errorf("%s is exported and not in the catalog", name)
	}
}
