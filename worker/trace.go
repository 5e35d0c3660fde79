package worker

import (
	"context"

	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"

	"github.com/agentledger/agentledger"
	"github.com/agentledger/agentledger/tracing"
)

// traceAttempt starts the span of one attempt of t. It joins the trace of
// the task's submission, or, after an operator's replay or re-run, the
// trace of that request, linked to the submission's: "the original" of a
// replay is the task's first submission, whose trace holds the effects
// the replay serves. A nop while tracing is off.
func traceAttempt(ctx context.Context, t *agentledger.Task, worker string) (context.Context, trace.Span) {
	if !tracing.Enabled() {
		return tracing.Start(ctx, "")
	}
	orig := tracing.SpanContext(t.TraceParent)
	opts := []trace.SpanStartOption{trace.WithSpanKind(trace.SpanKindConsumer)}
	parent := orig
	if replay := tracing.SpanContext(t.ReplayTraceParent); replay.IsValid() {
		parent = replay
		if orig.IsValid() {
			opts = append(opts, trace.WithLinks(trace.Link{SpanContext: orig}))
		}
	}
	if parent.IsValid() {
		ctx = trace.ContextWithRemoteSpanContext(ctx, parent)
	}
	ctx, span := tracing.Start(ctx, "agentledger.attempt "+t.Kind, opts...)
	// Set, not passed to Start: the start options would copy them once more.
	span.SetAttributes(tracing.TaskID.Int64(t.ID), tracing.TaskKind.String(t.Kind), tracing.TaskQueue.String(t.Queue),
		tracing.TaskTenant.String(t.Tenant), tracing.TaskAttempt.Int64(int64(t.Attempt)),
		tracing.TaskGeneration.Int64(int64(t.Generation)), tracing.LeaseToken.Int64(t.LeaseToken),
		tracing.Worker.String(worker))
	return ctx, span
}

// endAttempt marks the attempt's span failed when the handler failed.
func endAttempt(span trace.Span, err error) {
	if err != nil && span.IsRecording() {
		span.SetStatus(codes.Error, err.Error())
	}
	span.End()
}
