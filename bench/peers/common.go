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
	// TimerLead, when set, is how far ahead W5's instant is (by default
	// timerLead works it out from a pilot, so that every instance is
	// started and waits on its timer first).
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
	// armed are the instances known to wait on their timer (W5).
	armed     map[string]bool
	armSignal chan struct{}
}

func newTracker(want int) *tracker {
	return &tracker{
		began: map[string]time.Time{}, finished: map[string]time.Time{},
		want: want, last: clock.Now(), signal: make(chan struct{}, 1),
		waiters: map[string]chan struct{}{}, armed: map[string]bool{}, armSignal: make(chan struct{}, 1),
	}
}

// reset forgets every instance and waits for want from now on (W5's
// measured instances after its pilot).
func (t *tracker) reset(want int) {
	t.mu.Lock()
	defer t.mu.Unlock()
	clear(t.began)
	clear(t.finished)
	clear(t.armed)
	t.lat, t.want, t.last, t.end = nil, want, clock.Now(), time.Time{}
}

// armedOne notes that the instance key waits on its timer.
func (t *tracker) armedOne(key string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.last = clock.Now()
	t.armed[key] = true
	select {
	case t.armSignal <- struct{}{}:
	default:
	}
}

// waitArmed returns when n instances wait on their timers, or with an
// error when none has for stallLimit, or ctx's.
func (t *tracker) waitArmed(ctx context.Context, n int) error {
	for {
		t.mu.Lock()
		got, quiet := len(t.armed), clock.Now().Sub(t.last)
		t.mu.Unlock()
		if got >= n {
			return nil
		}
		if quiet >= stallLimit {
			return fmt.Errorf("%d of %d instances wait on their timer; none more for %v", got, n, stallLimit)
		}
		tm := clock.NewTimer(time.Second)
		select {
		case <-t.armSignal:
			tm.Stop()
		case <-tm.C():
		case <-ctx.Done():
			tm.Stop()
			return ctx.Err()
		}
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

// timerStarter starts W5's instance i (a pilot's when pilot is set),
// whose timer is due at due, and notes it in the run's tracker
// (tracker.started, at due).
type timerStarter func(ctx context.Context, i int, pilot bool, due time.Time) error

// runTimers runs W5 for an engine: a pilot of pilotSize instances due
// at once, to completion, which measures how fast this engine on this
// database, on this machine now, starts instances and gets them to
// wait on a timer; then N instances whose timers are all due at one
// instant, far enough ahead (timerLead) for them all to be started and
// waiting first. It returns when the N have completed, with their
// latencies from the instant, when the last completed, and the instant.
// The run fails when the N were not all waiting by the instant: their
// timers would have been late before they were armed. idle, when not
// nil, waits for the engine to go quiet after the pilot.
func runTimers(ctx context.Context, spec runSpec, tr *tracker, start timerStarter, idle func(context.Context) error) ([]time.Duration, time.Time, time.Time, error) {
	k := pilotSize(spec.N)
	tr.reset(k)
	pilotBegan := clock.Now()
	pilotDue := pilotBegan.Truncate(time.Millisecond)
	if err := clients(ctx, k, spec.Clients, func(ctx context.Context, i int) error {
		return start(ctx, i, true, pilotDue)
	}); err != nil {
		return nil, time.Time{}, time.Time{}, fmt.Errorf("pilot: %w", err)
	}
	if _, _, err := tr.wait(ctx); err != nil {
		return nil, time.Time{}, time.Time{}, fmt.Errorf("pilot: %w", err)
	}
	pilot := clock.Now().Sub(pilotBegan)
	if idle != nil {
		if err := idle(ctx); err != nil {
			return nil, time.Time{}, time.Time{}, err
		}
	}
	tr.reset(spec.N)
	lead := timerLead(spec, k, pilot)
	began := clock.Now()
	due := began.Add(lead).Truncate(time.Millisecond)
	if err := clients(ctx, spec.N, spec.Clients, func(ctx context.Context, i int) error {
		return start(ctx, i, false, due)
	}); err != nil {
		return nil, time.Time{}, due, err
	}
	if err := tr.waitArmed(ctx, spec.N); err != nil {
		return nil, time.Time{}, due, err
	}
	armed := clock.Now()
	fmt.Fprintf(os.Stderr, "peers: W5 %s %s: pilot of %d in %v; lead %v; %d waiting on their timers in %v, %v before the instant\n",
		spec.Engine, spec.DB, k, pilot.Round(time.Millisecond), lead.Round(time.Millisecond), spec.N,
		armed.Sub(began).Round(time.Millisecond), due.Sub(armed).Round(time.Millisecond))
	if !armed.Before(due) {
		return nil, time.Time{}, due, fmt.Errorf("%d instances were waiting on their timers only %v after the instant (lead %v from a pilot of %d in %v)",
			spec.N, armed.Sub(due).Round(time.Millisecond), lead.Round(time.Millisecond), k, pilot.Round(time.Millisecond))
	}
	// Nothing happens before the instant: the stall check counts from it.
	tm := clock.NewTimer(due.Sub(clock.Now()))
	select {
	case <-tm.C():
	case <-ctx.Done():
		tm.Stop()
		return nil, time.Time{}, due, ctx.Err()
	}
	tr.progress()
	lat, end, err := tr.wait(ctx)
	return lat, end, due, err
}

// pilotSize is how many instances W5's pilot runs: a twentieth of N, at
// least 50 (all of N when it is smaller).
func pilotSize(n int) int { return min(n, max(50, n/20)) }

// timerLead is how far ahead W5's instant is, unless the spec says: the
// time the pilot's k instances took from their start to their
// completion, scaled to N, plus five seconds. The pilot's instances also
// fired and completed, so the N, which only have to start and wait, need
// about half of that at the pilot's pace: the lead leaves them about
// twice what they should need, for a machine whose load changes
// meanwhile.
func timerLead(spec runSpec, k int, pilot time.Duration) time.Duration {
	if spec.TimerLead > 0 {
		return spec.TimerLead
	}
	return time.Duration(float64(pilot)*float64(spec.N)/float64(k)) + 5*time.Second
}
