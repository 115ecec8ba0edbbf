package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// corpusDir returns the directory of real XPDL files written by other
// tools, which lives in shared/ beside the repository, and skips the test
// when it is absent.
func corpusDir(t *testing.T) string {
	t.Helper()
	// The tests run in cmd/goxpdl; the repository root is two levels up.
	dir, err := filepath.Abs(filepath.Join("..", "..", "..", "shared", "xpdl-corpus"))
	require.NoError(t, err)
	if _, err := os.Stat(dir); errors.Is(err, fs.ErrNotExist) {
		t.Skipf("XPDL corpus not found at %s: it is kept in shared/ beside the repository, not in it", dir)
	}
	return dir
}

// runCLI runs the program in-process and returns its exit code and output.
func runCLI(args ...string) (code int, stdout, stderr string) {
	var out, errOut bytes.Buffer
	code = run(args, strings.NewReader(""), &out, &errOut)
	return code, out.String(), errOut.String()
}

func TestValidateCorpus(t *testing.T) {
	t.Parallel()
	corpus := corpusDir(t)
	tests := []struct {
		file       string
		wantCode   int
		wantStdout string // a substring of stdout; "" means stdout is empty
		wantStderr string // the summary, after "FILE: "
	}{
		{file: "xpdl1/jawe-leave_request.xpdl", wantCode: 0, wantStderr: "valid"},
		{file: "xpdl2/jawe-leave_request.xpdl", wantCode: 0, wantStderr: "valid"},
		{
			file: "xpdl1/bonita-testManagementAPIWithParsingError.xpdl", wantCode: 1,
			wantStdout: "bonita-testManagementAPIWithParsingError.xpdl:28:", wantStderr: "1 error",
		},
	}
	for _, tt := range tests {
		t.Run(tt.file, func(t *testing.T) {
			t.Parallel()
			path := filepath.Join(corpus, filepath.FromSlash(tt.file))
			code, stdout, stderr := runCLI("validate", path)
			require.Equal(t, tt.wantCode, code, "stdout:\n%s\nstderr:\n%s", stdout, stderr)
			if tt.wantStdout == "" {
				require.Empty(t, stdout)
			} else {
				require.Contains(t, stdout, tt.wantStdout)
			}
			require.Equal(t, path+": "+tt.wantStderr+"\n", stderr)
		})
	}
}

func TestValidateCorpusJSON(t *testing.T) {
	t.Parallel()
	corpus := corpusDir(t)
	good := filepath.Join(corpus, "xpdl1", "jawe-leave_request.xpdl")
	bad := filepath.Join(corpus, "xpdl1", "bonita-testManagementAPIWithParsingError.xpdl")

	code, stdout, stderr := runCLI("validate", "--json", good, bad)
	require.Equal(t, 1, code)
	require.Empty(t, stderr)
	var got validateReport
	require.NoError(t, json.Unmarshal([]byte(stdout), &got))
	require.False(t, got.Valid)
	require.Len(t, got.Files, 2)

	require.Equal(t, good, got.Files[0].File)
	require.True(t, got.Files[0].Valid)
	require.Zero(t, got.Files[0].Errors)

	f := got.Files[1]
	require.Equal(t, bad, f.File)
	require.False(t, f.Valid)
	require.Equal(t, 1, f.Errors)
	require.Len(t, f.Problems, 1)
	require.Equal(t, bad, f.Problems[0].File)
	require.Equal(t, 28, f.Problems[0].Line)
	require.Equal(t, "syntax", f.Problems[0].Code)
}

// TestValidateCorpusEveryFile holds every real file to the output
// contract: exit 0 or 1 (they are all readable), one line per problem on
// stdout, the summary line on stderr, and the counts agreeing.
func TestValidateCorpusEveryFile(t *testing.T) {
	t.Parallel()
	corpus := corpusDir(t)
	var files []string
	for _, dir := range []string{"xpdl1", "xpdl2"} {
		matches, err := filepath.Glob(filepath.Join(corpus, dir, "*.xpdl"))
		require.NoError(t, err)
		files = append(files, matches...)
	}
	require.GreaterOrEqual(t, len(files), 100, "the corpus should hold about 150 files")

	problemLine := regexp.MustCompile(`^.+:\d+:\d+: (warning: )?\S.*$`)
	summaryLine := regexp.MustCompile(`^(valid|valid \((\d+) warnings?\)|(\d+) errors?(, (\d+) warnings?)?)\n$`)
	for _, path := range files {
		rel, err := filepath.Rel(corpus, path)
		require.NoError(t, err)
		t.Run(filepath.ToSlash(rel), func(t *testing.T) {
			t.Parallel()
			code, stdout, stderr := runCLI("validate", path)
			require.Contains(t, []int{0, 1}, code, "stderr: %s", stderr)

			lines := strings.Split(strings.TrimSuffix(stdout, "\n"), "\n")
			if stdout == "" {
				lines = nil
			}
			var warnings int
			for _, line := range lines {
				require.Regexp(t, problemLine, line)
				if strings.Contains(line, ": warning: ") {
					warnings++
				}
			}

			verdict, ok := strings.CutPrefix(stderr, path+": ")
			require.True(t, ok, "stderr %q should start with the file name", stderr)
			m := summaryLine.FindStringSubmatch(verdict)
			require.NotNil(t, m, "summary %q", verdict)
			require.Equal(t, code == 0, strings.HasPrefix(verdict, "valid"))
			require.Equal(t, len(lines), warnings+atoi(m[3]), "errors + warnings = problem lines")
			require.Equal(t, warnings, atoi(m[2])+atoi(m[5]))
		})
	}
}

// atoi converts a count matched by a regexp group; an empty group is 0.
func atoi(s string) int {
	n, _ := strconv.Atoi(s)
	return n
}
