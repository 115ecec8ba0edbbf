package diagram_test

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/goxpdl/goxpdl/console/diagram"
	"github.com/goxpdl/goxpdl/xpdl"
)

// BenchmarkLayout lays out the largest process of the corpus (most
// activities), from its own coordinates and with the automatic layout,
// and draws it.
func BenchmarkLayout(b *testing.B) {
	dir := corpusDir(b)
	var pkg *xpdl.Package
	var proc *xpdl.Process
	for _, name := range corpusFiles(b, dir) {
		f, err := os.Open(filepath.Join(dir, filepath.FromSlash(name)))
		require.NoError(b, err)
		p, err := xpdl.Read(f, nil)
		require.NoError(b, f.Close())
		if err != nil {
			continue
		}
		for _, pr := range p.Processes {
			if proc == nil || len(pr.Activities) > len(proc.Activities) {
				pkg, proc = p, pr
			}
		}
	}
	b.Logf("largest process: %s %s, %d activities, %d transitions", pkg.Source, proc.ID, len(proc.Activities), len(proc.Transitions))
	ctx := context.Background()
	for _, bc := range []struct {
		name string
		opts diagram.Options
	}{{"file", diagram.Options{}}, {"auto", diagram.Options{IgnoreCoordinates: true}}} {
		b.Run(bc.name, func(b *testing.B) {
			for b.Loop() {
				_, err := diagram.NewLayout(ctx, pkg, proc.ID, bc.opts)
				require.NoError(b, err)
			}
		})
	}
	l, err := diagram.NewLayout(ctx, pkg, proc.ID, diagram.Options{})
	require.NoError(b, err)
	b.Run("svg", func(b *testing.B) {
		for b.Loop() {
			_ = l.SVG(diagram.State{})
		}
	})
}
