package httpapi_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/agentledger/agentledger"
	"github.com/agentledger/agentledger/admit"
	"github.com/agentledger/agentledger/httpapi"
	"github.com/agentledger/agentledger/notify"
	"github.com/agentledger/agentledger/registry"
	"github.com/agentledger/agentledger/tools"
)

// POST /v1/tasks refuses with 422 naming the field, and queues nothing, a
// task no live worker serves (unless allow_unserved) and a steps payload
// that would fail when it runs, as agentd wires package admit.
func TestCreateRefusesUnservedTasks(t *testing.T) {
	t.Parallel()
	e := newEnv(t, httpapi.Config{IdempotencyKeyOptional: true, Door: &admit.Door{}})
	tok := e.tenant("acme")
	refused := func(body, field, detail string) {
		t.Helper()
		p := e.problem(e.post("/v1/tasks", tok, "", body), 422, string(agentledger.CodeInvalid))
		if p.Field != field || !strings.Contains(p.Detail, detail) {
			t.Errorf("%s: field %q, detail %q; want %s and %q", body, p.Field, p.Detail, field, detail)
		}
	}

	http, err := tools.NewHTTPRequest(tools.HTTPConfig{})
	if err != nil {
		t.Fatal(err)
	}
	refused(`{"kind":"eco"}`, "kind",
		`no live worker serves "eco": no worker pool announced itself in the last 1m; send "allow_unserved": true to queue it for a worker that is not up yet`)
	if err := registry.New(e.db).Register(context.Background(), registry.Registration{ID: "d1", Host: "h", PID: 1,
		Queues: []string{"default", "mail"}, Kinds: []string{"echo", "steps"}, Tools: map[string]json.RawMessage{
			"http_request": http.Parameters(), "notify": notify.NewTool().Parameters()}}); err != nil {
		t.Fatal(err)
	}
	refused(`{"kind":"eco"}`, "kind", `no live worker serves "eco"; the live workers serve echo, steps;`)
	refused(`{"kind":"echo","queue":"bulk"}`, "queue", `no live worker serves kind "echo" on queue "bulk"; it is served on default, mail;`)
	refused(`{"kind":"steps","payload":{"steps":[{"args":{}}]}}`, "payload", "steps: step 0: tool is required")
	refused(`{"kind":"steps","payload":{"steps":[{"tool":"notify","args":{"channel":"ops","text":"hi"}},{"tool":"htp"}]}}`, "payload",
		`step 1: unknown tool "htp" (known: http_request, notify)`)
	// Arguments that do not fit their tool's schema, as the worker
	// announced it, name the step and the tool.
	refused(`{"kind":"steps","payload":{"steps":[{"tool":"notify","args":"x"}]}}`, "payload",
		"steps: step 0: args must be an object, not a string")
	refused(`{"kind":"steps","payload":{"steps":[{"tool":"notify"}]}}`, "payload",
		`step 0: notify: arguments: "channel" and "text" are required`)
	refused(`{"kind":"steps","payload":{"steps":[{"tool":"notify","args":{"channel":"ops"}}]}}`, "payload",
		`step 0: notify: arguments: "text" is required`)
	refused(`{"kind":"steps","payload":{"steps":[{"tool":"http_request","args":{"url":"https://a.example"}}]}}`, "payload",
		`step 0: http_request: arguments: "method" is required`)
	refused(`{"kind":"steps","payload":{"steps":[]},"allow_unserved":true}`, "payload", "steps: payload needs 1 to 100 steps, has 0")
	if n := e.count(`SELECT count(*) FROM tasks`); n != 0 {
		t.Fatalf("%d tasks queued by refused requests", n)
	}

	e.task(e.post("/v1/tasks", tok, "", `{"kind":"echo","queue":"mail"}`), 201)
	e.task(e.post("/v1/tasks", tok, "", `{"kind":"steps","payload":{"steps":[`+
		`{"tool":"http_request","args":{"method":"GET","url":"https://a.example"}},`+
		`{"tool":"notify","args":{"channel":"ops","text":"${steps.0.body.id}"}},`+
		`{"tool":"notify","args":{"text":"${steps.0.status}"}}]}}`), 201)
	e.task(e.post("/v1/tasks", tok, "", `{"kind":"eco","allow_unserved":true}`), 201)
	e.task(e.post("/v1/tasks", tok, "", `{"kind":"steps","payload":{"steps":[{"tool":"htp"}]},"allow_unserved":true}`), 201)
}
