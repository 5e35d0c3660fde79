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

// traceStage opens the span of one tool call around the rest of the
// chain (grant, effect, interceptors, ledger). An effect that is no
// tool's call has its own span (a model completion's "chat") and the
// ledger's.
func traceStage(next Next) Next {
	return func(ctx context.Context, o *Outgoing) (ledger.Result, error) {
		if o.Tool == nil || !tracing.Enabled() {
			return next(ctx, o)
		}
		ctx, span := tracing.StartKind(ctx, "agentledger.tool "+o.Tool.Name(), trace.SpanKindInternal)
		defer span.End()
		span.SetAttributes(tracing.Tool.String(o.Tool.Name()), tracing.EffectStep.String(o.StepPath))
		if m, ok := o.Tool.(MCPTool); ok {
			span.SetAttributes(tracing.MCPServer.String(m.MCPServer()))
		}
		res, err := next(ctx, o)
		if err != nil {
			span.SetStatus(codes.Error, err.Error())
		}
		return res, err
	}
}
