package runtime

import (
	"context"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"
)

// TracerName is the instrumentation name of argo's spans.
const TracerName = "github.com/argo-retry/argo/runtime"

// The attributes of every span of an attempt, fallback or alert.
const (
	AttrTaskID   = attribute.Key("argo.task.id")
	AttrTaskName = attribute.Key("argo.task.name")
	AttrAttempt  = attribute.Key("argo.task.attempt")
	AttrTenant   = attribute.Key("argo.task.tenant")
	AttrKind     = attribute.Key("argo.task.kind") // attempt, fallback or alert
	AttrOutcome  = attribute.Key("argo.task.outcome")
	AttrInstance = attribute.Key("argo.instance")
)

// Span outcomes beside the attempt outcomes (OutcomeSucceeded, …).
const (
	spanOutcomeGivenBack = "given_back" // released unrun or interrupted by shutdown: not counted
	spanOutcomeLeaseLost = "lease_lost" // returned after losing its lease: outcome not recorded
)

// traceParentOf is the W3C traceparent of the span ctx carries, or "" when
// it carries none (then nothing is stored, and no span is linked).
func traceParentOf(ctx context.Context) string {
	if !trace.SpanContextFromContext(ctx).IsValid() {
		return ""
	}
	carrier := propagation.MapCarrier{}
	propagation.TraceContext{}.Inject(ctx, carrier)
	return carrier.Get("traceparent")
}

// callerSpanContext is the submitting call's span, read back from the
// stored traceparent (invalid when none was stored or it does not parse).
func callerSpanContext(traceParent string) trace.SpanContext {
	if traceParent == "" {
		return trace.SpanContext{}
	}
	ctx := propagation.TraceContext{}.Extract(context.Background(), propagation.MapCarrier{"traceparent": traceParent})
	return trace.SpanContextFromContext(ctx)
}

// TraceID returns the trace id of the call that submitted t (hex), or ""
// when it was submitted outside a trace.
func TraceID(t *Task) string {
	sc := callerSpanContext(t.TraceParent)
	if !sc.IsValid() {
		return ""
	}
	return sc.TraceID().String()
}

func (rt *Runtime) tracer() trace.Tracer {
	tp := rt.cfg.TracerProvider
	if tp == nil {
		tp = otel.GetTracerProvider()
	}
	return tp.Tracer(TracerName)
}

// startTaskSpan starts the span of one attempt, fallback or alert (kind) of
// t, linked to the submitting call's span, with the task's tenant back in
// the context. A sync attempt's span is also the caller's span's child.
func (rt *Runtime) startTaskSpan(ctx context.Context, t *Task, kind string) (context.Context, trace.Span) {
	ctx = withTaskCaller(ctx, t)
	opts := []trace.SpanStartOption{trace.WithSpanKind(trace.SpanKindConsumer)}
	if sc := callerSpanContext(t.TraceParent); sc.IsValid() {
		opts = append(opts, trace.WithLinks(trace.Link{SpanContext: sc}))
	}
	ctx, span := rt.tracer().Start(ctx, "argo."+kind+" "+t.Name, opts...)
	if span.IsRecording() {
		span.SetAttributes(AttrTaskID.Int64(t.ID), AttrTaskName.String(t.Name), AttrAttempt.Int(t.ExecuteTimes),
			AttrTenant.String(t.Tenant), AttrKind.String(kind), AttrInstance.String(rt.cfg.InstanceID))
	}
	return ctx, span
}

// endTaskSpan ends span with its outcome (and err, if any, as its status).
func endTaskSpan(span trace.Span, outcome string, err error) {
	if span.IsRecording() {
		span.SetAttributes(AttrOutcome.String(outcome))
		if err != nil {
			span.SetStatus(codes.Error, err.Error())
		}
	}
	span.End()
}

// outcomeOf is the outcome of an alert action that returned err.
func outcomeOf(err error) string {
	if err != nil {
		return OutcomeFailed
	}
	return OutcomeSucceeded
}
