package tracing

import (
	"context"
	"fmt"
	"os"
	"strings"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
)

// Wanted reports, from the standard OTEL_ variables that getenv reads,
// whether tracing is asked for: an OTLP endpoint (OTEL_EXPORTER_OTLP_ENDPOINT
// or OTEL_EXPORTER_OTLP_TRACES_ENDPOINT) or OTEL_TRACES_EXPORTER=otlp, and
// OTEL_SDK_DISABLED is not true. OTEL_TRACES_EXPORTER=none turns it off;
// another exporter, or a protocol other than http/protobuf, is an error.
func Wanted(getenv func(string) string) (bool, error) {
	if strings.EqualFold(strings.TrimSpace(getenv("OTEL_SDK_DISABLED")), "true") {
		return false, nil
	}
	switch exp := strings.TrimSpace(getenv("OTEL_TRACES_EXPORTER")); exp {
	case "none":
		return false, nil
	case "", "otlp":
		if exp == "" && getenv("OTEL_EXPORTER_OTLP_ENDPOINT") == "" && getenv("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT") == "" {
			return false, nil
		}
	default:
		return false, fmt.Errorf("OTEL_TRACES_EXPORTER=%q: agentd exports traces with otlp only (or none)", exp)
	}
	proto := getenv("OTEL_EXPORTER_OTLP_TRACES_PROTOCOL")
	if proto == "" {
		proto = getenv("OTEL_EXPORTER_OTLP_PROTOCOL")
	}
	if proto != "" && proto != "http/protobuf" {
		return false, fmt.Errorf("OTEL_EXPORTER_OTLP_PROTOCOL=%q: agentd exports OTLP over http/protobuf only", proto)
	}
	return true, nil
}

// Setup turns tracing on when the environment asks for it (see Wanted):
// spans are batched to the OTLP/HTTP exporter, which reads its endpoint,
// headers, timeout and compression from the OTEL_EXPORTER_OTLP_ variables;
// the sampler comes from OTEL_TRACES_SAMPLER and the resource from
// OTEL_SERVICE_NAME and OTEL_RESOURCE_ATTRIBUTES (service.name defaults to
// service). Otherwise it changes nothing and tracing costs nothing.
// shutdown flushes the spans still batched; call it when the process stops.
func Setup(ctx context.Context, service string) (shutdown func(context.Context) error, err error) {
	none := func(context.Context) error { return nil }
	on, err := Wanted(os.Getenv)
	if err != nil || !on {
		return none, err
	}
	exp, err := otlptracehttp.New(ctx)
	if err != nil {
		return none, fmt.Errorf("tracing: OTLP exporter: %w", err)
	}
	res, err := resource.New(ctx,
		resource.WithAttributes(attribute.String("service.name", service)),
		resource.WithFromEnv(), resource.WithTelemetrySDK())
	if err != nil {
		return none, fmt.Errorf("tracing: resource: %w", err)
	}
	tp := sdktrace.NewTracerProvider(sdktrace.WithBatcher(exp), sdktrace.WithResource(res))
	otel.SetTracerProvider(tp) // for libraries that trace through the global provider
	restore := Use(tp)
	return func(ctx context.Context) error {
		restore()
		return tp.Shutdown(ctx)
	}, nil
}
