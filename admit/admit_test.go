package admit_test

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/agentledger/agentledger"
	"github.com/agentledger/agentledger/admit"
	"github.com/agentledger/agentledger/claims"
	"github.com/agentledger/agentledger/grants"
	"github.com/agentledger/agentledger/internal/test/testdb"
	"github.com/agentledger/agentledger/notify"
	"github.com/agentledger/agentledger/registry"
	"github.com/agentledger/agentledger/tools"
	"github.com/agentledger/agentledger/waits"
)

// A steps task's tools are checked against the live pools that serve it:
// not at all when one of them did not announce its tools (an older
// version); a tool of an MCP server that is connected must be announced,
// one of a server that is not connected yet passes.
func TestStepsTools(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := testdb.New(t)
	s := registry.New(db)
	check := func(payload string) error {
		p := claims.EnqueueParams{Kind: "steps", Payload: []byte(payload)}
		if err := p.Validate(); err != nil {
			t.Fatal(err)
		}
		_, err := (&admit.Door{}).Admit(ctx, db, admit.Submission{Caller: admit.Operator, Params: p})
		return err
	}
	refused := func(payload, want string) {
		t.Helper()
		var ie *agentledger.InvalidError
		if err := check(payload); !errors.As(err, &ie) || ie.Field != "payload" || !strings.Contains(ie.Problem, want) {
			t.Errorf("%s: %v, want an invalid payload saying %q", payload, err, want)
		}
	}
	passes := func(payload string) {
		t.Helper()
		if err := check(payload); err != nil {
			t.Errorf("%s: %v", payload, err)
		}
	}

	register := func(r registry.Registration) {
		t.Helper()
		r.Host, r.PID, r.Queues, r.Kinds = "h", 1, []string{"default"}, []string{"steps"}
		if err := s.Register(ctx, r); err != nil {
			t.Fatal(err)
		}
	}
	register(registry.Registration{ID: "new", Tools: map[string]json.RawMessage{"http_request": nil, "shop/refund": nil},
		MCPServers: map[string]string{"shop": "connected", "crm": "connecting"}})
	passes(`{"steps":[{"tool":"shop/refund"},{"tool":"crm/lookup"}]}`)
	refused(`{"steps":[{"tool":"shop/void"}]}`, `step 0: unknown tool "shop/void" (known: http_request, shop/refund)`)
	refused(`{"steps":[{"tool":"notify"}]}`, `unknown tool "notify"`)

	// A compensation of a tool announced pure is refused; of a keyed one
	// (or one whose class depends on its arguments) it passes.
	register(registry.Registration{ID: "new", Tools: map[string]json.RawMessage{"http_request": nil, "shop/refund": nil, "shop/lookup": nil},
		Classes: map[string]string{"shop/refund": "keyed", "shop/lookup": "pure"}, MCPServers: map[string]string{"shop": "connected"}})
	refused(`{"steps":[{"tool":"shop/lookup","compensate":{"tool":"shop/refund"}}]}`,
		`step 0: declares a compensation, but shop/lookup is a pure tool (it changes nothing): there is nothing to undo`)
	passes(`{"steps":[{"tool":"shop/refund","compensate":{"tool":"shop/refund"}},{"tool":"http_request","args":{"method":"POST","url":"http://a.example/x"},"compensate":{"tool":"shop/refund"}}]}`)

	register(registry.Registration{ID: "old"}) // announced no tools
	passes(`{"steps":[{"tool":"notify"}]}`)
	refused(`{"steps":[{"tool":""}]}`, "steps: step 0: tool is required")
}

