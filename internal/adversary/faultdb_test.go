package adversary_test

import (
	"errors"
	"flag"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"
	"gorm.io/gorm"

	"github.com/goxpdl/goxpdl/internal/adversary"
	"github.com/goxpdl/goxpdl/internal/faultdb"
	"github.com/goxpdl/goxpdl/store"
	"github.com/goxpdl/goxpdl/store/dbtest"
	"github.com/goxpdl/goxpdl/store/gormstore"
)

// The size of the run over a faulty database (TestOverFaultDB). The
// defaults keep CI's cost modest; a long run sets the environment
// (GOXPDL_ADVERSARY_FAULT_SEEDS=100 GOXPDL_ADVERSARY_FAULT_OPS=500) or
// the flags. -adversary.seed and -adversary.first apply as to
// TestRandomised.
var (
	faultSeedsFlag = flag.Int("adversary.faultseeds", envInt("GOXPDL_ADVERSARY_FAULT_SEEDS", 3), "seeds per database of TestOverFaultDB")
	faultOpsFlag   = flag.Int("adversary.faultops", envInt("GOXPDL_ADVERSARY_FAULT_OPS", 80), "operations per seed of TestOverFaultDB")
	faultRateFlag  = flag.Int("adversary.faultrate", envInt("GOXPDL_ADVERSARY_FAULT_RATE", 60), "the chance, in percent, that a fault is armed whenever an operation may run (TestOverFaultDB)")
)

// faultDialect is a database of TestOverFaultDB: how to open it with an
// injector in its connections, and the faults it may suffer.
type faultDialect struct {
	name, dialect string
	open          func(testing.TB, gormstore.OpenOpts) *gorm.DB
}

var faultDialects = []faultDialect{
	{"SQLite", store.DialectSQLite, dbtest.OpenSQLiteOpts},
	{"MySQL", store.DialectMySQL, dbtest.OpenMySQLOpts},
}

// menuFault is one fault the injector may arm: its name in the tally
// (where it strikes / the error), the fault, and the span its place is
// drawn from (it strikes the At-th operation of its kind, At uniform in
// 1..span, counted from when it is armed).
type menuFault struct {
	name  string
	fault faultdb.Fault
	span  int64
}

// faultMenu is every fault faultdb models, with the errors of the
// dialect's database: a statement failing with the database's lock
// conflicts (MySQL's deadlock, which rolls the transaction back, and lock
// wait timeout, which fails the statement alone; SQLite's BUSY) or a lost
// connection; a BEGIN failing; a COMMIT failing (rolled back); a COMMIT
// that went through and then lost its connection (the ambiguous commit);
// and an outage, the database gone from a statement on until the run
// next reads the engine back.
func faultMenu(dialect string) []menuFault {
	lost := faultdb.ConnectionLost(dialect)
	var conflicts []struct {
		name string
		err  error
	}
	if dialect == store.DialectMySQL {
		conflicts = append(conflicts,
			struct {
				name string
				err  error
			}{"deadlock", faultdb.MySQLDeadlock()},
			struct {
				name string
				err  error
			}{"lock-wait-timeout", faultdb.MySQLLockWaitTimeout()})
	} else {
		conflicts = append(conflicts, struct {
			name string
			err  error
		}{"busy", faultdb.SQLiteBusy()})
	}
	var menu []menuFault
	for _, c := range conflicts {
		menu = append(menu, menuFault{"statement/" + c.name, faultdb.Fault{Kind: faultdb.Statement, Err: c.err}, 15})
	}
	menu = append(menu, menuFault{"statement/connection-lost", faultdb.Fault{Kind: faultdb.Statement, Err: lost}, 15})
	conflict := conflicts[0]
	menu = append(menu,
		menuFault{"begin/" + conflict.name, faultdb.Fault{Kind: faultdb.Begin, Err: conflict.err}, 2},
		menuFault{"commit/" + conflict.name, faultdb.Fault{Kind: faultdb.Commit, Err: conflict.err}, 2},
		menuFault{"commit/connection-lost", faultdb.Fault{Kind: faultdb.Commit, Err: lost}, 2},
		menuFault{"after-commit/connection-lost", faultdb.Fault{Kind: faultdb.AfterCommit, Err: lost}, 2},
		menuFault{"outage/connection-lost", faultdb.Fault{Kind: faultdb.Statement, Err: lost, Outage: true}, 15},
	)
	return menu
}

// chaos arms faults at random, seeded, while the run's operations go on,
// one at a time, and clears them (ending an outage) when the run reads
// the engine back (adversary.Config.Checking): the fault clears, and
// the engine must make progress again.
type chaos struct {
	mu     sync.Mutex
	in     *faultdb.Injector
	rnd    *rand.Rand
	menu   []menuFault
	rate   int
	on     bool       // the set-up is over: operations run
	paused bool       // the run is reading the engine back
	armed  *menuFault // the fault armed now
	base   int64      // the injector's total when it was armed
	// opBase is the injector's total when the current operation began.
	opBase int64
	op     string   // the current operation
	struck []string // where each fault struck, for a failure's message
	tally  faultTally
}

// faultTally counts the faults armed and struck, by name.
type faultTally struct {
	armed, struck map[string]int
}

func (t *faultTally) add(o faultTally) {
	for k, v := range o.armed {
		t.armed[k] += v
	}
	for k, v := range o.struck {
		t.struck[k] += v
	}
}

func newChaos(in *faultdb.Injector, dialect string, seed int64, rate int) *chaos {
	return &chaos{in: in, rnd: rand.New(rand.NewPCG(uint64(seed), 0xfa017)), menu: faultMenu(dialect), rate: rate, //nolint:gosec // a test's reproducible draw
		tally: faultTally{armed: map[string]int{}, struck: map[string]int{}}}
}

