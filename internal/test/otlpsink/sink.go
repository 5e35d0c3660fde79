// Package otlpsink is a local OTLP/HTTP trace receiver for tests and
// benchmarks: it keeps each export's body as sent and decodes them only
// when asked, so that receiving costs the exporters' side next to nothing.
package otlpsink

import (
	"bytes"
	"compress/gzip"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"

	coltracepb "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	commonpb "go.opentelemetry.io/proto/otlp/common/v1"
	"google.golang.org/protobuf/proto"
)

// Sink receives POST /v1/traces of application/x-protobuf, gzipped or not.
// Its URL is what OTEL_EXPORTER_OTLP_ENDPOINT takes.
type Sink struct {
	*httptest.Server
	mu     sync.Mutex
	bodies [][]byte
}

// Span is what the sink keeps of one span.
type Span struct {
	Service string // the resource's service.name
	Name    string
	Attrs   map[string]string // string, int and bool values, as text
}

// New starts a sink; Close stops it.
func New() *Sink {
	s := &Sink{}
	s.Server = httptest.NewServer(http.HandlerFunc(s.serve))
	return s
}

func (s *Sink) serve(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost || r.URL.Path != "/v1/traces" || r.Header.Get("Content-Type") != "application/x-protobuf" {
		http.Error(w, "want POST /v1/traces of application/x-protobuf", http.StatusNotFound)
		return
	}
	var body io.Reader = r.Body
	if r.Header.Get("Content-Encoding") == "gzip" {
		zr, err := gzip.NewReader(r.Body)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		body = zr
	}
	b, err := io.ReadAll(body)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	s.mu.Lock()
	s.bodies = append(s.bodies, b)
	s.mu.Unlock()
	out, _ := proto.Marshal(&coltracepb.ExportTraceServiceResponse{})
	w.Header().Set("Content-Type", "application/x-protobuf")
	_, _ = io.Copy(w, bytes.NewReader(out))
}

// Spans decodes every export received so far.
func (s *Sink) Spans() ([]Span, error) {
	s.mu.Lock()
	bodies := append([][]byte(nil), s.bodies...)
	s.mu.Unlock()
	var out []Span
	for _, b := range bodies {
		var req coltracepb.ExportTraceServiceRequest
		if err := proto.Unmarshal(b, &req); err != nil {
			return nil, fmt.Errorf("an export the sink got is unreadable: %w", err)
		}
		for _, rs := range req.ResourceSpans {
			service := ""
			for _, a := range rs.GetResource().GetAttributes() {
				if a.Key == "service.name" {
					service = a.GetValue().GetStringValue()
				}
			}
			for _, ss := range rs.ScopeSpans {
				for _, sp := range ss.Spans {
					attrs := make(map[string]string, len(sp.Attributes))
					for _, a := range sp.Attributes {
						switch v := a.GetValue().GetValue().(type) {
						case *commonpb.AnyValue_StringValue:
							attrs[a.Key] = v.StringValue
						case *commonpb.AnyValue_IntValue:
							attrs[a.Key] = strconv.FormatInt(v.IntValue, 10)
						case *commonpb.AnyValue_BoolValue:
							attrs[a.Key] = strconv.FormatBool(v.BoolValue)
						}
					}
					out = append(out, Span{Service: service, Name: sp.Name, Attrs: attrs})
				}
			}
		}
	}
	return out, nil
}

// Count is the number of spans by name prefix (the part before a space:
// "agentledger.attempt steps" counts as "agentledger.attempt").
func Count(spans []Span) map[string]int {
	n := map[string]int{}
	for _, sp := range spans {
		name, _, _ := strings.Cut(sp.Name, " ")
		n[name]++
	}
	return n
}
