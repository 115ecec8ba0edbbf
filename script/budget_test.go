package script_test

import (
	"context"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/goxpdl/goxpdl/script"
	"github.com/goxpdl/goxpdl/timer"
)

// hostileBudget is the memory budget of the hostile cases: small, so that
// what they grow the heap by stays far below the default budget that the
// package's other tests, running alongside, evaluate under.
const hostileBudget = 8 << 20

// Scripts that would take the host down (memory without end, a fatal
// 'out of memory' in one call, a Go stack overflow) fail with the error
// of the budget they broke, which names it, and the evaluator goes on
// evaluating.
//
// The test runs alone, not in parallel with the package's other tests:
// the memory watchdog measures the heap of the whole process, and what
// the other tests allocate meanwhile could trip it before the guard a
// case is about (once, on a loaded machine, "split" failed with the
// watchdog's error instead of String.prototype.split's).
func TestHostileScriptsFailWithTheirBudget(t *testing.T) { //nolint:paralleltest // see above
	ev := script.New(script.Config{Limits: script.Limits{MemoryBudget: hostileBudget}})
	//nolint:paralleltest // one at a time, so that the heap the hostile scripts grow never adds up
	for _, tc := range []struct {
		name, src string
		kind      error
		detail    string
	}{
		// The watchdog: the VM allocates, instruction by instruction.
		{"doubling string", `var s = "x"; while (true) s = s + s; false`, script.ErrMemoryBudget, "the heap grew by more than 8.0 MiB while it ran (MemoryBudget)"},
		{"growing array", `var a = []; while (true) a[a.length] = {n: a.length}; false`, script.ErrMemoryBudget, "(MemoryBudget)"},
		{"growing object", `var o = {}, i = 0; while (true) o["k" + i] = i++; false`, script.ErrMemoryBudget, "(MemoryBudget)"},
		// The call depth.
		{"recursion", `function f() { return f() } f()`, script.ErrStackDepth, "calls nested deeper than 1024"},
		{"recursion through a builtin", `function f() { return [1].map(f) } f()`, script.ErrStackDepth, "calls nested deeper than 1024"},
		// 100,000 levels: deep enough to exhaust a parser that recurses
		// without a bound, small enough (200 KB of text) that the text
		// itself does not trip the memory budget first (with 1e6 it did
		// once, under -race).
		{"deep JSON text", `JSON.parse("[".repeat(1e5) + "]".repeat(1e5))`, script.ErrStackDepth, "JSON.parse nests deeper than 1024"},
		{"deep value to JSON", `var a = []; for (var i = 0; i < 5000; i++) a = [a]; JSON.stringify(a)`, script.ErrStackDepth, "JSON.stringify nests deeper than 1024"},
		// The guards: one builtin call would build it.
		{"repeat", `"x".repeat(1e12)`, script.ErrMemoryBudget, "String.prototype.repeat would build about 931 GiB, more than the memory budget of 8.0 MiB"},
		{"padStart", `"x".padStart(Infinity, "y")`, script.ErrMemoryBudget, "String.prototype.padStart would build an unbounded amount"},
		{"padEnd", `"x".padEnd(1e10)`, script.ErrMemoryBudget, "String.prototype.padEnd"},
		{"concat", `var b = "x".repeat(1 << 20); "".concat(b, b, b, b, b, b, b, b, b, b)`, script.ErrMemoryBudget, "String.prototype.concat"},
		{"replaceAll", `var s = "x".repeat(1 << 16); s.replaceAll("x", s)`, script.ErrMemoryBudget, "String.prototype.replaceAll would build about 4.0 GiB"},
		{"replace with $&", `var s = "x".repeat(1 << 16); s.replace(/x/g, "$&".repeat(200))`, script.ErrMemoryBudget, "String.prototype.replace"},
		{"replace with $`", "var s = 'x'.repeat(1 << 16); s.replace(/x/g, '$`')", script.ErrMemoryBudget, "String.prototype.replace"},
		{"replace by a function", `var s = "x".repeat(1 << 16); s.replace(/x/g, function () { return s })`, script.ErrMemoryBudget, "memory budget"}, // the guard's or the watchdog's, whichever sees it first
		{"split", `"x".repeat(1 << 20).split("")`, script.ErrMemoryBudget, "String.prototype.split"},
		{"split by a pattern", `"x".repeat(1 << 20).split(/x/)`, script.ErrMemoryBudget, "String.prototype.split"},
		{"match", `"x".repeat(1 << 20).match(/x/g)`, script.ErrMemoryBudget, "String.prototype.match"},
		{"fill", `new Array(1e9).fill(0)`, script.ErrMemoryBudget, "Array.prototype.fill would build about 15 GiB"},
		{"join of an array-like", `Array.prototype.join.call({length: 3e8}, "ab")`, script.ErrMemoryBudget, "Array.prototype.join"},
		{"join of one string many times", `var b = "x".repeat(1 << 20), a = []; for (var i = 0; i < 100; i++) a[i] = b; a.join("")`, script.ErrMemoryBudget, "Array.prototype.join would build about 100 MiB"},
		{"flat of a shared array", `var a = [1]; for (var i = 0; i < 40; i++) a = [a, a]; a.flat(Infinity)`, script.ErrMemoryBudget, "Array.prototype.flat"},
		{"spread of a sparse array", `var a = []; a.length = 1e9; [...a]`, script.ErrMemoryBudget, "Array.prototype.values"},
		{"set of a sparse array", `var a = []; a.length = 1e9; new Set(a)`, script.ErrMemoryBudget, "Array.prototype.values"},
		{"Array.from", `Array.from({length: 1e9})`, script.ErrMemoryBudget, "Array.from"},
		{"apply", `Math.max.apply(null, {length: 1e9})`, script.ErrMemoryBudget, "Function.prototype.apply"},
		{"Reflect.apply", `Reflect.apply(Math.max, null, {length: 1e9})`, script.ErrMemoryBudget, "Reflect.apply"},
		{"stringify of holes", `JSON.stringify(new Array(1e9))`, script.ErrMemoryBudget, "JSON.stringify"},
		// What scripts are not given.
		{"BigInt literal", `(1n << 100000000000n) > 0n`, script.ErrSyntax, "BigInt literal 1n at 1:2: scripts have no BigInt"},
		{"BigInt", `BigInt(1)`, script.ErrRuntime, "BigInt is not defined"},
		{"ArrayBuffer", `new ArrayBuffer(1e12)`, script.ErrRuntime, "ArrayBuffer is not defined"},
		{"typed array", `new Float64Array(1e11)`, script.ErrRuntime, "Float64Array is not defined"},
		{"eval", `eval("1n << 100000000000n")`, script.ErrRuntime, "eval is not defined"},
		{"Function", `Function("return 1n << 100000000000n")()`, script.ErrRuntime, "scripts cannot make code at run time"},
		{"a function's constructor", `(function () {}).constructor("return 1")()`, script.ErrRuntime, "scripts cannot make code at run time"},
		{"a generator's constructor", `Object.getPrototypeOf(function* () {}).constructor("yield 1")`, script.ErrRuntime, "scripts cannot make code at run time"},
		// The result.
		{"large result", `"x".repeat(2 << 20)`, script.ErrValueTooLarge, "the result is larger than 1.0 MiB (MaxResultBytes)"},
		{"sparse result", `var a = []; a.length = 1e9; a`, script.ErrValueTooLarge, "the result is larger than 1.0 MiB"},
		{"wide result", `var o = {}, k = "k".repeat(60); for (var i = 0; i < 2e4; i++) o[k + i] = i; o`, script.ErrValueTooLarge, "the result is larger than 1.0 MiB"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			// The time limit is far off: the budget must stop the script.
			ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
			defer cancel()
			_, err := ev.Eval(ctx, tc.src, nil)
			require.ErrorIs(t, err, tc.kind)
			require.ErrorContains(t, err, tc.detail)
			var se *script.Error
			require.ErrorAs(t, err, &se)
			require.Equal(t, tc.src, se.Source)

			got, err := ev.Eval(ctx, `"still " + "here"`, nil)
			require.NoError(t, err, "the evaluator goes on")
			require.Equal(t, "still here", got)
		})
	}
}

