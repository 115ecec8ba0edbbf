package engine_test

import (
	"context"
	"errors"
	"testing"

	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"
	"gorm.io/gorm"

	"github.com/goxpdl/goxpdl/engine"
	"github.com/goxpdl/goxpdl/store/dbtest"
	"github.com/goxpdl/goxpdl/wftype"
	"github.com/goxpdl/goxpdl/xpdl/xpdltest"
)

// With a TracerProvider, every step of an instance is a span in the
// instance's trace, each application call a span under its step, and the
// host's function runs in the call's span; a failed call marks both.
func TestTracing(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, db *gorm.DB) {
		rec := tracetest.NewSpanRecorder()
		provider := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec))
		t.Cleanup(func() { _ = provider.Shutdown(context.Background()) })
		h := newHarness(t, db, func(c *engine.Config) { c.TracerProvider = provider; c.TraceNamespace = "test" })
		var inCall trace.SpanContext
		h.e.RegisterApplication("double", func(ctx context.Context, c *engine.Call) (map[string]any, error) {
			inCall = trace.SpanContextFromContext(ctx)
			return map[string]any{"out": c.Params["in"].(int64) * 2}, nil
		})
		failing := true
		h.e.RegisterApplication("risky", func(context.Context, *engine.Call) (map[string]any, error) {
			if failing {
				failing = false
				return nil, errors.New("card declined")
			}
			return nil, nil
		}, engine.WithRetry(engine.RetryPolicy{MaxAttempts: 1}))
		h.start()
		h.deploy(toolPackage("traced", tool("Double", "double", "x", "x")+tool("Pay", "risky"), xpdltest.Transition("t1", "Double>Pay")))
		id := h.startProcess("traced", "", map[string]any{"x": int64(21)})
		h.idle()
		require.Equal(t, wftype.ProcessRunning, h.instance(id).State, "Pay is Abnormal")

		instance := h.e.InstanceSpanContext(id)
		require.True(t, instance.IsValid())
		var steps, calls []sdktrace.ReadOnlySpan
		for _, s := range rec.Ended() {
			if s.SpanContext().TraceID() != instance.TraceID() {
				continue // another instance's (none here) or none
			}
			switch attrOf(s, "goxpdl.application") {
			case nil:
				steps = append(steps, s)
				require.Equal(t, instance.SpanID(), s.Parent().SpanID(), "a step is a child of its instance")
				require.Equal(t, id, attrOf(s, "goxpdl.instance"))
			default:
				calls = append(calls, s)
			}
		}
		require.NotEmpty(t, steps)
		require.Len(t, calls, 2)
		byApp := map[any]sdktrace.ReadOnlySpan{}
		for _, c := range calls {
			byApp[attrOf(c, "goxpdl.application")] = c
		}
		require.Equal(t, "Double", attrOf(byApp["double"], "goxpdl.activity"))
		require.Equal(t, "Pay", attrOf(byApp["risky"], "goxpdl.activity"))
		double := byApp["double"]
		require.Equal(t, "goxpdl application double", double.Name())
		require.Equal(t, inCall.SpanID(), double.SpanContext().SpanID(), "the host's function runs in the call's span")
		var parent sdktrace.ReadOnlySpan
		for _, s := range steps {
			if s.SpanContext().SpanID() == double.Parent().SpanID() {
				parent = s
			}
		}
		require.NotNil(t, parent, "the call is a child of a step of the instance")
		require.Equal(t, codes.Error, byApp["risky"].Status().Code)
		require.Equal(t, "error", attrOf(byApp["risky"], "goxpdl.result"))
		require.NotEqual(t, h.e.InstanceSpanContext(id+1).TraceID(), instance.TraceID(), "one trace per instance")
	})
}

// attrOf returns the value of attribute key of span s, or nil.
func attrOf(s sdktrace.ReadOnlySpan, key string) any {
	for _, kv := range s.Attributes() {
		if kv.Key == attribute.Key(key) {
			return kv.Value.AsInterface()
		}
	}
	return nil
}