// operation is the run's Logf: an operation begins.
func (c *chaos) operation(format string, args ...any) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.on = true
	c.op = fmt.Sprintf(format, args...)
	c.opBase = c.in.Stats().Total()
	c.arm()
}

// checking is the run's Checking.
func (c *chaos) checking(checking bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.paused = checking
	if checking {
		c.disarm()
		return
	}
	c.arm()
}

// stop disarms for good: the run is over.
func (c *chaos) stop() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.on = false
	c.disarm()
}

// arm arms a fault, at the rate's chance, unless one is armed or the
// run is not making operations.
func (c *chaos) arm() {
	if !c.on || c.paused || c.armed != nil || c.rnd.IntN(100) >= c.rate {
		return
	}
	m := c.menu[c.rnd.IntN(len(c.menu))]
	m.fault.At = 1 + c.rnd.Int64N(m.span)
	c.armed = &m
	c.base = c.in.Stats().Total()
	c.tally.armed[m.name]++
	c.in.Arm(m.fault)
}

// disarm clears the fault armed (ending an outage), and notes whether
// it struck.
func (c *chaos) disarm() {
	if c.armed == nil {
		return
	}
	if c.in.Stats().Total() > c.base {
		c.tally.struck[c.armed.name]++
		c.struck = append(c.struck, fmt.Sprintf("%s@%d in or after %s", c.armed.name, c.armed.fault.At, c.op))
	}
	c.in.Clear()
	c.armed = nil
}

// isFault says whether err is a fault the injector put in: an error
// that says the database gave up on the transaction or its connection
// (as a host would classify it: gormstore.Transient), met while a fault
// had struck during the current operation. Any other error, a transient
// one with no fault behind it included, is the engine's answer.
func (c *chaos) isFault(err error) bool {
	if !gormstore.Transient(err) {
		return false
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.in.Stats().Total() > c.opBase
}

// TestOverFaultDB drives the adversary (generator, model, checker) over a
// database opened through faultdb, on SQLite and MySQL/MariaDB: while
// operations run, faults of every kind faultdb models are armed at
// random (seeded by the run's seed), one at a time, and cleared when the
// run reads the engine back. An operation that fails with a fault has an
// unknown outcome; after it the checker must find the engine in one of
// the model's worlds (the business row the application writes in the
// engine's transaction committed with the step or not at all), and the
// engine must make progress once the fault clears: events whose
// processing failed are retried, and every instance ends where the model
// says. A failure prints the seed and how to run it again.
func TestOverFaultDB(t *testing.T) {
	t.Parallel()
	for _, d := range faultDialects {
		t.Run(d.name, func(t *testing.T) {
			t.Parallel()
			if d.dialect == store.DialectMySQL {
				dbtest.MySQLDSN(t) // skips, with the reason, when no server is named
			}
			seeds := make([]int64, *faultSeedsFlag)
			for i := range seeds {
				seeds[i] = *firstFlag + int64(i)
			}
			if *seedFlag != 0 {
				seeds = []int64{*seedFlag}
			}
			var mu sync.Mutex
			var total adversary.Report
			total.ByKind, total.Refused, total.RaceLosers = map[string]int{}, map[string]int{}, map[string]int{}
			faults := faultTally{armed: map[string]int{}, struck: map[string]int{}}
			t.Cleanup(func() { t.Log(summary(d.name+" over faultdb", len(seeds), total) + faultSummary(faults)) })
			for _, seed := range seeds {
				t.Run(fmt.Sprintf("seed=%d", seed), func(t *testing.T) {
					in := faultdb.New()
					db := d.open(t, in.OpenOpts())
					c := newChaos(in, d.dialect, seed, *faultRateFlag)
					rep, err := adversary.Run(t.Context(), adversary.Config{DB: db, Seed: seed, Ops: *faultOpsFlag,
						IsFault:  c.isFault,
						Checking: c.checking,
						Logf:     c.operation,
						Rerun: fmt.Sprintf("go test ./internal/adversary -run 'TestOverFaultDB/%s' -adversary.seed=%%[1]d -adversary.faultops=%d -adversary.faultrate=%d -v",
							d.name, *faultOpsFlag, *faultRateFlag),
					})
					c.stop()
					if f, ok := errors.AsType[*adversary.Failure](err); ok {
						from := max(0, len(c.struck)-10)
						t.Fatalf("%s\nfaults armed and struck so far:%s\nthe last faults that struck:\n  %s", f.Error(), faultSummary(c.tally), strings.Join(c.struck[from:], "\n  "))
					}
					require.NoError(t, err, "seed %d", seed)
					st := in.Stats()
					require.Positive(t, st.Total(), "seed %d: no fault struck", seed)
					t.Logf("%d operations, %d with an unknown outcome; %d statements, %d faults struck:%s",
						rep.Ops, rep.Faults, st.Statements, st.Total(), faultSummary(c.tally))
					mu.Lock()
					add(&total, rep)
					faults.add(c.tally)
					mu.Unlock()
				})
			}
		})
	}
}

// faultSummary prints a tally: struck/armed by name.
func faultSummary(t faultTally) string {
	keys := make([]string, 0, len(t.armed))
	for k := range t.armed {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	var b strings.Builder
	struck := 0
	for _, k := range keys {
		fmt.Fprintf(&b, " %s %d/%d", k, t.struck[k], t.armed[k])
		struck += t.struck[k]
	}
	return fmt.Sprintf("%s (struck/armed; %d struck)", b.String(), struck)
}
