package main

import (
	"errors"
	"fmt"
	"strings"

	"github.com/goxpdl/goxpdl/engine"
	"github.com/goxpdl/goxpdl/xpdl"
)

// pickProcess finds the WorkflowProcess a --process flag names in pkg (read
// from file): by Id, else by Name; "" picks engine.MainProcess. An error
// lists the candidates by Id and Name, so that the user can name one.
func pickProcess(pkg *xpdl.Package, file, flag string) (*xpdl.Process, error) {
	if flag == "" {
		proc, err := engine.MainProcess(pkg)
		if err != nil {
			return nil, fmt.Errorf("%w (use --process ID|NAME)", err)
		}
		return proc, nil
	}
	if proc := pkg.Process(flag); proc != nil {
		return proc, nil
	}
	var named []*xpdl.Process
	for _, p := range pkg.Processes {
		if p.Name == flag {
			named = append(named, p)
		}
	}
	switch len(named) {
	case 1:
		return named[0], nil
	case 0:
		if len(pkg.Processes) == 0 {
			return nil, fmt.Errorf("--process %q: %s has no WorkflowProcess", flag, file)
		}
		return nil, fmt.Errorf("--process %q: no WorkflowProcess of %s has that Id or Name; it has %s", flag, file, processLabels(pkg.Processes))
	}
	return nil, fmt.Errorf("--process %q is ambiguous: %d WorkflowProcesses of %s have that Name (%s); name one by its Id", flag, len(named), file, processLabels(named))
}

// processLabels lists processes by Id and Name (xpdl.Process.Label).
func processLabels(ps []*xpdl.Process) string {
	labels := make([]string, len(ps))
	for i, p := range ps {
		labels[i] = p.Label()
	}
	return strings.Join(labels, ", ")
}

// emptyProcessProblem reports whether err is the engine's refusal to start
// a process without activities, and if so says it as validate does
// (FILE:LINE:COL: message), for an exit status of 1.
func emptyProcessProblem(err error, file string, proc *xpdl.Process) (string, bool) {
	if !errors.Is(err, engine.ErrEmptyProcess) {
		return "", false
	}
	return fmt.Sprintf("%s:%d:%d: %v", file, proc.Pos.Line, proc.Pos.Col, err), true
}
