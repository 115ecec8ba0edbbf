package script_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/goxpdl/goxpdl/script"
)

// pristine are expressions true of the builtins as every evaluation
// must find them, whatever an earlier one on the same VM tried.
var pristine = []string{
	`decision.equals("grant") && !decision.equals("reject") && !"grant".equals("reject")`,
	`"a".pwned === undefined && ({}).isAdmin === undefined && [].isAdmin === undefined && !("isAdmin" in globalThis)`,
	`!("isAdmin2" in globalThis) && globalThis[Symbol.for("isAdmin")] === undefined`,
	`[1, 2].push(3) === 3`,
	`Object.prototype.toString.call([]) === "[object Array]" && ({}).toString() === "[object Object]"`,
	`typeof Math === "object" && Math.max(1, 2) === 2 && Math.random() < 1 && Math.abs(-1) === 1`,
	`JSON.parse('{"a":1}').a === 1 && JSON.stringify({a: [1, {b: 2}]}) === '{"a":[1,{"b":2}]}'`,
	`Date.now() > 0 && new Date(0).getTime() === 0`,
	`String(123) === "123" && "abc".toUpperCase() === "ABC" && String.prototype.equals.length === 1`,
	`java.lang.Math.abs(-2) === 2 && Long.valueOf("10") === 10 && Integer.parseInt("7") === 7 && Boolean.valueOf("true") === true`,
	`Object.getPrototypeOf([]) === Array.prototype && Object.getPrototypeOf(Array.prototype) === Object.prototype`,
	`Object.getPrototypeOf(Object.prototype) === null && Object.getPrototypeOf(globalThis) === Object.prototype`,
	`[3, 1, 2].sort().join() === "1,2,3" && [1, 2].map(function (x) { return x * 2; }).join() === "2,4"`,
	`(function () { return 1; }).call() === 1 && typeof Function.prototype.apply === "function"`,
	`new Error("m").message === "m" && new Error("m").name === "Error" && String(new TypeError("t")) === "TypeError: t"`,
	`[...[1, 2]].length === 2 && Array.from(new Set([1, 1, 2])).length === 2`,
	`(function* () { yield 1; })().next().value === 1`,
	`Object.keys({a: 1}).join() === "a" && Object.freeze({}) !== undefined && Reflect.apply(Math.max, null, [1, 2]) === 2`,
	`"a-b".split("-").length === 2 && "aXb".replace(/x/i, "-") === "a-b"`,
}

// pristineCheck is a script that returns which of pristine are false
// (or throw), joined; "" when none.
func pristineCheck() string {
	var b strings.Builder
	b.WriteString("(function () { var bad = [];\n")
	for _, c := range pristine {
		q, _ := json.Marshal(c)
		b.WriteString("try { if (!(" + c + ")) bad.push(" + string(q) + "); } catch (e) { bad.push(" + string(q) + " + ': ' + e); }\n")
	}
	b.WriteString("return bad.join('\\n'); })()")
	return b.String()
}

