package tracing_test

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/agentledger/agentledger"
	"github.com/agentledger/agentledger/claims"
	"github.com/agentledger/agentledger/daemon"
	"github.com/agentledger/agentledger/internal/test/logbuf"
	"github.com/agentledger/agentledger/internal/test/testdaemon"
	"github.com/agentledger/agentledger/internal/test/testdb"
	"github.com/agentledger/agentledger/tracing"
	"github.com/agentledger/agentledger/worker"
)

// The worker's log line about a failed attempt, as agentd writes it (JSON
// through tracing.LogHandler), names the attempt's trace and span.
func TestAttemptLogCarriesTraceIDs(t *testing.T) {
	exp, _ := record(t)
	var buf logbuf.Buffer
	log := slog.New(tracing.LogHandler(slog.NewJSONHandler(&buf, &slog.HandlerOptions{Level: slog.LevelInfo})))
	url := testdb.URL(t)
	d := daemon.New(daemon.Config{
		Database:    daemon.Database{URL: url},
		Worker:      daemon.Worker{PollInterval: 50 * time.Millisecond},
		Maintenance: daemon.Maintenance{NoCron: true, NoJanitor: true},
		Notify:      daemon.Notifications{NoDispatch: true},
		Logger:      log,
	})
	if err := d.RegisterKind("fail", worker.HandlerFunc(func(context.Context, *agentledger.Task) (json.RawMessage, error) {
		return nil, agentledger.Permanent(errors.New("no such order"))
	})); err != nil {
		t.Fatal(err)
	}
	testdaemon.Run(t, d)
	s := claims.New(testdb.Open(t, url))
	r, err := s.Enqueue(context.Background(), claims.EnqueueParams{Kind: "fail"})
	if err != nil {
		t.Fatal(err)
	}
	if task := testdaemon.WaitFinished(t, s, r.Task.ID); task.State != agentledger.StateDead {
		t.Fatalf("task %s", task.State)
	}
	var attempt *struct{ trace, span string }
	for _, sp := range exp.GetSpans() {
		if sp.Name == "agentledger.attempt fail" {
			attempt = &struct{ trace, span string }{sp.SpanContext.TraceID().String(), sp.SpanContext.SpanID().String()}
		}
	}
	if attempt == nil {
		t.Fatal("no attempt span")
	}
	// The worker logs the failure once it is recorded: the task may read
	// dead a moment before the line is written.
	deadline := time.Now().Add(10 * time.Second)
	for {
		for _, l := range strings.Split(buf.String(), "\n") {
			if !strings.Contains(l, `"msg":"task failed"`) {
				continue
			}
			var rec map[string]any
			if err := json.Unmarshal([]byte(l), &rec); err != nil {
				t.Fatal(err)
			}
			if rec["trace_id"] != attempt.trace || rec["span_id"] != attempt.span {
				t.Errorf("the failed attempt's line %s names another trace than the attempt's %v", l, *attempt)
			}
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("no \"task failed\" line in:\n%s", buf.String())
		}
		time.Sleep(10 * time.Millisecond) // polling for the line, not ordering events
	}
}
