package outbox

import (
	"context"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"

	"github.com/agentledger/agentledger/tracing"
)

// traceDelivery starts the span of one delivery of c. Events carry no
// trace context of their own: the span is a root, found by its task id.
func traceDelivery(ctx context.Context, c Claimed) (context.Context, trace.Span) {
	if !tracing.Enabled() {
		return tracing.Start(ctx, "")
	}
	ctx, span := tracing.StartKind(ctx, "agentledger.notify "+c.Channel, trace.SpanKindProducer)
	span.SetAttributes(tracing.TaskID.Int64(c.TaskID), tracing.TaskTenant.String(c.Tenant),
		tracing.NotifyChannel.String(c.Channel), tracing.NotifyEvent.String(c.Event.Event),
		attribute.Int64("agentledger.outbox.event", c.ID), attribute.String("agentledger.notify.rule", c.Rule))
	return ctx, span
}

// endDelivery records how the delivery ended and ends span.
func endDelivery(span trace.Span, outcome string, herr error) {
	if span.IsRecording() {
		span.SetAttributes(attribute.String("agentledger.notify.outcome", outcome))
		if herr != nil {
			span.SetStatus(codes.Error, herr.Error())
		}
	}
	span.End()
}
