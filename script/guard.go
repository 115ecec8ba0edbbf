package script

import (
	"fmt"
	"math"
	"math/big"
	"reflect"
	"strings"

	"github.com/dop251/goja"
	"github.com/dop251/goja/ast"
)

// guardPrelude is run once in every VM, after the compatibility prelude.
// It takes away what scripts are not given and puts a check in front of
// each builtin whose result can be far larger than its input, because a
// builtin runs to its end before the VM looks at an interrupt (see the
// package documentation). Its value is a function of
//
//	budget              MemoryBudget in bytes, or Infinity
//	limit(bytes, what)  fails the evaluation (bytes is over budget)
//	tooDeep(what)       fails it for nesting deeper than maxDepth
//	jsonDepth(text)     how deeply JSON text nests
//	countOf(s, sub)     how often sub occurs in s
//	maxDepth            MaxCallStackDepth, or Infinity
//
// The checks compare with budget in JavaScript and call limit, in Go,
// only to fail: a call into Go costs more than the comparison.
//
// The wrappers are defined as the builtins are (writable, configurable,
// not enumerable). They convert their arguments once and hand the
// converted values on, so that a valueOf or toString runs once, as
// without them. The sizes are estimates in bytes: a character is one, a
// slot of an array or an argument list sixteen, a string in an array
// thirty-two.
const guardPrelude = `(function (budget, limit, tooDeep, jsonDepth, countOf, maxDepth) {
  "use strict";
  var g = globalThis;
  var apply = Reflect.apply, construct = Reflect.construct, defineProperty = Object.defineProperty,
      getPrototypeOf = Object.getPrototypeOf, getOwnPropertyNames = Object.getOwnPropertyNames,
      isArray = Array.isArray, trunc = Math.trunc, indexOf = String.prototype.indexOf,
      stringify = JSON.stringify, parse = JSON.parse;
  var SLOT = 16, STRING = 32, NUMBER = 24;

  function over(bytes, what) {
    if (bytes > budget || bytes !== bytes) limit(bytes, what);
  }
  function def(o, name, fn) {
    defineProperty(o, name, {value: fn, writable: true, configurable: true, enumerable: false});
  }
  function thisString(self, name) {
    if (self === null || self === undefined) throw new TypeError("String.prototype." + name + " called on null or undefined");
    return String(self);
  }
  function lengthOf(o) {
    if (o === null || o === undefined) return 0;
    var n = Number(o.length);
    return n > 0 ? (n === Infinity ? n : trunc(n)) : 0;
  }
  // count: how often sub occurs in s (between each character, for "").
  function count(s, sub) {
    return sub.length === 0 ? s.length + 1 : countOf(s, sub);
  }
  // matches: how many matches of the regular expression rx in s a
  // replace or match must allow for: one, or for a global one a match at
  // every character (counting them would take as much as the call).
  function matches(rx, s) {
    return rx.global ? s.length + 1 : 1;
  }

  // What scripts are not given: BigInt (shifts and powers of unbounded
  // size in one instruction), binary buffers (of any size in one call),
  // and code made at run time (which would escape the checks on sources).
  ["BigInt", "ArrayBuffer", "SharedArrayBuffer", "DataView", "Int8Array", "Uint8Array", "Uint8ClampedArray",
   "Int16Array", "Uint16Array", "Int32Array", "Uint32Array", "Float32Array", "Float64Array", "BigInt64Array",
   "BigUint64Array", "eval"].forEach(function (name) { delete g[name]; });
  // A blocked constructor stands in for each Function constructor, with
  // its prototype, so that instanceof and .constructor work as before.
  function blockConstructor(F) {
    var blocked = function Function() { throw new EvalError("scripts cannot make code at run time (eval, new Function)"); };
    defineProperty(blocked, "prototype", {value: F.prototype, writable: false, enumerable: false, configurable: false});
    def(F.prototype, "constructor", blocked);
    return blocked;
  }
  def(g, "Function", blockConstructor(Function));
  blockConstructor(getPrototypeOf(function* () {}).constructor);
  blockConstructor(getPrototypeOf(async function () {}).constructor);

  // Strings.
  var S = String.prototype, sRepeat = S.repeat, sConcat = S.concat, sSplit = S.split;
  def(S, "repeat", function (n) {
    var s = thisString(this, "repeat");
    n = Number(n);
    if (n > 0 && s.length > 0) over(s.length * (n === Infinity ? n : trunc(n)), "String.prototype.repeat");
    return apply(sRepeat, s, [n]);
  });
  ["padStart", "padEnd"].forEach(function (name) {
    var f = S[name];
    def(S, name, function (n, fill) {
      var s = thisString(this, name);
      n = Number(n);
      if (n > s.length && fill !== "") over(n === Infinity ? n : trunc(n), "String.prototype." + name);
      return apply(f, s, [n, fill]);
    });
  });
  def(S, "concat", function () {
    var s = thisString(this, "concat"), parts = [], total = s.length;
    for (var i = 0; i < arguments.length; i++) { parts[i] = String(arguments[i]); total += parts[i].length; }
    over(total, "String.prototype.concat");
    return apply(sConcat, s, parts);
  });
  // A replacement function's results are counted as they come; a
  // replacement string's size follows from the number of matches, the
  // $& and $n it repeats (the matches, at most the string once) and the
  // ` + "$` and $'" + ` (the rest of the string, once a match).
  function sizedReplacement(s, replacement, found, what) {
    if (typeof replacement === "function") {
      var fn = replacement, total = s.length;
      return function () {
        var r = String(apply(fn, this, arguments));
        total += r.length;
        over(total, what);
        return r;
      };
    }
    var r = String(replacement);
    var copies = (r.match(/\$[&0-9<]/g) || []).length, spans = (r.match(/\$[` + "`" + `']/g) || []).length;
    over(s.length + found * (r.length + spans * s.length) + copies * s.length, what);
    return r;
  }
  ["replace", "replaceAll"].forEach(function (name) {
    var f = S[name], all = name === "replaceAll";
    def(S, name, function (pattern, replacement) {
      if (pattern !== null && (typeof pattern === "object" || typeof pattern === "function")) {
        return apply(f, this, [pattern, replacement]); // RegExp's Symbol.replace, checked below
      }
      var s = thisString(this, name);
      pattern = String(pattern);
      var found = all ? count(s, pattern) : (apply(indexOf, s, [pattern]) >= 0 ? 1 : 0);
      replacement = sizedReplacement(s, replacement, found, "String.prototype." + name);
      return apply(f, s, [pattern, replacement]);
    });
  });
  def(S, "split", function (sep, max) {
    if (sep !== null && (typeof sep === "object" || typeof sep === "function")) {
      return apply(sSplit, this, [sep, max]); // RegExp's Symbol.split, checked below
    }
    var s = thisString(this, "split");
    max = max === undefined ? Infinity : Number(max) >>> 0;
    if (sep !== undefined) {
      sep = String(sep);
      over(Math.min(count(s, sep), max) * STRING, "String.prototype.split");
    }
    return apply(sSplit, s, [sep, max === Infinity ? undefined : max]);
  });

  // Regular expressions.
  var R = RegExp.prototype, rReplace = R[Symbol.replace], rSplit = R[Symbol.split], rMatch = R[Symbol.match];
  defineProperty(R, Symbol.replace, {value: function (s, replacement) {
    var rx = this;
    s = String(s);
    replacement = sizedReplacement(s, replacement, matches(rx, s), "String.prototype.replace");
    return apply(rReplace, rx, [s, replacement]);
  }, writable: true, configurable: true, enumerable: false});
  defineProperty(R, Symbol.split, {value: function (s, max) {
    s = String(s);
    max = max === undefined ? Infinity : Number(max) >>> 0;
    over(Math.min(s.length + 1, max) * STRING, "String.prototype.split");
    return apply(rSplit, this, [s, max === Infinity ? undefined : max]);
  }, writable: true, configurable: true, enumerable: false});
  defineProperty(R, Symbol.match, {value: function (s) {
    s = String(s);
    over(matches(this, s) * STRING, "String.prototype.match");
    return apply(rMatch, this, [s]);
  }, writable: true, configurable: true, enumerable: false});

  // Arrays: every method is held to the length of its this (the generic
  // ones walk any object with a length); those that build more than they
  // are given are held to what they build.
  var A = Array.prototype, aJoin = A.join;
  function joined(a, sep, what) {
    var n = lengthOf(a), total = n > 0 ? (n - 1) * sep.length : 0;
    over(n * SLOT, what);
    for (var i = 0; i < n; i++) {
      var v = a[i];
      total += typeof v === "string" ? v.length : (v === null || v === undefined ? 0 : NUMBER);
    }
    over(total, what);
  }
  // flatCount: how many elements a.flat(depth) has, each shared array
  // counted once a depth (a.flat(Infinity) of 40 nested pairs is 2^40).
  function flatCount(a, depth, memo) {
    var byDepth = memo.get(a);
    if (byDepth !== undefined && byDepth.has(depth)) return byDepth.get(depth);
    var n = lengthOf(a), total = 0;
    over(n * SLOT, "Array.prototype.flat");
    for (var i = 0; i < n; i++) {
      var v = a[i];
      total += depth > 0 && isArray(v) ? flatCount(v, depth - 1, memo) : 1;
      if (total * SLOT > budget) limit(total * SLOT, "Array.prototype.flat");
    }
    if (byDepth === undefined) {
      byDepth = new Map();
      memo.set(a, byDepth);
    }
    byDepth.set(depth, total);
    return total;
  }
  var fixed = {constructor: true, at: true, pop: true, push: true}; // cost nothing by the length
  getOwnPropertyNames(A).forEach(function (name) {
    var f = A[name], what = "Array.prototype." + name;
    if (typeof f !== "function" || fixed[name] === true) return;
    var check = null;
    switch (name) {
    case "join":
      check = function (a, args) { joined(a, args[0] === undefined ? "," : String(args[0]), what); };
      break;
    case "toLocaleString":
      check = function (a) { joined(a, ",", what); };
      break;
    case "concat":
      check = function (a, args) {
        var n = lengthOf(a);
        for (var i = 0; i < args.length; i++) n += isArray(args[i]) ? lengthOf(args[i]) : 1;
        over(n * SLOT, what);
      };
      break;
    case "flat":
      check = function (a, args) {
        var d = args[0] === undefined ? 1 : Number(args[0]);
        flatCount(a, d !== d ? 0 : d, new Map());
      };
      break;
    case "flatMap":
      def(A, name, function (fn, self) {
        over(lengthOf(this) * SLOT, what);
        var total = 0, counted = fn;
        if (typeof fn === "function") {
          counted = function () {
            var r = apply(fn, this, arguments);
            total += isArray(r) ? lengthOf(r) : 1;
            over(total * SLOT, what);
            return r;
          };
        }
        return apply(f, this, [counted, self]);
      });
      return;
    }
    if (check === null) {
      def(A, name, function () {
        if ((lengthOf(this) + arguments.length) * SLOT > budget) limit((lengthOf(this) + arguments.length) * SLOT, what);
        return apply(f, this, arguments);
      });
      return;
    }
    def(A, name, function () {
      check(this, arguments);
      return apply(f, this, arguments);
    });
  });
  // Spreading, destructuring, new Set(a) and for-of iterate arrays
  // through Symbol.iterator: the checked values.
  defineProperty(A, Symbol.iterator, {value: A.values, writable: true, configurable: true, enumerable: false});
  var aFrom = Array.from;
  def(Array, "from", function (items) {
    if (items !== null && items !== undefined) over(lengthOf(items) * SLOT, "Array.from");
    return apply(aFrom, this, arguments);
  });

  // Argument lists.
  var fApply = Function.prototype.apply;
  def(Function.prototype, "apply", function (self, args) {
    over(lengthOf(args) * SLOT, "Function.prototype.apply");
    return apply(fApply, this, [self, args]);
  });
  def(Reflect, "apply", function (target, self, args) {
    over(lengthOf(args) * SLOT, "Reflect.apply");
    return apply(target, self, args);
  });
  def(Reflect, "construct", function (target, args) {
    over(lengthOf(args) * SLOT, "Reflect.construct");
    return apply(construct, undefined, arguments);
  });

  // JSON: stringify through a replacer that counts what it writes and how
  // deep it is; parse after measuring how deep the text nests.
  def(JSON, "stringify", function (value, replacer, space) {
    var user = typeof replacer === "function" ? replacer : null, allowed = null;
    if (isArray(replacer)) {
      allowed = new Map();
      for (var i = 0; i < replacer.length; i++) allowed.set(String(replacer[i]), true);
    }
    var gap = typeof space === "number" ? Math.min(10, Math.max(0, trunc(space))) :
      (typeof space === "string" ? Math.min(10, space.length) : 0);
    var depths = new Map(), total = 0;
    function counting(key, v) {
      if (allowed !== null && key !== "" && !isArray(this) && !allowed.has(key)) return undefined;
      if (user !== null) v = apply(user, this, [key, v]);
      var d = (depths.get(this) || 0) + 1;
      if (d > maxDepth) tooDeep("JSON.stringify");
      if (v !== null && typeof v === "object") {
        depths.set(v, d);
        if (isArray(v)) over(lengthOf(v) * 5, "JSON.stringify"); // "null," at the least
      }
      total += key.length + 4 + d * gap + (typeof v === "string" ? v.length : NUMBER);
      if (total > budget) limit(total, "JSON.stringify");
      return v;
    }
    return apply(stringify, JSON, [value, counting, space]);
  });
  def(JSON, "parse", function (text, reviver) {
    text = String(text);
    if (jsonDepth(text) > maxDepth) tooDeep("JSON.parse");
    return apply(parse, JSON, [text, reviver]);
  });
})`

