package script_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/goxpdl/goxpdl/script"
)

// A script's top-level declarations do not outlive it: the same script
// runs again and again on one VM, and the next script does not see them.
func TestTopLevelDeclarationsStayWithTheirScript(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name, src string
		want      any
	}{
		{"let and const", `let x = 1; const y = 2; x + y`, int64(3)},
		{"var", `var x = 40; x + 2`, int64(42)},
		{"var in a loop", `for (var i = 0; i < 3; i++) {} i`, int64(3)},
		{"function", `function twice(n) { return 2 * n; } twice(amount)`, int64(10)},
		{"class", `class C { v() { return amount; } } new C().v()`, int64(5)},
		{"destructuring", `var {a, b: [c = 7]} = {a: 1, b: []}; let [d, ...e] = [2, 3]; a + c + d + e[0]`, int64(13)},
		{"strict", `"use strict"; let s = "x"; var t = s + amount; t`, "x5"},
		{"an undeclared name assigned", `tmp = amount; tmp * 2`, int64(10)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			ev := script.NewOneVM(script.Config{})
			vars := map[string]any{"amount": int64(5)}
			for range 3 {
				got, err := ev.Eval(context.Background(), tc.src, vars)
				require.NoError(t, err)
				require.Equal(t, tc.want, got)
			}
			got, err := ev.Eval(context.Background(),
				`[typeof x, typeof y, typeof i, typeof twice, typeof C, typeof a, typeof s, typeof t, typeof tmp].join()`, vars)
			require.NoError(t, err)
			require.Equal(t, "undefined,undefined,undefined,undefined,undefined,undefined,undefined,undefined,undefined", got)
			require.EqualValues(t, 1, script.VMsMade(ev), "every evaluation ran on the first VM")
		})
	}
}

// A script that declares a variable it was given assigns the data field,
// as it always did; one that also declares names of its own does so too,
// and its VM is not reused.
func TestDeclaringAGivenVariableStillAssignsIt(t *testing.T) {
	t.Parallel()
	ev := script.NewOneVM(script.Config{})
	out, err := ev.Exec(context.Background(), `var total = a + b`, map[string]any{"a": int64(1), "b": int64(2), "total": int64(0)})
	require.NoError(t, err)
	require.Equal(t, int64(3), out["total"])
	require.EqualValues(t, 1, script.VMsMade(ev))

	out, err = ev.Exec(context.Background(), `var total = a; var tmp = 2; total += tmp`, map[string]any{"a": int64(1), "total": int64(0)})
	require.NoError(t, err)
	require.Equal(t, int64(3), out["total"])
	got, err := ev.Eval(context.Background(), `typeof tmp`, nil)
	require.NoError(t, err)
	require.Equal(t, "undefined", got, "the VM tmp was declared on was dropped")
	require.EqualValues(t, 2, script.VMsMade(ev))

	// Assigning a given variable from a scoped script reaches it.
	out, err = ev.Exec(context.Background(), `let t = a * 10; total = t`, map[string]any{"a": int64(4), "total": int64(0)})
	require.NoError(t, err)
	require.Equal(t, int64(40), out["total"])
}

// The scope is a direct eval, but a script cannot reach eval through it,
// by name or with an escaped name; such scripts run at the top level,
// where there is no eval, and their VM is dropped.
func TestScopedScriptsCannotReachEval(t *testing.T) {
	t.Parallel()
	ev := script.NewOneVM(script.Config{})
	for _, src := range []string{
		`let q = 1; typeof eval`,
		`let q = 1; typeof \u0065val`,
		`let q = 1; typeof ev\u0061l`,
		`var q = 1; (() => typeof arguments)()`,
	} {
		got, err := ev.Eval(context.Background(), src, nil)
		if err == nil {
			require.Equal(t, "undefined", got, src)
		} else {
			require.ErrorIs(t, err, script.ErrRuntime, src)
		}
	}
	_, err := ev.Eval(context.Background(), `let q = 1; eval("1 + 1")`, nil)
	require.ErrorIs(t, err, script.ErrRuntime)
}

// A scoped script's errors are the same kinds as any other's.
func TestScopedScriptErrors(t *testing.T) {
	t.Parallel()
	ev := script.New(script.Config{})
	_, err := ev.Eval(context.Background(), `let o = null; o.x`, nil)
	require.ErrorIs(t, err, script.ErrRuntime)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err = ev.Eval(ctx, `let n = 0; while (true) n++`, nil)
	require.ErrorIs(t, err, script.ErrCanceled)
	_, err = ev.Eval(context.Background(), `let f = function g(n) { return g(n + 1); }; f(0)`, nil)
	require.ErrorIs(t, err, script.ErrStackDepth)
}