// Exec measures each variable a script hands back, but not a string it
// was given and left alone: that is the host's.
func TestExecMeasuresWhatTheScriptHandsBack(t *testing.T) {
	t.Parallel()
	ev := script.New(script.Config{Limits: script.Limits{MaxResultBytes: 1000}})
	big := strings.Repeat("y", 5000)
	out, err := ev.Exec(t.Context(), `n = n + 1`, map[string]any{"n": int64(1), "doc": big})
	require.NoError(t, err)
	require.Equal(t, map[string]any{"n": int64(2), "doc": big}, out)

	_, err = ev.Exec(t.Context(), `doc = doc + "!"`, map[string]any{"doc": big})
	require.ErrorIs(t, err, script.ErrValueTooLarge)
	require.ErrorContains(t, err, "variable doc is larger than 1000 B (MaxResultBytes)")

	_, err = ev.Exec(t.Context(), `m.text = "z".repeat(2000)`, map[string]any{"m": map[string]any{}})
	require.ErrorIs(t, err, script.ErrValueTooLarge, "an object given may grow in place")
}

// A getter runs when the result is exported: it is held to the time
// limit like the rest of the script.
func TestExportIsHeldToTheLimits(t *testing.T) {
	t.Parallel()
	ev := script.New(script.Config{})
	ctx, cancel := context.WithTimeout(t.Context(), 50*time.Millisecond)
	defer cancel()
	_, err := ev.Eval(ctx, `({get x() { while (true) {} }})`, nil)
	require.ErrorIs(t, err, script.ErrTimeout)
}

