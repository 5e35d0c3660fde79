package agent

import (
	"context"

	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"

	"github.com/agentledger/agentledger/tracing"
)

// traceChat starts the span of one model call, named and described after
// the OpenTelemetry GenAI conventions ("chat <model>").
func traceChat(ctx context.Context, req chatRequest) (context.Context, trace.Span) {
	if !tracing.Enabled() {
		return tracing.Start(ctx, "")
	}
	ctx, span := tracing.StartKind(ctx, "chat "+req.Model, trace.SpanKindClient)
	span.SetAttributes(tracing.GenAIOperation.String("chat"), tracing.GenAISystem.String("openai"),
		tracing.GenAIRequestModel.String(req.Model))
	return ctx, span
}

// endChat records the call's token usage, or its failure, and ends span.
func endChat(span trace.Span, c completion, err *llmError) {
	if span.IsRecording() {
		if err != nil {
			span.SetStatus(codes.Error, err.Error())
		} else {
			span.SetAttributes(tracing.GenAIInputTokens.Int(c.Usage.PromptTokens),
				tracing.GenAIOutputTokens.Int(c.Usage.CompletionTokens))
		}
	}
	span.End()
}