// installGuards runs the guard prelude (compiled from guardPrelude) in vm
// with the Go side of its checks.
func installGuards(vm *goja.Runtime, prog *goja.Program, limits Limits) error {
	v, err := vm.RunProgram(prog)
	if err != nil {
		return err
	}
	install, ok := goja.AssertFunction(v)
	if !ok {
		return fmt.Errorf("the guard prelude is not a function")
	}
	budget := math.Inf(1)
	if limits.MemoryBudget > 0 {
		budget = float64(limits.MemoryBudget)
	}
	maxDepth := math.Inf(1)
	if limits.MaxCallStackDepth > 0 {
		maxDepth = float64(limits.MaxCallStackDepth)
	}
	// limit and tooDeep interrupt the VM, which stops before the
	// wrapper's next instruction, and throw as well, for the call
	// itself.
	fail := func(kind error, detail string) {
		err := &limitError{kind: kind, detail: detail}
		vm.Interrupt(err)
		panic(vm.NewGoError(err))
	}
	limit := vm.ToValue(func(call goja.FunctionCall) goja.Value {
		if n := call.Argument(0).ToFloat(); n > budget || math.IsNaN(n) {
			fail(ErrMemoryBudget, fmt.Sprintf("%s would build %s, more than the memory budget of %s",
				call.Argument(1).String(), roughBytes(n), bytesText(limits.MemoryBudget)))
		}
		return goja.Undefined()
	})
	tooDeep := vm.ToValue(func(call goja.FunctionCall) goja.Value {
		fail(ErrStackDepth, fmt.Sprintf("%s nests deeper than %d", call.Argument(0).String(), limits.MaxCallStackDepth))
		return nil
	})
	depth := vm.ToValue(func(call goja.FunctionCall) goja.Value {
		return vm.ToValue(jsonDepth(call.Argument(0).String()))
	})
	countOf := vm.ToValue(func(call goja.FunctionCall) goja.Value {
		return vm.ToValue(strings.Count(call.Argument(0).String(), call.Argument(1).String()))
	})
	_, err = install(goja.Undefined(), vm.ToValue(budget), limit, tooDeep, depth, countOf, vm.ToValue(maxDepth))
	return err
}

