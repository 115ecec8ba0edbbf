package main

import (
	"context"
	"fmt"
	"os/exec"
	"strings"
)

// maxDirtyFiles is how many uncommitted files sourceState names.
const maxDirtyFiles = 12

// sourceState says which code the run tested: the commit of the working
// tree and the files changed since (the nodes are built from the working
// tree, which may hold someone's work in progress). It is "unknown" when
// git cannot tell.
func sourceState(ctx context.Context) string {
	head, err := exec.CommandContext(ctx, "git", "rev-parse", "--short", "HEAD").Output()
	if err != nil {
		return "unknown (git rev-parse: " + err.Error() + ")"
	}
	out, err := exec.CommandContext(ctx, "git", "status", "--porcelain", "--untracked-files=all", "--", "*.go", "go.mod", "go.sum").Output()
	if err != nil {
		return strings.TrimSpace(string(head)) + " (git status: " + err.Error() + ")"
	}
	var dirty []string
	for _, line := range strings.Split(strings.TrimRight(string(out), "\n"), "\n") {
		// The crash test's own files are not what it tests.
		if path := strings.TrimSpace(line[min(3, len(line)):]); path != "" && !strings.HasPrefix(path, "internal/crashtest/") {
			dirty = append(dirty, path)
		}
	}
	s := strings.TrimSpace(string(head))
	switch {
	case len(dirty) == 0:
		return s
	case len(dirty) > maxDirtyFiles:
		return fmt.Sprintf("%s + %d uncommitted files: %s, ...", s, len(dirty), strings.Join(dirty[:maxDirtyFiles], ", "))
	}
	return fmt.Sprintf("%s + %d uncommitted files: %s", s, len(dirty), strings.Join(dirty, ", "))
}
