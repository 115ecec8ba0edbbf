package main

import (
	"bufio"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
)

// logSummary is one kind of line of the nodes' logs: a level and message,
// how often it was logged, and the first such line.
type logSummary struct {
	Level   string `json:"level"`
	Message string `json:"message"`
	Count   int    `json:"count"`
	Example string `json:"example"`
}

// slogLine matches the level and message of a log/slog text line.
var slogLine = regexp.MustCompile(`level=(\w+) msg=("(?:[^"\\]|\\.)*"|\S+)`)

// quietMessages are the nodes' own routine lines, left out of the summary.
var quietMessages = map[string]bool{
	"node started": true, stoppedMessage: true, "seed: starting instances": true, "seed: done": true,
}

// counterField is a numeric attribute of a log line.
var counterField = regexp.MustCompile(` (\w+)=(\d+)\b`)

// nodeCounters totals the counters of the nodes' "node stopped" lines in
// the *.log files of dir: only runs that were stopped, not killed, write
// one. It returns the totals and how many runs they come from.
func nodeCounters(dir string) (map[string]int64, int, error) {
	files, err := filepath.Glob(filepath.Join(dir, "*.log"))
	if err != nil {
		return nil, 0, err
	}
	totals := make(map[string]int64)
	runs := 0
	for _, f := range files {
		err := scanLines(f, func(line string) {
			if !strings.Contains(line, `msg="`+stoppedMessage+`"`) {
				return
			}
			runs++
			for _, m := range counterField.FindAllStringSubmatch(line, -1) {
				n, err := strconv.ParseInt(m[2], 10, 64)
				if err == nil {
					totals[m[1]] += n
				}
			}
		})
		if err != nil {
			return nil, 0, err
		}
	}
	return totals, runs, nil
}

// maxExampleLen bounds the example line of a summary.
const maxExampleLen = 400

// summarizeLogs groups the lines of the *.log files of dir by level and
// message, most severe first, then most frequent. A Go panic or fatal
// error (which slog does not write) counts as level PANIC.
func summarizeLogs(dir string) ([]logSummary, error) {
	files, err := filepath.Glob(filepath.Join(dir, "*.log"))
	if err != nil {
		return nil, err
	}
	byKey := make(map[string]*logSummary)
	add := func(level, msg, line string) {
		key := level + "\x00" + msg
		s := byKey[key]
		if s == nil {
			ex := line
			if len(ex) > maxExampleLen {
				ex = ex[:maxExampleLen] + "..."
			}
			s = &logSummary{Level: level, Message: msg, Example: ex}
			byKey[key] = s
		}
		s.Count++
	}
	for _, f := range files {
		if err := scanLog(f, add); err != nil {
			return nil, err
		}
	}
	out := make([]logSummary, 0, len(byKey))
	for _, s := range byKey {
		out = append(out, *s)
	}
	rank := map[string]int{"PANIC": 0, "ERROR": 1, "WARN": 2, "INFO": 3}
	sort.Slice(out, func(i, j int) bool {
		a, b := out[i], out[j]
		if ra, rb := rankOf(rank, a.Level), rankOf(rank, b.Level); ra != rb {
			return ra < rb
		}
		if a.Count != b.Count {
			return a.Count > b.Count
		}
		return a.Message < b.Message
	})
	return out, nil
}

func rankOf(rank map[string]int, level string) int {
	if r, ok := rank[level]; ok {
		return r
	}
	return len(rank)
}

func scanLog(path string, add func(level, msg, line string)) error {
	base := filepath.Base(path)
	return scanLines(path, func(line string) {
		switch {
		case strings.HasPrefix(line, "panic:") || strings.HasPrefix(line, "fatal error:"):
			add("PANIC", line, base+": "+line)
		default:
			m := slogLine.FindStringSubmatch(line)
			if m == nil {
				return
			}
			msg := strings.Trim(m[2], `"`)
			if !quietMessages[msg] {
				add(m[1], msg, base+": "+line)
			}
		}
	})
}

// scanLines calls fn with each line of the file at path.
func scanLines(path string, fn func(line string)) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer func() { _ = f.Close() }()
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 64*1024), 1024*1024)
	for sc.Scan() {
		fn(sc.Text())
	}
	if err := sc.Err(); err != nil {
		return fmt.Errorf("read %s: %w", path, err)
	}
	return nil
}