// A steps task's arguments are checked against the schemas of their tools
// that the live pools serving it announced, with the step and tool named;
// arguments that refer to earlier results are known only when the step
// runs and pass. They fit if they fit one pool's schema, and are not
// checked against a pool that announced no schema for the tool.
func TestStepsArguments(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := testdb.New(t)
	s := registry.New(db)
	check := func(payload string, anyway bool) error {
		p := claims.EnqueueParams{Kind: "steps", Payload: []byte(payload)}
		if err := p.Validate(); err != nil {
			t.Fatal(err)
		}
		_, err := (&admit.Door{}).Admit(ctx, db, admit.Submission{Caller: admit.Operator, Params: p, Unserved: anyway})
		return err
	}
	refused := func(payload, want string) {
		t.Helper()
		var ie *agentledger.InvalidError
		if err := check(payload, false); !errors.As(err, &ie) || ie.Field != "payload" || ie.Problem != want {
			t.Errorf("%s: %v, want an invalid payload saying %q", payload, err, want)
		}
	}
	passes := func(payload string) {
		t.Helper()
		if err := check(payload, false); err != nil {
			t.Errorf("%s: %v", payload, err)
		}
	}
	register := func(id string, queues []string, tools map[string]json.RawMessage, mcp map[string]string) {
		t.Helper()
		if err := s.Register(ctx, registry.Registration{ID: id, Host: "h", PID: 1, Queues: queues,
			Kinds: []string{"steps"}, Tools: tools, MCPServers: mcp}); err != nil {
			t.Fatal(err)
		}
	}
	req, err := tools.NewHTTPRequest(tools.HTTPConfig{})
	if err != nil {
		t.Fatal(err)
	}
	builtins := map[string]json.RawMessage{"notify": notify.NewTool().Parameters(), "http_request": req.Parameters(),
		"create_task": tools.NewCreateTask(&admit.Door{}).Parameters(),
		"refund":      json.RawMessage(`{"type":"object","required":["order"],"properties":{"order":{"type":"integer"}}}`)}
	register("d1", []string{"default"}, builtins, map[string]string{"crm": "connecting"})

	refused(`{"steps":[{"tool":"notify","args":"x"}]}`, "steps: step 0: args must be an object, not a string")
	refused(`{"steps":[{"tool":"notify"}]}`, `step 0: notify: arguments: "channel" and "text" are required`)
	refused(`{"steps":[{"tool":"http_request","args":{"method":"GET","url":"https://a.example"}},`+
		`{"tool":"notify","args":{"channel":"ops"}}]}`, `step 1: notify: arguments: "text" is required`)
	refused(`{"steps":[{"tool":"notify","args":{"channel":"ops","text":5}}]}`,
		`step 0: notify: arguments: "text" must be a string, not a number`)
	refused(`{"steps":[{"tool":"http_request","args":{"method":"GET"}}]}`, `step 0: http_request: arguments: "url" is required`)
	refused(`{"steps":[{"tool":"http_request","args":{"method":"FETCH","url":"https://a.example"}}]}`,
		`step 0: http_request: arguments: "method" is "FETCH", which does not match ^(?i:GET|POST|PUT|PATCH|DELETE)$ `+
			`(GET, POST, PUT, PATCH or DELETE)`)
	refused(`{"steps":[{"tool":"create_task","args":{"payload":{}}}]}`, `step 0: create_task: arguments: "kind" is required`)
	refused(`{"steps":[{"tool":"refund","args":{"order":"7"}}]}`, `step 0: refund: arguments: "order" must be an integer, not a string`)
	// Steps are checked in order: step 0's arguments before step 1's tool.
	refused(`{"steps":[{"tool":"notify"},{"tool":"nope"}]}`, `step 0: notify: arguments: "channel" and "text" are required`)

	passes(`{"steps":[{"tool":"http_request","args":{"method":"post","url":"https://a.example"}},` +
		`{"tool":"notify","args":{"channel":"ops","text":"charged ${steps.0.body.id}"}},` +
		`{"tool":"notify","args":{"text":"${steps.0.status}"}},` +
		`{"tool":"create_task","args":{"kind":"receipt","payload":"${steps.0.body}"}},` +
		`{"tool":"refund","args":{"order":7}},` +
		`{"tool":"crm/lookup","args":{"anything":true}}]}`)
	// Queued anyway, only the structure is checked.
	if err := check(`{"steps":[{"tool":"notify"}]}`, true); err != nil {
		t.Errorf("queued anyway: %v", err)
	}

	// Another pool on the queue with a looser refund: fitting either passes.
	register("d2", []string{"default"}, map[string]json.RawMessage{"refund": json.RawMessage(`{"type":"object"}`)}, nil)
	passes(`{"steps":[{"tool":"refund","args":{"order":"7"}}]}`)
	refused(`{"steps":[{"tool":"notify"}]}`, `step 0: notify: arguments: "channel" and "text" are required`)
	// One that announced notify without its schema (an older version).
	register("d3", []string{"default"}, map[string]json.RawMessage{"notify": nil}, nil)
	passes(`{"steps":[{"tool":"notify"}]}`)
}

