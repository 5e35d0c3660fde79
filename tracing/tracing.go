package tracing

import (
	"context"
	"sync/atomic"

	"go.opentelemetry.io/otel/trace"
	"go.opentelemetry.io/otel/trace/noop"
)

// Name is the instrumentation scope of agentledger's spans.
const Name = "github.com/agentledger/agentledger"

// active holds the tracer while tracing is on; nil when off.
var active atomic.Pointer[tracerBox]

type tracerBox struct{ t trace.Tracer }

// off is the span of every Start while tracing is off, boxed once.
var off trace.Span = noop.Span{}

// Use makes spans go to tp (nil turns tracing off) and returns a function
// that restores the previous state. Setup calls it; tests call it with an
// in-memory provider.
func Use(tp trace.TracerProvider) (restore func()) {
	var next *tracerBox
	if tp != nil {
		next = &tracerBox{t: tp.Tracer(Name)}
	}
	prev := active.Swap(next)
	return func() { active.Store(prev) }
}

// Enabled reports whether spans are recorded at all.
func Enabled() bool { return active.Load() != nil }

// Start starts a span named name as a child of ctx's span. With tracing
// off it returns ctx and a no-op span at no cost; pass attributes through
// options only where the call is rare, and set them after checking
// span.IsRecording() on hot paths.
func Start(ctx context.Context, name string, opts ...trace.SpanStartOption) (context.Context, trace.Span) {
	b := active.Load()
	if b == nil {
		return ctx, off
	}
	return b.t.Start(ctx, name, opts...)
}

// StartKind is Start with a span kind, allocating nothing while tracing is
// off (options passed to Start escape even then).
func StartKind(ctx context.Context, name string, kind trace.SpanKind) (context.Context, trace.Span) {
	b := active.Load()
	if b == nil {
		return ctx, off
	}
	return b.t.Start(ctx, name, trace.WithSpanKind(kind))
}
