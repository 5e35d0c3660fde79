package agent_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/agentledger/agentledger"
	"github.com/agentledger/agentledger/agent"
	"github.com/agentledger/agentledger/agentledgertest/fakeopenai"
	"github.com/agentledger/agentledger/ledger"
	"github.com/agentledger/agentledger/tools"
)

func TestPayloadValidation(t *testing.T) {
	t.Parallel()
	fake := fakeopenai.New(t, testKey)
	reg := tools.NewRegistry(&countTool{name: "count", class: ledger.Keyed})
	cfg := agent.Config{BaseURL: fake.BaseURL(), APIKey: testKey, Model: "m", MaxSteps: 5, HTTPClient: fake.Client()}
	a := agent.New(cfg, noDoer{t}, reg)
	noModel := agent.New(agent.Config{BaseURL: fake.BaseURL(), HTTPClient: fake.Client()}, noDoer{t}, reg)

	for _, tc := range []struct {
		name, payload, want string
		agent               *agent.Agent
	}{
		{"empty", ``, "agent payload: is empty", a},
		{"not json", `{"prompt": `, "agent payload: is not valid JSON", a},
		{"not an object", `["hi"]`, "agent payload: must be a JSON object; found a JSON array", a},
		{"missing prompt", `{"system": "s"}`, "agent payload: prompt is required", a},
		{"empty prompt", `{"prompt": ""}`, "agent payload: prompt is required", a},
		{"prompt not a string", `{"prompt": 5}`, "agent payload: prompt must be a string; found a JSON number", a},
		{"tools not a list", `{"prompt": "p", "tools": "count"}`, "agent payload: tools must be a list of tool names (strings); found a JSON string", a},
		{"tool not a string", `{"prompt": "p", "tools": [1]}`, "agent payload: tools must be a list of tool names (strings); found a JSON number", a},
		{"max_steps not an integer", `{"prompt": "p", "max_steps": 2.5}`, "agent payload: max_steps must be an integer; found a JSON number", a},
		{"max_steps above the limit", `{"prompt": "p", "max_steps": 6}`, "agent payload: max_steps 6 is above this worker's limit of 5", a},
		{"max_steps zero", `{"prompt": "p", "max_steps": 0}`, "agent payload: max_steps must be at least 1, got 0", a},
		{"unknown field", `{"prompt": "p", "tool": ["count"]}`, `agent payload: json: unknown field "tool"`, a},
		{"trailing data", `{"prompt": "p"} {}`, "agent payload: trailing data", a},
		{"unknown tool", `{"prompt": "p", "tools": ["count", "nope"]}`, `agent payload: tools[1]: unknown tool "nope" (known: count)`, a},
		{"tool twice", `{"prompt": "p", "tools": ["count", "count"]}`, `agent payload: tools[1]: "count" is listed twice`, a},
		{"no model", `{"prompt": "p"}`, "agent payload: names no model and the worker has no default", noModel},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := tc.agent.Work(context.Background(), &agentledger.Task{ID: 1, Kind: agent.Kind, Payload: []byte(tc.payload)})
			var perm *agentledger.PermanentError
			if !errors.As(err, &perm) || !strings.HasPrefix(err.Error(), tc.want) {
				t.Fatalf("err %v, want permanent %q…", err, tc.want)
			}
		})
	}
	if fake.Calls() != 0 {
		t.Fatalf("model called %d times", fake.Calls())
	}
}