// A literal call of the HTTP tools that can only fail is refused whatever
// the pools announced (queued anyway, or served by a pool that announced
// no tools), after the schema of a pool that announced one.
func TestStepsCallsTheToolWouldRefuse(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := testdb.New(t)
	s := registry.New(db)
	const payload = `{"steps":[{"tool":"http_request","args":{"method":"GET","url":"https://u:p@a.example/"}}]}`
	refused := func(when string, anyway bool) {
		t.Helper()
		p := claims.EnqueueParams{Kind: "steps", Payload: []byte(payload)}
		if err := p.Validate(); err != nil {
			t.Fatal(err)
		}
		var ie *agentledger.InvalidError
		_, err := (&admit.Door{}).Admit(ctx, db, admit.Submission{Caller: admit.Operator, Params: p, Unserved: anyway})
		if !errors.As(err, &ie) || ie.Field != "payload" || ie.Problem != "step 0: url must not carry credentials: configure them as host headers" {
			t.Errorf("%s: %v, want the tool's refusal", when, err)
		}
	}
	refused("queued anyway", true)
	if err := s.Register(ctx, registry.Registration{ID: "old", Host: "h", PID: 1, Queues: []string{"default"}, Kinds: []string{"steps"}}); err != nil {
		t.Fatal(err)
	}
	refused("a pool that announced no tools", false)
	req, err := tools.NewHTTPRequest(tools.HTTPConfig{})
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Register(ctx, registry.Registration{ID: "old", Host: "h", PID: 1, Queues: []string{"default"}, Kinds: []string{"steps"},
		Tools: map[string]json.RawMessage{"http_request": req.Parameters()}}); err != nil {
		t.Fatal(err)
	}
	refused("a pool that announced the schema", false)
}

