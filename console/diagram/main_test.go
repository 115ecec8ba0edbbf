package diagram_test

import (
	"flag"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"
)

// update makes the golden tests rewrite testdata/*.svg instead of
// comparing with them: go test ./console/diagram -run TestGolden -update
var update = flag.Bool("update", false, "rewrite the golden files under testdata/ instead of comparing with them")

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// corpusDir is the corpus of real XPDL files, next to the repository
// (../shared/xpdl-corpus from the module root; GOXPDL_CORPUS overrides
// it). The tests that need it skip, saying so, when it is absent.
func corpusDir(t testing.TB) string {
	t.Helper()
	dir := os.Getenv("GOXPDL_CORPUS")
	if dir == "" {
		dir = filepath.Join("..", "..", "..", "shared", "xpdl-corpus")
	}
	for _, folder := range []string{"xpdl1", "xpdl2"} {
		if fi, err := os.Stat(filepath.Join(dir, folder)); err != nil || !fi.IsDir() {
			t.Skipf("xpdl corpus not found at %s (set GOXPDL_CORPUS to its location); skipping", dir)
		}
	}
	return dir
}

// corpusFiles lists the corpus's *.xpdl files, relative to dir, sorted.
func corpusFiles(t testing.TB, dir string) []string {
	t.Helper()
	var files []string
	for _, folder := range []string{"xpdl1", "xpdl2"} {
		entries, err := os.ReadDir(filepath.Join(dir, folder))
		require.NoError(t, err)
		for _, e := range entries {
			if !e.IsDir() && strings.HasSuffix(e.Name(), ".xpdl") {
				files = append(files, path.Join(folder, e.Name()))
			}
		}
	}
	slices.Sort(files)
	require.NotEmpty(t, files)
	return files
}
