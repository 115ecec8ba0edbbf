package adversary

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"gorm.io/gorm"

	"github.com/goxpdl/goxpdl/engine"
	"github.com/goxpdl/goxpdl/resource"
	"github.com/goxpdl/goxpdl/store"
	"github.com/goxpdl/goxpdl/timer"
	"github.com/goxpdl/goxpdl/wftype"
	"github.com/goxpdl/goxpdl/workitem"
)

// Config sets up a run.
type Config struct {
	// DB is the database the engines of the run keep their state in. It
	// should be empty: the run deploys its package (versions from 1) and
	// creates the table adversary_bookings. Required.
	DB *gorm.DB
	// Seed makes the run: the same seed gives the same operations (the
	// engine's answers may still differ between runs where the engine is
	// free to choose, such as the winner of a race).
	Seed int64
	// Ops is how many operations the run makes; default 200.
	Ops int
	// Start is when the run's fake clock starts; default 2026-01-05
	// 09:00 UTC.
	Start time.Time
	// Configure, when set, adjusts the Config of every engine the run
	// creates (one at the start and one per restart), after the run has
	// set its database, clock, directory and logger.
	Configure func(*engine.Config)
	// IsFault, when set, says which errors are faults injected into the
	// database rather than answers of the engine. An operation that fails
	// with one has an unknown outcome (Jepsen's :info): the run reads
	// the engine's state back and accepts it when it is what the model
	// holds either without the operation or with it. A start is repeated
	// with its idempotency key until it gets an answer, as a host
	// resolves an unknown outcome. Reads that fail with a fault are
	// repeated. Nil: every error is an answer.
	IsFault func(error) bool
	// FullCheckEvery is how often (in operations) every instance is
	// checked, besides the instances each operation touches; default 50.
	// The end of the run checks everything.
	FullCheckEvery int
	// Logf, when set, receives every operation as it is made.
	Logf func(format string, args ...any)
	// Checking, when set, is called with true before the run waits for
	// the engine to settle and reads its state back, and with false when
	// it has. A fault injector may pause while checking is true: the
	// checker's reads are not the system under test, and long waits such
	// as Engine.WaitQuiet make many statements, any of which may fail
	// (reads that fail with a fault are repeated, up to 1000 times).
	// Pausing spares the engine's background work during the wait too.
	Checking func(checking bool)
	// Rerun, when set, is how to run a seed again, for a Failure's
	// message: a command with %[1]d where the seed goes. Default: make
	// adversary-seed on TestRandomised.
	Rerun string
}

// Report says what a run did.
type Report struct {
	Seed int64
	// Ops is how many operations were made, ByKind how many of each kind
	// (the Op* constants).
	Ops    int
	ByKind map[string]int
	// Refused counts the operations the engine refused as the model
	// expected, by the refusal (the sentinel's text).
	Refused map[string]int
	// RaceLosers counts the losing goroutines of races by their error.
	RaceLosers map[string]int
	// Faults counts operations whose outcome was unknown (Config.IsFault).
	Faults int
	// Instances is how many process instances the run started, Versions
	// how many versions of its package it deployed, Restarts how many
	// times it stopped the engine and started a new one, Bookings how many
	// business rows of the application committed (checked: one per pass
	// through Book), Calls how many times the application wrote one (also
	// in transactions rolled back and run again), Checks how many instance
	// checks it made.
	Instances, Versions, Restarts, Bookings, Calls, Checks int
	// Duration is how long the run took on the real clock.
	Duration time.Duration
}

// Failure is the error of a run that found the engine in a state the
// model does not allow, or an answer it does not expect. It carries
// what is needed to run it again.
type Failure struct {
	Seed int64
	// Step is the operation (from 1) after which the problem showed, and
	// Op that operation.
	Step int
	Op   string
	// Problem says what was wrong.
	Problem string
	// Log is every operation of the run up to Step, with the engine's
	// answers.
	Log []string
	// Rerun is Config.Rerun.
	Rerun string
}

