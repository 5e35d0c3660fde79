package tracing_test

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/agentledger/agentledger"
	"github.com/agentledger/agentledger/agentledgertest/fakeopenai"
	"github.com/agentledger/agentledger/claims"
	"github.com/agentledger/agentledger/daemon"
	"github.com/agentledger/agentledger/internal/test/testdaemon"
	"github.com/agentledger/agentledger/internal/test/testdb"
	"github.com/agentledger/agentledger/tracing"
)

// An agent task's model call is a span of its attempt with the tokens in
// and out, and the model endpoint gets the trace.
func TestAgentModelCallTrace(t *testing.T) {
	exp, tp := record(t)
	model := fakeopenai.New(t, "sk-test", fakeopenai.Reply{Content: "done", PromptTokens: 11, CompletionTokens: 7})
	url := testdb.URL(t)
	d := daemon.New(daemon.Config{
		Database:    daemon.Database{URL: url},
		Worker:      daemon.Worker{PollInterval: 50 * time.Millisecond},
		Maintenance: daemon.Maintenance{NoCron: true, NoJanitor: true},
		Notify:      daemon.Notifications{NoDispatch: true},
		Model: daemon.Model{
			BaseURL: model.BaseURL(),
			APIKey:  "sk-test",
			Name:    "gpt-test",
		},
		Logger: quiet(),
	})
	testdaemon.Run(t, d)

	// A program submits the task straight to the database, within its span.
	ctx, root := tp.Tracer("program").Start(context.Background(), "program")
	s := claims.New(testdb.Open(t, url))
	r, err := s.Enqueue(ctx, claims.EnqueueParams{Kind: "agent", Payload: json.RawMessage(`{"prompt":"say done"}`)})
	root.End()
	if err != nil {
		t.Fatal(err)
	}
	if task := testdaemon.WaitFinished(t, s, r.Task.ID); task.State != agentledger.StateSucceeded {
		t.Fatalf("task %s: %s", task.State, task.LastError)
	}

	spans := spansOf(exp, root.SpanContext().TraceID())
	chat := named(spans, "chat gpt-test")
	if len(chat) != 1 {
		t.Fatalf("%d model call spans in the trace, want 1 (spans: %v)", len(chat), spans)
	}
	if in, out := attr(chat[0], tracing.GenAIInputTokens).AsInt64(), attr(chat[0], tracing.GenAIOutputTokens).AsInt64(); in != 11 || out != 7 {
		t.Errorf("tokens in %d out %d, want 11 and 7", in, out)
	}
	if m := attr(chat[0], tracing.GenAIRequestModel).AsString(); m != "gpt-test" {
		t.Errorf("gen_ai.request.model %q", m)
	}
	effect := named(spans, "agentledger.effect llm.chat")
	attempt := named(spans, "agentledger.attempt agent")
	if len(effect) != 1 || len(attempt) != 1 || chat[0].Parent.SpanID() != effect[0].SpanContext.SpanID() ||
		effect[0].Parent.SpanID() != attempt[0].SpanContext.SpanID() {
		t.Fatalf("want attempt → effect llm.chat → chat: attempts %v effects %v", attempt, effect)
	}
	reqs := model.Requests()
	if len(reqs) != 1 || tracing.SpanContext(reqs[0].TraceParent).SpanID() != chat[0].SpanContext.SpanID() {
		t.Errorf("the model endpoint got traceparent %q, want the chat span's", reqs[0].TraceParent)
	}
}
