// Package script evaluates the JavaScript of XPDL definitions: transition
// conditions, deadline expressions and script tool agents (DESIGN.md §9).
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
//     Eval returns or Exec hands back, about its JSON's; ErrValueTooLarge.
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
//   - Whatever else the process does in the same time counts too. An
//     evaluation is stopped when the heap grew by the budget between two
//     readings at least a millisecond apart while it ran; growth is counted
//     net of what the garbage collector frees meanwhile, so a host's
//     ordinary garbage does not add up, but a host that retains as much
//     memory during one long evaluation, or a second evaluation that runs
//     over its own budget at the same time, stops it as well. Conditions
//     run for microseconds and are in practice never read twice.
//   - A script overshoots by what it allocates between two readings and in
//     its last instruction: the doubling string s = s + s is stopped when
//     the string is about the budget's size, with the heap at two to four
//     times the budget.
//   - A builtin (a method of String, Array, JSON ...) runs to its end in Go
//     before the VM looks at the interrupt. The builtins whose result can
//     be far larger than their input are therefore checked before they run,
//     against the same budget (String.prototype.repeat, padStart, padEnd,
//     concat, replace, replaceAll and split, RegExp's replace and split,
//     Array.prototype's methods, Array.from, apply and Reflect.apply and
//     construct, JSON.stringify); JSON.parse and JSON.stringify are also
//     held to the call depth. The features whose cost no check can
//     foresee are not available at all: BigInt (1n << 10000000000n
//     allocates gigabytes in one instruction), ArrayBuffer, DataView and
//     the typed arrays, eval and the Function constructors.
//   - What remains unchecked is the time a builtin takes: a builtin that
//     walks a sparse array of a billion holes (new Set(a), [...a]), or a
//     regular expression that backtracks without end, cannot be
//     interrupted, and holds its goroutine past the time limit.
//
// A host that runs definitions it does not trust should still give the
// process a memory limit of its own (a container's, or GOMEMLIMIT with
// room to spare): the budgets keep one script from taking the host down,
// not the host from every mistake.
package script
