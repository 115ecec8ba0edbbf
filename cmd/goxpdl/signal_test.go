package main

import (
	"bytes"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"

	"github.com/rogpeppe/go-internal/txtar"
	"github.com/stretchr/testify/require"
)

// signalledWriter collects what run writes and closes started at the
// first write: the engine is running by then, and run has installed its
// signal handlers.
type signalledWriter struct {
	mu      sync.Mutex
	buf     bytes.Buffer
	once    sync.Once
	started chan struct{}
}

func (w *signalledWriter) Write(p []byte) (int, error) {
	w.once.Do(func() { close(w.started) })
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.buf.Write(p)
}

// SIGINT (Ctrl-C) and SIGTERM stop a run that would never end: it says
// where the instance stands and exits 3, instead of dying silently. The
// signal goes to this test process, which run's handlers catch.
func TestRunStopsOnSignal(t *testing.T) { //nolint:paralleltest // it signals the whole test process; no other run may be listening
	// The looping process of the --timeout script.
	archive, err := txtar.ParseFile(filepath.Join("testdata", "script", "run_timeout.txtar"))
	require.NoError(t, err)
	i := slices.IndexFunc(archive.Files, func(f txtar.File) bool { return f.Name == "loop.xpdl" })
	require.GreaterOrEqual(t, i, 0)
	file := filepath.Join(t.TempDir(), "loop.xpdl")
	require.NoError(t, os.WriteFile(file, archive.Files[i].Data, 0o600))

	for _, sig := range []syscall.Signal{syscall.SIGINT, syscall.SIGTERM} { //nolint:paralleltest // one signal at a time: each run must receive its own
		t.Run(sig.String(), func(t *testing.T) {
			stdout := &signalledWriter{started: make(chan struct{})}
			var stderr bytes.Buffer
			code := make(chan int, 1)
			go func() {
				code <- run([]string{"run", "--timeout", "0", "--trace", "jsonl", file}, strings.NewReader(""), stdout, &stderr)
			}()
			select {
			case <-stdout.started:
			case c := <-code:
				t.Fatalf("run ended with %d before the signal: %s", c, stderr.String())
			}
			require.NoError(t, syscall.Kill(os.Getpid(), sig))
			require.Equal(t, exitStuck, <-code)
			require.Regexp(t, `(?m)^instance \d+ of process spin: Running; stopped: `+sig.String()+` signal received; open activities: (A|B) \(instance \d+\) (Initiated|Active)$`, stderr.String())
		})
	}
}