// A script cannot change the builtins that later evaluations on the same
// VM see: whether its attempt fails silently, throws, or leaves a trace
// that makes the VM unfit for reuse, the next evaluation finds them as
// they were.
func TestEvaluationsCannotPoisonEachOther(t *testing.T) {
	t.Parallel()
	check := pristineCheck()
	vars := map[string]any{"decision": "grant"}
	for _, tc := range []struct {
		name, src string
		dropsVM   bool // the attempt leaves a trace release sees
	}{
		{"add a method", `String.prototype.pwned = function () { return 1; }`, false},
		{"override the prelude's equals", `String.prototype.equals = function () { return true; }`, false},
		{"override push", `Array.prototype.push = function () { return -1; }`, false},
		{"override toString", `Object.prototype.toString = function () { return "x"; }`, false},
		{"override valueOf", `Object.prototype.valueOf = function () { return 4; }`, false},
		{"override Math.random", `Math.random = function () { return 4; }`, false},
		{"override JSON.parse", `JSON.parse = function () { return {a: 2}; }`, false},
		{"override Date.now", `Date.now = function () { return 0; }`, false},
		{"override Function.prototype.call", `Function.prototype.call = function () { return 2; }`, false},
		{"override Error.prototype.name", `Error.prototype.name = "Pwned"`, false},
		{"override the array iterator", `Array.prototype[Symbol.iterator] = function* () { yield 9; }`, false},
		{"override the iterator's next", `Object.getPrototypeOf([][Symbol.iterator]()).next = function () { return {done: true}; }`, false},
		{"override the generator's next", `Object.getPrototypeOf(function* () {}).prototype.next = null`, false},
		{"override a prelude helper", `Long.valueOf = function () { return 1; }; Integer.parseInt = null; Boolean.valueOf = null`, false},
		{"override in java.lang", `java.lang.Math.abs = function () { return 7; }; java.lang.Math = {}`, false},
		{"pollute Object.prototype", `Object.prototype.isAdmin = true`, false},
		{"pollute through assign", `Object.assign(Object.prototype, {isAdmin: true})`, false},
		{"reassign Math", `Math = {}`, false},
		{"reassign JSON", `JSON = null`, false},
		{"reassign Date", `Date = null`, false},
		{"reassign String", `String = function () { return "s"; }`, false},
		{"reassign java", `java = {}`, false},
		{"reassign through this", `this.Math = {}; globalThis.JSON = {}`, false},
		{"redeclare with var", `var Math = {}`, false},
		{"redeclare with function", `function JSON() {}`, false},
		{"delete a method", `delete Math.max; delete Array.prototype.map; delete String.prototype.equals`, false},
		{"delete a global", `delete globalThis.JSON; delete Math`, false},
		{"defineProperty a method", `Object.defineProperty(String.prototype, "equals", {value: function () { return true; }})`, false},
		{"defineProperty a getter", `Object.defineProperty(Object.prototype, "isAdmin", {get: function () { return true; }})`, false},
		{"defineProperty a global", `Object.defineProperty(globalThis, "Math", {value: {}})`, false},
		{"__proto__ of an object", `({}).__proto__.isAdmin = true`, false},
		{"__proto__ of a string", `"".__proto__.equals = function () { return true; }`, false},
		{"__proto__ of Object.prototype", `Object.prototype.__proto__ = {isAdmin: true}`, false},
		{"setPrototypeOf a builtin prototype", `Object.setPrototypeOf(Array.prototype, {isAdmin: true})`, false},
		{"setPrototypeOf Object.prototype", `Object.setPrototypeOf(Object.prototype, {isAdmin: true})`, false},
		{"setPrototypeOf the global object", `Object.setPrototypeOf(globalThis, {isAdmin: true})`, true},
		{"preventExtensions the global object", `Object.preventExtensions(globalThis)`, true},
		{"a new global", `isAdmin = true`, false},
		{"a new global through this", `this.isAdmin = true; globalThis.isAdmin2 = 1`, false},
		{"a global that cannot be deleted", `Object.defineProperty(globalThis, "isAdmin", {value: true})`, true},
		{"a symbol on the global object", `globalThis[Symbol.for("isAdmin")] = true`, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			ev := script.NewOneVM(script.Config{})
			_, _ = ev.Exec(context.Background(), tc.src, vars) // whether it throws or not
			bad, err := ev.Eval(context.Background(), check, vars)
			require.NoError(t, err)
			require.Empty(t, bad, "after %s", tc.src)
			want := int64(1)
			if tc.dropsVM {
				want = 2
			}
			require.Equal(t, want, script.VMsMade(ev), "the second evaluation ran on a VM of its own only if the first left a trace")
		})
	}
}

