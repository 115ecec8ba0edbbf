package recovery_test

import (
	"bufio"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/goxpdl/goxpdl/recovery"
)

// TestLockHolder is the other process of TestLockFile: it takes the lock
// and holds it until its standard input closes.
func TestLockHolder(t *testing.T) {
	t.Parallel()
	path := os.Getenv("GOXPDL_LOCK_HOLDER")
	if path == "" {
		t.Skip("run by TestLockFile as a separate process")
	}
	release, _, err := recovery.LockFile(path)
	require.NoError(t, err)
	defer release()
	_, _ = os.Stdout.WriteString("locked\n")
	_, _ = bufio.NewReader(os.Stdin).ReadString('\n')
}

func TestLockFile(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "goxpdl.db")

	// Engines of one process share the lock.
	release1, first, err := recovery.LockFile(path)
	require.NoError(t, err)
	require.True(t, first)
	release2, first, err := recovery.LockFile(path)
	require.NoError(t, err)
	require.False(t, first, "the second engine of the process finds it taken by its own process")
	release1()
	release2()

	// Another process holding it keeps this one out, until it exits.
	cmd := exec.Command(os.Args[0], "-test.run=^TestLockHolder$")
	cmd.Env = append(os.Environ(), "GOXPDL_LOCK_HOLDER="+path)
	stdin, err := cmd.StdinPipe()
	require.NoError(t, err)
	stdout, err := cmd.StdoutPipe()
	require.NoError(t, err)
	require.NoError(t, cmd.Start())
	line, err := bufio.NewReader(stdout).ReadString('\n')
	require.NoError(t, err)
	require.Equal(t, "locked\n", line)

	_, _, err = recovery.LockFile(path)
	require.ErrorIs(t, err, recovery.ErrDatabaseInUse)

	require.NoError(t, cmd.Process.Kill()) // a killed holder leaves no lock behind
	_ = cmd.Wait()
	_ = stdin.Close()
	release, first, err := recovery.LockFile(path)
	require.NoError(t, err)
	require.True(t, first)
	release()
}
