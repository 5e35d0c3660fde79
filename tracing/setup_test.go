package tracing_test

import (
	"strings"
	"testing"

	"github.com/agentledger/agentledger/tracing"
)

func TestWanted(t *testing.T) {
	for _, c := range []struct {
		env     map[string]string
		want    bool
		wantErr string
	}{
		{env: nil, want: false},
		{env: map[string]string{"OTEL_SERVICE_NAME": "agentd"}, want: false},
		{env: map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://collector:4318"}, want: true},
		{env: map[string]string{"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": "http://collector:4318/v1/traces"}, want: true},
		{env: map[string]string{"OTEL_TRACES_EXPORTER": "otlp"}, want: true},
		{env: map[string]string{"OTEL_TRACES_EXPORTER": "none", "OTEL_EXPORTER_OTLP_ENDPOINT": "http://c:4318"}, want: false},
		{env: map[string]string{"OTEL_SDK_DISABLED": "true", "OTEL_TRACES_EXPORTER": "otlp"}, want: false},
		{env: map[string]string{"OTEL_SDK_DISABLED": "false", "OTEL_TRACES_EXPORTER": "otlp"}, want: true},
		{env: map[string]string{"OTEL_TRACES_EXPORTER": "zipkin"}, wantErr: `OTEL_TRACES_EXPORTER="zipkin"`},
		{env: map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://c:4317", "OTEL_EXPORTER_OTLP_PROTOCOL": "grpc"},
			wantErr: "http/protobuf only"},
		{env: map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://c:4318", "OTEL_EXPORTER_OTLP_TRACES_PROTOCOL": "http/protobuf"},
			want: true},
	} {
		got, err := tracing.Wanted(func(k string) string { return c.env[k] })
		switch {
		case c.wantErr != "" && (err == nil || !strings.Contains(err.Error(), c.wantErr)):
			t.Errorf("%v: error %v, want one saying %q", c.env, err, c.wantErr)
		case c.wantErr == "" && (err != nil || got != c.want):
			t.Errorf("%v: %v, %v; want %v", c.env, got, err, c.want)
		}
	}
}

// With tracing off, Setup leaves everything as it was.
func TestSetupOffByDefault(t *testing.T) {
	for _, k := range []string{"OTEL_EXPORTER_OTLP_ENDPOINT", "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "OTEL_TRACES_EXPORTER"} {
		t.Setenv(k, "")
	}
	shutdown, err := tracing.Setup(t.Context(), "agentd")
	if err != nil || tracing.Enabled() {
		t.Fatalf("Setup with no OTEL_ variables: enabled %v, %v", tracing.Enabled(), err)
	}
	if err := shutdown(t.Context()); err != nil {
		t.Error(err)
	}
}
