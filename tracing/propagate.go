package tracing

import (
	"context"
	"net/http"

	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"
)

// w3c is the W3C Trace Context propagator (traceparent, tracestate).
var w3c propagation.TraceContext

// Inject writes ctx's span context into h as a W3C traceparent, when ctx
// carries a valid one.
func Inject(ctx context.Context, h http.Header) {
	if !trace.SpanContextFromContext(ctx).IsValid() {
		return
	}
	w3c.Inject(ctx, propagation.HeaderCarrier(h))
}

// Extract returns ctx carrying, as its remote parent, the W3C traceparent
// of an incoming request's headers h; ctx unchanged when there is none or
// tracing is off.
func Extract(ctx context.Context, h http.Header) context.Context {
	if !Enabled() || h.Get("traceparent") == "" {
		return ctx
	}
	return w3c.Extract(ctx, propagation.HeaderCarrier(h))
}

// TraceParent returns ctx's span context as a W3C traceparent, or "" when
// ctx carries none (always so with tracing off): what a task stores of
// its submitter.
func TraceParent(ctx context.Context) string {
	sc := trace.SpanContextFromContext(ctx)
	if !sc.IsValid() {
		return ""
	}
	c := propagation.MapCarrier{}
	w3c.Inject(ctx, c)
	return c["traceparent"]
}

// SpanContext parses a stored W3C traceparent; the zero (invalid)
// SpanContext when tp is empty or malformed.
func SpanContext(tp string) trace.SpanContext {
	if tp == "" {
		return trace.SpanContext{}
	}
	ctx := w3c.Extract(context.Background(), propagation.MapCarrier{"traceparent": tp})
	return trace.SpanContextFromContext(ctx)
}
