package httpapi

import (
	"net/http"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"

	"github.com/agentledger/agentledger/tracing"
)

// traceRequest takes the W3C traceparent of an incoming request (API or
// webhook) and starts its server span, so that a task it submits joins the
// caller's trace. A nop while tracing is off.
func traceRequest(r *http.Request) (*http.Request, trace.Span) {
	if !tracing.Enabled() {
		return r, nil
	}
	ctx, span := tracing.StartKind(tracing.Extract(r.Context(), r.Header), "HTTP "+r.Method, trace.SpanKindServer)
	span.SetAttributes(attribute.String("http.request.method", r.Method), attribute.String("url.path", r.URL.Path))
	return r.WithContext(ctx), span
}

// endRequest names the span after its route and records the status.
func endRequest(span trace.Span, r *http.Request, status int) {
	if r.Pattern != "" {
		span.SetName(r.Pattern)
		span.SetAttributes(attribute.String("http.route", r.Pattern))
	}
	span.SetAttributes(attribute.Int("http.response.status_code", status))
	if status >= 500 {
		span.SetStatus(codes.Error, http.StatusText(status))
	}
	span.End()
}
