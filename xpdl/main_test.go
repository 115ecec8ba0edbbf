package xpdl_test

import (
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"
)

// update makes the golden tests rewrite their golden files instead of
// comparing with them: go test ./xpdl -run 'TestCorpus|TestModelGolden' -update
// (-rewrite is the same flag under the name the etcd/raft tests use).
var update bool

func init() {
	flag.BoolVar(&update, "update", false, "rewrite golden files under testdata/ instead of comparing with them")
	flag.BoolVar(&update, "rewrite", false, "same as -update")
}

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// repoRoot returns the module root: the nearest directory at or above the
// test's working directory that holds go.mod.
func repoRoot(tb testing.TB) string {
	tb.Helper()
	dir, err := os.Getwd()
	require.NoError(tb, err)
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir
		}
		parent := filepath.Dir(dir)
		require.NotEqual(tb, dir, parent, "no go.mod above the test's working directory")
		dir = parent
	}
}

// testdataPath returns a path under the repository's top-level testdata
// folder (the project's own XPDL files and golden outputs, see
// docs/architecture.md, "The packages").
func testdataPath(tb testing.TB, elem ...string) string {
	tb.Helper()
	return filepath.Join(append([]string{repoRoot(tb), "testdata"}, elem...)...)
}

// checkGolden compares got with the golden file at path, or rewrites the
// file when -update is given. Review every rewrite diff before committing.
func checkGolden(t *testing.T, path, got string) {
	t.Helper()
	if update {
		require.NoError(t, os.MkdirAll(filepath.Dir(path), 0o755))
		require.NoError(t, os.WriteFile(path, []byte(got), 0o644))
		return
	}
	want, err := os.ReadFile(path)
	if os.IsNotExist(err) {
		top, _, _ := strings.Cut(t.Name(), "/")
		t.Fatalf("golden file %s does not exist; run go test ./xpdl -run '^%s$' -update to create it", path, top)
	}
	require.NoError(t, err)
	require.Equal(t, string(want), got, "output differs from %s; if the change is intended, rerun with -update and review the diff", path)
}