func (f *Failure) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "adversary seed %d, step %d (%s): %s\n", f.Seed, f.Step, f.Op, f.Problem)
	rerun := f.Rerun
	if rerun == "" {
		rerun = DefaultRerun
	}
	fmt.Fprintf(&b, "rerun: "+rerun+"\n", f.Seed)
	from := max(0, len(f.Log)-40)
	if from > 0 {
		fmt.Fprintf(&b, "  ... %d earlier operations\n", from)
	}
	for _, l := range f.Log[from:] {
		b.WriteString("  " + l + "\n")
	}
	return b.String()
}

// DefaultRerun is how a Failure says to run its seed again when
// Config.Rerun is not set.
const DefaultRerun = "make adversary-seed SEED=%[1]d (go test ./internal/adversary -run TestRandomised -adversary.seed=%[1]d -v)"

// DefaultStart is when a run's fake clock starts by default.
var DefaultStart = time.Date(2026, 1, 5, 9, 0, 0, 0, time.UTC)

// runner is one run.
type runner struct {
	cfg   Config
	ctx   context.Context
	clock *timer.Fake
	dir   resource.Directory
	e     *engine.Engine
	w     *world
	g     *gen
	rep   Report
	log   []string
	step  int
	op    Op
	// alts are the worlds one of which the engine holds after an
	// operation whose outcome is unknown; nil otherwise.
	alts  []*world
	calls atomic.Int64
	// skew is how far settle has moved the clock on, in all, for events
	// that wait for a retry's backoff (faults).
	skew time.Duration
	// checks is how deep in checking the run is.
	checks int
}

// Run makes cfg.Ops operations on engines over cfg.DB, each chosen by
// a generator seeded with cfg.Seed, and checks after each that the
// engine holds what a model of the suite's process says it should. It
// returns a *Failure naming the seed, the step and the operations when
// it does not, and other errors when the run itself cannot go on (the
// database is unusable).
func Run(ctx context.Context, cfg Config) (Report, error) {
	if cfg.DB == nil {
		return Report{}, errors.New("adversary: Config.DB is required")
	}
	if cfg.Ops <= 0 {
		cfg.Ops = 200
	}
	if cfg.Start.IsZero() {
		cfg.Start = DefaultStart
	}
	if cfg.FullCheckEvery <= 0 {
		cfg.FullCheckEvery = 50
	}
	dir, err := Directory()
	if err != nil {
		return Report{}, err
	}
	r := &runner{cfg: cfg, ctx: ctx, clock: timer.NewFake(cfg.Start), dir: dir, w: newWorld(cfg.Start), g: newGen(cfg.Seed),
		rep: Report{Seed: cfg.Seed, ByKind: map[string]int{}, Refused: map[string]int{}, RaceLosers: map[string]int{}}}
	real := timer.Real() // the report's duration is real time
	began := real.Now()
	err = r.run()
	if r.e != nil {
		if serr := r.e.Stop(context.Background()); serr != nil && err == nil && !r.fault(serr) {
			err = serr
		}
	}
	r.rep.Duration = real.Now().Sub(began)
	return r.rep, err
}

