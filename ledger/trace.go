package ledger

import (
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"

	"github.com/agentledger/agentledger/tracing"
)

// traceEffect describes one Do on its span: the effect, its key, and the
// ledger's outcome (performed, served, unknown, …). Only called for a
// recording span: the key is computed again for it.
func traceEffect(span trace.Span, a Attempt, e Effect, outcome string, err error) {
	span.SetAttributes(tracing.LedgerOutcome.String(outcome), tracing.Tool.String(e.Operation),
		tracing.EffectStep.String(e.StepPath), tracing.EffectClass.String(string(e.Class)),
		tracing.EffectKey.String(EffectKey(a.Tenant, a.TaskID, a.Generation, e.StepPath, e.Operation)),
		tracing.TaskID.Int64(a.TaskID))
	if err != nil && outcome != "deferred" {
		span.SetStatus(codes.Error, err.Error())
	}
}
