package main

import (
	"context"
	"fmt"
	"os"
	"slices"

	"github.com/agentledger/agentledger/internal/test/otlpsink"
	"github.com/agentledger/agentledger/tracing"
)

// tracingModes parses --tracing: off, on, or both (off and on interleaved,
// one run of each per configuration and repeat).
func tracingModes(v string) ([]bool, error) {
	switch v {
	case "off":
		return []bool{false}, nil
	case "on":
		return []bool{true}, nil
	case "both":
		return []bool{false, true}, nil
	}
	return nil, fmt.Errorf("--tracing %q: give off, on or both", v)
}

// tracingColumn inserts a "tracing" column at i of a table's header
// unless --tracing is off: the default output stays as it was.
func tracingColumn(mode string, i int, header []string) []string {
	if mode == "off" {
		return header
	}
	return slices.Insert(header, i, "tracing")
}

// tracingCell inserts the tracing cell of a row (see tracingColumn).
func tracingCell(mode string, i int, on bool, row []any) []any {
	if mode == "off" {
		return row
	}
	cell := "off"
	if on {
		cell = "on"
	}
	return slices.Insert(row, i, any(cell))
}

// traceOn turns tracing on as agentd does (tracing.Setup, from the OTEL_
// variables) with the exporter pointed at a new sink, which decodes what it
// got only when asked, after the clock stopped: tracing's cost is the
// workers' spans and their export, not a collector's. stop flushes the
// spans still batched and turns tracing off. OTEL_BSP_ variables in the
// environment tune the batching as they would agentd's.
func traceOn(ctx context.Context) (*otlpsink.Sink, func() error, error) {
	s := otlpsink.New()
	for k, v := range map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": s.URL, "OTEL_SDK_DISABLED": "false",
		"OTEL_TRACES_EXPORTER": "otlp", "OTEL_SERVICE_NAME": "agentbench"} {
		if err := os.Setenv(k, v); err != nil {
			s.Close()
			return nil, nil, err
		}
	}
	shutdown, err := tracing.Setup(ctx, "agentbench")
	if err == nil && !tracing.Enabled() {
		err = fmt.Errorf("tracing stayed off")
	}
	if err != nil {
		s.Close()
		return nil, nil, err
	}
	return s, func() error {
		defer s.Close()
		return shutdown(context.WithoutCancel(ctx))
	}, nil
}

// sinkCounts counts the spans s received, by name prefix.
func sinkCounts(s *otlpsink.Sink) (total int, byName map[string]int, err error) {
	spans, err := s.Spans()
	if err != nil {
		return 0, nil, err
	}
	return len(spans), otlpsink.Count(spans), nil
}
