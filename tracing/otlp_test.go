package tracing_test

import (
	"compress/gzip"
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"

	coltracepb "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	"google.golang.org/protobuf/proto"

	"github.com/agentledger/agentledger/claims"
	"github.com/agentledger/agentledger/internal/testdb"
	"github.com/agentledger/agentledger/tracing"
)

// receiver is a small OTLP/HTTP trace receiver: it decodes what is posted
// to /v1/traces and keeps the span names by service.
type receiver struct {
	*httptest.Server
	mu    sync.Mutex
	spans map[string][]string // service.name → span names
}

func newReceiver(t *testing.T) *receiver {
	rc := &receiver{spans: map[string][]string{}}
	rc.Server = httptest.NewServer(http.HandlerFunc(rc.serve))
	t.Cleanup(rc.Close)
	return rc
}

func (rc *receiver) serve(w http.ResponseWriter, r *http.Request) {
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
	data, err := io.ReadAll(body)
	var req coltracepb.ExportTraceServiceRequest
	if err == nil {
		err = proto.Unmarshal(data, &req)
	}
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	rc.mu.Lock()
	for _, rs := range req.ResourceSpans {
		service := ""
		for _, a := range rs.GetResource().GetAttributes() {
			if a.Key == "service.name" {
				service = a.GetValue().GetStringValue()
			}
		}
		for _, ss := range rs.ScopeSpans {
			for _, s := range ss.Spans {
				rc.spans[service] = append(rc.spans[service], s.Name)
			}
		}
	}
	rc.mu.Unlock()
	out, _ := proto.Marshal(&coltracepb.ExportTraceServiceResponse{})
	w.Header().Set("Content-Type", "application/x-protobuf")
	_, _ = w.Write(out)
}

func (rc *receiver) names(service string) []string {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	return append([]string(nil), rc.spans[service]...)
}

// Setup configured by the standard variables exports over OTLP/HTTP, and
// its shutdown flushes what is batched.
func TestExportOverOTLPHTTP(t *testing.T) {
	rc := newReceiver(t)
	t.Setenv("OTEL_EXPORTER_OTLP_ENDPOINT", rc.URL)
	t.Setenv("OTEL_SERVICE_NAME", "agentd-test")
	ctx := context.Background()
	shutdown, err := tracing.Setup(ctx, "agentd")
	if err != nil {
		t.Fatal(err)
	}
	if !tracing.Enabled() {
		t.Fatal("an OTLP endpoint is set, yet tracing is off")
	}
	s := claims.New(testdb.New(t))
	if _, err := s.Enqueue(ctx, claims.EnqueueParams{Kind: "noop"}); err != nil {
		t.Fatal(err)
	}
	if err := shutdown(ctx); err != nil {
		t.Fatalf("shutdown: %v", err)
	}
	if tracing.Enabled() {
		t.Error("tracing is still on after shutdown")
	}
	if got := rc.names("agentd-test"); len(got) != 1 || got[0] != "agentledger.submit" {
		t.Errorf("the receiver got spans %q of agentd-test, want [agentledger.submit]", got)
	}
}