func (r *runner) run() error {
	err := r.cfg.DB.WithContext(r.ctx).Exec(`CREATE TABLE IF NOT EXISTS adversary_bookings (
		instance_id BIGINT NOT NULL, activity_instance_id BIGINT NOT NULL, call_key VARCHAR(255) NOT NULL)`).Error
	if err != nil {
		return fmt.Errorf("adversary: create adversary_bookings: %w", err)
	}
	if err := r.startEngine(); err != nil {
		return err
	}
	dep, err := r.e.Deploy(r.ctx, Source(r.g.revs))
	if err != nil {
		return fmt.Errorf("adversary: deploy: %w", err)
	}
	r.w.deploys = append(r.w.deploys, deployment{id: dep.ID, version: dep.Version})
	r.rep.Versions = 1
	for r.step = 1; r.step <= r.cfg.Ops; r.step++ {
		if err := r.ctx.Err(); err != nil {
			return err
		}
		r.op = r.g.next(r.w)
		if r.op.Kind == OpRestart {
			r.op.Key = fmt.Sprintf("r%d", r.step)
		}
		r.rep.Ops++
		r.rep.ByKind[r.op.Kind]++
		if r.cfg.Logf != nil {
			r.cfg.Logf("%d %s", r.step, r.op)
		}
		problem, err := r.do(r.op)
		if err != nil {
			return err
		}
		if problem == "" {
			problem, err = r.settleAndCheck(r.touched(r.op), r.step%r.cfg.FullCheckEvery == 0)
			if err != nil {
				return err
			}
		}
		if problem != "" {
			return r.fail(problem)
		}
	}
	r.step--
	// The end of the run reads the engine back as a whole: faults pause
	// until the run is over.
	defer r.checking()()
	problem, err := r.settleAndCheck(nil, true)
	if err != nil {
		return err
	}
	if problem == "" {
		problem = r.checkTotals()
	}
	if problem != "" {
		return r.fail(problem)
	}
	r.rep.Instances = len(r.w.insts)
	r.rep.Versions = len(r.w.deploys)
	for _, in := range r.w.insts {
		r.rep.Bookings += in.bookings
	}
	r.rep.Calls = int(r.calls.Load())
	return nil
}

func (r *runner) fail(problem string) error {
	return &Failure{Seed: r.cfg.Seed, Step: r.step, Op: r.op.String(), Problem: problem, Log: r.log, Rerun: r.cfg.Rerun}
}

func (r *runner) logf(format string, args ...any) {
	r.log = append(r.log, fmt.Sprintf("%d ", r.step)+fmt.Sprintf(format, args...))
}

// startEngine creates an engine over the database and starts it.
func (r *runner) startEngine() error {
	cfg := engine.Config{
		DB:             r.cfg.DB,
		Clock:          r.clock,
		Directory:      r.dir,
		Logger:         slog.New(slog.NewTextHandler(io.Discard, nil)),
		PollInterval:   10 * time.Millisecond,
		NodeID:         "adversary",
		RescueInterval: -1,
		Location:       time.UTC,
		// A condition's time limit is real time; the default second
		// ran out under -race on a loaded machine, which the model
		// cannot tell from a failing condition.
		ConditionTimeout: time.Minute,
	}
	if r.cfg.Configure != nil {
		r.cfg.Configure(&cfg)
	}
	e, err := engine.New(cfg)
	if err != nil {
		return fmt.Errorf("adversary: new engine: %w", err)
	}
	e.RegisterApplication("book", r.book)
	if err := e.Start(r.ctx); err != nil {
		_ = e.Stop(context.Background()) // a fault may have stopped it half-way started
		return fmt.Errorf("adversary: start engine: %w", err)
	}
	r.e = e
	return nil
}

// errDeclined is book's refusal of a negative amount: fatal, so Book goes
// Abnormal.
var errDeclined = errors.New("amount declined")

// book is the application behind Book: it writes a booking in the
// engine's transaction (the host's business write, which commits with
// the step or not at all) and refuses a negative amount.
func (r *runner) book(ctx context.Context, c *engine.Call) (map[string]any, error) {
	amount, _ := c.Params["amount"].(int64)
	if amount < 0 {
		return nil, fmt.Errorf("%w: %d", errDeclined, amount)
	}
	err := c.Tx.WithContext(ctx).Exec("INSERT INTO adversary_bookings (instance_id, activity_instance_id, call_key) VALUES (?, ?, ?)",
		c.ProcessInstanceID, c.ActivityInstanceID, c.IdempotencyKey).Error
	if err != nil {
		return nil, engine.Retryable(err)
	}
	r.calls.Add(1)
	return nil, nil
}

