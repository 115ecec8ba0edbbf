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
// # Budgets
//
// A definition may come from someone the host does not trust, and scripts
// run inside the host's process: what a script does to the engine it does
// to the host. Every evaluation is therefore bounded, and one over a bound
// fails like any other evaluation, with an *Error whose Kind names the
// bound and whose message the limit:
//
//   - Time: the caller's context. When it is done the script is
//     interrupted and the evaluation returns ErrTimeout or ErrCanceled. The
//     package reads no clock of its own for it.
//   - Memory: Limits.MemoryBudget (default 64 MiB), how far the process's
//     heap may grow while the evaluation runs; ErrMemoryBudget.
//   - Call depth: Limits.MaxCallStackDepth (default 1024 nested calls);
//     ErrStackDepth.
//   - Result: Limits.MaxResultBytes (default 1 MiB), the size of a value
//     Eval returns or Exec hands back, about its JSON's (an object referred
//     to twice counts twice, as its JSON repeats it); ErrValueTooLarge.
//     Limits.MaxResultTotalBytes (default 4 MiB) bounds all that Exec
//     hands back together.
//
// # How the memory budget is kept
//
// Go cannot tell how much one goroutine allocates, so the budget is kept
// from the outside, by a watchdog: while at least one evaluation runs,
// one goroutine of the Evaluator reads the process's heap in use (live and
// not yet swept objects and goroutine stacks, from runtime/metrics, which
// costs well under a microsecond and does not stop the world) every
// millisecond. Its first reading during an evaluation is that evaluation's
// baseline; when a later one is more than the budget above it, the
// watchdog interrupts the evaluation's VM, which stops before its next
// instruction. The goroutine ends as soon as no evaluation runs, so an
// idle Evaluator owns none and needs no Close.
//
// The watchdog measures the process, not the evaluation, and so has these
// limits:
//
//   - Whatever else the process does counts too. An evaluation is judged
//     between its first reading and a later one, at least a millisecond
//     apart. The heap in use goes up with every allocation and down when
//     the collector sweeps, so ordinary garbage comes and goes rather than
//     adding up; but memory the host retains meanwhile, or that another
//     evaluation over its own budget takes, counts against every
//     evaluation that runs long enough to see it. Conditions run for
//     microseconds and are in practice never read twice.
//   - A script overshoots by what it allocates between two readings and in
//     its last instruction: the doubling string s = s + s is stopped when
//     the string is about the budget's size, with the heap at two to four
//     times the budget.
//   - A builtin (a method of String, Array, JSON ...) runs to its end in Go
//     before the VM looks at the interrupt. The builtins whose result can
//     be far larger than their input are therefore checked before they run,
//     against the same budget, by a prelude that wraps them
//     (String.prototype.repeat, padStart, padEnd, concat, replace,
//     replaceAll and split, RegExp's replace, split and match,
//     Array.prototype's methods and iterator, Array.from, apply,
//     Reflect.apply and construct, JSON.stringify); JSON.parse and
//     JSON.stringify are also held to the call depth. The estimates are
//     deliberately rough: a string counts a byte a character, an array
//     sixteen bytes an element (thirty-two for a string in one), and a
//     regular expression is assumed to match at every character: a
//     global match, or a split by one, is refused on a string of more than a
//     thirty-second of the budget (2 Mi characters by default), a global
//     replace when the string's length times the replacement's passes the
//     budget. The features whose cost no check can foresee are not
//     available at all: BigInt (1n << 10000000000n allocates gigabytes in
//     one instruction; a literal is a syntax error), ArrayBuffer, DataView
//     and the typed arrays, eval and the Function constructors.
//   - Garbage counts until it is swept: with the default GOGC the
//     collector lets garbage grow to the size of what is live, so a script
//     that keeps half the budget and churns through as much again reaches
//     it.
//   - What remains unchecked is the time a builtin takes, but for one
//     case: a regular expression with lookaround or backreferences runs
//     in github.com/dlclark/regexp2, which backtracks, and one that
//     backtracks without end gives up after Config.MatchTimeout as if it
//     had found nothing. That bound is regexp2's, process-wide (the first
//     Evaluator made sets it), and should be at least the longest time
//     limit evaluations run under: an evaluation whose context ended while
//     it ran fails with ErrTimeout even if the script then finished, so
//     the match's "no match" is never taken for an answer. Other
//     patterns run in Go's regexp, in linear time.
//
// A host that runs definitions it does not trust should still give the
// process a memory limit of its own (a container's, or GOMEMLIMIT with
// room to spare): the budgets keep one script from taking the host down,
// not the host from every mistake.
//
// # Isolation between evaluations
//
// VMs are pooled and reused by any evaluation, whatever definition it
// comes from, so nothing one script changes may reach the next. When a VM
// is made, after the preludes, a third one (hardenPrelude) freezes every
// object reachable from the global object and the intrinsics no global
// names (prototypes, constructors, Math, JSON, the compatibility
// prelude's objects) and makes every global name there is by then
// read-only and undeletable, once per VM, not per evaluation. Freezing
// Object.prototype would make obj.toString = f fail silently on a
// script's own object (JavaScript's "override mistake"); the builtins'
// constructor, toString, toLocaleString, valueOf, toJSON, name and
// message are therefore accessors whose setter defines the property on
// the object assigned to, as assigning through an unfrozen prototype
// would. The global object itself stays open (data fields are set on it):
// the names a script gave it by assigning (tmp = 5) are deleted after the
// evaluation, and a VM whose global object kept a name it cannot lose,
// gained a symbol, changed prototype or was made non-extensible is
// dropped rather than pooled. A data field named like a
// builtin global (Math, java) cannot be set and fails the evaluation.
//
// A script's top-level declarations (var, let, const, function, class)
// would outlive it on its VM: var and function as undeletable properties
// of the global object, let, const and class as global bindings, so that
// the same script failed on the VM's next turn ("Identifier 'x' has
// already been declared") and the next script could read them. Such a
// script runs in a scope of its own instead (scope.go): a direct eval
// inside a function only the package holds, compiled at every run (tens
// of microseconds, far less than a VM). Two kinds still run at the top
// level, and their VM is dropped afterwards: a script that mentions eval
// or escapes a character of an identifier (the scope's eval is not for
// scripts to reach), and one that declares one of the evaluation's
// variables (var total = a + b assigns the data field total, as it always
// has) along with names of its own.
//
// # The pool of VMs
//
// Making a VM (the preludes, freezing the builtins) takes milliseconds;
// running a condition on a pooled one, microseconds. Idle VMs are kept in
// a pool of Config.IdleVMs that, unlike a sync.Pool, garbage collections
// do not empty; a VM put back to a full pool is dropped.
package script