// Limits off: the checks do nothing (the watchdog does not run, the
// guards let everything through).
func TestNegativeLimitsAreOff(t *testing.T) {
	t.Parallel()
	ev := script.New(script.Config{Limits: script.Limits{MemoryBudget: -1, MaxCallStackDepth: -1, MaxResultBytes: -1, MaxResultTotalBytes: -1}})
	require.Equal(t, script.Limits{MemoryBudget: -1, MaxCallStackDepth: -1, MaxResultBytes: -1, MaxResultTotalBytes: -1}, ev.Limits())
	got, err := ev.Eval(t.Context(), `function f(n) { return n == 0 ? 0 : 1 + f(n - 1) } f(5000) + "x".repeat(3 << 20).length`, nil)
	require.NoError(t, err)
	require.Equal(t, int64(5000+3<<20), got)
}

// The watchdog on a fake clock and a fake heap: it reads the heap only
// when the clock says so, and interrupts the script once the heap is more
// than the budget above its first reading.
func TestWatchdogInterruptsARunningScript(t *testing.T) {
	t.Parallel()
	clock := timer.NewFake(time.Date(2026, 1, 5, 9, 0, 0, 0, time.UTC))
	var heap atomic.Uint64
	heap.Store(1 << 30)
	ev := script.NewWatched(script.Config{Limits: script.Limits{MemoryBudget: 1000}}, clock, heap.Load)

	armed := clock.TimerAdded()
	done := make(chan error, 1)
	go func() {
		_, err := ev.Condition(t.Context(), `while (true) {}`, nil)
		done <- err
	}()
	<-armed // the watchdog started with the evaluation
	tick := func() {
		armed := clock.TimerAdded()
		clock.Advance(script.SampleInterval)
		<-armed // it read the heap and waits again
	}
	tick() // the baseline
	heap.Store(1<<30 + 1000)
	tick() // the budget's worth of growth: within it
	select {
	case err := <-done:
		t.Fatalf("interrupted within the budget: %v", err)
	default:
	}
	heap.Store(1<<30 + 1001)
	tick()
	err := <-done
	require.ErrorIs(t, err, script.ErrMemoryBudget)
	require.ErrorContains(t, err, "the heap grew by more than 1000 B while it ran (MemoryBudget)")
}