// id is the id of instance i, NoSuchID for -1.
func (r *runner) id(i int) int64 {
	if i < 0 {
		return NoSuchID
	}
	return r.w.insts[i].id
}

// touched lists the instances an operation may change: nil for all.
func (r *runner) touched(op Op) []int {
	switch op.Kind {
	case OpAdvance, OpRestart, OpDeploy, OpRaceDeploy:
		return nil
	case OpStart, OpStartBad:
		if j, ok := r.w.byKey[op.Key]; ok {
			return []int{j}
		}
		if len(r.w.insts) > 0 && r.w.insts[len(r.w.insts)-1].key == op.Key {
			return []int{len(r.w.insts) - 1}
		}
		return []int{}
	}
	if op.Item != 0 {
		if i := r.w.owner(op.Item); i >= 0 {
			return []int{i}
		}
	}
	if op.Inst >= 0 && op.Inst < len(r.w.insts) {
		return []int{op.Inst}
	}
	return []int{}
}

// do makes one operation and judges the engine's answer; it returns a
// problem, or an error when the run cannot go on.
func (r *runner) do(op Op) (string, error) {
	switch op.Kind {
	case OpRaceComplete, OpRaceClaim:
		return r.race(op), nil
	}
	exp := expect(r.w, op)
	before, err := r.snapshot(op, exp)
	if err != nil {
		return "", err
	}
	res := r.exec(op)
	r.logf("%s -> %s", op, answer(res))
	if res.err != nil && r.fault(res.err) {
		r.rep.Faults++
		if op.Kind == OpDeploy || op.Kind == OpRaceDeploy {
			r.alts = r.deployAlts(res)
			return "", nil
		}
		after := r.w.clone()
		if exp.want == nil && exp.apply != nil {
			exp.apply(after, res)
		}
		r.alts = []*world{r.w, after}
		return "", nil
	}
	switch {
	case exp.want == nil && res.err == nil:
		if exp.apply != nil {
			return exp.apply(r.w, res), nil
		}
		return "", nil
	case exp.want != nil && errors.Is(res.err, exp.want):
		r.rep.Refused[exp.want.Error()]++
		return r.unchanged(before)
	case exp.want == nil:
		return fmt.Sprintf("%s: want success, got %v%s", op.Kind, res.err, untyped(res.err)), nil
	}
	return fmt.Sprintf("%s: want %q, got %v%s", op.Kind, exp.want, res.err, untyped(res.err)), nil
}

// deployAlts are the worlds a deployment whose outcome is unknown may
// have left: the versions that answered, and any number up to the
// deployments that failed with a fault of versions the run does not know
// (a COMMIT that went through and then lost its connection), in version
// order, gapless. A version the run does not know has id 0 until the
// checker finds it (checkDeployments).
func (r *runner) deployAlts(res *result) []*world {
	faulted := 1
	if res.errs != nil {
		faulted = 0
		for _, err := range res.errs {
			if r.fault(err) {
				faulted++
			}
		}
	}
	known := map[int]int64{}
	highest := 0
	for _, d := range res.deps {
		known[d.Version] = d.ID
		highest = max(highest, d.Version)
	}
	first := r.w.latest().version + 1
	var alts []*world
	for k := 0; k <= faulted; k++ {
		last := first + len(res.deps) + k - 1
		if highest > last {
			continue // a version that answered lies beyond: more went through
		}
		w := r.w.clone()
		for v := first; v <= last; v++ {
			w.deploys = append(w.deploys, deployment{id: known[v], version: v})
		}
		alts = append(alts, w)
	}
	if len(alts) == 0 { // versions that answered out of any order: none fits, the checker says so
		alts = []*world{r.w}
	}
	return alts
}

