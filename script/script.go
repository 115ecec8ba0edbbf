// Package script evaluates the JavaScript of XPDL definitions: transition
// conditions, deadline expressions, script tasks and script tool agents
// (docs/engine.md, "Data fields"; docs/xpdl-support.md, "Expressions and
// languages").
//
// Expressions run in github.com/dop251/goja, a JavaScript engine in pure
// Go. Compiled programs are cached by source text. Data fields are visible
// as global variables. The Java-flavoured expressions of real files
// (Bonita's decision.equals("oui"), counter.compareTo(Long.valueOf("10"))
// == 0, Shark's java.lang.Math.abs(x)) run through a small compatibility
// prelude.
//
// The caller bounds each evaluation with its context: when ctx is done the
// script is interrupted and the evaluation returns ErrTimeout or
// ErrCanceled. The package reads no clock of its own.
package script

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/dop251/goja"
	lru "github.com/hashicorp/golang-lru/v2"
)

// DefaultCacheSize is how many compiled programs an Evaluator keeps.
const DefaultCacheSize = 4096

// Sentinel errors, wrapped by *Error.
var (
	// ErrSyntax: the source does not compile.
	ErrSyntax = errors.New("script syntax error")
	// ErrRuntime: the script threw (an unknown variable, a type error).
	ErrRuntime = errors.New("script runtime error")
	// ErrTimeout: the context's deadline passed while the script ran.
	ErrTimeout = errors.New("script time limit exceeded")
	// ErrCanceled: the context was canceled while the script ran.
	ErrCanceled = errors.New("script canceled")
)

// Error is a failed evaluation: which source failed and why. It wraps one
// of the sentinels above.
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

// Config sets up an Evaluator.
type Config struct {
	// CacheSize is how many compiled programs to keep (default 4096).
	CacheSize int
	// NowFunc is the clock scripts see through Date (new Date(),
	// Date.now(), java.util.Date). The engine passes its injectable clock;
	// nil leaves goja's default, the wall clock.
	NowFunc func() time.Time
}

// Evaluator compiles and runs scripts. It is safe for concurrent use.
type Evaluator struct {
	cache   *lru.Cache[string, *goja.Program]
	prelude *goja.Program
	now     func() time.Time
	pool    sync.Pool  // of *runtime, clean and ready
	mu      sync.Mutex // serialises compilation of one missing entry at a time
}

// New returns an Evaluator.
func New(cfg Config) *Evaluator {
	size := cfg.CacheSize
	if size <= 0 {
		size = DefaultCacheSize
	}
	cache, err := lru.New[string, *goja.Program](size)
	if err != nil {
		panic(fmt.Sprintf("script: lru.New(%d): %v", size, err)) // only for size <= 0, excluded above
	}
	return &Evaluator{cache: cache, prelude: goja.MustCompile("prelude.js", javaCompat, false), now: cfg.NowFunc}
}

// Compile checks that src compiles, caching the program. Validation uses
// it to reject broken conditions before a process runs.
func (e *Evaluator) Compile(src string) error {
	_, err := e.program(src)
	return err
}

