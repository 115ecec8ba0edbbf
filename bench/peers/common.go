package main

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"math"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/goxpdl/goxpdl/timer"
)

// clock is the one clock of the suite (the house rule: time is read
// through timer.Clock).
var clock = timer.Real()

// Engines.
const (
	engineGoxpdl = "goxpdl"
	engineGoWF   = "go-workflows"
)

// Databases.
const (
	dbSQLite  = "sqlite"
	dbMariaDB = "mariadb"
)

// runSpec is one measurement: one engine, one workload, one database,
// in one process (the parent runs each in a child process of its own, so
// that memory and caches do not carry over).
type runSpec struct {
	Engine   string `json:"engine"`
	Workload string `json:"workload"`
	DB       string `json:"db"`
	// SQLitePath is the database file (DB sqlite).
	SQLitePath string `json:"sqlite_path,omitempty"`
	// MySQL is the MariaDB database (DB mariadb).
	MySQL mysqlTarget `json:"mysql"`
	// N is the workload's size: instances, trees, timers.
	N int `json:"n"`
	// Clients is how many client goroutines drive it.
	Clients int `json:"clients"`
	// Phase is W6's: "park" creates the parked instances, "restart"
	// starts the engine on them and measures first progress.
	Phase string `json:"phase,omitempty"`
	// TimerLead, when set, is how far ahead W5's instant is (the
	// default, timerLead, leaves room to start every instance first).
	TimerLead time.Duration `json:"timer_lead,omitempty"`
	// WorkerName, when set, is go-workflows' worker name. By default
	// each process gets a new random one, and an instance stays sticky
	// to the worker that last ran it for 30 s (StickyTimeout): a process
	// restarted under a new name waits that long for it. W6 names the
	// worker, in both of its processes, so that the restart measures the
	// engine rather than that timeout.
	WorkerName string `json:"worker_name,omitempty"`
}

// mysqlTarget names a MariaDB database on loopback.
type mysqlTarget struct {
	Host     string `json:"host"`
	Port     int    `json:"port"`
	User     string `json:"user"`
	Password string `json:"password"`
	Database string `json:"database"`
}

// goDSN is the go-sql-driver form.
func (m mysqlTarget) goDSN() string {
	return fmt.Sprintf("%s:%s@tcp(%s:%d)/%s?parseTime=true&multiStatements=true", m.User, m.Password, m.Host, m.Port, m.Database)
}

// result is what one measurement reports (one JSON object on stdout).
type result struct {
	Engine   string `json:"engine"`
	Workload string `json:"workload"`
	DB       string `json:"db"`
	N        int    `json:"n"`
	// Seconds is the measured phase's duration.
	Seconds float64 `json:"seconds"`
	// Rate is the workload's throughput figure in RateUnit.
	Rate     float64 `json:"rate"`
	RateUnit string  `json:"rate_unit"`
	// P50Ms, P99Ms, MaxMs are the latencies the workload names (start →
	// completed, claim → completed, due → acted on).
	P50Ms float64 `json:"p50_ms"`
	P99Ms float64 `json:"p99_ms"`
	MaxMs float64 `json:"max_ms"`
	// RSSBytes is the process's resident memory at the end (VmRSS),
	// PeakRSSBytes its peak (VmHWM).
	RSSBytes     int64 `json:"rss_bytes"`
	PeakRSSBytes int64 `json:"peak_rss_bytes"`
	// DBBytes is the database's size on disk (W6).
	DBBytes int64 `json:"db_bytes,omitempty"`
	// RestartMs is W6's restart to first progress.
	RestartMs float64 `json:"restart_ms,omitempty"`
	// Failed counts instances that did not finish as they should.
	Failed int `json:"failed"`
	// DupAccepted, DupRejected count W4's duplicate completions.
	DupAccepted int `json:"dup_accepted,omitempty"`
	DupRejected int `json:"dup_rejected,omitempty"`
	// Load1 is the machine's 1-minute load average when the run began.
	Load1 float64 `json:"load1"`
	Note  string  `json:"note,omitempty"`
}

// tracker follows instances from their start to their completion, by key
// (an engine's instance id as text). A completion may be seen before
// the start call has returned; it is kept until then.
type tracker struct {
	mu       sync.Mutex
	began    map[string]time.Time
	finished map[string]time.Time
	lat      []time.Duration
	want     int
	end      time.Time
	last     time.Time
	signal   chan struct{}
	waiters  map[string]chan struct{}
}

func newTracker(want int) *tracker {
	return &tracker{
		began: map[string]time.Time{}, finished: map[string]time.Time{},
		want: want, last: clock.Now(), signal: make(chan struct{}, 1),
		waiters: map[string]chan struct{}{},
	}
}

// started notes that the instance key was started at t.
func (t *tracker) started(key string, at time.Time) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.began[key] = at
	if done, ok := t.finished[key]; ok {
		t.count(key, done)
	}
}

// done notes that the instance key completed now.
func (t *tracker) done(key string) {
	now := clock.Now()
	t.mu.Lock()
	defer t.mu.Unlock()
	t.last = now
	if _, ok := t.finished[key]; ok {
		return
	}
	t.finished[key] = now
	if _, ok := t.began[key]; ok {
		t.count(key, now)
	}
	if ch, ok := t.waiters[key]; ok {
		close(ch)
		delete(t.waiters, key)
	}
}