// The guarded builtins behave as JavaScript says for ordinary use.
func TestGuardedBuiltinsKeepTheirMeaning(t *testing.T) {
	t.Parallel()
	ev := script.New(script.Config{})
	for _, tc := range []struct {
		src  string
		want any
	}{
		{`"ab".repeat(3)`, "ababab"},
		{`"ab".repeat(0) + "|" + "ab".repeat(NaN)`, "|"},
		{`"7".padStart(3, "0") + "7".padEnd(3) + "|"`, "0077  |"},
		{`"a".concat(1, null, [2, 3])`, "a1null2,3"},
		{`"a-b-c".replace("-", "+") + " " + "a-b-c".replaceAll("-", "+")`, "a+b-c a+b+c"},
		{`"2026-01-05".replace(/(\d+)-(\d+)-(\d+)/, "$3.$2.$1")`, "05.01.2026"},
		{`"aXbXc".replace(/x/gi, function (m, i) { return "[" + i + "]" })`, "a[1]b[3]c"},
		{`"abc".replace(/b/, "$` + "`" + `$'")`, "aacc"},
		{`"a,b,,c".split(",").length + ":" + "a1b2c".split(/\d/).join("") + ":" + "abc".split("").join("-") + ":" + "a,b,c".split(",", 2)`, "4:abc:a-b-c:a,b"},
		{`"a1b22".match(/\d+/g).join("|") + " " + "abc".match(/b/).index`, "1|22 1"},
		{`[3, 1, 2].sort().concat([4], 5).join()`, "1,2,3,4,5"},
		{`[1, [2, [3, [4]]]].flat(Infinity).join() + " " + [1, [2, [3]]].flat().length`, "1,2,3,4 3"},
		{`[1, 2].flatMap(function (x) { return [x, x * 10] }).join()`, "1,10,2,20"},
		{`[1, 2, 3].map(function (x) { return x * 2 }).filter(function (x) { return x > 2 }).reduce(function (a, b) { return a + b })`, int64(10)},
		{`var a = [1, 2]; a.push(3, 4); a.pop(); a.at(-1) + a.length`, int64(6)},
		{`Array.from("abc").join() + " " + Array.from({length: 2}, function (_, i) { return i }).join() + " " + Array.from(new Set([1, 1, 2])).join()`, "a,b,c 0,1 1,2"},
		{`[...[1, 2], ...new Set([3])].join() + " " + Math.max.apply(null, [1, 5, 2]) + " " + Reflect.apply(Math.min, null, [4, 3])`, "1,2,3 5 3"},
		{`JSON.stringify({b: [1, "x", null], a: {c: true}})`, `{"b":[1,"x",null],"a":{"c":true}}`},
		{`JSON.stringify({a: 1, b: 2, c: {a: 3, d: 4}}, ["a", "c"])`, `{"a":1,"c":{"a":3}}`},
		{`JSON.stringify({a: 1, b: "x"}, function (k, v) { return typeof v === "number" ? v + 1 : v })`, `{"a":2,"b":"x"}`},
		{`JSON.stringify([1, {a: 2}], null, 2)`, "[\n  1,\n  {\n    \"a\": 2\n  }\n]"},
		{`JSON.stringify({d: new Date(0)}) + JSON.stringify("s") + JSON.stringify(undefined)`, `{"d":"1970-01-01T00:00:00.000Z"}"s"undefined`},
		{`JSON.parse('{"a":[1,{"b":2}]}', function (k, v) { return k === "b" ? v * 10 : v }).a[1].b`, int64(20)},
		{`(function () {}) instanceof Function && typeof Function === "function" && Function.prototype.call !== undefined`, true},
		{`(function (a, b) { return a + b }).apply(null, [1, 2]) + (function () { return arguments.length }).call(null, 1, 2, 3)`, int64(6)},
		{`Reflect.construct(Date, [0]).getTime()`, int64(0)},
		{`var f = function () {}; f.constructor === Function`, true},
	} {
		t.Run(tc.src, func(t *testing.T) {
			t.Parallel()
			got, err := ev.Eval(t.Context(), tc.src, nil)
			require.NoError(t, err)
			require.Equal(t, tc.want, got)
		})
	}
}

// What a script hands back is measured as it will be stored: an object it
// refers to many times counts every time (its JSON repeats it), a cycle is
// larger than any limit, and all the variables together are held to
// MaxResultTotalBytes.
func TestSharedAndCyclicValuesCountAsStored(t *testing.T) {
	t.Parallel()
	ev := script.New(script.Config{Limits: script.Limits{MaxResultBytes: 1 << 20, MaxResultTotalBytes: 2 << 20}})
	for _, src := range []string{
		`var o = {s: "x".repeat(1 << 18)}; var a = []; for (var i = 0; i < 2000; i++) a.push(o); big = a`,
		`var o = {}; o.self = o; big = o`,
		`var a = [1]; a.push(a); big = a`,
	} {
		_, err := ev.Exec(t.Context(), src, map[string]any{"big": nil})
		require.ErrorIs(t, err, script.ErrValueTooLarge, src)
		require.ErrorContains(t, err, "variable big is larger than 1.0 MiB (MaxResultBytes)", src)
	}
	vars := map[string]any{"a": "", "b": "", "c": "", "d": ""}
	_, err := ev.Exec(t.Context(), `var s = "x".repeat(900000); a = s; b = s; c = s`, vars)
	require.ErrorIs(t, err, script.ErrValueTooLarge)
	require.ErrorContains(t, err, "the variables it hands back are larger than 2.0 MiB together (MaxResultTotalBytes)")
	out, err := ev.Exec(t.Context(), `var s = "x".repeat(900000); a = s; b = s`, vars)
	require.NoError(t, err)
	require.Len(t, out["b"], 900000)
}
