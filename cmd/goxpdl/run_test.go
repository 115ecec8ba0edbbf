package main

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// failingWriter fails every write, like standard output on a full disk.
type failingWriter struct{}

func (failingWriter) Write([]byte) (int, error) { return 0, errors.New("no space left on device") }

// A result that cannot be written is an I/O error (exit 2), never a
// silent success or a plain "invalid".
func TestWriteFailureIsAnIOError(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	bad := filepath.Join(dir, "bad.xpdl")
	require.NoError(t, os.WriteFile(bad, []byte("<Package"), 0o600))

	for _, args := range [][]string{
		{"validate", bad},
		{"validate", "--json", bad},
		{"validate", "-h"},
		{"help"},
	} {
		var stderr bytes.Buffer
		code := run(args, strings.NewReader(""), failingWriter{}, &stderr)
		require.Equal(t, exitUsage, code, "args %q", args)
		require.Contains(t, stderr.String(), "goxpdl: write standard output: no space left on device", "args %q", args)
	}
}
