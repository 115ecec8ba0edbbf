package xpdl

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestCorpusLimitMargins measures every corpus file against the
// definition limits and requires each default to stay at least ten times
// above the largest count the corpus has (IDBytes, which the database's
// columns fix, at least above it). It prints the corpus's maxima:
// go test ./xpdl -run TestCorpusLimitMargins -v
func TestCorpusLimitMargins(t *testing.T) {
	t.Parallel()
	dir := os.Getenv("GOXPDL_CORPUS")
	if dir == "" {
		dir = filepath.Join("..", "..", "shared", "xpdl-corpus")
	}
	var files []string
	for _, folder := range []string{"xpdl1", "xpdl2"} {
		matches, _ := filepath.Glob(filepath.Join(dir, folder, "*.xpdl"))
		files = append(files, matches...)
	}
	if len(files) == 0 {
		t.Skipf("xpdl corpus not found at %s (set GOXPDL_CORPUS to its location); skipping", dir)
	}
	var most [limitCount]int
	var where [limitCount]string
	read := 0
	for _, file := range files {
		pkg, err := Load(file, nil)
		if err != nil {
			continue // the malformed one; TestCorpus covers it
		}
		read++
		for _, p := range withExternals(pkg) {
			measureLimits(p, func(m measured) bool {
				if m.n > most[m.limit] {
					most[m.limit], where[m.limit] = m.n, filepath.Base(p.Source)
				}
				return true
			})
			require.NoError(t, CheckLimits(p, nil), "%s", p.Source)
		}
	}
	require.Greater(t, read, 100)
	var b strings.Builder
	fmt.Fprintf(&b, "%-24s %10s %10s  %s\n", "limit", "default", "corpus max", "file")
	for id := range limitCount {
		dflt := limitDefaults[id]
		fmt.Fprintf(&b, "%-24s %10d %10d  %s\n", limitNames[id], dflt, most[id], where[id])
		if id == limIDBytes {
			require.Greater(t, dflt, most[id], limitNames[id])
			continue
		}
		require.GreaterOrEqualf(t, dflt, 10*most[id], "the default of %s is not ten times the corpus's largest", limitNames[id])
	}
	t.Logf("corpus of %d files, maxima:\n%s", read, b.String())
}