// roughBytes writes an estimated size: in binary units while it is
// finite and fits, else "an unbounded amount".
func roughBytes(n float64) string {
	if math.IsInf(n, 0) || math.IsNaN(n) || n >= math.MaxInt64 {
		return "an unbounded amount"
	}
	return "about " + bytesText(int64(n))
}

// jsonDepth returns how deeply JSON text nests arrays and objects,
// without parsing it; text that is not JSON gives a number all the same,
// and JSON.parse then reports the error.
func jsonDepth(text string) int {
	depth, deepest, inString, escaped := 0, 0, false, false
	for i := 0; i < len(text); i++ {
		c := text[i]
		switch {
		case inString && escaped:
			escaped = false
		case inString && c == '\\':
			escaped = true
		case inString:
			inString = c != '"'
		case c == '"':
			inString = true
		case c == '[' || c == '{':
			depth++
			deepest = max(deepest, depth)
		case c == ']' || c == '}':
			depth--
		}
	}
	return deepest
}

// findBigInt looks for a BigInt literal in a parsed program and returns
// where it is (line:column). The AST has no walker of its own; this one
// follows every exported field by reflection, which a program of any size
// pays once, when it is compiled.
func findBigInt(prg *ast.Program) (string, bool) {
	var found *ast.NumberLiteral
	seen := make(map[uintptr]bool)
	var walk func(v reflect.Value) bool
	walk = func(v reflect.Value) bool {
		switch v.Kind() {
		case reflect.Pointer:
			if v.IsNil() || seen[v.Pointer()] {
				return false
			}
			seen[v.Pointer()] = true
			if n, ok := v.Interface().(*ast.NumberLiteral); ok {
				if _, isBig := n.Value.(*big.Int); isBig {
					found = n
					return true
				}
				return false
			}
			if v.Type().Elem().PkgPath() != reflect.TypeFor[ast.Program]().PkgPath() {
				return false // *file.File and the like: no code below
			}
			return walk(v.Elem())
		case reflect.Interface:
			return !v.IsNil() && walk(v.Elem())
		case reflect.Struct:
			for i := range v.NumField() {
				if v.Type().Field(i).IsExported() && walk(v.Field(i)) {
					return true
				}
			}
		case reflect.Slice:
			for i := range v.Len() {
				if walk(v.Index(i)) {
					return true
				}
			}
		}
		return false
	}
	if !walk(reflect.ValueOf(prg)) {
		return "", false
	}
	pos := prg.File.Position(int(found.Idx) - prg.File.Base())
	return fmt.Sprintf("%s at %d:%d", found.Literal, pos.Line, pos.Column), true
}
