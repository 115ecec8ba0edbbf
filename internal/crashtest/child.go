package main

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"time"
)

// child is one node process: started by the orchestrator, which kills it
// or stops it, and always waits for it (the goroutine that reaps it is
// the child's own and ends with the process).
type child struct {
	id      string
	run     int // how many times this node id has been started, from 1
	logPath string
	started time.Time
	cmd     *exec.Cmd
	logFile *os.File
	done    chan struct{} // closed once the process is reaped
	waitErr error         // how it ended; valid once done is closed
	killed  bool
	// ready is closed when the node says it started (or it exited);
	// readyAt is when, and isReady whether it did say so.
	ready   chan struct{}
	readyAt time.Time
	isReady bool
}

// readyFD is the node's file descriptor of the ready pipe: the first of
// exec.Cmd.ExtraFiles.
const readyFD = 3

// startChild starts exe with args, its stdout and stderr going to a log
// file in dir.
// startChild starts exe with args, its stdout and stderr going to a log
// file in dir, and the write end of a pipe as file descriptor readyFD for
// the node to say it started.
func startChild(exe string, args []string, id string, run int, dir string) (*child, error) {
	path := filepath.Join(dir, fmt.Sprintf("%s.run%02d.log", id, run))
	f, err := os.Create(path)
	if err != nil {
		return nil, fmt.Errorf("node %s: %w", id, err)
	}
	r, w, err := os.Pipe()
	if err != nil {
		_ = f.Close()
		return nil, fmt.Errorf("node %s: %w", id, err)
	}
	cmd := exec.Command(exe, args...)
	cmd.Stdout, cmd.Stderr = f, f
	cmd.ExtraFiles = []*os.File{w}
	err = cmd.Start()
	_ = w.Close() // the child has its copy
	if err != nil {
		_ = f.Close()
		_ = r.Close()
		return nil, fmt.Errorf("start node %s: %w", id, err)
	}
	c := &child{
		id: id, run: run, logPath: path, started: clock.Now(), cmd: cmd, logFile: f,
		done: make(chan struct{}), ready: make(chan struct{}),
	}
	go c.reap(r)
	return c, nil
}

// reap waits for the node's ready byte (or the end of the pipe, when it
// exits without one), then for the process.
func (c *child) reap(ready *os.File) {
	n, _ := ready.Read(make([]byte, 1))
	c.readyAt, c.isReady = clock.Now(), n == 1
	_ = ready.Close()
	close(c.ready)
	c.waitErr = c.cmd.Wait()
	_ = c.logFile.Close() // the process, its only writer, is gone
	close(c.done)
}

// exited reports whether the process has ended.
func (c *child) exited() bool {
	select {
	case <-c.done:
		return true
	default:
		return false
	}
}

// kill sends SIGKILL and waits for the process to be gone.
func (c *child) kill() {
	if !c.exited() {
		c.killed = true
		_ = c.cmd.Process.Kill() // fails only when it exited meanwhile
	}
	<-c.done
}

// stop asks the node to stop (SIGTERM) once it has started, and waits up
// to timeout in all for it to drain and exit; then it kills it and says
// so.
func (c *child) stop(timeout time.Duration) error {
	if c.exited() {
		return nil
	}
	t := clock.NewTimer(timeout)
	defer t.Stop()
	select {
	case <-c.ready:
	case <-t.C():
		c.kill()
		return fmt.Errorf("node %s (run %d) did not start within %v and was killed; see %s", c.id, c.run, timeout, c.logPath)
	}
	_ = c.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-c.done:
		if c.waitErr != nil {
			return fmt.Errorf("node %s (run %d) stopped with %w; see %s", c.id, c.run, c.waitErr, c.logPath)
		}
		return nil
	case <-t.C():
		c.kill()
		return fmt.Errorf("node %s (run %d) did not stop within %v of SIGTERM and was killed; see %s", c.id, c.run, timeout, c.logPath)
	}
}

// exitStatus describes how a process that ended by itself ended.
func (c *child) exitStatus() string {
	var ee *exec.ExitError
	switch {
	case c.waitErr == nil:
		return "exit status 0"
	case errors.As(c.waitErr, &ee):
		return ee.String()
	}
	return c.waitErr.Error()
}

// dumpStacks sends SIGQUIT, on which the Go runtime writes every
// goroutine's stack to the node's log and exits, and waits up to timeout
// for the process to end (then kills it). It reports whether the node
// was running.
func (c *child) dumpStacks(timeout time.Duration) bool {
	if c.exited() {
		return false
	}
	c.killed = true // it ends on a signal of ours, not by itself
	_ = c.cmd.Process.Signal(syscall.SIGQUIT)
	t := clock.NewTimer(timeout)
	defer t.Stop()
	select {
	case <-c.done:
	case <-t.C():
		c.kill()
	}
	return true
}
