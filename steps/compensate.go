package steps

import (
	"encoding/json"
	"fmt"
	"strconv"
	"strings"

	"github.com/agentledger/agentledger/tools"
)

// stepPath is step i's place in the journal.
func stepPath(i int) string { return "tool/" + strconv.Itoa(i) }

// IsStepPath says whether path is a steps task's step (tool/<i>), as
// stepPath makes it, rather than an agent's tool call (tool/<n>/<call id>)
// or a Go kind's (call/…).
func IsStepPath(path string) bool {
	i, ok := strings.CutPrefix(path, "tool/")
	if !ok || i == "" {
		return false
	}
	_, err := strconv.ParseUint(i, 10, 32)
	return err == nil
}

// checkCompensable refuses, before step 0 runs, a compensation declared for
// a step whose effect is pure (a GET): it changes nothing. A step whose
// arguments refer to earlier results is checked when it runs.
func (p *Payload) checkCompensable(ts []tools.Tool) error {
	return p.each(func(i int, s Step) error {
		if s.Compensate == nil || references(s.Args) {
			return nil
		}
		call := tools.Call{StepPath: stepPath(i), Args: s.Args, Compensate: json.RawMessage(`{}`)}
		eff, err := ts[i].Effect(call)
		if err != nil {
			return err
		}
		return tools.CheckCompensable(ts[i], call, eff)
	})
}

// compensation is step s's compensation as its effect keeps it, with its
// references to earlier results resolved (${self…} is resolved when it
// runs); nil if it declares none.
func compensation(s Step, results []any) (json.RawMessage, error) {
	if s.Compensate == nil {
		return nil, nil
	}
	c := *s.Compensate
	args, err := resolve(c.Args, results)
	if err != nil {
		return nil, fmt.Errorf("compensation: %w", err)
	}
	c.Args = args
	return c.Encode()
}

// Place is one step of a payload: its journal place and its tool.
type Place struct{ Path, Tool string }

// Places lists a payload's steps in order, each with the journal place its
// call is recorded at (tool/0, tool/1, …); nil when the payload does not
// parse.
func Places(payload json.RawMessage) []Place {
	p, err := parse(payload)
	if err != nil {
		return nil
	}
	out := make([]Place, len(p.Steps))
	for i, s := range p.Steps {
		out[i] = Place{Path: stepPath(i), Tool: s.Tool}
	}
	return out
}
