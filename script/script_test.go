package script_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/goxpdl/goxpdl/script"
)

// testMatchTimeout is the regular expressions' match timeout in this
// package's tests, set by the first Evaluator made (in TestMain): short,
// so that the catastrophic pattern's test ends soon.
const testMatchTimeout = 300 * time.Millisecond

func TestMain(m *testing.M) {
	script.New(script.Config{MatchTimeout: testMatchTimeout})
	// regexp2 keeps a coarse clock in a goroutine of its own while
	// matches with a timeout run, and for a second after; it ends by
	// itself.
	goleak.VerifyTestMain(m, goleak.IgnoreAnyFunction("github.com/dlclark/regexp2/v2.runClock"))
}

func TestConditionsFromRealFiles(t *testing.T) {
	t.Parallel()
	ev := script.New(script.Config{})
	vars := map[string]any{
		"decision": "oui", "approval_decision": "grant", "cont": "deux",
		"counter": int64(10), "isGranted": true, "Express_Delivery": false,
		"answerFound": "no", "answerTimeout": "no", "whereToGo": "B",
		"accepted_by_system": true, "player1_no": int64(3), "player2_no": int64(9), "random_no": int64(4),
		"loop_cnt": int64(3), "i": int64(1), "Probability": 0.33,
	}
	for _, tc := range []struct {
		src  string
		want bool
	}{
		// Bonita's Java-syntax conditions.
		{`decision.equals("oui")`, true},
		{`!decision.equals("oui")`, false},
		{`approval_decision.equals("reject")`, false},
		{`!cont.equals("un")`, true},
		{`counter.compareTo(Long.valueOf("10")) == 0`, true},
		{`counter.compareTo(Long.valueOf("20")) != 0`, true},
		{`isGranted.compareTo(Boolean.valueOf("true")) == 0`, true},
		{`Express_Delivery.compareTo(Boolean.valueOf("false")) == 0`, true},
		{`answerFound.compareTo("no") == 0 && answerTimeout.compareTo("no") == 0`, true},
		{`decision.equalsIgnoreCase("OUI")`, true},
		{`Probability == 0.33`, true},
		// JaWE/Shark JavaScript.
		{`whereToGo=="B"`, true},
		{`accepted_by_system`, true},
		{`i<loop_cnt`, true},
		{`java.lang.Math.abs(player1_no-random_no)<java.lang.Math.abs(player2_no-random_no)`, true},
		{`java.io.File.pathSeparator==";";`, false},
	} {
		t.Run(tc.src, func(t *testing.T) {
			t.Parallel()
			got, err := ev.Condition(context.Background(), tc.src, vars)
			require.NoError(t, err)
			require.Equal(t, tc.want, got)
		})
	}
}

func TestEvalExportsGoValues(t *testing.T) {
	t.Parallel()
	ev := script.New(script.Config{})
	got, err := ev.Eval(context.Background(), `n * 2 + 1`, map[string]any{"n": int64(20)})
	require.NoError(t, err)
	require.Equal(t, int64(41), got)
	got, err = ev.Eval(context.Background(), `s + "!"`, map[string]any{"s": "hi"})
	require.NoError(t, err)
	require.Equal(t, "hi!", got)
}

func TestErrorsAreTyped(t *testing.T) {
	t.Parallel()
	ev := script.New(script.Config{})
	ctx := context.Background()

	_, err := ev.Condition(ctx, `x ==== 1`, nil)
	require.ErrorIs(t, err, script.ErrSyntax)
	require.ErrorIs(t, ev.Compile(`(`), script.ErrSyntax)
	require.NoError(t, ev.Compile(`a == 1`))

	_, err = ev.Condition(ctx, `undefinedVariable == 1`, nil)
	require.ErrorIs(t, err, script.ErrRuntime)
	var se *script.Error
	require.ErrorAs(t, err, &se)
	require.Equal(t, `undefinedVariable == 1`, se.Source)

	_, err = ev.Condition(ctx, `Long.valueOf("ten") == 10`, nil)
	require.ErrorIs(t, err, script.ErrRuntime)
}

