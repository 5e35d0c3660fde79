package render

import (
	"encoding/json"
	"testing"

	"github.com/agentledger/agentledger"
	"github.com/agentledger/agentledger/ledger"
	"github.com/agentledger/agentledger/operator"
)

func TestProgress(t *testing.T) {
	steps := &agentledger.Task{State: agentledger.StateRunning, Kind: "steps",
		Payload: json.RawMessage(`{"steps":[{"tool":"http_request"},{"tool":"notify"},{"tool":"unsafe_http"}]}`)}
	agent := &agentledger.Task{State: agentledger.StateRunning, Kind: "agent", Payload: json.RawMessage(`{}`)}
	done := func(step string, st ledger.State) operator.Effect { return operator.Effect{Step: step, State: st} }
	for _, c := range []struct {
		task    *agentledger.Task
		journal []operator.Effect
		want    string
	}{
		{steps, nil, "step 1 of 3 (http_request)"},
		{steps, []operator.Effect{done("tool/0", ledger.StateCompleted)}, "step 2 of 3 (notify)"},
		{steps, []operator.Effect{done("tool/0", ledger.StateCompleted), done("tool/1", ledger.StateCompleted), done("tool/2", ledger.StatePending)},
			"step 3 of 3 (unsafe_http): its call is pending"},
		{steps, []operator.Effect{done("tool/0", ledger.StateCompleted), done("tool/1", ledger.StateCompleted), done("tool/2", ledger.StateCompleted)},
			"all 3 steps recorded: finishing"},
		{agent, []operator.Effect{done("llm/0", ledger.StateCompleted), done("tool/0/c1", ledger.StateCompleted)},
			"model call 2, or the tool calls model call 1 asked for"},
		{agent, nil, "the first model call"},
		{&agentledger.Task{State: agentledger.StateQueued, Kind: "steps", Payload: steps.Payload}, nil, ""},
		{&agentledger.Task{State: agentledger.StateRunning, Kind: "echo"}, nil, ""},
	} {
		if got := Progress(c.task, c.journal); got != c.want {
			t.Errorf("%s %v: %q, want %q", c.task.Kind, c.journal, got, c.want)
		}
	}
}
