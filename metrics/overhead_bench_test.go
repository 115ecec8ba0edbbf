package metrics_test

import (
	"context"
	"log/slog"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/require"

	"github.com/goxpdl/goxpdl/engine"
	"github.com/goxpdl/goxpdl/metrics"
	"github.com/goxpdl/goxpdl/store/dbtest"
	"github.com/goxpdl/goxpdl/xpdl/xpdltest"
)

// BenchmarkObserverOverhead runs instances of a five-step automatic
// process (an application call and four routes) with no
// observer and with Metrics, 8 started at a time, and reports
// instances/s: what counting every step costs the engine.
func BenchmarkObserverOverhead(b *testing.B) {
	pkg := xpdltest.PackageWith(`<Applications><Application Id="noop"/></Applications>`, xpdltest.Process("p", "",
		xpdltest.Activity("A", `<Implementation><Tool Id="noop"/></Implementation>`, "", "")+
			xpdltest.Activity("B", "<Route/>", "", "")+xpdltest.Activity("C", "<Route/>", "", "")+
			xpdltest.Activity("D", "<Route/>", "", "")+xpdltest.Activity("E", "<Route/>", "", ""),
		xpdltest.Transition("t1", "A>B")+xpdltest.Transition("t2", "B>C")+xpdltest.Transition("t3", "C>D")+
			xpdltest.Transition("t4", "D>E")))
	for _, d := range dbtest.Dialects {
		for _, name := range []string{"none", "metrics"} {
			b.Run(d.Name+"/"+name, func(b *testing.B) {
				cfg := engine.Config{DB: d.Open(b), Logger: slog.New(slog.DiscardHandler)}
				if name == "metrics" {
					m := metrics.New()
					cfg.Observer = m
					prometheus.NewRegistry().MustRegister(m)
				}
				e, err := engine.New(cfg)
				require.NoError(b, err)
				e.RegisterApplication("noop", func(context.Context, *engine.Call) (map[string]any, error) { return nil, nil })
				ctx := b.Context()
				require.NoError(b, e.Start(ctx))
				defer func() { require.NoError(b, e.Stop(context.Background())) }()
				_, err = e.Deploy(ctx, []byte(pkg))
				require.NoError(b, err)
				b.ResetTimer()
				var wg sync.WaitGroup
				starts := make(chan struct{})
				for range 8 {
					wg.Go(func() {
						for range starts {
							_, err := e.StartProcess(ctx, engine.StartOptions{Package: "pkg", Process: "p"})
							if err != nil {
								b.Error(err)
							}
						}
					})
				}
				began := time.Now()
				for range b.N {
					starts <- struct{}{}
				}
				close(starts)
				wg.Wait()
				require.NoError(b, e.WaitQuiet(ctx))
				b.ReportMetric(float64(b.N)/time.Since(began).Seconds(), "instances/s")
			})
		}
	}
}

// BenchmarkObservation measures what Metrics spends on the observations
// of one engine step: an event processed, an activity finished, an
// application call and a group commit.
func BenchmarkObservation(b *testing.B) {
	m := metrics.New()
	act := engine.ActivityFinished{Package: "orders", Process: "order", Type: engine.ActivityApplication, Outcome: engine.ActivityCompleted, Duration: time.Second}
	ev := engine.EventProcessed{Kind: engine.EventKindActivityStart, Result: engine.EventDone, Lag: time.Millisecond, Duration: 3 * time.Millisecond}
	call := engine.ApplicationCalled{Application: "charge", Result: engine.CallOK, Duration: time.Millisecond}
	gc := engine.GroupCommitted{Members: 4, Duration: 2 * time.Millisecond}
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			m.EventProcessed(ev)
			m.ActivityFinished(act)
			m.ApplicationCalled(call)
			m.GroupCommitted(gc)
		}
	})
}
