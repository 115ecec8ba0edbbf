package adversary_test

import (
	"errors"
	"flag"
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/goxpdl/goxpdl/internal/adversary"
	"github.com/goxpdl/goxpdl/store/dbtest"
)

// The size of the randomised run. The defaults keep CI's cost modest; a
// long run sets the environment (GOXPDL_ADVERSARY_SEEDS=500
// GOXPDL_ADVERSARY_OPS=1000) or the flags.
var (
	seedFlag  = flag.Int64("adversary.seed", 0, "run only this seed (as a failure prints it)")
	seedsFlag = flag.Int("adversary.seeds", envInt("GOXPDL_ADVERSARY_SEEDS", 20), "seeds per database (MySQL/MariaDB runs a quarter of them)")
	opsFlag   = flag.Int("adversary.ops", envInt("GOXPDL_ADVERSARY_OPS", 200), "operations per seed")
	firstFlag = flag.Int64("adversary.first", int64(envInt("GOXPDL_ADVERSARY_FIRST", 1)), "the first seed")
)

func envInt(name string, def int) int {
	if v, err := strconv.Atoi(os.Getenv(name)); err == nil && v > 0 {
		return v
	}
	return def
}

// TestRandomised runs the adversary (generator, model, checker) for a
// number of seeds on every database; a failure prints its seed, the
// operations up to it, and how to run that seed again.
func TestRandomised(t *testing.T) {
	t.Parallel()
	for _, d := range dbtest.Dialects {
		t.Run(d.Name, func(t *testing.T) {
			t.Parallel()
			n := *seedsFlag
			switch d.Name { // a server's run costs more: a quarter of the seeds
			case "MySQL":
				dbtest.MySQLDSN(t) // skips, with the reason, when no server is named
				n = max(1, n/4)
			case "Postgres":
				dbtest.PostgresDSN(t)
				n = max(1, n/4)
			}
			seeds := make([]int64, n)
			for i := range seeds {
				seeds[i] = *firstFlag + int64(i)
			}
			if *seedFlag != 0 {
				seeds = []int64{*seedFlag}
			}
			var mu sync.Mutex
			var total adversary.Report
			total.ByKind, total.Refused, total.RaceLosers = map[string]int{}, map[string]int{}, map[string]int{}
			t.Cleanup(func() { t.Log(summary(d.Name, len(seeds), total)) })
			for _, seed := range seeds {
				t.Run(fmt.Sprintf("seed=%d", seed), func(t *testing.T) {
					rep, err := adversary.Run(t.Context(), adversary.Config{DB: d.Open(t), Seed: seed, Ops: *opsFlag})
					if f, ok := errors.AsType[*adversary.Failure](err); ok {
						t.Fatal(f.Error())
					}
					require.NoError(t, err)
					mu.Lock()
					add(&total, rep)
					mu.Unlock()
				})
			}
		})
	}
}

func add(total *adversary.Report, rep adversary.Report) {
	total.Ops += rep.Ops
	total.Faults += rep.Faults
	total.Instances += rep.Instances
	total.Versions += rep.Versions
	total.Restarts += rep.Restarts
	total.Bookings += rep.Bookings
	total.Calls += rep.Calls
	total.Checks += rep.Checks
	total.Duration += rep.Duration
	for k, v := range rep.ByKind {
		total.ByKind[k] += v
	}
	for k, v := range rep.Refused {
		total.Refused[k] += v
	}
	for k, v := range rep.RaceLosers {
		total.RaceLosers[k] += v
	}
}

func summary(db string, seeds int, r adversary.Report) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s: %d seeds, %d operations, %d instances, %d versions, %d restarts, %d bookings committed (%d calls), %d instance checks, %d faults, %s\n",
		db, seeds, r.Ops, r.Instances, r.Versions, r.Restarts, r.Bookings, r.Calls, r.Checks, r.Faults, r.Duration.Round(1e6))
	line := func(title string, m map[string]int) {
		keys := make([]string, 0, len(m))
		for k := range m {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		parts := make([]string, len(keys))
		for i, k := range keys {
			parts[i] = fmt.Sprintf("%s %d", k, m[k])
		}
		fmt.Fprintf(&b, "  %s: %s\n", title, strings.Join(parts, ", "))
	}
	line("operations", r.ByKind)
	line("refused as expected", r.Refused)
	line("race losers", r.RaceLosers)
	return b.String()
}
