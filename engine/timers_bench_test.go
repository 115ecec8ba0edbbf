package engine_test

import (
	"context"
	"io"
	"log/slog"
	"os"
	"slices"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"golang.org/x/sync/errgroup"

	"github.com/goxpdl/goxpdl/engine"
	"github.com/goxpdl/goxpdl/store/dbtest"
)

// BenchmarkTimersDueAtOnce arms GOXPDL_BENCH_TIMERS (default 10,000)
// SYNCHR deadlines due at the same instant, one per process instance, on
// the real clock, and measures how late the engine acts on each: the
// deadline.fired record's Time minus its Due. It reports p50, p99 and max
// of that lateness, the timer service's own worst firing lateness, and
// fails if a deadline fired twice or not at all. Run it with
// `make bench-timers`; each iteration is one full run.
func BenchmarkTimersDueAtOnce(b *testing.B) {
	n := 10000
	if s := os.Getenv("GOXPDL_BENCH_TIMERS"); s != "" {
		var err error
		n, err = strconv.Atoi(s)
		require.NoError(b, err, "GOXPDL_BENCH_TIMERS")
	}
	for _, d := range dbtest.Dialects {
		b.Run(d.Name, func(b *testing.B) {
			for range b.N {
				benchTimersOnce(b, d, n)
			}
		})
	}
}

// dueAtXPDL: Wait (manual, SYNCHR deadline at the epoch milliseconds in
// dueAt) -> Late on the exception.
const dueAtXPDL = `<?xml version="1.0" encoding="UTF-8"?>
<Package xmlns="http://www.wfmc.org/2002/XPDL1.0" Id="dueat" Name="dueat">
  <PackageHeader><XPDLVersion>1.0</XPDLVersion><Vendor>goxpdl</Vendor><Created>2026-11-23</Created></PackageHeader>
  <Script Type="text/javascript"/>
  <Participants><Participant Id="clerk"><ParticipantType Type="ROLE"/></Participant></Participants>
  <WorkflowProcesses>
    <WorkflowProcess Id="p">
      <DataFields><DataField Id="dueAt"><DataType><BasicType Type="INTEGER"/></DataType></DataField></DataFields>
      <Activities>
        <Activity Id="Wait"><Implementation><No/></Implementation><Performer>clerk</Performer>
          <Deadline Execution="SYNCHR"><DeadlineCondition>dueAt</DeadlineCondition><ExceptionName>late</ExceptionName></Deadline></Activity>
        <Activity Id="Late"><Route/></Activity>
      </Activities>
      <Transitions>
        <Transition Id="t1" From="Wait" To="Late"><Condition Type="EXCEPTION">late</Condition></Transition>
      </Transitions>
    </WorkflowProcess>
  </WorkflowProcesses>
</Package>`

func benchTimersOnce(b *testing.B, d dbtest.Dialect, n int) {
	b.StopTimer()
	db := d.Open(b)
	e, err := engine.New(engine.Config{DB: db, Logger: slog.New(slog.NewTextHandler(io.Discard, nil)), TimerPollInterval: time.Second})
	require.NoError(b, err)
	ctx := context.Background()
	var mu sync.Mutex
	fired := map[int64]int{}
	var lateness []time.Duration
	all := make(chan struct{})
	unsubscribe := e.Subscribe(func(r engine.Record) {
		if r.Type != engine.RecordDeadlineFired {
			return
		}
		mu.Lock()
		defer mu.Unlock()
		fired[r.Instance]++
		lateness = append(lateness, r.Time.Sub(*r.Due))
		if len(lateness) == n {
			close(all)
		}
	})
	defer unsubscribe()
	require.NoError(b, e.Start(ctx))
	defer func() { require.NoError(b, e.Stop(ctx)) }()
	_, err = e.Deploy(ctx, []byte(dueAtXPDL))
	require.NoError(b, err)

	// Every deadline is due at the same instant, far enough ahead for
	// all the instances to start first.
	due := time.Now().Add(time.Duration(n)*4*time.Millisecond + 6*time.Second).Truncate(time.Millisecond)
	started := time.Now()
	var g errgroup.Group
	g.SetLimit(8)
	for range n {
		g.Go(func() error {
			_, err := e.StartProcess(ctx, engine.StartOptions{Package: "dueat", Variables: map[string]any{"dueAt": due.UnixMilli()}})
			return err
		})
	}
	require.NoError(b, g.Wait())
	require.NoError(b, e.WaitIdle(ctx))
	require.True(b, time.Now().Before(due), "starting %d instances took %v, past the deadline", n, time.Since(started))

	b.StartTimer()
	select {
	case <-all:
	case <-time.After(time.Until(due) + 5*time.Minute):
		b.Fatalf("only %d of %d deadlines fired", len(lateness), n)
	}
	b.StopTimer()
	require.NoError(b, e.WaitIdle(ctx))

	mu.Lock()
	defer mu.Unlock()
	twice := 0
	for _, c := range fired {
		if c > 1 {
			twice++
		}
	}
	require.Zero(b, twice, "deadlines that fired twice")
	require.Len(b, fired, n, "instances whose deadline fired")
	slices.Sort(lateness)
	pct := func(p float64) time.Duration { return lateness[min(len(lateness)-1, int(float64(len(lateness))*p))] }
	b.ReportMetric(float64(pct(0.50).Milliseconds()), "p50_late_ms")
	b.ReportMetric(float64(pct(0.99).Milliseconds()), "p99_late_ms")
	b.ReportMetric(float64(lateness[len(lateness)-1].Milliseconds()), "max_late_ms")
	firing := e.Stats().Timers
	fireP99, ok := firing.LatenessQuantile(0.99)
	if !ok {
		fireP99 = -1 // beyond the last bucket
	}
	b.ReportMetric(float64(fireP99.Milliseconds()), "fire_p99_late_ms_at_most")
	b.ReportMetric(float64(firing.MaxLateness.Milliseconds()), "fire_max_late_ms")
	b.ReportMetric(float64(n), "timers")
	b.Logf("%s: %d deadlines due at once: fired (moved to the outbox) p99 at most %v, max %v late (%v by bucket); acted on p50 %v, p99 %v, max %v late; none twice",
		d.Name, n, fireP99, firing.MaxLateness, firing.Lateness, pct(0.50), pct(0.99), lateness[len(lateness)-1])
}
