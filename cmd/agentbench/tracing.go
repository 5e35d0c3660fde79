package main

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"slices"
	"strings"
	"sync"

	coltracepb "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	"google.golang.org/protobuf/proto"

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

// sink is a local OTLP/HTTP receiver that keeps what it is sent and
// decodes it only when asked, after the clock stopped: tracing's cost is
// the workers' spans and their export, not a collector's.
type sink struct {
	srv    *httptest.Server
	mu     sync.Mutex
	bodies [][]byte
}

// traceOn turns tracing on as agentd does (tracing.Setup, from the OTEL_
// variables) with the exporter pointed at a new sink; stop flushes the
// spans still batched and turns tracing off. OTEL_BSP_ variables in the
// environment tune the batching as they would agentd's.
func traceOn(ctx context.Context) (*sink, func() error, error) {
	s := &sink{}
	s.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, err := io.ReadAll(r.Body)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		s.mu.Lock()
		s.bodies = append(s.bodies, b)
		s.mu.Unlock()
		w.Header().Set("Content-Type", "application/x-protobuf")
	}))
	for k, v := range map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": s.srv.URL, "OTEL_SDK_DISABLED": "false",
		"OTEL_TRACES_EXPORTER": "otlp", "OTEL_SERVICE_NAME": "agentbench"} {
		if err := os.Setenv(k, v); err != nil {
			s.srv.Close()
			return nil, nil, err
		}
	}
	shutdown, err := tracing.Setup(ctx, "agentbench")
	if err == nil && !tracing.Enabled() {
		err = fmt.Errorf("tracing stayed off")
	}
	if err != nil {
		s.srv.Close()
		return nil, nil, err
	}
	return s, func() error {
		defer s.srv.Close()
		return shutdown(context.WithoutCancel(ctx))
	}, nil
}

// spans counts the spans received, by name prefix (the part before a space).
func (s *sink) spans() (total int, byName map[string]int, err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	byName = map[string]int{}
	for _, b := range s.bodies {
		var req coltracepb.ExportTraceServiceRequest
		if err := proto.Unmarshal(b, &req); err != nil {
			return 0, nil, fmt.Errorf("an export the sink got is unreadable: %w", err)
		}
		for _, rs := range req.ResourceSpans {
			for _, ss := range rs.ScopeSpans {
				for _, sp := range ss.Spans {
					name, _, _ := strings.Cut(sp.Name, " ")
					byName[name]++
					total++
				}
			}
		}
	}
	return total, byName, nil
}