// answer prints the engine's answer for the log.
func answer(res *result) string {
	var parts []string
	if res.err != nil {
		parts = append(parts, "error: "+res.err.Error())
	} else {
		parts = append(parts, "ok")
	}
	if res.id != 0 {
		parts = append(parts, fmt.Sprintf("instance %d", res.id))
	}
	for _, d := range res.deps {
		parts = append(parts, fmt.Sprintf("v%d", d.Version))
	}
	if len(res.ids) > 0 {
		parts = append(parts, fmt.Sprintf("started %v", res.ids))
	}
	return strings.Join(parts, ", ")
}

// known are the errors the engine's API answers with; any other is a
// defect of its own (an untyped error).
var known = []error{
	engine.ErrNotFound, engine.ErrIllegalState, engine.ErrInstanceFinished, engine.ErrUnknownVariable,
	engine.ErrWrongType, engine.ErrNotRunning, engine.ErrConfig, engine.ErrBadArgument, engine.ErrKeyReused, engine.ErrConflict,
	engine.ErrCannotSkip, engine.ErrWrongInstance, engine.ErrLocked, engine.ErrNotAllowed,
	engine.ErrCompletedDifferently, engine.ErrCannotMove, engine.ErrCannotMigrate,
}

// untyped notes an error that matches none of the engine's sentinels.
func untyped(err error) string {
	if err == nil {
		return ""
	}
	for _, k := range known {
		if errors.Is(err, k) {
			return ""
		}
	}
	return " (an untyped error)"
}

func (r *runner) fault(err error) bool {
	return r.cfg.IsFault != nil && err != nil && r.cfg.IsFault(err)
}

// exec gives op to the engine.
func (r *runner) exec(op Op) *result {
	ctx, e := r.ctx, r.e
	res := &result{}
	host := engine.Op{Actor: "adversary", Reason: fmt.Sprintf("step %d", r.step)}
	switch op.Kind {
	case OpStart, OpStartBad:
		opts := engine.StartOptions{Package: PackageID, Variables: op.Vars, IdempotencyKey: op.Key, BusinessKey: op.BKey}
		res.id, res.err = e.StartProcess(ctx, opts)
		if op.Key != "" {
			res.id, res.err = r.startAgain(opts, res.id, res.err)
		}
	case OpClaim:
		res.err = e.ClaimWorkItem(ctx, op.Item, op.User, engine.Op{})
	case OpStartItem:
		res.err = e.StartWorkItem(ctx, op.Item, op.User, engine.Op{})
	case OpRelease:
		res.err = e.ReleaseWorkItem(ctx, op.Item, op.User, engine.Op{})
	case OpDelegate:
		res.err = e.DelegateWorkItem(ctx, op.Item, op.User, op.To, engine.Op{})
	case OpReassign:
		res.err = e.ReassignWorkItem(ctx, op.Item, op.User, []engine.Principal{{Kind: store.PrincipalUser, ID: op.To}}, host)
	case OpComplete, OpCompleteBad, OpCompleteAgain:
		_, res.err = e.CompleteWorkItem(ctx, op.Item, engine.Completion{User: op.User, Outputs: op.Vars, IdempotencyKey: op.Key})
	case OpSuspend:
		res.err = e.Suspend(ctx, r.id(op.Inst), host)
	case OpResume:
		res.err = e.Resume(ctx, r.id(op.Inst), host)
	case OpTerminate:
		res.err = e.Terminate(ctx, r.id(op.Inst), host)
	case OpSetVars, OpSetVarsBad:
		res.err = e.SetVariables(ctx, r.id(op.Inst), engine.Values{Variables: op.Vars}, host)
	case OpRetry:
		res.err = e.RetryActivity(ctx, r.id(op.Inst), op.Activity, host)
	case OpSkip:
		res.err = e.SkipActivity(ctx, r.id(op.Inst), op.Activity, engine.Values{Variables: op.Vars}, host)
	case OpJump:
		res.err = e.Jump(ctx, r.id(op.Inst), op.To, host)
	case OpRollback:
		res.err = e.Rollback(ctx, r.id(op.Inst), op.To, host)
	case OpMigrate:
		res.err = e.Migrate(ctx, r.id(op.Inst), engine.Migration{To: op.Dep}, host)
	case OpWithdraw:
		res.err = e.Withdraw(ctx, op.Item, op.User, engine.Op{})
	case OpAdvance:
		r.clock.Advance(op.D)
	case OpRestart:
		res.err = r.restart(op, res)
	case OpDeploy:
		r.g.revs++
		d, err := e.Deploy(ctx, Source(r.g.revs))
		res.err = err
		if err == nil {
			res.deps = []engine.Deployment{d}
		}
	case OpRaceDeploy:
		r.g.revs++
		src := Source(r.g.revs)
		deps := make([]engine.Deployment, op.N)
		errs := make([]error, op.N)
		r.together(op.N, func(j int) { deps[j], errs[j] = e.Deploy(ctx, src) })
		for j, err := range errs {
			if err == nil {
				res.deps = append(res.deps, deps[j])
			} else if res.err == nil {
				res.err = err
			}
		}
		res.errs = errs
	}
	return res
}