// Literal arguments a tool of this process refuses (tools.ArgsChecker: a
// wait's timeout of zero, a timer a year and more away) are refused at the
// door, naming the step and the field; arguments that refer to earlier
// results are left to the run.
func TestStepsArgumentsTheToolChecks(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := testdb.New(t)
	byName := map[string]tools.Tool{}
	for _, tl := range waits.Tools(waits.NewStore(db)) {
		byName[tl.Name()] = tl
	}
	door := &admit.Door{Unserved: true, Args: func(tool string, args json.RawMessage) error {
		if c, ok := byName[tool].(tools.ArgsChecker); ok {
			return c.CheckArgs(args)
		}
		return nil
	}}
	admitted := func(payload string) error {
		p := claims.EnqueueParams{Kind: "steps", Payload: []byte(payload)}
		if err := p.Validate(); err != nil {
			t.Fatal(err)
		}
		_, err := door.Admit(ctx, db, admit.Submission{Caller: admit.Operator, Params: p})
		return err
	}
	for payload, want := range map[string]string{
		`{"steps":[{"tool":"wait_for_signal","args":{"signal":"paid","key":"o-1","timeout":"0s"}}]}`: `step 0: wait_for_signal: timeout: "0s" must be a duration from 1s`,
		`{"steps":[{"tool":"wait_timer","args":{"for":"87600h"}}]}`:                                  `step 0: wait_timer: for: "87600h" must be a duration from 1s`,
		`{"steps":[{"tool":"wait_timer","args":{}}]}`:                                                `give "for" (a duration) or "until" (a time)`,
		`{"steps":[{"tool":"wait_for_children","args":{"mode":"some"}}]}`:                            `mode: "some" must be all or any`,
		`{"steps":[{"tool":"wait_for_children","args":{"tasks":[1]}}]}`:                              `step 0: wait_for_children: tasks: task 1 cannot be a child of this task`,
	} {
		var ie *agentledger.InvalidError
		if err := admitted(payload); !errors.As(err, &ie) || ie.Field != "payload" || !strings.Contains(ie.Problem, want) {
			t.Errorf("%s: %v, want the tool's refusal %q", payload, err, want)
		}
	}
	for _, payload := range []string{
		`{"steps":[{"tool":"wait_for_signal","args":{"signal":"paid","key":"o-1","timeout":"2h"}}]}`,
		`{"steps":[{"tool":"echo_ish","args":{}},{"tool":"wait_for_signal","args":{"signal":"paid","key":"${steps.0.body.id}","timeout":"0s"}}]}`,
		`{"steps":[{"tool":"create_task","args":{"kind":"echo"}},{"tool":"wait_for_children","args":{"tasks":["${steps.0.body.task_id}"]}}]}`,
	} {
		if err := admitted(payload); err != nil {
			t.Errorf("%s: refused: %v", payload, err)
		}
	}
}

// An agent task's payload is checked at the door as its run would check
// it, for every caller: an unknown field, no prompt, max_steps out of the
// daemon's range, a gate of a tool not listed; the workers' tools and
// model are theirs to say. A door that does not know the limit (agentctl's)
// leaves max_steps' maximum to the run.
func TestAgentPayloads(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := testdb.New(t)
	daemonDoor, agentctlDoor := &admit.Door{AgentMaxSteps: 10, Unserved: true}, &admit.Door{Unserved: true}
	for _, c := range []struct {
		payload, want string
		door          *admit.Door
	}{
		{`{"promt":"typo"}`, `json: unknown field "promt"`, daemonDoor},
		{`{"system":"s"}`, "prompt is required", daemonDoor},
		{`{"prompt":"x","max_steps":0}`, "max_steps must be at least 1, got 0", agentctlDoor},
		{`{"prompt":"x","max_steps":50}`, "max_steps 50 is above this worker's limit of 10", daemonDoor},
		{`{"prompt":"x","max_steps":50}`, "", agentctlDoor},
		{`{"prompt":"x","tools":["http_request"],"approve":{"notify":true}}`, `approve: "notify" is not among tools`, daemonDoor},
		{`{"prompt":"x","tools":["http_request"],"approve":{"http_request":"yes"}}`, "approve.http_request: approve must be true or", daemonDoor},
		{`{"prompt":"x","tools":["no_such_tool"],"max_steps":3}`, "", daemonDoor},
	} {
		for _, caller := range []admit.Caller{admit.Operator, admit.Webhook, admit.Parent} {
			_, err := c.door.Admit(ctx, db, admit.Submission{Caller: caller, Grant: &grants.Grant{All: true},
				Params: claims.EnqueueParams{Kind: "agent", Payload: json.RawMessage(c.payload)}})
			var ie *agentledger.InvalidError
			switch {
			case c.want == "" && err != nil:
				t.Errorf("%s %s: %v, want it admitted", caller, c.payload, err)
			case c.want != "" && (!errors.As(err, &ie) || ie.Field != "payload" || !strings.Contains(ie.Problem, c.want)):
				t.Errorf("%s %s: %v, want a payload error saying %q", caller, c.payload, err, c.want)
			}
		}
	}
}

