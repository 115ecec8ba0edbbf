package console_test

import (
	"os"
	"os/exec"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/goxpdl/goxpdl/console"
	"github.com/goxpdl/goxpdl/engine"
	"github.com/goxpdl/goxpdl/internal/docblocks"
)

// TestDocsSession runs the curl session of docs/console.md (its ```bash
// block that starts with "# session") against a fresh console, so that
// the documented API calls stay true. Every curl runs with -f: an HTTP
// error fails the test.
func TestDocsSession(t *testing.T) {
	t.Parallel()
	if _, err := exec.LookPath("curl"); err != nil {
		t.Skip("curl is not installed; the documented session needs it")
	}
	f := newFixture(t, openSQLite(t), console.Options{})
	blocks, err := docblocks.Fenced("..", "docs/console.md")
	require.NoError(t, err)
	var session string
	for _, b := range blocks {
		if b.Lang == "bash" && strings.HasPrefix(b.Text, "# session\n") {
			session = b.Text
		}
	}
	require.NotEmpty(t, session, "docs/console.md has a ```bash block starting with # session")
	cmd := exec.Command("bash", "-e", "-o", "pipefail", "-c", session)
	cmd.Dir = ".." // the repository root, where the session's file paths start
	cmd.Env = append(os.Environ(), "CONSOLE="+f.srv.URL)
	out, err := cmd.CombinedOutput()
	require.NoError(t, err, "the session failed:\n%s", out)
	require.Contains(t, string(out), `"ticket": "T-17"`, "the audit shows the data given with the suspend")
	require.Contains(t, string(out), `"count": 1`, "the bulk action counts before it acts")
	f.idle()
	page, err := f.eng.Instances(t.Context(), engine.InstanceFilter{BusinessKey: "ORDER-7"})
	require.NoError(t, err)
	require.Len(t, page.Instances, 1)
	require.Equal(t, "Completed", f.state(page.Instances[0].ID), "the jump to Archive finished the instance")
}