// startAgain repeats a start that failed with a fault, with its
// idempotency key, until it gets an answer (the first start's instance,
// or a new one), as a host resolves an unknown outcome: a few times while
// faults go on, then once they have cleared (Config.Checking pauses
// them), as a host that waits for its database to come back.
func (r *runner) startAgain(opts engine.StartOptions, id int64, err error) (int64, error) {
	for tries := 0; r.fault(err) && tries < 20; tries++ {
		r.rep.Faults++
		if tries == 3 {
			defer r.checking()()
		}
		id, err = r.e.StartProcess(r.ctx, opts)
	}
	return id, err
}

// restart starts op.N instances and, without waiting for the engine to
// schedule them (work in flight), stops the engine and starts a new one
// on the same database.
func (r *runner) restart(op Op, res *result) error {
	for j := range op.N {
		opts := engine.StartOptions{Package: PackageID, IdempotencyKey: restartKey(op, j)}
		id, err := r.e.StartProcess(r.ctx, opts)
		id, err = r.startAgain(opts, id, err)
		if err != nil {
			return err
		}
		res.ids = append(res.ids, id)
	}
	// A fault as the engine leaves (releasing its claims) leaves them to
	// their lease or to the next run of the node: the engine has stopped.
	if err := r.e.Stop(r.ctx); err != nil && !r.fault(err) {
		return err
	}
	r.e = nil
	r.rep.Restarts++
	err := r.startEngine()
	if r.fault(err) {
		// The host starts the engine again once the database is back.
		done := r.checking()
		for tries := 0; r.fault(err) && tries < 20; tries++ {
			err = r.startEngine()
		}
		done()
	}
	if r.e == nil {
		// Without an engine the run cannot go on: not an unknown outcome.
		return fmt.Errorf("adversary: restart: %v", err) //nolint:errorlint // on purpose: it must not pass for a fault
	}
	return err
}

// together runs fn(0..n-1) on n goroutines released at once, and waits
// for them.
func (r *runner) together(n int, fn func(j int)) {
	var wg sync.WaitGroup
	gate := make(chan struct{})
	for j := range n {
		wg.Go(func() {
			<-gate
			fn(j)
		})
	}
	close(gate)
	wg.Wait()
}

