package diagram_test

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/goxpdl/goxpdl/console/diagram"
	"github.com/goxpdl/goxpdl/xpdl"
	"github.com/goxpdl/goxpdl/xpdl/xpdltest"
)

// chainPackage is a process of n activities a1 … an in a chain, every
// fifth with a skip two ahead and every seventh with a loop three back.
func chainPackage(t testing.TB, n int) *xpdl.Package {
	t.Helper()
	var acts, trs strings.Builder
	k := 0
	tr := func(from, to int) {
		k++
		trs.WriteString(xpdltest.Transition(fmt.Sprintf("t%d", k), fmt.Sprintf("a%d>a%d", from, to)))
	}
	for i := 1; i <= n; i++ {
		acts.WriteString(xpdltest.Activity(fmt.Sprintf("a%d", i), "<Route/>", "xor", "xor"))
		if i < n {
			tr(i, i+1)
		}
		if i%5 == 0 && i+2 <= n {
			tr(i, i+2)
		}
		if i%7 == 0 && i > 3 {
			tr(i, i-3)
		}
	}
	pkg, err := xpdl.Read(strings.NewReader(xpdltest.Package(xpdltest.Process("p", "", acts.String(), trs.String()))), nil)
	require.NoError(t, err)
	return pkg
}

// A flow larger than Options.MaxGraphviz gets the grid layout: every
// activity placed, none overlapping another, the chain running left to
// right; a small one still goes to Graphviz.
func TestGridLayoutOfALargeFlow(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pkg := chainPackage(t, 2000)
	l, err := diagram.NewLayout(ctx, pkg, "p", diagram.Options{})
	require.NoError(t, err)
	require.Equal(t, diagram.SourceGrid, l.Source)
	require.Len(t, l.Nodes, 2000)
	byID := make(map[string]diagram.Node, len(l.Nodes))
	for _, n := range l.Nodes {
		require.GreaterOrEqual(t, n.X, 0.0, n.ID)
		require.GreaterOrEqual(t, n.Y, 0.0, n.ID)
		require.LessOrEqual(t, n.X+n.W, l.Width, n.ID)
		require.LessOrEqual(t, n.Y+n.H, l.Height, n.ID)
		byID[n.ID] = n
	}
	for i := 1; i < 2000; i++ {
		a, b := byID[fmt.Sprintf("a%d", i)], byID[fmt.Sprintf("a%d", i+1)]
		require.Less(t, a.X, b.X, "a%d is left of a%d", i, i+1)
	}
	for i := range l.Nodes {
		for j := i + 1; j < len(l.Nodes); j++ {
			a, b := l.Nodes[i], l.Nodes[j]
			overlap := a.X < b.X+b.W && b.X < a.X+a.W && a.Y < b.Y+b.H && b.Y < a.Y+a.H
			require.False(t, overlap, "%s and %s overlap", a.ID, b.ID)
		}
	}
	require.Len(t, l.Edges, len(pkg.Process("p").Transitions))
	svg := l.SVG(diagram.State{})
	require.Contains(t, string(svg), `data-activity="a2000"`)

	small := chainPackage(t, 12)
	l, err = diagram.NewLayout(ctx, small, "p", diagram.Options{})
	require.NoError(t, err)
	require.Equal(t, diagram.SourceAuto, l.Source)
	l, err = diagram.NewLayout(ctx, small, "p", diagram.Options{MaxGraphviz: 5})
	require.NoError(t, err)
	require.Equal(t, diagram.SourceGrid, l.Source)
}

// BenchmarkLargeLayout compares Graphviz and the grid layout on chains of
// growing size (docs/diagram.md).
func BenchmarkLargeLayout(b *testing.B) {
	ctx := context.Background()
	for _, n := range []int{100, 300, 1000, 10000} {
		pkg := chainPackage(b, n)
		for _, bc := range []struct {
			name string
			max  int
		}{{"graphviz", -1}, {"grid", 1}} {
			if bc.name == "graphviz" && n > 1000 {
				continue // 26 s and more a layout
			}
			b.Run(fmt.Sprintf("%s/%d", bc.name, n), func(b *testing.B) {
				for b.Loop() {
					_, err := diagram.NewLayout(ctx, pkg, "p", diagram.Options{MaxGraphviz: bc.max})
					require.NoError(b, err)
				}
			})
		}
	}
}