func TestEndlessScriptIsInterruptedByItsContext(t *testing.T) {
	t.Parallel()
	ev := script.New(script.Config{})

	// A canceled context stops a script that would never end.
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Add(1)
	var err error
	go func() {
		defer wg.Done()
		_, err = ev.Condition(ctx, `while (true) {}`, nil)
	}()
	cancel()
	wg.Wait()
	require.ErrorIs(t, err, script.ErrCanceled)

	// An expired deadline reports a timeout, before or during the run.
	expired, stop := context.WithDeadline(context.Background(), time.Unix(0, 0))
	defer stop()
	_, err = ev.Condition(expired, `while (true) {}`, nil)
	require.ErrorIs(t, err, script.ErrTimeout)
}

func TestScriptsSeeTheInjectedClock(t *testing.T) {
	t.Parallel()
	fixed := time.Date(2026, 11, 21, 9, 0, 0, 0, time.UTC)
	ev := script.New(script.Config{NowFunc: func() time.Time { return fixed }})
	got, err := ev.Eval(context.Background(), `var d = new java.util.Date(); d.setTime(d.getTime() + delay); d.getTime()`, map[string]any{"delay": int64(5000)})
	require.NoError(t, err)
	require.Equal(t, fixed.Add(5*time.Second).UnixMilli(), got)
}

func TestEvaluationsDoNotLeakIntoEachOther(t *testing.T) {
	t.Parallel()
	ev := script.New(script.Config{})
	ctx := context.Background()
	_, err := ev.Eval(ctx, `leaked = 42`, nil)
	require.NoError(t, err)
	_, err = ev.Eval(ctx, `leaked`, nil)
	require.ErrorIs(t, err, script.ErrRuntime, "globals from one evaluation must not be visible in the next")
}

func TestConcurrentUse(t *testing.T) {
	t.Parallel()
	ev := script.New(script.Config{CacheSize: 8})
	var wg sync.WaitGroup
	errs := make(chan error, 64)
	for i := range 64 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			ok, err := ev.Condition(context.Background(), `n % 7 == r`, map[string]any{"n": int64(i), "r": int64(i % 7)})
			if err == nil && !ok {
				err = context.Canceled // any non-nil marks the failure
			}
			errs <- err
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		require.NoError(t, err)
	}
}

func BenchmarkCondition(b *testing.B) {
	ev := script.New(script.Config{})
	vars := map[string]any{"decision": "grant", "counter": int64(3)}
	ctx := context.Background()
	for b.Loop() {
		if _, err := ev.Condition(ctx, `decision.equals("grant") && counter < 10`, vars); err != nil {
			b.Fatal(err)
		}
	}
}

func TestExecReturnsAssignedVariables(t *testing.T) {
	t.Parallel()
	e := script.New(script.Config{})
	out, err := e.Exec(context.Background(), "counter = counter + 1; label = 'n' + counter; var tmp = 3;",
		map[string]any{"counter": int64(41), "label": ""})
	require.NoError(t, err)
	require.Equal(t, map[string]any{"counter": int64(42), "label": "n42"}, out, "only the given names come back")

	_, err = e.Exec(context.Background(), "counter = ;", map[string]any{"counter": 1})
	require.ErrorIs(t, err, script.ErrSyntax)
	_, err = e.Exec(context.Background(), "throw new Error('no')", nil)
	require.ErrorIs(t, err, script.ErrRuntime)
}

func TestTimesAreDates(t *testing.T) {
	t.Parallel()
	ev := script.New(script.Config{})
	created := time.Date(2026, 11, 23, 9, 0, 0, 0, time.UTC)
	// Shark's deadline script: a java.util.Date a minute after the
	// activity was created.
	v, err := ev.Eval(t.Context(), "var d=new java.util.Date();\nd.setTime(created.getTime()+60000);\nd;",
		map[string]any{"created": created})
	require.NoError(t, err)
	require.Equal(t, created.Add(time.Minute), v.(time.Time).UTC())
}

// BenchmarkMakeVM is the cost of a pool miss: a VM made, its preludes
// run and its builtins frozen.
func BenchmarkMakeVM(b *testing.B) {
	ev := script.New(script.Config{})
	for b.Loop() {
		script.MakeVM(ev)
	}
}

// BenchmarkScriptWithDeclarations is a script task that declares a
// variable of its own, as many do.
func BenchmarkScriptWithDeclarations(b *testing.B) {
	ev := script.New(script.Config{})
	vars := map[string]any{"i": int64(3)}
	ctx := context.Background()
	for b.Loop() {
		if _, err := ev.Exec(ctx, `var step = 1; i = i + step;`, vars); err != nil {
			b.Fatal(err)
		}
	}
}