// race makes a race: op.N goroutines complete, or claim, one work item
// at once, as users who may all do it when any may. Exactly one wins when
// the model says one would; the others get a typed refusal.
func (r *runner) race(op Op) string {
	users := make([]string, op.N)
	for j := range users {
		users[j] = Clerks[r.g.pick(len(Clerks))]
	}
	if i := r.w.owner(op.Item); i >= 0 {
		if it, _ := r.w.insts[i].find(op.Item); it != nil {
			for j := range users {
				switch {
				case it.offeredTo != "":
					users[j] = it.offeredTo
				case it.owner != "" && op.Kind == OpRaceComplete:
					users[j] = it.owner
				}
			}
		}
	}
	expectFor := func(user string) expectation {
		o := op
		o.User = user
		if op.Kind == OpRaceClaim {
			return itemCommand(r.w, o, workitem.Allocate)
		}
		return complete(r.w, o, user)
	}
	exp := expectFor(users[0])
	errs := make([]error, op.N)
	r.together(op.N, func(j int) {
		if op.Kind == OpRaceClaim {
			errs[j] = r.e.ClaimWorkItem(r.ctx, op.Item, users[j], engine.Op{})
		} else {
			_, errs[j] = r.e.CompleteWorkItem(r.ctx, op.Item, engine.Completion{User: users[j], Outputs: op.Vars})
		}
	})
	winner, faults := -1, 0
	var problems []string
	for j, err := range errs {
		switch {
		case err == nil && winner >= 0:
			problems = append(problems, fmt.Sprintf("goroutines %d and %d both won", winner, j))
		case err == nil:
			winner = j
		case r.fault(err):
			faults++
		}
	}
	r.logf("%s users=%v -> winner %d, errors %v", op, users, winner, errs)
	if faults > 0 {
		r.rep.Faults++
		alts := []*world{r.w}
		if exp.want == nil {
			for _, u := range users {
				after := r.w.clone()
				expectFor(u).apply(after, &result{})
				alts = append(alts, after)
			}
		}
		r.alts = alts
		return ""
	}
	if exp.want != nil {
		for j, err := range errs {
			if !errors.Is(err, exp.want) {
				problems = append(problems, fmt.Sprintf("goroutine %d: want %q, got %v%s", j, exp.want, err, untyped(err)))
			}
		}
		r.rep.Refused[exp.want.Error()] += op.N
		return strings.Join(problems, "; ")
	}
	if winner < 0 {
		return fmt.Sprintf("no goroutine won the race, errors %v", errs)
	}
	for j, err := range errs {
		if j == winner {
			continue
		}
		ok := false
		for _, allowed := range []error{engine.ErrNotAllowed, engine.ErrIllegalState, engine.ErrInstanceFinished, engine.ErrConflict} {
			if errors.Is(err, allowed) {
				r.rep.RaceLosers[allowed.Error()]++
				ok = true
				break
			}
		}
		if !ok {
			problems = append(problems, fmt.Sprintf("loser %d: %v%s", j, err, untyped(err)))
		}
	}
	if len(problems) > 0 {
		return strings.Join(problems, "; ")
	}
	return expectFor(users[winner]).apply(r.w, &result{})
}

// state is what a refused operation must leave alone: the revision and
// history length of the instance it names.
type state struct {
	id       int64
	revision int64
	history  int
}

// snapshot reads the state of the instance op names when the model
// expects a refusal; nil otherwise.
func (r *runner) snapshot(op Op, exp expectation) (*state, error) {
	if exp.want == nil {
		return nil, nil
	}
	t := r.touched(op)
	if len(t) != 1 {
		return nil, nil
	}
	defer r.checking()()
	s := &state{id: r.w.insts[t[0]].id}
	err := r.read(func() error {
		pi, err := r.e.Instance(r.ctx, s.id)
		if err != nil {
			return err
		}
		s.revision = pi.Revision
		s.history, err = r.historyLen(s.id)
		return err
	})
	return s, err
}

