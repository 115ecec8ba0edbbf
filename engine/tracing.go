package engine

import (
	"context"
	"crypto/sha256"
	"strconv"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"

	"github.com/goxpdl/goxpdl/store"
)

// tracerName is the instrumentation scope of the engine's spans.
const tracerName = "github.com/goxpdl/goxpdl/engine"

// The attributes of the engine's spans.
const (
	attrInstance    = attribute.Key("goxpdl.instance")
	attrEventKind   = attribute.Key("goxpdl.event.kind")
	attrAttempt     = attribute.Key("goxpdl.attempt")
	attrCritical    = attribute.Key("goxpdl.critical")
	attrResult      = attribute.Key("goxpdl.result")
	attrProcess     = attribute.Key("goxpdl.process")
	attrActivity    = attribute.Key("goxpdl.activity")
	attrActInstance = attribute.Key("goxpdl.activity_instance")
	attrApplication = attribute.Key("goxpdl.application")
	attrHook        = attribute.Key("goxpdl.hook")
)

// tracerOf returns the engine's tracer from p, or nil without one.
func tracerOf(p trace.TracerProvider) trace.Tracer {
	if p == nil {
		return nil
	}
	return p.Tracer(tracerName)
}

// InstanceSpanContext is the span context that stands for process
// instance id in traces (Config.TracerProvider): every step of the
// instance is a child of it, so that a tracing backend shows one trace per
// instance. No span with it is ever recorded; a host that starts an
// instance from a traced request can link its own span to it
// (trace.WithLinks(trace.Link{SpanContext: e.InstanceSpanContext(id)})).
// Its ids are a hash of Config.TraceNamespace and id.
func (e *Engine) InstanceSpanContext(id int64) trace.SpanContext {
	return instanceSpanContext(e.cfg.TraceNamespace, id)
}

func instanceSpanContext(namespace string, id int64) trace.SpanContext {
	sum := sha256.Sum256([]byte("goxpdl instance\x00" + namespace + "\x00" + strconv.FormatInt(id, 10)))
	var tid trace.TraceID
	var sid trace.SpanID
	copy(tid[:], sum[:16])
	copy(sid[:], sum[16:24])
	return trace.NewSpanContext(trace.SpanContextConfig{TraceID: tid, SpanID: sid, TraceFlags: trace.FlagsSampled, Remote: true})
}

// startStep starts the span of one event's step, a child of its
// instance's span context; without a TracerProvider it returns ctx and a
// nil span.
func (e *Engine) startStep(ctx context.Context, ev store.Event) (context.Context, trace.Span) {
	if e.tracer == nil {
		return ctx, nil
	}
	parent := ctx
	if ev.ProcessInstanceID != 0 {
		parent = trace.ContextWithRemoteSpanContext(ctx, e.InstanceSpanContext(ev.ProcessInstanceID))
	}
	return e.tracer.Start(parent, "goxpdl step "+ev.Kind, trace.WithSpanKind(trace.SpanKindInternal), trace.WithAttributes(
		attrInstance.Int64(ev.ProcessInstanceID), attrEventKind.String(ev.Kind),
		attrAttempt.Int(max(ev.Attempts, 1)), attrCritical.Bool(ev.Critical)))
}

// endStep ends a step's span with its result.
func endStep(span trace.Span, result EventResult, err error) {
	if span == nil {
		return
	}
	span.SetAttributes(attrResult.String(string(result)))
	if err != nil {
		span.RecordError(err)
		span.SetStatus(codes.Error, err.Error())
	}
	span.End()
}

// startCall starts the span of an application or hook call, a child of
// the step's; the host's function gets it in its context, so that its own
// spans nest under the call.
func (r *run) startCall(call *Call) (context.Context, trace.Span) {
	if r.e.tracer == nil {
		return r.ctx, nil
	}
	name, what := "goxpdl application "+call.Application, attrApplication.String(call.Application)
	if call.Hook != "" {
		name, what = "goxpdl hook "+call.Hook, attrHook.String(call.Hook)
	}
	return r.e.tracer.Start(r.ctx, name, trace.WithSpanKind(trace.SpanKindInternal), trace.WithAttributes(what,
		attrProcess.String(r.pi.ProcessDefID), attrInstance.Int64(call.ProcessInstanceID),
		attrActivity.String(call.ActivityID), attrActInstance.Int64(call.ActivityInstanceID)))
}

// endCall ends a call's span with its outcome.
func endCall(span trace.Span, result CallResult, err error) {
	if span == nil {
		return
	}
	span.SetAttributes(attrResult.String(string(result)))
	if result == CallError {
		span.RecordError(err)
		span.SetStatus(codes.Error, err.Error())
	}
	span.End()
}
