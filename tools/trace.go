package tools

import (
	"context"

	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"

	"github.com/agentledger/agentledger/ledger"
	"github.com/agentledger/agentledger/tracing"
)

// MCPTool is implemented by tools that call an MCP server: the server's
// name goes on the tool call's span.
type MCPTool interface {
	MCPServer() string
}

// traceInvoke wraps invoke, one tool call, in its span.
func traceInvoke(ctx context.Context, t Tool, call Call, invoke func(context.Context) (ledger.Result, error)) (ledger.Result, error) {
	if !tracing.Enabled() {
		return invoke(ctx)
	}
	ctx, span := tracing.StartKind(ctx, "agentledger.tool "+t.Name(), trace.SpanKindInternal)
	defer span.End()
	span.SetAttributes(tracing.Tool.String(t.Name()), tracing.EffectStep.String(call.StepPath))
	if m, ok := t.(MCPTool); ok {
		span.SetAttributes(tracing.MCPServer.String(m.MCPServer()))
	}
	res, err := invoke(ctx)
	if err != nil {
		span.SetStatus(codes.Error, err.Error())
	}
	return res, err
}