// unchanged checks that a refused operation changed nothing.
func (r *runner) unchanged(before *state) (string, error) {
	if before == nil {
		return "", nil
	}
	defer r.checking()()
	after := &state{id: before.id}
	err := r.read(func() error {
		pi, err := r.e.Instance(r.ctx, before.id)
		if err != nil {
			return err
		}
		after.revision = pi.Revision
		after.history, err = r.historyLen(before.id)
		return err
	})
	if err != nil {
		return "", err
	}
	if *after != *before {
		return fmt.Sprintf("a refused operation changed instance %d: revision %d -> %d, history %d -> %d entries",
			before.id, before.revision, after.revision, before.history, after.history), nil
	}
	return "", nil
}

func (r *runner) historyLen(id int64) (int, error) {
	n := 0
	f := engine.HistoryFilter{Instance: id, Limit: 1000}
	for {
		page, err := r.e.History(r.ctx, f)
		if err != nil {
			return 0, err
		}
		n += len(page.Entries)
		if page.Next == 0 {
			return n, nil
		}
		f.After = page.Next
	}
}

// checking tells Config.Checking that the run reads the engine's state
// back, and returns the func that tells it the run is done.
// Checks may nest (the end of the run is one); only the outermost tells.
func (r *runner) checking() func() {
	if r.cfg.Checking == nil {
		return func() {}
	}
	r.checks++
	if r.checks == 1 {
		r.cfg.Checking(true)
	}
	return func() {
		r.checks--
		if r.checks == 0 {
			r.cfg.Checking(false)
		}
	}
}

// read runs a read, again while it fails with a fault (a long one, such
// as WaitQuiet, makes many statements, and may meet a fault often).
func (r *runner) read(fn func() error) error {
	err := fn()
	for tries := 0; r.fault(err) && tries < 1000 && r.ctx.Err() == nil; tries++ {
		err = fn()
	}
	return err
}

// settle waits until the engine has nothing left to do now. With faults
// injected, events whose processing failed wait for a backoff: the clock
// is moved on (and the model's with it) until none is left. An engine
// that does not settle within quietTimeout (real time) is a problem of
// the run, not a hang: without faults at once, with faults after the
// clock has been moved on a hundred times (a lease a fault left behind
// runs out on it).
func (r *runner) settle() (string, error) {
	for round := 0; ; round++ {
		err := r.read(r.waitQuiet)
		stuck := errors.Is(err, errNotQuiet)
		if err != nil && !stuck {
			return "", err
		}
		if r.cfg.IsFault == nil && !stuck {
			return "", nil
		}
		var b engine.Backlog
		if err := r.read(func() (err error) { b, err = r.e.Backlog(r.ctx); return err }); err != nil {
			return "", err
		}
		if !stuck && b.EventsWaiting == 0 && b.EventsAvailable == 0 {
			return "", nil
		}
		if r.cfg.IsFault == nil || round > 100 {
			if stuck {
				return fmt.Sprintf("the engine did not settle (WaitQuiet, %s real time, %d times the clock moved on by a second): backlog %+v, engine %+v",
					quietTimeout, round, b, r.e.Stats()), nil
			}
			return "", nil
		}
		r.clock.Advance(time.Second)
		r.skew += time.Second
		r.w.advance(time.Second)
		for _, alt := range r.alts {
			if alt != r.w {
				alt.advance(time.Second)
			}
		}
	}
}

// quietTimeout is how long, in real time, settle waits for the engine
// to settle before it looks at why not.
const quietTimeout = 10 * time.Second

// errNotQuiet is waitQuiet's error when the engine did not settle in
// quietTimeout.
var errNotQuiet = errors.New("adversary: the engine did not settle")

// waitQuiet is Engine.WaitQuiet for at most quietTimeout.
func (r *runner) waitQuiet() error {
	ctx, cancel := context.WithTimeout(r.ctx, quietTimeout)
	defer cancel()
	err := r.e.WaitQuiet(ctx)
	if errors.Is(err, context.DeadlineExceeded) && r.ctx.Err() == nil {
		return errNotQuiet
	}
	return err
}

// isOpen says whether a process state is not final (for the checker).
func isOpen(s wftype.ProcessState) bool { return !s.IsFinal() }
