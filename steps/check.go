package steps

import (
	"encoding/json"
	"fmt"

	"github.com/agentledger/agentledger"
	"github.com/agentledger/agentledger/tools"
)

// Kind is the task kind this package runs.
const Kind = "steps"

// StepCheck checks one step of a payload before it is queued, and its
// compensation if it declares one: its tool, and its arguments as the tool
// will be called with them (absent: {}).
// args is nil when they refer to earlier results: their value is known
// only when the step runs.
type StepCheck func(tool string, args json.RawMessage) error

// Check checks a steps payload before it is queued, as Work does before
// its first step and with the same messages: its structure (arguments
// must be objects), and then each step with check, if not nil. The error
// is an *agentledger.InvalidError naming field "payload"; one of check's
// names its step ("step 2: …").
func Check(payload json.RawMessage, check StepCheck) error { return CheckWith(payload, check, nil) }

// PureCheck says whether tool is pure whatever its arguments: it changes
// nothing.
type PureCheck func(tool string) bool

// CheckWith is Check that also refuses, when pure says a step's tool is
// pure, a compensation declared for that step: there is nothing to undo;
// and a compensation whose own tool is pure: it would undo nothing. (A
// GET of the HTTP tools is always pure.)
func CheckWith(payload json.RawMessage, check StepCheck, pure PureCheck) error {
	if len(payload) == 0 {
		payload = json.RawMessage(`{}`) // what the task is queued with
	}
	p, err := parse(payload)
	if err == nil && check != nil {
		err = p.each(func(i int, s Step) error {
			if s.Compensate != nil && tools.PureHTTP(s.Tool, known(s.Args)) {
				return fmt.Errorf("declares a compensation, but a GET changes nothing: there is nothing to undo")
			}
			if s.Compensate != nil && pure != nil && pure(s.Tool) {
				return fmt.Errorf("declares a compensation, but %s is a pure tool (it changes nothing): there is nothing to undo", s.Tool)
			}
			if err := checkCall(check, s.Tool, known(s.Args)); err != nil {
				return err
			}
			if c := s.Compensate; c != nil {
				if tools.PureHTTP(c.Tool, known(c.Args)) || (pure != nil && pure(c.Tool)) {
					return fmt.Errorf("compensation: %s changes nothing, so it undoes nothing: compensate with a call that does", c.Tool)
				}
				if err := checkCall(check, c.Tool, known(c.Args)); err != nil {
					return fmt.Errorf("compensation: %w", err)
				}
			}
			return nil
		})
	}
	if err != nil {
		return agentledger.Invalid("payload", "%v", err)
	}
	return nil
}

// checkCall checks one call with check, then a call of the HTTP tools as
// they will check it when it runs (a URL with credentials can only fail).
func checkCall(check StepCheck, tool string, args json.RawMessage) error {
	if err := check(tool, args); err != nil {
		return err
	}
	return tools.CheckHTTP(tool, args)
}

// known is args when they refer to no result, else nil: their value is
// known only when the call runs.
func known(args json.RawMessage) json.RawMessage {
	if references(args) {
		return nil
	}
	return args
}

// each calls check with every step and its index in order and returns its
// first error, naming the step.
func (p *Payload) each(check func(i int, s Step) error) error {
	for i, s := range p.Steps {
		if err := check(i, s); err != nil {
			return fmt.Errorf("step %d: %w", i, err)
		}
	}
	return nil
}
