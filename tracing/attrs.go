package tracing

import "go.opentelemetry.io/otel/attribute"

// Attribute keys of agentledger's spans. Model calls use the OpenTelemetry
// GenAI semantic conventions (gen_ai.*).
const (
	TaskID         = attribute.Key("agentledger.task.id")
	TaskKind       = attribute.Key("agentledger.task.kind")
	TaskQueue      = attribute.Key("agentledger.task.queue")
	TaskTenant     = attribute.Key("agentledger.task.tenant")
	TaskAttempt    = attribute.Key("agentledger.task.attempt")
	TaskGeneration = attribute.Key("agentledger.task.generation")
	LeaseToken     = attribute.Key("agentledger.lease.token")
	TaskCount      = attribute.Key("agentledger.tasks") // tasks submitted or claimed
	Worker         = attribute.Key("agentledger.worker")

	// LedgerOutcome is how an effect went through the ledger: performed,
	// served (from the ledger, nothing performed), unknown (needs an
	// operator), failed, deferred, lease_lost or error.
	LedgerOutcome = attribute.Key("agentledger.ledger.outcome")
	EffectKey     = attribute.Key("agentledger.effect.key")
	EffectStep    = attribute.Key("agentledger.effect.step")
	EffectClass   = attribute.Key("agentledger.effect.class")
	Tool          = attribute.Key("agentledger.tool")
	MCPServer     = attribute.Key("agentledger.mcp.server")

	NotifyChannel = attribute.Key("agentledger.notify.channel")
	NotifyEvent   = attribute.Key("agentledger.notify.event")

	GenAIOperation    = attribute.Key("gen_ai.operation.name")
	GenAISystem       = attribute.Key("gen_ai.system")
	GenAIRequestModel = attribute.Key("gen_ai.request.model")
	GenAIInputTokens  = attribute.Key("gen_ai.usage.input_tokens")
	GenAIOutputTokens = attribute.Key("gen_ai.usage.output_tokens")
)
