package tracing_test

import (
	"bytes"
	"context"
	"encoding/json"
	"log/slog"
	"net/http"
	"testing"

	"go.opentelemetry.io/otel/trace"

	"github.com/agentledger/agentledger/tracing"
)

// Off, a span costs nothing: no allocation, the context unchanged.
func TestStartOffCostsNothing(t *testing.T) {
	ctx := context.Background()
	allocs := testing.AllocsPerRun(100, func() {
		c, span := tracing.StartKind(ctx, "agentledger.claim", trace.SpanKindConsumer)
		if span.IsRecording() || c != ctx {
			t.Fatal("a span recorded with tracing off")
		}
		span.End()
		c, span = tracing.Start(ctx, "agentledger.effect")
		span.End()
		_ = tracing.TraceParent(c)
	})
	if allocs != 0 {
		t.Errorf("%v allocations per span with tracing off, want 0", allocs)
	}
}

// Records logged within a span carry its trace and span ids.
func TestLogHandlerAddsIDs(t *testing.T) {
	_, tp := record(t)
	var buf bytes.Buffer
	log := slog.New(tracing.LogHandler(slog.NewJSONHandler(&buf, nil))).With("worker", "w1")
	ctx, span := tracing.Start(context.Background(), "attempt")
	log.InfoContext(ctx, "inside")
	span.End()
	log.Info("outside")
	_ = tp

	lines := bytes.Split(bytes.TrimSpace(buf.Bytes()), []byte("\n"))
	if len(lines) != 2 {
		t.Fatalf("%d log lines: %s", len(lines), buf.String())
	}
	var in, out map[string]any
	if err := json.Unmarshal(lines[0], &in); err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(lines[1], &out); err != nil {
		t.Fatal(err)
	}
	sc := span.SpanContext()
	if in["trace_id"] != sc.TraceID().String() || in["span_id"] != sc.SpanID().String() || in["worker"] != "w1" {
		t.Errorf("the line logged in the span: %s", lines[0])
	}
	if _, ok := out["trace_id"]; ok {
		t.Errorf("the line logged outside any span has a trace id: %s", lines[1])
	}
}

// A traceparent goes out on requests and comes back in, the same context.
func TestPropagation(t *testing.T) {
	_, _ = record(t)
	ctx, span := tracing.Start(context.Background(), "caller")
	defer span.End()
	h := http.Header{}
	tracing.Inject(ctx, h)
	tp := h.Get("traceparent")
	if tp == "" || tp != tracing.TraceParent(ctx) {
		t.Fatalf("injected %q, TraceParent %q", tp, tracing.TraceParent(ctx))
	}
	got := trace.SpanContextFromContext(tracing.Extract(context.Background(), h))
	if !got.IsRemote() || got.TraceID() != span.SpanContext().TraceID() || got.SpanID() != span.SpanContext().SpanID() {
		t.Errorf("extracted %v from %q", got, tp)
	}
	if tracing.SpanContext("00-garbage").IsValid() || tracing.SpanContext("").IsValid() {
		t.Error("a malformed traceparent parsed as valid")
	}
	h2 := http.Header{}
	tracing.Inject(context.Background(), h2)
	if len(h2) != 0 {
		t.Errorf("a context without a span injected %v", h2)
	}
}
