package script

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/dlclark/regexp2/v2"
	"github.com/dop251/goja"
	lru "github.com/hashicorp/golang-lru/v2"

	"github.com/goxpdl/goxpdl/timer"
)

// DefaultCacheSize is how many compiled programs an Evaluator keeps.
const DefaultCacheSize = 4096

// The default limits of an evaluation (see Limits).
const (
	// DefaultMemoryBudget is how far the heap may grow while one
	// evaluation runs: 64 MiB, a thousand times what a condition takes.
	DefaultMemoryBudget = 64 << 20
	// DefaultMaxCallStackDepth is how deeply calls may nest: far more
	// than any condition or tool script needs, little enough that a
	// runaway recursion stops in microseconds.
	DefaultMaxCallStackDepth = 1024
	// DefaultMaxResultBytes is the largest value an evaluation may hand
	// back (about its JSON's size): 1 MiB, for a process variable.
	DefaultMaxResultBytes = 1 << 20
	// DefaultMaxResultTotalBytes is the most Exec may hand back for all
	// its variables together: 4 MiB, the engine's largest value.
	DefaultMaxResultTotalBytes = 4 << 20
)

// DefaultMatchTimeout is Config.MatchTimeout's default: the engine's
// longest default time limit (a script task's five seconds).
const DefaultMatchTimeout = 5 * time.Second

// Sentinel errors, wrapped by *Error.
var (
	// ErrSyntax: the source does not compile, or uses what scripts are
	// not given (BigInt literals).
	ErrSyntax = errors.New("script syntax error")
	// ErrRuntime: the script threw (an unknown variable, a type error).
	ErrRuntime = errors.New("script runtime error")
	// ErrTimeout: the context's deadline passed while the script ran.
	ErrTimeout = errors.New("script time limit exceeded")
	// ErrCanceled: the context was canceled while the script ran.
	ErrCanceled = errors.New("script canceled")
	// ErrMemoryBudget: the heap grew by more than Limits.MemoryBudget
	// while the script ran, or a builtin was asked to build a value
	// larger than that.
	ErrMemoryBudget = errors.New("script memory budget exceeded")
	// ErrStackDepth: calls nested deeper than Limits.MaxCallStackDepth
	// (a runaway recursion), or JSON nested as deep.
	ErrStackDepth = errors.New("script call stack depth exceeded")
	// ErrValueTooLarge: the value the script hands back is larger than
	// Limits.MaxResultBytes, or all it hands back together larger than
	// Limits.MaxResultTotalBytes.
	ErrValueTooLarge = errors.New("script value too large")
)

// Error is a failed evaluation: which source failed and why. It wraps one
// of the sentinels above; for a budget, Detail names the limit.
type Error struct {
	Source string
	Kind   error
	Detail string
}

func (e *Error) Error() string {
	return fmt.Sprintf("%v: %s (in %q)", e.Kind, e.Detail, e.Source)
}

// Unwrap returns the sentinel.
func (e *Error) Unwrap() error { return e.Kind }

// Limits bound one evaluation (see the package documentation for how
// each is kept). A zero field takes its default; a negative one turns
// that limit off.
type Limits struct {
	// MemoryBudget is how many bytes the process's heap may grow by while
	// the evaluation runs, and the largest value (a string of as many
	// characters, an array of a sixteenth as many elements) a builtin may
	// be asked to build in one call; default DefaultMemoryBudget.
	MemoryBudget int64 `json:"memoryBudget"`
	// MaxCallStackDepth is how deeply function calls may nest; default
	// DefaultMaxCallStackDepth.
	MaxCallStackDepth int `json:"maxCallStackDepth"`
	// MaxResultBytes is the largest value Eval returns and Exec hands
	// back for one variable, measured as about the size of its JSON;
	// default DefaultMaxResultBytes. Exec does not measure a string or
	// number the script left as it was given.
	MaxResultBytes int64 `json:"maxResultBytes"`
	// MaxResultTotalBytes is the most Exec hands back for all its
	// variables together, measured the same way (a script could
	// otherwise give each of a thousand variables the same large
	// string); default DefaultMaxResultTotalBytes.
	MaxResultTotalBytes int64 `json:"maxResultTotalBytes"`
}

// WithDefaults returns l with the defaults in its zero fields; negative
// fields (no limit) stay as they are.
func (l Limits) WithDefaults() Limits {
	if l.MemoryBudget == 0 {
		l.MemoryBudget = DefaultMemoryBudget
	}
	if l.MaxCallStackDepth == 0 {
		l.MaxCallStackDepth = DefaultMaxCallStackDepth
	}
	if l.MaxResultBytes == 0 {
		l.MaxResultBytes = DefaultMaxResultBytes
	}
	if l.MaxResultTotalBytes == 0 {
		l.MaxResultTotalBytes = DefaultMaxResultTotalBytes
	}
	return l
}

