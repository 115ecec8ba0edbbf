package statemachine_test

import (
	"testing"

	"github.com/goxpdl/goxpdl/engine"
	"github.com/goxpdl/goxpdl/enginetest"
	"github.com/goxpdl/goxpdl/statemachine"
	"github.com/goxpdl/goxpdl/store/dbtest"
)

// BenchmarkResume measures one Resume, a move from a state to another
// (Resume, Enter, the route and the next work item in one transaction,
// then the read of the next bookmark), on each database; and Start, which
// waits for the engine to enter the initial state.
func BenchmarkResume(b *testing.B) {
	for _, d := range dbtest.Dialects {
		b.Run(d.Name, func(b *testing.B) {
			var m *statemachine.Machine
			h := enginetest.New(b, enginetest.WithDB(d.Open(b)), enginetest.WithSetup(func(e *engine.Engine) {
				var err error
				if m, err = statemachine.New(e, (&free{}).definition()); err != nil {
					b.Fatal(err)
				}
			}))
			ctx := h.Context()
			if _, err := m.Deploy(ctx); err != nil {
				b.Fatal(err)
			}
			step, err := m.Start(ctx, nil)
			if err != nil {
				b.Fatal(err)
			}
			next := []map[string]any{{"next": "b"}, {"next": "a"}}
			b.ResetTimer()
			for i := range b.N {
				if step, err = m.Resume(ctx, step.Bookmark, next[i%2]); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkStart measures Start: the instance's creation, and the
// engine's steps that enter the initial state, waited for.
func BenchmarkStart(b *testing.B) {
	for _, d := range dbtest.Dialects {
		b.Run(d.Name, func(b *testing.B) {
			var m *statemachine.Machine
			h := enginetest.New(b, enginetest.WithDB(d.Open(b)), enginetest.WithSetup(func(e *engine.Engine) {
				var err error
				if m, err = statemachine.New(e, (&free{}).definition()); err != nil {
					b.Fatal(err)
				}
			}))
			ctx := h.Context()
			if _, err := m.Deploy(ctx); err != nil {
				b.Fatal(err)
			}
			b.ResetTimer()
			for range b.N {
				if _, err := m.Start(ctx, nil); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
