package runtime

import "go.opentelemetry.io/otel/trace"

// spanTraceID is the trace id (hex) of the span an attempt or fallback
// runs in, recorded on its history row with the move its finish makes
// (issue #26; migration 000024, docs/semantics.md "The transitions of a
// task"): the trace where the callee's own spans are. "" when the span is
// not valid (the default no-op provider outside a caller's span): nothing
// is stored then.
func spanTraceID(span trace.Span) string {
	sc := span.SpanContext()
	if !sc.IsValid() {
		return ""
	}
	return sc.TraceID().String()
}
