package tracing_test

import (
	"context"
	"testing"

	"github.com/agentledger/agentledger/claims"
	"github.com/agentledger/agentledger/internal/test/otlpsink"
	"github.com/agentledger/agentledger/internal/test/testdb"
	"github.com/agentledger/agentledger/tracing"
)

// Setup configured by the standard variables exports over OTLP/HTTP, and
// its shutdown flushes what is batched.
func TestExportOverOTLPHTTP(t *testing.T) {
	rc := otlpsink.New()
	t.Cleanup(rc.Close)
	t.Setenv("OTEL_EXPORTER_OTLP_ENDPOINT", rc.URL)
	t.Setenv("OTEL_SERVICE_NAME", "agentd-test")
	ctx := context.Background()
	shutdown, err := tracing.Setup(ctx, "agentd")
	if err != nil {
		t.Fatal(err)
	}
	if !tracing.Enabled() {
		t.Fatal("an OTLP endpoint is set, yet tracing is off")
	}
	s := claims.New(testdb.New(t))
	if _, err := s.Enqueue(ctx, claims.EnqueueParams{Kind: "noop"}); err != nil {
		t.Fatal(err)
	}
	if err := shutdown(ctx); err != nil {
		t.Fatalf("shutdown: %v", err)
	}
	if tracing.Enabled() {
		t.Error("tracing is still on after shutdown")
	}
	spans, err := rc.Spans()
	if err != nil {
		t.Fatal(err)
	}
	if len(spans) != 1 || spans[0].Service != "agentd-test" || spans[0].Name != "agentledger.submit" {
		t.Errorf("the receiver got spans %+v, want agentd-test's agentledger.submit", spans)
	}
}
