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

// goroutineHeader matches the first line of a goroutine in a Go
// traceback: "goroutine 42 [chan receive, 2 minutes]:", or with
// GOTRACEBACK=system and on SIGQUIT "goroutine 42 gp=0x... m=nil [...]:".
var goroutineHeader = regexp.MustCompile(`^goroutine \d+ (?:[^\[]*)\[([^\]]*)\]:$`)

// maxStackGroups bounds how many groups summarizeStacks returns.
const maxStackGroups = 12

// summarizeStacks reads the goroutine dump the Go runtime wrote to the
// log at path (after SIGQUIT) and groups the goroutines by what they
// wait for: the wait reason, the innermost frame outside the runtime, and
// the innermost frame of goxpdl's own code. Most frequent first.
func summarizeStacks(path string) ([]string, error) {
	type group struct {
		key   string
		count int
	}
	counts := make(map[string]*group)
	var state, top, own string
	inStack := false
	flush := func() {
		if !inStack || own == "" {
			return // a runtime or library goroutine: no goxpdl frame
		}
		key := fmt.Sprintf("[%s] %s <- %s", state, top, own)
		if counts[key] == nil {
			counts[key] = &group{key: key}
		}
		counts[key].count++
	}
	err := scanLines(path, func(line string) {
		if m := goroutineHeader.FindStringSubmatch(line); m != nil {
			flush()
			inStack, top, own = true, "", ""
			state, _, _ = strings.Cut(m[1], ",")
			return
		}
		if !inStack || line == "" || strings.HasPrefix(line, "\t") || strings.HasPrefix(line, "created by ") {
			return
		}
		frame := line // "pkg.(*T).Method(0x1, ...)": drop the arguments
		if i := strings.LastIndex(line, "("); i > 0 {
			frame = line[:i]
		}
		if top == "" && !strings.HasPrefix(frame, "runtime.") && !strings.HasPrefix(frame, "internal/") {
			top = frame
		}
		if own == "" && (strings.HasPrefix(frame, "github.com/goxpdl/goxpdl/") || strings.HasPrefix(frame, "main.")) {
			own = strings.TrimPrefix(frame, "github.com/goxpdl/goxpdl/")
		}
	})
	flush()
	if err != nil {
		return nil, err
	}
	groups := make([]*group, 0, len(counts))
	for _, g := range counts {
		groups = append(groups, g)
	}
	sort.Slice(groups, func(i, j int) bool {
		if groups[i].count != groups[j].count {
			return groups[i].count > groups[j].count
		}
		return groups[i].key < groups[j].key
	})
	out := make([]string, 0, min(len(groups), maxStackGroups))
	for i, g := range groups {
		if i == maxStackGroups {
			break
		}
		out = append(out, fmt.Sprintf("%d× %s", g.count, g.key))
	}
	return out, nil
}
