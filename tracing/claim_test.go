package tracing_test

import (
	"context"
	"testing"
	"time"

	"github.com/agentledger/agentledger/claims"
	"github.com/agentledger/agentledger/internal/test/testdb"
	"github.com/agentledger/agentledger/tracing"
)

// A claim that takes tasks is a span linked to each task's submission; a
// claim that finds nothing — an idle daemon's poll — leaves no span.
func TestClaimSpans(t *testing.T) {
	exp, _ := record(t)
	ctx := context.Background()
	s := claims.New(testdb.New(t))
	subCtx, sub := tracing.Start(ctx, "submit")
	r, err := s.Enqueue(subCtx, claims.EnqueueParams{Kind: "noop"})
	sub.End()
	if err != nil {
		t.Fatal(err)
	}
	claim := func(queue string) int {
		got, err := s.Claim(ctx, claims.ClaimParams{Queue: queue, Worker: "w", Limit: 5, Lease: time.Minute})
		if err != nil {
			t.Fatal(err)
		}
		return len(got)
	}
	if n := claim("elsewhere"); n != 0 {
		t.Fatalf("claimed %d tasks of an empty queue", n)
	}
	if spans := named(exp.GetSpans(), "agentledger.claim"); len(spans) != 0 {
		t.Fatalf("an empty claim left %d spans", len(spans))
	}
	if n := claim("default"); n != 1 {
		t.Fatalf("claimed %d tasks, want task %d", n, r.Task.ID)
	}
	spans := named(exp.GetSpans(), "agentledger.claim")
	if len(spans) != 1 {
		t.Fatalf("%d claim spans, want 1", len(spans))
	}
	c := spans[0]
	if got := attr(c, tracing.TaskCount).AsInt64(); got != 1 {
		t.Errorf("claim span counts %d tasks, want 1", got)
	}
	if len(c.Links) != 1 || c.Links[0].SpanContext.TraceID() != sub.SpanContext().TraceID() {
		t.Errorf("claim span links %v, want the submission's trace %s", c.Links, sub.SpanContext().TraceID())
	}
	if !c.StartTime.Before(c.EndTime) {
		t.Errorf("claim span from %v to %v: it should cover the statement", c.StartTime, c.EndTime)
	}
}
