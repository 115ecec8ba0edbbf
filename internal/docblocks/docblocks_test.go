package docblocks_test

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/goxpdl/goxpdl/internal/docblocks"
)

// root is the repository root, found from this package's directory.
func root(t *testing.T) string {
	t.Helper()
	r, err := docblocks.Root(".")
	require.NoError(t, err)
	return r
}

// blocks returns the fenced blocks of every document, by language.
func blocks(t *testing.T, root string) map[string][]docblocks.Block {
	t.Helper()
	docs, err := docblocks.Documents(root)
	require.NoError(t, err)
	byLang := map[string][]docblocks.Block{}
	for _, doc := range docs {
		bs, err := docblocks.Fenced(root, doc)
		require.NoError(t, err)
		for _, b := range bs {
			byLang[b.Lang] = append(byLang[b.Lang], b)
		}
	}
	return byLang
}

// Every ```go block of the documentation is a marked region of a compiled
// test file, and every region is a block of the document it names: the
// snippets compile (and mostly run as Examples) and cannot drift.
func TestGoBlocksAreCompiledRegions(t *testing.T) {
	t.Parallel()
	r := root(t)
	regions, err := docblocks.Regions(r)
	require.NoError(t, err)
	pair(t, r, blocks(t, r)["go"], regions, "```go block", "a _test.go file marked \"// begin docblock DOC\" ... \"// end docblock\"; mark the code it shows in a compiled Example or test")
}

// Every ```txtar block is a marked region of a command-line script that
// cmd/goxpdl's tests run: a worked session in the documentation runs.
func TestScriptBlocksAreTestedRegions(t *testing.T) {
	t.Parallel()
	r := root(t)
	regions, err := docblocks.ScriptRegions(r)
	require.NoError(t, err)
	pair(t, r, blocks(t, r)["txtar"], regions, "```txtar block", "a script of "+docblocks.ScriptDir+" marked \"# begin docblock DOC\" ... \"# end docblock\"; write the session as a script")
}

// pair checks that each block is the text of a region marked for its
// document, and each region a block.
func pair(t *testing.T, r string, blocks []docblocks.Block, regions []docblocks.Region, what, where string) {
	t.Helper()
	used := make([]bool, len(regions))
	for _, b := range blocks {
		var candidates []docblocks.Region
		matched := false
		for i, reg := range regions {
			if reg.Doc != b.File {
				continue
			}
			if reg.Text == b.Text {
				used[i], matched = true, true
				break
			}
			if !used[i] {
				candidates = append(candidates, reg)
			}
		}
		if matched {
			continue
		}
		if len(candidates) == 1 {
			rel, _ := filepath.Rel(r, candidates[0].File)
			require.Equal(t, candidates[0].Text, b.Text,
				"%s:%d: this %s differs from the region %s:%d marked for it; make them the same (the region runs, the block is copied from it)",
				b.File, b.Line, what, rel, candidates[0].Line)
		}
		t.Errorf("%s:%d: this %s is no region of %s, and copy it here:\n%s", b.File, b.Line, what, where, b.Text)
	}
	for i, reg := range regions {
		if !used[i] {
			rel, _ := filepath.Rel(r, reg.File)
			t.Errorf("%s:%d: the region marked for %s is no %s of it; copy it there or remove the markers:\n%s", rel, reg.Line, reg.Doc, what, reg.Text)
		}
	}
}

// makeTarget matches a Makefile target's rule line.
var makeTarget = regexp.MustCompile(`(?m)^([A-Za-z0-9/_.-]+):`)

// The ```sh blocks name make targets that exist and go run packages
// that exist; cmd/goxpdl's tests run the README's goxpdl commands.
func TestShellBlocksNameWhatExists(t *testing.T) {
	t.Parallel()
	r := root(t)
	makefile, err := os.ReadFile(filepath.Join(r, "Makefile"))
	require.NoError(t, err)
	targets := map[string]bool{}
	for _, m := range makeTarget.FindAllStringSubmatch(string(makefile), -1) {
		targets[m[1]] = true
	}
	sh := blocks(t, r)["sh"]
	require.NotEmpty(t, sh, "README.md opens with a ```sh block of commands")
	for _, b := range sh {
		cmds, err := docblocks.Commands(b)
		require.NoError(t, err)
		for _, cmd := range cmds {
			switch {
			case cmd[0] == "make":
				for _, target := range cmd[1:] {
					if !strings.Contains(target, "=") {
						require.True(t, targets[target], "%s:%d: make %s: no such target in the Makefile", b.File, b.Line, target)
					}
				}
			case cmd[0] == "go" && len(cmd) > 2 && cmd[1] == "run":
				pkg := filepath.Join(r, filepath.FromSlash(cmd[2]))
				mains, err := filepath.Glob(filepath.Join(pkg, "*.go"))
				require.NoError(t, err)
				require.NotEmpty(t, mains, "%s:%d: go run %s: no Go package there", b.File, b.Line, cmd[2])
			default:
				t.Errorf("%s:%d: %q: the test knows how to check make and go run commands only; add a check for this one", b.File, b.Line, strings.Join(cmd, " "))
			}
		}
	}
}
