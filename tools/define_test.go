package tools_test

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/agentledger/agentledger"
	"github.com/agentledger/agentledger/ledger"
	"github.com/agentledger/agentledger/tools"
)

type ticketArgs struct {
	Title    string `json:"title" jsonschema:"what the ticket is about"`
	Priority int    `json:"priority,omitempty"`
}

// A tool declared with Define: its schema comes from its argument type,
// arguments that do not fit are refused before anything is performed, and
// it runs through the ledger with the key to pass downstream.
func TestDefinedTool(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	var performed atomic.Int64
	var sentKey atomic.Value
	tool, err := tools.Define(tools.Spec[ticketArgs]{
		Name: "open_ticket", Description: "Open a ticket", Class: ledger.Keyed,
		Perform: func(_ context.Context, c ledger.Call, a ticketArgs) (ledger.Result, error) {
			performed.Add(1)
			sentKey.Store(c.DownstreamKey("tickets"))
			body, _ := json.Marshal(map[string]any{"title": a.Title, "priority": a.Priority})
			return ledger.Result{Status: 201, Body: body}, nil
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	var schema map[string]any
	if err := json.Unmarshal(tool.Parameters(), &schema); err != nil || schema["type"] != "object" ||
		!strings.Contains(string(tool.Parameters()), `"required":["title"]`) ||
		!strings.Contains(string(tool.Parameters()), "what the ticket is about") {
		t.Fatalf("schema %s (%v)", tool.Parameters(), err)
	}

	e := newEnv(t)
	task := e.task()
	for _, bad := range []string{`{}`, `{"title":7}`, `{"title":"x","colour":"red"}`, `[1]`} {
		if _, err := tools.Invoke(ctx, e.Ledger, tool, call(task, "tool/9", bad)); err == nil || !isPermanent(err) {
			t.Errorf("arguments %s: %v, want a permanent error", bad, err)
		}
	}
	if performed.Load() != 0 {
		t.Fatalf("bad arguments performed the effect %d times", performed.Load())
	}
	c := call(task, "tool/0", `{"title":"disk full","priority":2}`)
	first, err := tools.Invoke(ctx, e.Ledger, tool, c)
	if err != nil || first.Status != 201 {
		t.Fatalf("first: %+v %v", first, err)
	}
	again, err := tools.Invoke(ctx, e.Ledger, tool, c)
	if err != nil || !again.Replayed || performed.Load() != 1 {
		t.Fatalf("again: %+v %v, performed %d, want served from the ledger", again, err, performed.Load())
	}
	if k, _ := sentKey.Load().(string); k == "" {
		t.Error("no downstream key reached the tool")
	}
	if j := e.Journal(task); len(j) != 1 || j[0].Class != ledger.Keyed || j[0].Operation != "open_ticket" {
		t.Errorf("journal %+v", j)
	}
}

func TestDefineRefusesIncompleteTools(t *testing.T) {
	t.Parallel()
	perform := func(context.Context, ledger.Call, ticketArgs) (ledger.Result, error) { return ledger.Result{}, nil }
	for _, c := range []struct {
		spec tools.Spec[ticketArgs]
		want string
	}{
		{tools.Spec[ticketArgs]{Name: "t", Perform: perform}, `"t" declares no effect class`},
		{tools.Spec[ticketArgs]{Name: "t", Class: "sometimes", Perform: perform}, `unknown effect class "sometimes"`},
		{tools.Spec[ticketArgs]{Name: "t", Class: ledger.Keyed}, "has nothing to perform: set Perform"},
		{tools.Spec[ticketArgs]{Name: "t", Class: ledger.Reconcilable, Perform: perform}, "reconcilable but has no Find"},
		{tools.Spec[ticketArgs]{Name: "bad name", Class: ledger.Pure, Perform: perform}, "must be 1-64 letters"},
		{tools.Spec[ticketArgs]{Name: "t", Class: ledger.Pure, Perform: perform, Schema: json.RawMessage(`{"type":`)}, "its schema"},
		{tools.Spec[ticketArgs]{Name: "t", Class: ledger.Pure, Perform: perform, Schema: json.RawMessage(`null`)},
			"the schema of its arguments must be a JSON Schema object, not null"},
		{tools.Spec[ticketArgs]{Name: "t", Class: ledger.Pure, Perform: perform, Schema: json.RawMessage(`{"type":"string"}`)},
			`must describe an object ("type": "object"), not "string"`},
		{tools.Spec[ticketArgs]{Name: "t", Class: ledger.Pure, Perform: perform, Schema: json.RawMessage(`{"required":["a"]}`)},
			`it says no "type"`},
		{tools.Spec[ticketArgs]{Name: "t", Class: ledger.Pure, Perform: perform,
			Schema: json.RawMessage(`{"type":"object","properties":{"y":{"type":"string"}},"required":["y"]}`)},
			`its schema names "y", which is no field of its arguments' type tools_test.ticketArgs: no call with it could be decoded`},
		{tools.Spec[ticketArgs]{Name: "t", Class: ledger.Pure, Perform: perform,
			Schema: json.RawMessage(`{"type":"object","properties":{"title":{"type":"string"}},"required":["title","ticket"]}`)},
			`its schema names "ticket"`},
		{tools.Spec[ticketArgs]{Name: "t", Class: ledger.Keyed, Perform: perform,
			Find: func(context.Context, ledger.Call, ticketArgs) (ledger.Result, bool, error) {
				return ledger.Result{}, false, nil
			}},
			"keyed but has a Find"},
		{tools.Spec[ticketArgs]{Name: "t", Class: ledger.Keyed, Perform: perform,
			PerformLocal: func(context.Context, ledger.Call, ledger.DB, ticketArgs) (ledger.Result, error) {
				return ledger.Result{}, nil
			}},
			"sets PerformLocal, which only a local tool calls"},
		{tools.Spec[ticketArgs]{Name: "t", Class: ledger.Keyed, Perform: perform, Operation: "unbuilt:refund"},
			`tool "t": Operation "unbuilt:refund" is in the built-in effects' unbuilt:…: name yours otherwise`},
		{tools.Spec[ticketArgs]{Name: "t", Class: ledger.Keyed, Perform: perform, Operation: "http_request"},
			`tool "t": Operation "http_request" is a built-in effect's`},
		{tools.Spec[ticketArgs]{Name: "t", Class: ledger.Keyed, Perform: perform, Operation: "llm.chat"}, `Operation "llm.chat" is in the built-in effects' llm.…`},
		{tools.Spec[ticketArgs]{Name: "t", Class: ledger.Keyed, Perform: perform, Operation: "mcp.shop.charge"}, `Operation "mcp.shop.charge" is in the built-in effects' mcp.…`},
		{tools.Spec[ticketArgs]{Name: "t", Class: ledger.Keyed, Perform: perform, Operation: "wait.timer"}, `Operation "wait.timer" is in the built-in`},
		{tools.Spec[ticketArgs]{Name: "t", Class: ledger.Keyed, Perform: perform, Operation: "notify"}, `Operation "notify" is a built-in`},
		{tools.Spec[ticketArgs]{Name: "t", Class: ledger.Keyed, Perform: perform, Operation: "refund\nnow"},
			`tool "t": Operation "refund\nnow" must be 1-128 letters, digits, '.', '_', ':' or '-'`},
		{tools.Spec[ticketArgs]{Name: "t", Class: ledger.Keyed, Perform: perform, Operation: "refund now"}, `Operation "refund now" must be`},
		{tools.Spec[ticketArgs]{Name: "t", Class: ledger.Keyed, Perform: perform, Approval: &tools.Approval{OnTimeout: "bogus"}},
			`tool "t": its Approval: OnTimeout "bogus" must be deny or approve`},
		{tools.Spec[ticketArgs]{Name: "t", Class: ledger.Keyed, Perform: perform, Approval: &tools.Approval{Timeout: -1}},
			`its Approval: Timeout -1ns must be positive and at most 720h0m0s`},
		{tools.Spec[ticketArgs]{Name: "t", Class: ledger.Keyed, Perform: perform, Approval: &tools.Approval{Approvers: []string{"bob"}}},
			`its Approval: approver "bob" is not a Slack user or group id`},
		{tools.Spec[ticketArgs]{Name: "t", Class: ledger.Keyed, Perform: perform, Approval: &tools.Approval{Channel: "#pay"}},
			`its Approval: channel "#pay" must be a Slack channel name`},
	} {
		if _, err := tools.Define(c.spec); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%+v: %v, want %q", c.spec.Name, err, c.want)
		}
	}
	if _, err := tools.Define(tools.Spec[ticketArgs]{Name: "t", Class: ledger.Keyed, Perform: perform, Operation: "stripe.refund"}); err != nil {
		t.Errorf("Operation stripe.refund: %v", err)
	}
	// A pointer to a struct is an object's arguments: its schema says
	// "object", so null args are refused before Perform sees a nil.
	ptr, err := tools.Define(tools.Spec[*ticketArgs]{Name: "p", Class: ledger.Pure,
		Perform: func(context.Context, ledger.Call, *ticketArgs) (ledger.Result, error) { return ledger.Result{}, nil }})
	if err != nil || !strings.Contains(string(ptr.Parameters()), `"type":"object"`) {
		t.Fatalf("Args *struct: %v", err)
	}
	if _, err := ptr.Effect(tools.Call{StepPath: "tool/0", Args: json.RawMessage(`null`)}); err == nil {
		t.Error("null arguments of a pointer type passed")
	}
	if _, err := tools.Define(tools.Spec[ticketArgs]{Name: "q", Class: ledger.Pure, Perform: perform,
		Schema: json.RawMessage(`{"properties":{"title":{"type":"string"}}}`)}); err == nil || !strings.Contains(err.Error(), `it says no "type"`) {
		t.Errorf("a schema of properties alone (a model API refuses it): %v", err)
	}
	// A hand-written schema narrowing the struct's fields is taken, and
	// any schema over arguments that take any object.
	if _, err := tools.Define(tools.Spec[ticketArgs]{Name: "q", Class: ledger.Pure, Perform: perform,
		Schema: json.RawMessage(`{"type":"object","properties":{"title":{"type":"string","maxLength":80}},"required":["title"]}`)}); err != nil {
		t.Errorf("a schema of the struct's own fields: %v", err)
	}
	if _, err := tools.Define(tools.Spec[map[string]any]{Name: "m", Class: ledger.Pure,
		Perform: func(context.Context, ledger.Call, map[string]any) (ledger.Result, error) { return ledger.Result{}, nil },
		Schema:  json.RawMessage(`{"type":"object","properties":{"y":{"type":"string"}},"required":["y"]}`)}); err != nil {
		t.Errorf("a map's schema: %v", err)
	}
	// Arguments that are no object cannot be a step's args or a model's
	// tool call.
	if _, err := tools.Define(tools.Spec[int]{Name: "n", Class: ledger.Pure,
		Perform: func(context.Context, ledger.Call, int) (ledger.Result, error) { return ledger.Result{}, nil }}); err == nil ||
		!strings.Contains(err.Error(), `must describe an object ("type": "object"), not "integer": use a struct or a map`) {
		t.Errorf("Args int: %v", err)
	}
}

// A tool under a prefix marked unavailable (an MCP server still connecting)
// is a transient error naming why; an unknown tool is permanent, and so is
// one the server, connected, does not offer.
func TestUnavailableToolsAreTransient(t *testing.T) {
	t.Parallel()
	reg := tools.NewRegistry()
	why := "MCP server shop is not connected (connecting)"
	reg.Unavailable("shop/", func() string { return why })
	_, err := reg.Get("shop/reserve")
	var after *agentledger.RetryAfterError
	if !errors.As(err, &after) || isPermanent(err) || !strings.Contains(err.Error(), "MCP server shop is not connected") {
		t.Errorf("unavailable: %v, want a transient error naming the server", err)
	}
	if _, err := reg.Get("nope"); !isPermanent(err) {
		t.Errorf("unknown: %v, want permanent", err)
	}
	// Connected, the server does not offer it: unknown, for good (not
	// retried as "not connected" until its attempts run out).
	why = ""
	if _, err := reg.Get("shop/reserve"); !isPermanent(err) || !strings.Contains(err.Error(), `unknown tool "shop/reserve"`) {
		t.Errorf("a tool the connected server does not offer: %v, want permanent", err)
	}
}
