// Package tracing is agentledger's OpenTelemetry tracing: setup from the
// standard OTEL_ environment variables with the OTLP/HTTP exporter, the
// tracer every package starts its spans with, the attribute keys, W3C
// traceparent propagation and a slog handler that adds trace and span ids
// to log records.
//
// Tracing is off unless the environment asks for it (an OTLP endpoint, or
// OTEL_TRACES_EXPORTER=otlp). Off, Start returns its context unchanged and
// a no-op span without allocating, so the hot paths (claims, the ledger)
// pay nothing; callers set attributes only when span.IsRecording().
package tracing