// String describes the limits in words, as an administration page shows
// them: "memory 64 MiB, call depth 1024, result 1.0 MiB (all together
// 4.0 MiB)".
func (l Limits) String() string {
	depth := "default"
	switch {
	case l.MaxCallStackDepth > 0:
		depth = strconv.Itoa(l.MaxCallStackDepth)
	case l.MaxCallStackDepth < 0:
		depth = "unlimited"
	}
	size := func(n int64) string {
		if n == 0 {
			return "default"
		}
		return bytesText(n)
	}
	return fmt.Sprintf("memory %s, call depth %s, result %s (all together %s)", size(l.MemoryBudget), depth, size(l.MaxResultBytes),
		size(l.MaxResultTotalBytes))
}

// Config sets up an Evaluator.
type Config struct {
	// CacheSize is how many compiled programs to keep (default 4096).
	CacheSize int
	// IdleVMs is how many VMs to keep between evaluations for the next
	// ones (default DefaultIdleVMs()). More evaluations than that at once
	// make VMs of their own, at a few milliseconds each, which are
	// dropped afterwards.
	IdleVMs int
	// NowFunc is the clock scripts see through Date (new Date(),
	// Date.now(), java.util.Date). The engine passes its injectable clock;
	// nil leaves goja's default, the wall clock.
	NowFunc func() time.Time
	// Limits bound each evaluation; the zero value takes the defaults.
	Limits Limits
	// MatchTimeout bounds one match of a regular expression that the
	// regexp2 engine runs (one with lookaround or backreferences; the
	// others run in Go's regexp, in linear time): a match that takes
	// longer stops and fails as if it had found nothing. It should be at
	// least the longest time limit (context deadline) evaluations run
	// under: by the time such a match gives up, the evaluation is then out
	// of time and fails with ErrTimeout rather than going on with a wrong
	// answer. Zero means DefaultMatchTimeout.
	//
	// The bound is process-wide (regexp2.DefaultMatchTimeout, which goja
	// reads when it compiles a pattern): the first Evaluator made in the
	// process sets it, and later ones keep it.
	MatchTimeout time.Duration
}

// matchTimeout sets regexp2's process-wide match timeout once.
var matchTimeout sync.Once

// setMatchTimeout sets regexp2.DefaultMatchTimeout to d (or the default)
// if no Evaluator has set it yet.
func setMatchTimeout(d time.Duration) {
	if d <= 0 {
		d = DefaultMatchTimeout
	}
	matchTimeout.Do(func() { regexp2.DefaultMatchTimeout = d })
}

// Evaluator compiles and runs scripts. It is safe for concurrent use.
type Evaluator struct {
	cache   *lru.Cache[string, *compiled]
	prelude *goja.Program
	guards  *goja.Program
	harden  *goja.Program
	scoped  *goja.Program
	now     func() time.Time
	limits  Limits       // defaults applied
	dog     *watchdog    // nil without a memory budget
	pool    vmPool       // of *runtime, clean and ready: an *idleVMs but in tests
	made    atomic.Int64 // VMs made, for tests
	mu      sync.Mutex   // serialises compilation of one missing entry at a time
}

// New returns an Evaluator.
func New(cfg Config) *Evaluator {
	return newEvaluator(cfg, timer.Real(), readHeap)
}

// newEvaluator is New with the watchdog's clock and heap reading given
// (tests pass fakes).
func newEvaluator(cfg Config, clock timer.Clock, heap func() uint64) *Evaluator {
	size := cfg.CacheSize
	if size <= 0 {
		size = DefaultCacheSize
	}
	setMatchTimeout(cfg.MatchTimeout)
	idle := cfg.IdleVMs
	if idle <= 0 {
		idle = DefaultIdleVMs()
	}
	cache, err := lru.New[string, *compiled](size)
	if err != nil {
		panic(fmt.Sprintf("script: lru.New(%d): %v", size, err)) // only for size <= 0, excluded above
	}
	e := &Evaluator{
		cache: cache, now: cfg.NowFunc, limits: cfg.Limits.WithDefaults(),
		prelude: goja.MustCompile("prelude.js", javaCompat, false),
		guards:  goja.MustCompile("guards.js", guardPrelude, true),
		harden:  goja.MustCompile("harden.js", hardenPrelude, true),
		scoped:  goja.MustCompile("scoped.js", scopedRunnerSource, false),
		pool:    newIdleVMs(idle),
	}
	if e.limits.MemoryBudget > 0 {
		e.dog = newWatchdog(uint64(e.limits.MemoryBudget), sampleInterval, clock, heap)
	}
	return e
}

