package steps

import (
	"encoding/json"
	"fmt"

	"github.com/agentledger/agentledger"
)

// Kind is the task kind this package runs.
const Kind = "steps"

// Check checks a steps payload before it is queued, as Work does before
// its first step and with the same messages: its structure, and each
// step's tool with tool (nil: tools are not checked), which returns the
// error of a tool it does not know. The error is an
// *agentledger.InvalidError naming field "payload".
func Check(payload json.RawMessage, tool func(name string) error) error {
	if len(payload) == 0 {
		payload = json.RawMessage(`{}`) // what the task is queued with
	}
	p, err := parse(payload)
	if err == nil && tool != nil {
		err = p.eachTool(func(_ int, name string) error { return tool(name) })
	}
	if err != nil {
		return agentledger.Invalid("payload", "%v", err)
	}
	return nil
}

// eachTool calls check with every step's index and tool in order and
// returns its first error, naming the step.
func (p *Payload) eachTool(check func(i int, name string) error) error {
	for i, s := range p.Steps {
		if err := check(i, s.Tool); err != nil {
			return fmt.Errorf("step %d: %w", i, err)
		}
	}
	return nil
}
