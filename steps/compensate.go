package steps

import (
	"encoding/json"
	"fmt"
	"strconv"

	"github.com/agentledger/agentledger/tools"
)

// stepPath is step i's place in the journal.
func stepPath(i int) string { return "tool/" + strconv.Itoa(i) }

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