func (e *Evaluator) program(src string) (*goja.Program, error) {
	if p, ok := e.cache.Get(src); ok {
		return p, nil
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	if p, ok := e.cache.Get(src); ok {
		return p, nil
	}
	p, err := goja.Compile("expression", src, false)
	if err != nil {
		return nil, &Error{Source: src, Kind: ErrSyntax, Detail: err.Error()}
	}
	e.cache.Add(src, p)
	return p, nil
}

// Eval runs src with vars as global variables and returns the value of
// its last expression as a Go value (see goja's Value.Export: numbers are
// int64 or float64, strings string, booleans bool, objects maps).
func (e *Evaluator) Eval(ctx context.Context, src string, vars map[string]any) (any, error) {
	v, err := e.run(ctx, src, vars)
	if err != nil {
		return nil, err
	}
	return v.Export(), nil
}

// Condition runs a transition condition and returns its truth value, by
// JavaScript's rules (a bare BOOLEAN data field, a comparison).
func (e *Evaluator) Condition(ctx context.Context, src string, vars map[string]any) (bool, error) {
	v, err := e.run(ctx, src, vars)
	if err != nil {
		return false, err
	}
	return v.ToBoolean(), nil
}

// Exec runs src as a script (a tool agent's body) with vars as global
// variables, and returns the values the variables hold afterwards, by
// name, as Go values. Assignments to the names in vars are how a script
// hands OUT and INOUT parameters back.
func (e *Evaluator) Exec(ctx context.Context, src string, vars map[string]any) (map[string]any, error) {
	out := make(map[string]any, len(vars))
	_, err := e.runThen(ctx, src, vars, func(vm *goja.Runtime) {
		for name := range vars {
			if v := vm.Get(name); v != nil {
				out[name] = v.Export()
			}
		}
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

func (e *Evaluator) run(ctx context.Context, src string, vars map[string]any) (goja.Value, error) {
	return e.runThen(ctx, src, vars, nil)
}

// runThen runs src and, when it succeeded, calls then with the VM before
// the VM is cleaned for reuse.
func (e *Evaluator) runThen(ctx context.Context, src string, vars map[string]any, then func(*goja.Runtime)) (result goja.Value, err error) {
	prog, err := e.program(src)
	if err != nil {
		return nil, err
	}
	if err := ctx.Err(); err != nil {
		return nil, &Error{Source: src, Kind: ctxKind(err), Detail: err.Error()}
	}
	rt := e.runtime()
	clean := false
	defer func() {
		// goja reports Go panics inside host functions as panics; no
		// script may take the host down.
		if r := recover(); r != nil {
			result, err, clean = nil, &Error{Source: src, Kind: ErrRuntime, Detail: fmt.Sprint(r)}, false
		}
		e.release(rt, vars, clean)
	}()
	for name, val := range vars {
		if err := rt.set(name, val); err != nil {
			return nil, &Error{Source: src, Kind: ErrRuntime, Detail: fmt.Sprintf("set %s: %v", name, err)}
		}
	}
	stop := context.AfterFunc(ctx, func() { rt.vm.Interrupt(ctx.Err()) })
	v, err := rt.vm.RunProgram(prog)
	if !stop() {
		// The interrupt fired (or is firing): this runtime may carry it
		// into its next run, so it is not reused.
		clean = false
	} else {
		clean = true
	}
	if err != nil {
		var interrupted *goja.InterruptedError
		if errors.As(err, &interrupted) {
			cause, _ := interrupted.Value().(error)
			if cause == nil {
				cause = ctx.Err()
			}
			return nil, &Error{Source: src, Kind: ctxKind(cause), Detail: "interrupted"}
		}
		return nil, &Error{Source: src, Kind: ErrRuntime, Detail: err.Error()}
	}
	if then != nil {
		then(rt.vm)
	}
	return v, nil
}

// runtime is a goja VM with the prelude loaded, and the global names it
// had then, to tell a clean VM from one a script has changed.
type runtime struct {
	vm      *goja.Runtime
	globals int
}

// set makes a variable visible to scripts. A time.Time becomes a JavaScript
// Date (so that getTime() and the like work, as in Shark's deadline
// scripts); everything else goes in as goja maps it.
func (rt *runtime) set(name string, val any) error {
	if t, ok := val.(time.Time); ok {
		date, err := rt.vm.New(rt.vm.Get("Date"), rt.vm.ToValue(t.UnixMilli()))
		if err != nil {
			return err
		}
		return rt.vm.Set(name, date)
	}
	return rt.vm.Set(name, val)
}

// runtime takes a clean VM from the pool or makes one.
func (e *Evaluator) runtime() *runtime {
	if rt, ok := e.pool.Get().(*runtime); ok {
		return rt
	}
	vm := goja.New()
	if e.now != nil {
		vm.SetTimeSource(e.now)
	}
	if _, err := vm.RunProgram(e.prelude); err != nil {
		panic(fmt.Sprintf("script: prelude: %v", err)) // a bug of ours, caught by every test
	}
	return &runtime{vm: vm, globals: len(vm.GlobalObject().GetOwnPropertyNames())}
}

// release removes the variables of one evaluation and pools the VM again
// when the script left no other trace in its global scope; a VM a script
// changed (a new global, an interrupt) is dropped.
func (e *Evaluator) release(rt *runtime, vars map[string]any, clean bool) {
	if !clean {
		return
	}
	g := rt.vm.GlobalObject()
	for name := range vars {
		if err := g.Delete(name); err != nil {
			return
		}
	}
	if len(g.GetOwnPropertyNames()) != rt.globals {
		return
	}
	rt.vm.ClearInterrupt()
	e.pool.Put(rt)
}

func ctxKind(err error) error {
	if errors.Is(err, context.DeadlineExceeded) {
		return ErrTimeout
	}
	return ErrCanceled
}