// Honest scripts that assign toString, valueOf, constructor, name or
// message on objects of their own, subclass builtins, or use the
// compatibility prelude, run as they did before the builtins were frozen.
func TestHonestScriptsStillOverrideOnTheirOwnObjects(t *testing.T) {
	t.Parallel()
	ev := script.NewOneVM(script.Config{})
	vars := map[string]any{"decision": "grant", "counter": int64(10)}
	for _, src := range []string{
		`var o = {}; o.toString = function () { return "me"; }; String(o) === "me" && Object.keys(o).join() === "toString"`,
		`"use strict"; var o = {}; o.toString = function () { return "me"; }; String(o) === "me"`,
		`var o = {}; o.valueOf = function () { return 41; }; o + 1 === 42`,
		`var o = {}; o.constructor = "c"; o.constructor === "c" && ({}).constructor === Object`,
		`function P() {} P.prototype.toString = function () { return "P"; }; String(new P()) === "P" && String({}) === "[object Object]"`,
		`function E(m) { this.message = m; this.name = "E"; }
		 E.prototype = Object.create(Error.prototype); E.prototype.constructor = E;
		 var e = new E("x"); e.name === "E" && e.message === "x" && e instanceof Error && e.constructor === E && String(e) === "E: x"`,
		`class MyErr extends Error { constructor(m) { super(m); this.name = "MyErr"; } }
		 var e = new MyErr("boom"); e.name === "MyErr" && String(e) === "MyErr: boom" && new Error("n").name === "Error"`,
		`class A { toString() { return "A"; } } class B extends A {} "" + new B() === "A"`,
		`class L extends Array {} var l = new L(); l.push(1, 2); l.length === 2 && l instanceof Array`,
		`var d = new Date(0); d.toJSON = function () { return "j"; }; JSON.stringify({d: d}) === '{"d":"j"}'`,
		`var f = function () {}; f.prototype.valueOf = function () { return 2; }; new f() * 2 === 4`,
		`var o = Object.create(null); o.toString = 1; o.toString === 1`,
		`var e = new Error(); e.message = "later"; e.message === "later" && new Error().message === ""`,
		`var a = [3, 1, 2]; a.sort(); a.push(4); a.toString = function () { return "arr"; }; String(a) === "arr" && String([1]) === "1"`,
		`decision.equals("grant") && counter.compareTo(Long.valueOf("10")) == 0 && java.lang.Math.abs(-3) === 3`,
		`var s = new String("x"); s.equals("x") && "x".equalsIgnoreCase("X") && (5).intValue() === 5`,
		`Object.isFrozen(String.prototype) && Object.isFrozen(Math) && Object.isFrozen(java.lang)`,
	} {
		got, err := ev.Condition(context.Background(), src, vars)
		require.NoError(t, err, src)
		require.True(t, got, src)
	}
	// A data field cannot take a builtin global's name.
	_, err := ev.Condition(context.Background(), `Math`, map[string]any{"Math": 1})
	require.ErrorIs(t, err, script.ErrRuntime)
	// Assigning the builtin's own property still fails, loudly.
	_, err = ev.Exec(context.Background(), `Object.prototype.toString = function () { return "x"; }`, nil)
	require.ErrorIs(t, err, script.ErrRuntime)
}

// A regular expression that backtracks without end (goja runs patterns
// with lookaround in regexp2, which backtracks) gives up after the match
// timeout; the evaluation, whose time limit is shorter, then fails with
// ErrTimeout instead of holding its goroutine for good or going on as if
// the pattern had not matched.
func TestCatastrophicRegexpFailsWithTheTimeLimit(t *testing.T) {
	t.Parallel()
	// No memory budget: the watchdog measures the process, and these
	// evaluations run long enough to see the heap the package's other
	// tests grow meanwhile.
	ev := script.New(script.Config{Limits: script.Limits{MemoryBudget: -1}})
	for _, src := range []string{
		`/^(a|aa)+(?=c)$/.test("a".repeat(60))`,
		`"a".repeat(60).replace(/^(a|aa)+(?=c)$/, "x") === "x"`,
		`/^(a+)+\1$/.exec("a".repeat(60) + "b") === null`,
	} {
		ctx, cancel := context.WithTimeout(context.Background(), testMatchTimeout/3)
		_, err := ev.Condition(ctx, src, nil)
		cancel()
		require.ErrorIs(t, err, script.ErrTimeout, src)
		var se *script.Error
		require.ErrorAs(t, err, &se)
	}
	// The Evaluator goes on evaluating, regular expressions included.
	ok, err := ev.Condition(context.Background(), `/^(a|aa)+(?=c)/.test("aac")`, nil)
	require.NoError(t, err)
	require.True(t, ok)
}