// A typed kind's payload must fit the schema of each live pool that
// claims the kind from the task's queue: a pool of another program
// serving the same kind from another queue does not change what this
// queue takes, and once it claims from this queue too, a payload must fit
// both. A submission is checked against the fleet as it is, not against
// whichever daemon published last.
func TestTypedKindPayloadFitsEachLivePoolOfItsQueue(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := testdb.New(t)
	s := registry.New(db)
	order := json.RawMessage(`{"type":"object","additionalProperties":false,"required":["order_id"],"properties":{"order_id":{"type":"string"}}}`)
	other := json.RawMessage(`{"type":"object","additionalProperties":false,"required":["x"],"properties":{"x":{"type":"integer"}}}`)
	register := func(id string, queues []string, schema json.RawMessage) {
		t.Helper()
		if err := s.Register(ctx, registry.Registration{ID: id, Host: "h", PID: 1, Queues: queues, Kinds: []string{"charge_order"},
			KindSchemas: map[string]json.RawMessage{"charge_order": schema}}); err != nil {
			t.Fatal(err)
		}
		if err := s.PublishKinds(ctx, id, map[string]json.RawMessage{"charge_order": schema}); err != nil {
			t.Fatal(err)
		}
	}
	check := func(queue, payload string) error {
		p := claims.EnqueueParams{Kind: "charge_order", Queue: queue, Payload: []byte(payload)}
		if err := p.Validate(); err != nil {
			t.Fatal(err)
		}
		_, err := (&admit.Door{}).Admit(ctx, db, admit.Submission{Caller: admit.Operator, Params: p}) // a new door: no cached schemas
		return err
	}
	refused := func(queue, payload, want string) {
		t.Helper()
		var ie *agentledger.InvalidError
		if err := check(queue, payload); !errors.As(err, &ie) || ie.Field != "payload" || !strings.Contains(ie.Problem, want) {
			t.Errorf("%s on %s: %v, want an invalid payload saying %q", payload, queue, err, want)
		}
	}
	passes := func(queue, payload string) {
		t.Helper()
		if err := check(queue, payload); err != nil {
			t.Errorf("%s on %s: %v", payload, queue, err)
		}
	}
	register("shop", []string{"default"}, order)
	register("probe", []string{"probe"}, other) // published last
	passes("default", `{"order_id":"m1"}`)
	refused("default", `{"x":5}`, `"order_id" is required`)
	passes("probe", `{"x":5}`)
	refused("probe", `{"order_id":"m1"}`, `"x" is required`)

	register("probe", []string{"probe", "default"}, other)
	refused("default", `{"order_id":"m1"}`, `"x" is required`)
	refused("default", `{"x":5}`, `"order_id" is required`)
}

// Where no live pool's tools are checked (a task queued for a pool not up
// yet, the daemon's own Client), the door's own tools' classes still refuse
// a compensation of a pure call, or by one, as the run would.
func TestPureCompensationRefusedWithoutLivePools(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := testdb.New(t)
	door := &admit.Door{Pure: func(tool string) bool { return tool == "lookup" }}
	admitted := func(payload string) error {
		p := claims.EnqueueParams{Kind: "steps", Payload: []byte(payload)}
		_, err := door.Admit(ctx, db, admit.Submission{Caller: admit.Operator, Params: p, Unserved: true})
		return err
	}
	for payload, want := range map[string]string{
		`{"steps":[{"tool":"lookup","compensate":{"tool":"refund"}}]}`: "step 0: declares a compensation, but lookup is a pure tool",
		`{"steps":[{"tool":"refund","compensate":{"tool":"lookup"}}]}`: "step 0: compensation: lookup changes nothing, so it undoes nothing",
	} {
		var ie *agentledger.InvalidError
		if err := admitted(payload); !errors.As(err, &ie) || ie.Field != "payload" || !strings.Contains(ie.Problem, want) {
			t.Errorf("%s: %v, want an invalid payload saying %q", payload, err, want)
		}
	}
	if err := admitted(`{"steps":[{"tool":"refund","compensate":{"tool":"refund"}}]}`); err != nil {
		t.Errorf("a keyed call undone by a keyed one: %v", err)
	}
}
