package tracing_test

import (
	"context"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"go.opentelemetry.io/otel/trace"

	"github.com/agentledger/agentledger"
	"github.com/agentledger/agentledger/claims"
	"github.com/agentledger/agentledger/daemon"
	"github.com/agentledger/agentledger/grants"
	"github.com/agentledger/agentledger/internal/test/testdaemon"
	"github.com/agentledger/agentledger/internal/test/testdb"
	"github.com/agentledger/agentledger/operator"
	"github.com/agentledger/agentledger/tenants"
	"github.com/agentledger/agentledger/tracing"
)

// A steps task submitted through the API with a traceparent joins the
// caller's trace: submission, attempt, tool call and effect (performed)
// are one tree, and the downstream gets the trace. A replay runs in the
// operator's trace, its effect served from the ledger, its attempt
// linked to the submission's.
func TestStepsTaskTrace(t *testing.T) {
	exp, tp := record(t)
	ctx := context.Background()
	url := testdb.URL(t)
	db := testdb.Open(t, url)
	ts := tenants.NewStore(db)
	if _, err := ts.CreateTenant(ctx, "acme"); err != nil {
		t.Fatal(err)
	}
	_, token, err := ts.CreateToken(ctx, "acme", "test", 0)
	if err != nil {
		t.Fatal(err)
	}
	down := newHeaderServer(t)
	if err := grants.NewStore(db).Put(ctx, "acme", &grants.Grant{Kinds: []string{"steps"}, Tools: []string{"http_request"},
		Hosts: []grants.Host{{URL: down.URL}}}); err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	d := daemon.New(daemon.Config{
		Database:    daemon.Database{URL: url},
		API:         daemon.API{Listener: ln},
		Worker:      daemon.Worker{PollInterval: 50 * time.Millisecond},
		Maintenance: daemon.Maintenance{NoCron: true, NoJanitor: true},
		Notify:      daemon.Notifications{NoDispatch: true},
		HTTPTools:   daemon.HTTPTools{AllowedHosts: []string{down.URL}},
		Logger:      quiet(),
	})
	testdaemon.Run(t, d)

	const caller = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"
	callerSC := tracing.SpanContext(caller)
	body := `{"kind":"steps","allow_unserved":true,"payload":{"steps":[{"tool":"http_request",` +
		`"args":{"method":"POST","url":"` + down.URL + `/orders","body":{"sku":"a-1"}}}]}}`
	req, _ := http.NewRequest(http.MethodPost, "http://"+ln.Addr().String()+"/v1/tasks", strings.NewReader(body))
	req.Header.Set("Authorization", "Bearer "+token)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("traceparent", caller)
	req.Header.Set("Idempotency-Key", "order-a-1")
	resp, err := (&http.Client{Timeout: 10 * time.Second}).Do(req)
	if err != nil {
		t.Fatal(err)
	}
	answer, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	var created struct{ ID int64 }
	if err := json.Unmarshal(answer, &created); resp.StatusCode != http.StatusCreated || err != nil {
		t.Fatalf("submit: %d %s", resp.StatusCode, answer)
	}
	s := claims.New(db)
	task := testdaemon.WaitFinished(t, s, created.ID)
	if task.State != agentledger.StateSucceeded {
		t.Fatalf("task %s: %s", task.State, task.LastError)
	}

	// The task keeps its submission's context, in the caller's trace.
	stored := tracing.SpanContext(task.TraceParent)
	if stored.TraceID() != callerSC.TraceID() {
		t.Fatalf("the task's traceparent %q is not in the caller's trace %s", task.TraceParent, callerSC.TraceID())
	}
	spans := spansOf(exp, callerSC.TraceID())
	submit := named(spans, "agentledger.submit")
	if len(submit) != 1 || submit[0].SpanContext.SpanID() != stored.SpanID() {
		t.Fatalf("submission spans %v, want one, the task's stored parent", submit)
	}
	attempt := named(spans, "agentledger.attempt steps")
	if len(attempt) != 1 || attempt[0].Parent.SpanID() != stored.SpanID() || attempt[0].SpanKind != trace.SpanKindConsumer {
		t.Fatalf("attempt spans %v, want one child of the submission", attempt)
	}
	if got := attr(attempt[0], tracing.TaskID).AsInt64(); got != task.ID {
		t.Errorf("attempt span's task id %d, want %d", got, task.ID)
	}
	tool := named(spans, "agentledger.tool http_request")
	effect := named(spans, "agentledger.effect http_request")
	if len(tool) != 1 || tool[0].Parent.SpanID() != attempt[0].SpanContext.SpanID() {
		t.Fatalf("tool spans %v, want one child of the attempt", tool)
	}
	if len(effect) != 1 || effect[0].Parent.SpanID() != tool[0].SpanContext.SpanID() {
		t.Fatalf("effect spans %v, want one child of the tool call", effect)
	}
	if o := attr(effect[0], tracing.LedgerOutcome).AsString(); o != "performed" {
		t.Errorf("effect outcome %q, want performed", o)
	}
	if k := attr(effect[0], tracing.EffectKey).AsString(); k == "" || attr(effect[0], tracing.EffectClass).AsString() != "keyed" {
		t.Errorf("effect key %q class %q", k, attr(effect[0], tracing.EffectClass).AsString())
	}
	// The downstream saw the trace, as a child of the effect's work.
	seen := down.traceparents()
	if len(seen) != 1 || tracing.SpanContext(seen[0]).TraceID() != callerSC.TraceID() {
		t.Fatalf("the downstream got traceparents %q, want one in trace %s", seen, callerSC.TraceID())
	}
	if tracing.SpanContext(seen[0]).SpanID() != effect[0].SpanContext.SpanID() {
		t.Errorf("the downstream's parent %s is not the effect span %s", seen[0], effect[0].SpanContext.SpanID())
	}

	// The operator replays the task inside a trace of their own.
	octx, op := tp.Tracer("operator").Start(ctx, "replay by operator")
	if _, err := operator.New(db).Replay(octx, "acme", task.ID); err != nil {
		t.Fatal(err)
	}
	op.End()
	if task = testdaemon.WaitFinished(t, s, task.ID); task.State != agentledger.StateSucceeded {
		t.Fatalf("replayed task %s: %s", task.State, task.LastError)
	}
	if !tracing.SpanContext(task.TraceParent).Equal(stored) {
		t.Errorf("the replay changed the submission's traceparent: %q", task.TraceParent)
	}
	replay := spansOf(exp, op.SpanContext().TraceID())
	rattempt := named(replay, "agentledger.attempt steps")
	if len(rattempt) != 1 {
		t.Fatalf("replay trace: %d attempt spans, want 1", len(rattempt))
	}
	links := rattempt[0].Links
	if len(links) != 1 || links[0].SpanContext.SpanID() != stored.SpanID() || links[0].SpanContext.TraceID() != stored.TraceID() {
		t.Errorf("the replayed attempt's links %v, want one to the submission %s", links, task.TraceParent)
	}
	reffect := named(replay, "agentledger.effect http_request")
	if len(reffect) != 1 || attr(reffect[0], tracing.LedgerOutcome).AsString() != "served" {
		t.Fatalf("replay effect spans %v, want one served", reffect)
	}
	if n := len(down.traceparents()); n != 1 {
		t.Errorf("the downstream was called %d times, want once", n)
	}
}
