package diagram_test

import (
	"bytes"
	"context"
	"encoding/xml"
	"errors"
	"io"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/goxpdl/goxpdl/console/diagram"
	"github.com/goxpdl/goxpdl/xpdl"
)

// TestCorpus draws every process and activity set of every corpus file
// and checks each drawing: well-formed XML, every activity and transition
// present, no two activities overlapping (boundary events sit on their
// activity's border on purpose and are left out).
func TestCorpus(t *testing.T) {
	t.Parallel()
	dir := corpusDir(t)
	drawn, auto := 0, 0
	for _, name := range corpusFiles(t, dir) {
		f, err := os.Open(filepath.Join(dir, filepath.FromSlash(name)))
		require.NoError(t, err)
		pkg, err := xpdl.Read(f, &xpdl.ReadOpts{Name: name})
		require.NoError(t, f.Close())
		if err != nil {
			t.Logf("%s: not readable, not drawn: %v", name, err)
			continue
		}
		for _, proc := range pkg.Processes {
			scopes := []string{""}
			for _, s := range proc.ActivitySets {
				scopes = append(scopes, s.ID)
			}
			for _, set := range scopes {
				l, err := diagram.NewLayout(context.Background(), pkg, proc.ID, diagram.Options{ActivitySet: set})
				require.NoError(t, err, "%s %s %s", name, proc.ID, set)
				flow := &proc.Flow
				if set != "" {
					flow = &proc.ActivitySet(set).Flow
				}
				checkLayout(t, name+" "+proc.ID+" "+set, l, flow)
				drawn++
				if l.Source == diagram.SourceAuto {
					auto++
				}
			}
		}
	}
	t.Logf("drew %d flows, %d of them with the automatic layout", drawn, auto)
}

// checkLayout checks one drawing of flow.
func checkLayout(t *testing.T, what string, l *diagram.Layout, flow *xpdl.Flow) {
	t.Helper()
	require.Len(t, l.Nodes, len(flow.Activities), what)
	for i, a := range flow.Activities {
		n := l.Nodes[i]
		require.Equal(t, a.ID, n.ID, what)
		require.Positive(t, n.W, what)
		require.Positive(t, n.H, what)
		require.GreaterOrEqual(t, n.X, 0.0, what)
		require.GreaterOrEqual(t, n.Y, 0.0, what)
		require.LessOrEqual(t, n.X+n.W, l.Width, what)
		require.LessOrEqual(t, n.Y+n.H, l.Height, what)
	}
	for i := range l.Nodes {
		a := &l.Nodes[i]
		if a.AttachedTo != "" {
			continue
		}
		for j := i + 1; j < len(l.Nodes); j++ {
			b := &l.Nodes[j]
			if b.AttachedTo != "" {
				continue
			}
			require.False(t, a.X+0.5 < b.X+b.W && b.X+0.5 < a.X+a.W && a.Y+0.5 < b.Y+b.H && b.Y+0.5 < a.Y+a.H,
				"%s: %s (%v,%v %vx%v) overlaps %s (%v,%v %vx%v)", what, a.ID, a.X, a.Y, a.W, a.H, b.ID, b.X, b.Y, b.W, b.H)
		}
	}
	var want []string
	for _, tr := range flow.Transitions {
		if flow.Activity(tr.From) != nil && flow.Activity(tr.To) != nil {
			want = append(want, tr.ID)
		}
	}
	var got []string
	for _, e := range l.Edges {
		got = append(got, e.ID)
		require.GreaterOrEqual(t, len(e.Points), 2, "%s: transition %s has no route", what, e.ID)
	}
	require.Equal(t, want, got, what)

	svg := l.SVG(diagram.State{})
	activities, transitions := svgIDs(t, svg)
	var ids []string
	for _, a := range flow.Activities {
		ids = append(ids, a.ID)
	}
	require.Equal(t, ids, activities, what)
	require.Equal(t, want, transitions, what)
}

// svgIDs checks that svg is well-formed XML and returns its
// data-activity and data-transition values in document order.
func svgIDs(t *testing.T, svg []byte) (activities, transitions []string) {
	t.Helper()
	d := xml.NewDecoder(bytes.NewReader(svg))
	for {
		tok, err := d.Token()
		if errors.Is(err, io.EOF) {
			return activities, transitions
		}
		require.NoError(t, err, "not well-formed:\n%s", svg)
		if se, ok := tok.(xml.StartElement); ok {
			for _, a := range se.Attr {
				switch a.Name.Local {
				case "data-activity":
					activities = append(activities, a.Value)
				case "data-transition":
					transitions = append(transitions, a.Value)
				}
			}
		}
	}
}
