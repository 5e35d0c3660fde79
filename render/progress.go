package render

import (
	"fmt"
	"strings"

	"github.com/agentledger/agentledger"
	"github.com/agentledger/agentledger/agent"
	"github.com/agentledger/agentledger/ledger"
	"github.com/agentledger/agentledger/operator"
	"github.com/agentledger/agentledger/steps"
)

// Progress says where a running task of a built-in kind is, read from its
// payload and its current generation's journal: "step 3 of 5 (http_request):
// its call is pending" for steps, "model call 4, or the tool calls model
// call 3 asked for" for an agent.
// A running task's next effect is recorded only once performed (a keyed
// call's row is written with its outcome), so a step without a row is the
// one under way or about to be. "" for other kinds and other states.
func Progress(t *agentledger.Task, journal []operator.Effect) string {
	if t.State != agentledger.StateRunning {
		return ""
	}
	switch t.Kind {
	case steps.Kind:
		places := steps.Places(t.Payload)
		if len(places) == 0 {
			return ""
		}
		recorded := map[string]ledger.State{}
		for _, e := range journal {
			recorded[e.Step] = e.State
		}
		for i, p := range places {
			st, ok := recorded[p.Path]
			switch {
			case !ok:
				return fmt.Sprintf("step %d of %d (%s)", i+1, len(places), p.Tool)
			case st == ledger.StatePending:
				return fmt.Sprintf("step %d of %d (%s): its call is pending", i+1, len(places), p.Tool)
			case st != ledger.StateCompleted:
				return fmt.Sprintf("step %d of %d (%s): %s", i+1, len(places), p.Tool, st)
			}
		}
		return fmt.Sprintf("all %d steps recorded: finishing", len(places))
	case agent.Kind:
		calls := 0
		for _, e := range journal {
			if strings.HasPrefix(e.Step, "llm/") {
				calls++
			}
		}
		if calls == 0 {
			return "the first model call"
		}
		return fmt.Sprintf("model call %d, or the tool calls model call %d asked for", calls+1, calls)
	}
	return ""
}
