// Package docblocks keeps the code blocks of goxpdl's documentation true.
//
// Every ```go block of README.md and docs/*.md must be, byte for byte, a
// region of a compiled Go test file (usually an Example with an Output,
// so it also runs), marked with a comment naming the document:
//
//	// begin docblock README.md
//	...the code, indented as the code around it...
//	// end docblock
//
// The region's lines lose the indentation of its begin comment. The test
// of this package walks the repository, pairs blocks with regions and
// fails on a block without its region, or a region without its block, so
// that neither can change alone; it also checks that the `make` targets
// and `go run ./...` packages the ```sh blocks name exist. The README's
// `go run ./cmd/goxpdl ...` lines are run by cmd/goxpdl's tests.
//
// To change a block, change the region, run the tests, and paste the
// region (unindented) into the document; a failing test prints both.
//
// A ```txtar block is, the same way, a region of one of the command-line
// scripts that cmd/goxpdl's tests run (cmd/goxpdl/testdata/script), marked
// with "# begin docblock DOC" and "# end docblock": a worked session of
// goxpdl commands in the documentation is a script that runs.
package docblocks

import (
	"bufio"
	"bytes"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
)

// Block is one fenced code block of a Markdown document.
type Block struct {
	// File is the document, relative to the repository root.
	File string
	// Line is the line of the opening fence, from 1.
	Line int
	// Lang is the fence's info string ("go", "sh", ...; "" for none).
	Lang string
	// Text is the block's content, each line ending in a newline.
	Text string
}

// Fenced returns the fenced code blocks (``` fences) of the Markdown
// document doc (a path relative to root), in order. A fence may be
// indented (inside a list); its content loses that much indentation.
func Fenced(root, doc string) ([]Block, error) {
	data, err := os.ReadFile(filepath.Join(root, filepath.FromSlash(doc)))
	if err != nil {
		return nil, err
	}
	var blocks []Block
	var open *Block
	indent := ""
	sc := bufio.NewScanner(bytes.NewReader(data))
	for n := 1; sc.Scan(); n++ {
		line := sc.Text()
		trimmed := strings.TrimLeft(line, " ")
		switch {
		case open == nil && strings.HasPrefix(trimmed, "```"):
			indent = line[:len(line)-len(trimmed)]
			open = &Block{File: doc, Line: n, Lang: strings.TrimSpace(strings.TrimPrefix(trimmed, "```"))}
		case open != nil && trimmed == "```":
			blocks = append(blocks, *open)
			open = nil
		case open != nil:
			open.Text += strings.TrimPrefix(line, indent) + "\n"
		}
	}
	if err := sc.Err(); err != nil {
		return nil, err
	}
	if open != nil {
		return nil, fmt.Errorf("%s:%d: code block never closed", doc, open.Line)
	}
	return blocks, nil
}

// Region is a marked region of a Go file or of a script.
type Region struct {
	// File is the Go file, Line the line of its begin comment.
	File string
	Line int
	// Doc is the document the begin comment names, relative to the
	// repository root (e.g. "README.md", "docs/engine.md").
	Doc string
	// Text is the region's lines, unindented, each ending in a newline.
	Text string
}

// The marker comments of a region: in Go files, and in scripts.
const (
	beginMarker       = "// begin docblock "
	endMarker         = "// end docblock"
	scriptBeginMarker = "# begin docblock "
	scriptEndMarker   = "# end docblock"
)

// ScriptDir holds the command-line scripts, relative to the repository
// root.
const ScriptDir = "cmd/goxpdl/testdata/script"

// ScriptRegions returns the regions marked in the scripts of ScriptDir.
func ScriptRegions(root string) ([]Region, error) {
	paths, err := filepath.Glob(filepath.Join(root, filepath.FromSlash(ScriptDir), "*.txtar"))
	if err != nil {
		return nil, err
	}
	var regions []Region
	for _, path := range paths {
		found, err := markedRegions(path, scriptBeginMarker, scriptEndMarker)
		if err != nil {
			return nil, err
		}
		regions = append(regions, found...)
	}
	return regions, nil
}

// Regions returns the regions marked in the _test.go files under root,
// skipping hidden directories, bin and testdata.
func Regions(root string) ([]Region, error) {
	var regions []Region
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			name := d.Name()
			if path != root && (strings.HasPrefix(name, ".") || name == "bin" || name == "testdata") {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(path, "_test.go") {
			return nil
		}
		found, err := fileRegions(path)
		regions = append(regions, found...)
		return err
	})
	return regions, err
}

// fileRegions returns the regions of one Go file.
func fileRegions(path string) ([]Region, error) {
	return markedRegions(path, beginMarker, endMarker)
}

// markedRegions returns the regions of one file between the begin and
// end markers.
func markedRegions(path, beginMarker, endMarker string) ([]Region, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var regions []Region
	var open *Region
	indent := ""
	for i, line := range strings.Split(string(data), "\n") {
		trimmed := strings.TrimLeft(line, "\t ")
		switch {
		case strings.HasPrefix(trimmed, beginMarker):
			if open != nil {
				return nil, fmt.Errorf("%s:%d: docblock begins inside the docblock of line %d", path, i+1, open.Line)
			}
			indent = line[:len(line)-len(trimmed)]
			open = &Region{File: path, Line: i + 1, Doc: strings.TrimSpace(strings.TrimPrefix(trimmed, beginMarker))}
		case strings.HasPrefix(trimmed, endMarker):
			if open == nil {
				return nil, fmt.Errorf("%s:%d: docblock ends without a beginning", path, i+1)
			}
			regions = append(regions, *open)
			open = nil
		case open != nil:
			if line != "" && !strings.HasPrefix(line, indent) {
				return nil, fmt.Errorf("%s:%d: docblock line is indented less than its begin comment", path, i+1)
			}
			open.Text += strings.TrimPrefix(line, indent) + "\n"
		}
	}
	if open != nil {
		return nil, fmt.Errorf("%s:%d: docblock never ends", path, open.Line)
	}
	return regions, nil
}

// Commands splits a shell block into its commands: one per line, words
// split at spaces, a trailing # comment and blank lines dropped. A line
// with quotes, a continuation or shell operators is refused: the checks
// built on this cannot read it.
func Commands(b Block) ([][]string, error) {
	var cmds [][]string
	for i, line := range strings.Split(b.Text, "\n") {
		if at := strings.Index(line, "#"); at >= 0 {
			line = line[:at]
		}
		if strings.ContainsAny(line, "'\"\\|&;<>$`") {
			return nil, fmt.Errorf("%s:%d: %q is too complex to check; keep shell blocks to plain commands", b.File, b.Line+1+i, line)
		}
		if words := strings.Fields(line); len(words) > 0 {
			cmds = append(cmds, words)
		}
	}
	return cmds, nil
}

// Root returns the repository root: the nearest directory above dir (or
// dir itself) that holds go.mod.
func Root(dir string) (string, error) {
	dir, err := filepath.Abs(dir)
	if err != nil {
		return "", err
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", fmt.Errorf("no go.mod above %s", dir)
		}
		dir = parent
	}
}

// Documents returns README.md and docs/*.md under root, relative to it.
func Documents(root string) ([]string, error) {
	docs, err := filepath.Glob(filepath.Join(root, "docs", "*.md"))
	if err != nil {
		return nil, err
	}
	out := []string{"README.md"}
	for _, d := range docs {
		rel, err := filepath.Rel(root, d)
		if err != nil {
			return nil, err
		}
		out = append(out, filepath.ToSlash(rel))
	}
	return out, nil
}
