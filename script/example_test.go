package script_test

import (
	"context"
	"errors"
	"fmt"

	"github.com/goxpdl/goxpdl/script"
)

// Every evaluation is held to Limits; one over a limit fails with the
// error of that limit, which names it.
func ExampleLimits() {
	ev := script.New(script.Config{Limits: script.Limits{MaxCallStackDepth: 100}})
	fmt.Println(ev.Limits())

	_, err := ev.Condition(context.Background(), `function f(n) { return f(n + 1) } f(0)`, nil)
	fmt.Println(errors.Is(err, script.ErrStackDepth))
	fmt.Println(err)

	_, err = ev.Eval(context.Background(), `"x".repeat(1e12)`, nil)
	fmt.Println(errors.Is(err, script.ErrMemoryBudget))
	fmt.Println(err)
	// Output:
	// memory 64 MiB, call depth 100, result 1.0 MiB (all together 4.0 MiB)
	// true
	// script call stack depth exceeded: calls nested deeper than 100 (in "function f(n) { return f(n + 1) } f(0)")
	// true
	// script memory budget exceeded: String.prototype.repeat would build about 931 GiB, more than the memory budget of 64 MiB (in "\"x\".repeat(1e12)")
}