// Limits returns the limits the Evaluator holds evaluations to, defaults
// applied (a negative field: no limit).
func (e *Evaluator) Limits() Limits { return e.limits }

// Compile checks that src compiles, caching the program. Validation uses
// it to reject broken conditions before a process runs.
func (e *Evaluator) Compile(src string) error {
	_, err := e.program(src)
	return err
}

// compiled is a script ready to run: its program and what it declares at
// its top level.
type compiled struct {
	prog  *goja.Program
	decls declarations
}

func (e *Evaluator) program(src string) (*compiled, error) {
	if c, ok := e.cache.Get(src); ok {
		return c, nil
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	if c, ok := e.cache.Get(src); ok {
		return c, nil
	}
	ast, err := goja.Parse("expression", src)
	if err != nil {
		return nil, &Error{Source: src, Kind: ErrSyntax, Detail: err.Error()}
	}
	if at, ok := findBigInt(ast); ok {
		return nil, &Error{Source: src, Kind: ErrSyntax, Detail: fmt.Sprintf("BigInt literal %s: scripts have no BigInt", at)}
	}
	p, err := goja.CompileAST(ast, false)
	if err != nil {
		return nil, &Error{Source: src, Kind: ErrSyntax, Detail: err.Error()}
	}
	c := &compiled{prog: p, decls: topLevelDeclarations(src, ast)}
	e.cache.Add(src, c)
	return c, nil
}

// Eval runs src with vars as global variables and returns the value of
// its last expression as a Go value (see goja's Value.Export: numbers are
// int64 or float64, strings string, booleans bool, objects maps).
func (e *Evaluator) Eval(ctx context.Context, src string, vars map[string]any) (any, error) {
	var out any
	err := e.run(ctx, src, vars, func(rt *runtime, v goja.Value) error {
		if _, err := e.checkSize(v, "the result"); err != nil {
			return err
		}
		out = v.Export()
		return nil
	})
	return out, err
}

// Condition runs a transition condition and returns its truth value, by
// JavaScript's rules (a bare BOOLEAN data field, a comparison).
func (e *Evaluator) Condition(ctx context.Context, src string, vars map[string]any) (bool, error) {
	var out bool
	err := e.run(ctx, src, vars, func(_ *runtime, v goja.Value) error {
		out = v.ToBoolean()
		return nil
	})
	return out, err
}

// Exec runs src as a script (a tool agent's body) with vars as global
// variables, and returns the values the variables hold afterwards, by
// name, as Go values. Assignments to the names in vars are how a script
// hands OUT and INOUT parameters back. The script works on copies: vars,
// and the records and arrays in it, are never changed.
func (e *Evaluator) Exec(ctx context.Context, src string, vars map[string]any) (map[string]any, error) {
	out := make(map[string]any, len(vars))
	err := e.run(ctx, src, vars, func(rt *runtime, _ goja.Value) error {
		var total int64
		for _, name := range slices.Sorted(maps.Keys(vars)) {
			v := rt.vm.Get(name)
			if v == nil {
				continue
			}
			if in, ok := rt.given[name]; !ok || !unchangedPrimitive(in, v) {
				n, err := e.checkSize(v, "variable "+name)
				if err != nil {
					return err
				}
				if total += n; e.limits.MaxResultTotalBytes >= 0 && total > e.limits.MaxResultTotalBytes {
					return &limitError{kind: ErrValueTooLarge, detail: fmt.Sprintf("the variables it hands back are larger than %s together (MaxResultTotalBytes)",
						bytesText(e.limits.MaxResultTotalBytes))}
				}
			}
			out[name] = v.Export()
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// run runs src and, when it succeeded, calls then with the VM and the
// value of the last expression, still under the evaluation's limits (a
// getter run by Export is a script too); an error then returns fails the
// evaluation.
func (e *Evaluator) run(ctx context.Context, src string, vars map[string]any, then func(*runtime, goja.Value) error) (err error) {
	c, err := e.program(src)
	if err != nil {
		return err
	}
	if err := ctx.Err(); err != nil {
		return &Error{Source: src, Kind: ctxKind(err), Detail: err.Error()}
	}
	place := c.decls.place(vars)
	rt := e.runtime()
	var watched *watch
	if e.dog != nil {
		watched = e.dog.watch(rt.vm)
	}
	stop := context.AfterFunc(ctx, func() { rt.vm.Interrupt(ctx.Err()) })
	defer func() {
		// goja reports Go panics inside host functions as panics, and
		// Export reports an interrupted getter so; no script may take
		// the host down.
		r := recover()
		if r != nil {
			err = e.failure(ctx, src, r)
		}
		// The interrupt may have fired (or be firing): such a runtime
		// could carry it into its next run, so it is not reused; nor is
		// one a panic or a limit stopped in the middle of something.
		clean := stop() && r == nil && !overLimit(err) && place != atTopLevelOnce
		if watched != nil && e.dog.unwatch(watched) {
			clean = false
			if err == nil { // over budget in its last instruction
				err = &Error{Source: src, Kind: ErrMemoryBudget, Detail: e.dog.detail()}
			}
		}
		e.release(rt, vars, clean)
	}()
	for name, val := range vars {
		if err := rt.set(name, val); err != nil {
			return &Error{Source: src, Kind: ErrRuntime, Detail: fmt.Sprintf("set %s: %v", name, err)}
		}
	}
	var v goja.Value
	if place == inScope {
		v, err = rt.scoped(goja.Undefined(), rt.vm.ToValue(src))
	} else {
		v, err = rt.vm.RunProgram(c.prog)
	}
	if err != nil {
		return e.failure(ctx, src, err)
	}
	if err := ctx.Err(); err != nil {
		// The time ran out in its last instruction, a builtin (a regular
		// expression that gave up after MatchTimeout: its "no match"
		// is no answer).
		return &Error{Source: src, Kind: ctxKind(err), Detail: "the time limit passed while it ran"}
	}
	if err := then(rt, v); err != nil {
		return e.failure(ctx, src, err)
	}
	return nil
}

// failure turns what stopped an evaluation (an error RunProgram
// returned, a panic's value, a limit then reported) into an *Error of the
// right kind.
func (e *Evaluator) failure(ctx context.Context, src string, r any) *Error {
	err, ok := r.(error)
	if !ok {
		return &Error{Source: src, Kind: ErrRuntime, Detail: fmt.Sprint(r)}
	}
	var (
		interrupted *goja.InterruptedError
		overflow    *goja.StackOverflowError
		limit       *limitError
	)
	switch {
	case errors.As(err, &limit):
		return &Error{Source: src, Kind: limit.kind, Detail: limit.detail}
	case errors.As(err, &interrupted):
		cause, _ := interrupted.Value().(error)
		if cause == nil {
			cause = ctx.Err()
		}
		if errors.As(cause, &limit) {
			return &Error{Source: src, Kind: limit.kind, Detail: limit.detail}
		}
		return &Error{Source: src, Kind: ctxKind(cause), Detail: "interrupted"}
	case errors.As(err, &overflow):
		return &Error{Source: src, Kind: ErrStackDepth, Detail: fmt.Sprintf("calls nested deeper than %d", e.limits.MaxCallStackDepth)}
	}
	return &Error{Source: src, Kind: ErrRuntime, Detail: err.Error()}
}

// overLimit tells the errors that stopped a script in its tracks (a
// panic, a limit) from those it threw or that ended it cleanly.
func overLimit(err error) bool {
	var se *Error
	if err == nil || !errors.As(err, &se) {
		return false
	}
	return !errors.Is(se.Kind, ErrRuntime) && !errors.Is(se.Kind, ErrSyntax)
}

// limitError is a limit an evaluation went over: the value the watchdog
// and the guards interrupt a VM with, and what checkSize returns.
type limitError struct {
	kind   error
	detail string
}

func (e *limitError) Error() string { return e.kind.Error() + ": " + e.detail }

// Unwrap returns the sentinel.
func (e *limitError) Unwrap() error { return e.kind }

// checkSize measures v and fails when it is larger than MaxResultBytes;
// what names the value in the message.
func (e *Evaluator) checkSize(v goja.Value, what string) (int64, error) {
	max := e.limits.MaxResultBytes
	if max < 0 {
		max = e.limits.MaxResultTotalBytes // still measured for the total
		if max < 0 {
			return 0, nil
		}
		return sizeOf(v, max), nil
	}
	n := sizeOf(v, max)
	if n > max {
		return n, &limitError{kind: ErrValueTooLarge, detail: fmt.Sprintf("%s is larger than %s (MaxResultBytes)", what, bytesText(max))}
	}
	return n, nil
}

// unchangedPrimitive tells a string, number or boolean Exec was given and
// the script left as it was: it is not the script's to measure.
func unchangedPrimitive(in, out goja.Value) bool {
	if _, isObject := out.(*goja.Object); isObject {
		return false // its content may have changed
	}
	return in.SameAs(out)
}

// runtime is a goja VM with the preludes loaded and its builtins frozen,
// what its global object was then (how many names, which prototype, to
// tell a clean VM from one a script has changed), and the values of the
// variables of the evaluation it runs.
type runtime struct {
	vm           *goja.Runtime
	globals      map[string]bool // the global object's own names when it was made
	symbols      int             // and how many symbols it had
	globalProto  *goja.Object
	isExtensible goja.Callable // the builtin Object.isExtensible
	scoped       goja.Callable // runs a source in a scope of its own (scope.go)
	given        map[string]goja.Value
}

// set makes a variable visible to scripts, as a copy (toJS): a time.Time
// becomes a JavaScript Date (so that getTime() and the like work, as in
// Shark's deadline scripts), records and arrays objects and arrays of the
// VM's own.
func (rt *runtime) set(name string, val any) error {
	v, err := rt.toJS(val)
	if err != nil {
		return err
	}
	if err := rt.vm.Set(name, v); err != nil {
		return err
	}
	rt.given[name] = v
	return nil
}

// runtime takes a clean VM from the pool or makes one.
func (e *Evaluator) runtime() *runtime {
	if rt, ok := e.pool.Get().(*runtime); ok {
		return rt
	}
	e.made.Add(1)
	vm := goja.New()
	if e.now != nil {
		vm.SetTimeSource(e.now)
	}
	scoped, err := installScopedRunner(vm, e.scoped) // before the guards delete eval
	if err != nil {
		panic(fmt.Sprintf("script: scoped runner: %v", err)) // a bug of ours, caught by every test
	}
	if _, err := vm.RunProgram(e.prelude); err != nil {
		panic(fmt.Sprintf("script: prelude: %v", err)) // a bug of ours, caught by every test
	}
	if err := installGuards(vm, e.guards, e.limits); err != nil {
		panic(fmt.Sprintf("script: guards: %v", err)) // the same
	}
	isExtensible, err := installHardening(vm, e.harden)
	if err != nil {
		panic(fmt.Sprintf("script: hardening: %v", err)) // the same
	}
	if e.limits.MaxCallStackDepth > 0 {
		vm.SetMaxCallStackSize(e.limits.MaxCallStackDepth)
	}
	g := vm.GlobalObject()
	globals := make(map[string]bool)
	for _, name := range g.GetOwnPropertyNames() {
		globals[name] = true
	}
	return &runtime{vm: vm, globals: globals, symbols: len(g.Symbols()), globalProto: g.Prototype(),
		isExtensible: isExtensible, scoped: scoped, given: make(map[string]goja.Value)}
}

// release removes the variables of one evaluation and the globals a
// script made by assigning a name it had not declared (tmp = 5 in sloppy
// code), and pools the VM again when the script left no other trace in
// its global scope; a VM a script changed (a global it could not be
// rid of, a symbol on the global object, another prototype for it, a
// global object made non-extensible, an interrupt) is dropped. The
// builtins need no check: they were frozen when the VM was made.
func (e *Evaluator) release(rt *runtime, vars map[string]any, clean bool) {
	clear(rt.given)
	if !clean {
		return
	}
	g := rt.vm.GlobalObject()
	for name := range vars {
		if err := g.Delete(name); err != nil {
			return
		}
	}
	if !rt.forgetNewGlobals() || len(g.Symbols()) != rt.symbols || g.Prototype() != rt.globalProto {
		return
	}
	if ok, err := rt.isExtensible(goja.Undefined(), g); err != nil || !ok.ToBoolean() {
		return
	}
	rt.vm.ClearInterrupt()
	e.pool.Put(rt)
}

// forgetNewGlobals deletes the global object's own names it did not have
// when it was made, and reports whether it has none left.
func (rt *runtime) forgetNewGlobals() bool {
	g := rt.vm.GlobalObject()
	names := g.GetOwnPropertyNames()
	if len(names) == len(rt.globals) {
		return true // the builtin names cannot be deleted, so none is missing
	}
	for _, name := range names {
		if !rt.globals[name] {
			if err := g.Delete(name); err != nil {
				return false
			}
		}
	}
	return len(g.GetOwnPropertyNames()) == len(rt.globals)
}

func ctxKind(err error) error {
	if errors.Is(err, context.DeadlineExceeded) {
		return ErrTimeout
	}
	return ErrCanceled
}