// awaitOne returns when the instance key has completed, or with ctx's
// error, or an error when it has not in stallLimit.
func (t *tracker) awaitOne(ctx context.Context, key string) error {
	t.mu.Lock()
	if _, ok := t.finished[key]; ok {
		t.mu.Unlock()
		return nil
	}
	ch := make(chan struct{})
	t.waiters[key] = ch
	t.mu.Unlock()
	tm := clock.NewTimer(stallLimit)
	defer tm.Stop()
	select {
	case <-ch:
		return nil
	case <-tm.C():
		return fmt.Errorf("instance %s did not complete in %v", key, stallLimit)
	case <-ctx.Done():
		return ctx.Err()
	}
}

// progress notes that something happened (for the stall check).
func (t *tracker) progress() {
	now := clock.Now()
	t.mu.Lock()
	t.last = now
	t.mu.Unlock()
}

func (t *tracker) count(key string, at time.Time) {
	t.lat = append(t.lat, at.Sub(t.began[key]))
	t.end = at
	select {
	case t.signal <- struct{}{}:
	default:
	}
}

// stallLimit ends a wait when nothing has happened for this long. It is
// longer than go-workflows' workflow lock timeout (1 min) plus its poll
// (30 s): a workflow task whose completion failed (a deadlock on
// MariaDB) is taken again only after that, and the run shows it as
// latency rather than failing.
const stallLimit = 150 * time.Second

// wait returns when want instances have completed, or nothing happened
// for stallLimit, or ctx ends. It returns the latencies and when the
// last one completed.
func (t *tracker) wait(ctx context.Context) ([]time.Duration, time.Time, error) {
	for {
		t.mu.Lock()
		n, quiet := len(t.lat), clock.Now().Sub(t.last)
		if n >= t.want || quiet >= stallLimit {
			lat, end := slices.Clone(t.lat), t.end
			t.mu.Unlock()
			if n < t.want {
				return lat, clock.Now(), fmt.Errorf("%d of %d instances completed; none for %v", n, t.want, stallLimit)
			}
			return lat, end, nil
		}
		t.mu.Unlock()
		tm := clock.NewTimer(time.Second)
		select {
		case <-t.signal:
			tm.Stop()
		case <-tm.C():
		case <-ctx.Done():
			tm.Stop()
			return nil, time.Time{}, ctx.Err()
		}
	}
}

// fillLatencies sets the percentiles of r from ds (sorted in place).
func fillLatencies(r *result, ds []time.Duration) {
	if len(ds) == 0 {
		return
	}
	slices.Sort(ds)
	pct := func(p float64) float64 {
		i := int(math.Ceil(p*float64(len(ds)))) - 1
		return ms(ds[min(max(i, 0), len(ds)-1)])
	}
	r.P50Ms, r.P99Ms, r.MaxMs = pct(0.50), pct(0.99), ms(ds[len(ds)-1])
}

func ms(d time.Duration) float64 { return round(d.Seconds()*1000, 2) }

func round(x float64, digits int) float64 {
	f := math.Pow(10, float64(digits))
	return math.Round(x*f) / f
}

// fillMemory sets the process's resident memory figures.
func fillMemory(r *result) {
	data, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return
	}
	r.RSSBytes = statusKB(data, "VmRSS:")
	r.PeakRSSBytes = statusKB(data, "VmHWM:")
}

// statusKB reads a "Name:   1234 kB" line of /proc/self/status, in bytes.
func statusKB(status []byte, name string) int64 {
	sc := bufio.NewScanner(bytes.NewReader(status))
	for sc.Scan() {
		rest, ok := strings.CutPrefix(sc.Text(), name)
		if !ok {
			continue
		}
		f := strings.Fields(rest)
		if len(f) != 2 || f[1] != "kB" {
			return 0
		}
		kb, err := strconv.ParseInt(f[0], 10, 64)
		if err != nil {
			return 0
		}
		return kb * 1024
	}
	return 0
}

// loadAverage returns the 1-minute load average (0 where unknown).
func loadAverage() float64 {
	data, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return 0
	}
	f := strings.Fields(string(data))
	if len(f) == 0 {
		return 0
	}
	v, err := strconv.ParseFloat(f[0], 64)
	if err != nil {
		return 0
	}
	return v
}

// clients runs fn(i) for i in [0, n) from c goroutines, and returns the
// first error. The goroutines are the benchmark's clients; they end
// before it returns.
func clients(ctx context.Context, n, c int, fn func(ctx context.Context, i int) error) error {
	var mu sync.Mutex
	next := 0
	var firstErr error
	var wg sync.WaitGroup
	for range c {
		wg.Go(func() {
			for ctx.Err() == nil {
				mu.Lock()
				i := next
				next++
				stop := i >= n || firstErr != nil
				mu.Unlock()
				if stop {
					return
				}
				if err := fn(ctx, i); err != nil {
					mu.Lock()
					if firstErr == nil {
						firstErr = err
					}
					mu.Unlock()
				}
			}
		})
	}
	wg.Wait()
	if firstErr == nil {
		firstErr = ctx.Err()
	}
	return firstErr
}
