package main

import (
	"bytes"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/goxpdl/goxpdl/internal/demo"
	"github.com/goxpdl/goxpdl/internal/docblocks"
)

// The README's shell blocks show `go run ./cmd/goxpdl ...` commands, the
// first of them what goxpdl is for: each runs here as written, from the
// repository root, and succeeds. (internal/docblocks checks the other
// commands.) It skips when a file it names is absent, as the corpus
// beside the repository may be.
func TestReadmeCommandsRun(t *testing.T) {
	t.Parallel()
	root, err := docblocks.Root(".")
	require.NoError(t, err)
	blocks, err := docblocks.Fenced(root, "README.md")
	require.NoError(t, err)
	ran := 0
	for _, b := range blocks {
		if b.Lang != "sh" {
			continue
		}
		cmds, err := docblocks.Commands(b)
		require.NoError(t, err)
		for _, cmd := range cmds {
			if len(cmd) < 4 || cmd[0] != "go" || cmd[1] != "run" || cmd[2] != "./cmd/goxpdl" {
				continue
			}
			args := append([]string(nil), cmd[3:]...)
			for i, a := range args {
				if strings.HasPrefix(a, "./") || strings.HasPrefix(a, "../") {
					args[i] = filepath.Join(root, filepath.FromSlash(a))
					if _, err := os.Stat(args[i]); err != nil {
						t.Skipf("README.md:%d: %s is not there: %v", b.Line, a, err)
					}
				}
			}
			if args[0] == "serve" {
				readmeServe(t, b.Line, args[1:])
				ran++
				continue
			}
			var stdout, stderr bytes.Buffer
			code := run(args, strings.NewReader(""), &stdout, &stderr)
			require.Equal(t, exitOK, code, "README.md:%d: goxpdl %s\n%s", b.Line, strings.Join(cmd[3:], " "), stderr.String())
			if strings.Contains(strings.Join(args, " "), "--trace jsonl") {
				require.Contains(t, stdout.String(), `"type":"process.completed"`)
			}
			ran++
		}
	}
	require.Positive(t, ran, "the README shows no go run ./cmd/goxpdl command any more")
}

// readmeServe runs a README's "goxpdl serve" line the way a reader
// would, on a free port instead of the fixed one: it must listen, serve
// the dashboard, and stop cleanly (as on Ctrl-C).
func readmeServe(t *testing.T, line int, args []string) {
	t.Helper()
	o := serveOptions{demo: demo.Config{StartEvery: time.Hour}} // one start is enough to check
	for _, a := range args {
		switch a {
		case "--demo":
			o.demoEnabled = true
		default:
			t.Fatalf("README.md:%d: goxpdl serve %s: the test knows no flag %s; teach readmeServe", line, strings.Join(args, " "), a)
		}
	}
	s := startServe(t, o)
	res, body := s.get(nil, "/")
	require.Equal(t, http.StatusOK, res.StatusCode, "README.md:%d: the dashboard", line)
	require.Contains(t, body, "Dashboard")
	require.Equal(t, exitOK, s.stop(), "README.md:%d: serve stops cleanly", line)
}
