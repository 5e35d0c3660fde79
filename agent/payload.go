package agent

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"slices"

	"github.com/agentledger/agentledger"
	"github.com/agentledger/agentledger/saga"
	"github.com/agentledger/agentledger/tools"
)

// Payload is the payload of an agent task.
type Payload struct {
	// Prompt is the user's request. Required.
	Prompt string `json:"prompt"`
	// System is an optional system message, sent before the prompt.
	System string `json:"system,omitempty"`
	// Tools names the tools the model may call, in the order they are
	// offered. Empty: none (tools are never offered unless listed).
	Tools []string `json:"tools,omitempty"`
	// MaxSteps caps the completions of this task: 1 up to the worker's
	// Config.MaxSteps, which is also the default.
	MaxSteps *int `json:"max_steps,omitempty"`
	// Model overrides Config.Model for this task.
	Model string `json:"model,omitempty"`
	// Compensate declares, per tool of Tools, the call that undoes a call
	// of it ({"charge": {"tool": "refund", "args": {"charge":
	// "${self.body.id}"}}}): if the task ends dead or is cancelled, each
	// completed call of that tool is undone, newest first (package saga).
	// The submitter declares them; the model neither sees nor invents them.
	Compensate map[string]saga.Compensation `json:"compensate,omitempty"`
	// Approve gates tools of Tools: before a call of one is performed, a
	// person decides (package approvals) — {"refund": true} or {"refund":
	// {"approvers": […], "timeout": "2h", "on_timeout": "deny"}}. The model
	// proposes, a person disposes: a denied call is answered to the model
	// with the decision, and the conversation goes on.
	Approve map[string]json.RawMessage `json:"approve,omitempty"`
}

// RequestedSteps is the max_steps an agent payload asks for; false when it
// names none (the worker's limit applies) or does not decode.
func RequestedSteps(payload json.RawMessage) (int, bool) {
	var p struct {
		MaxSteps *int `json:"max_steps"`
	}
	if json.Unmarshal(payload, &p) != nil || p.MaxSteps == nil {
		return 0, false
	}
	return *p.MaxSteps, true
}

// maxModelName bounds a payload's model name.
const maxModelName = 200

// plan is a validated payload: what the loop runs.
type plan struct {
	system, prompt, model string
	tools                 []tools.Tool
	allowed               map[string]tools.Tool
	undo                  map[string]json.RawMessage // by function name: the encoded compensation
	approve               map[string]*tools.Approval // by function name: the payload's gates
	maxSteps              int
}

// CheckPayload checks an agent task's payload as far as it can be before
// the task runs, with what its run would refuse it for: a payload that
// does not decode, an unknown field, no prompt, a model name too long, a
// max_steps below 1 or above maxSteps (the workers' limit; 0: not known),
// a tool listed twice, a gate or a compensation of a tool not listed, a
// malformed gate. Which tools exist, and the model, are the workers' to
// say. Its error says what is wrong in the payload's words; the door
// (package admit) refuses such a submission (422).
func CheckPayload(raw json.RawMessage, maxSteps int) error {
	_, _, err := checkPayload(raw, maxSteps)
	return err
}

// payloadError is a payload no attempt can run: permanent.
func payloadError(format string, args ...any) error {
	return agentledger.Permanent(fmt.Errorf("agent payload: "+format, args...))
}

// checkPayload decodes raw strictly and checks what needs no worker's
// registry (see CheckPayload); it returns the payload and its gates, by
// function name.
func checkPayload(raw json.RawMessage, maxSteps int) (Payload, map[string]*tools.Approval, error) {
	var p Payload
	if len(bytes.TrimSpace(raw)) == 0 {
		return p, nil, errors.New(`is empty; want {"prompt": "...", "system": "...", "tools": [...], "max_steps": n, "model": "..."}`)
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&p); err != nil {
		return p, nil, errors.New(describeDecodeError(err))
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return p, nil, errors.New("trailing data after the JSON object")
	}
	switch {
	case p.Prompt == "":
		return p, nil, errors.New("prompt is required")
	case len(p.Model) > maxModelName:
		return p, nil, fmt.Errorf("model name is longer than %d characters", maxModelName)
	}
	if p.MaxSteps != nil {
		switch n := *p.MaxSteps; {
		case n < 1:
			return p, nil, fmt.Errorf("max_steps must be at least 1, got %d", n)
		case maxSteps > 0 && n > maxSteps:
			return p, nil, fmt.Errorf("max_steps %d is above this worker's limit of %d", n, maxSteps)
		}
	}
	listed := make(map[string]bool, len(p.Tools))
	for i, name := range p.Tools {
		if listed[functionName(name)] {
			return p, nil, fmt.Errorf("tools[%d]: %q is listed twice", i, name)
		}
		listed[functionName(name)] = true
	}
	for _, name := range slices.Sorted(maps.Keys(p.Compensate)) {
		if !listed[functionName(name)] {
			return p, nil, fmt.Errorf("compensate.%s: %q is not one of the task's tools", name, name)
		}
	}
	var gates map[string]*tools.Approval
	for _, name := range slices.Sorted(maps.Keys(p.Approve)) {
		if !listed[functionName(name)] {
			return p, nil, fmt.Errorf("approve: %q is not among tools", name)
		}
		gate, err := tools.ParseApproval(p.Approve[name])
		if err != nil {
			return p, nil, fmt.Errorf("approve.%s: %v", name, err)
		}
		if gate != nil {
			if gates == nil {
				gates = map[string]*tools.Approval{}
			}
			gates[functionName(name)] = gate
		}
	}
	return p, gates, nil
}

// parsePayload validates raw against the configuration and the registry.
// Every error is agentledger.Permanent (retrying cannot fix a payload) but
// a tool that is not available yet (its MCP server is connecting).
func (a *Agent) parsePayload(raw json.RawMessage) (*plan, error) {
	bad := payloadError
	p, gates, err := checkPayload(raw, a.cfg.MaxSteps)
	if err != nil {
		return nil, bad("%v", err)
	}
	pl := &plan{system: p.System, prompt: p.Prompt, model: p.Model, maxSteps: a.cfg.MaxSteps, approve: gates}
	if pl.model == "" {
		pl.model = a.cfg.Model
	}
	if pl.model == "" {
		return nil, bad(`names no model and the worker has no default: set AGENTLEDGER_LLM_MODEL or give "model"`)
	}
	if a.cfg.AzureAPIVersion != "" {
		if err := checkDeployment(pl.model); err != nil {
			return nil, bad("%v", err)
		}
	}
	if p.MaxSteps != nil {
		pl.maxSteps = *p.MaxSteps
	}
	pl.allowed = make(map[string]tools.Tool, len(p.Tools))
	for i, name := range p.Tools {
		t, err := a.tools.Get(name)
		var perm *agentledger.PermanentError
		switch {
		case err != nil && !errors.As(err, &perm): // a tool not available yet: try again later
			return nil, fmt.Errorf("agent payload: tools[%d]: %w", i, err)
		case err != nil:
			return nil, bad("tools[%d]: %v", i, err)
		}
		pl.allowed[functionName(name)] = t
		pl.tools = append(pl.tools, t)
	}
	if err := a.compensations(pl, p); err != nil {
		return nil, err
	}
	return pl, nil
}

// describeDecodeError names the field a decode error is about.
func describeDecodeError(err error) string {
	var typeErr *json.UnmarshalTypeError
	var syntaxErr *json.SyntaxError
	switch {
	case errors.As(err, &typeErr) && typeErr.Field != "":
		return fmt.Sprintf("%s must be %s; found a JSON %s", typeErr.Field, want(typeErr.Field), typeErr.Value)
	case errors.As(err, &typeErr):
		return fmt.Sprintf("must be a JSON object; found a JSON %s", typeErr.Value)
	case errors.As(err, &syntaxErr), errors.Is(err, io.ErrUnexpectedEOF):
		return fmt.Sprintf("is not valid JSON: %v", err)
	}
	return err.Error() // e.g. json: unknown field "x"
}

func want(field string) string {
	switch field {
	case "tools":
		return "a list of tool names (strings)"
	case "max_steps":
		return "an integer"
	}
	return "a string"
}

// compensations checks and encodes the compensations of the task's tools:
// the payload's, each for a tool the task may use, and the worker's
// (Config.Compensations) for its other tools; each by a tool this worker
// has.
func (a *Agent) compensations(pl *plan, p Payload) error {
	names := slices.Collect(maps.Keys(p.Compensate)) // each of a listed tool (checkPayload)
	all := maps.Clone(p.Compensate)
	for _, t := range pl.tools {
		if c, ok := a.cfg.Compensations[t.Name()]; ok && all[t.Name()].Tool == "" {
			if all == nil {
				all = map[string]saga.Compensation{}
			}
			all[t.Name()] = c
			names = append(names, t.Name())
		}
	}
	slices.Sort(names)
	for _, name := range names {
		c := all[name]
		where := "agent payload: compensate." + name
		if _, ok := p.Compensate[name]; !ok {
			where = "the worker's compensation of " + name
		}
		if _, err := a.tools.Get(c.Tool); err != nil {
			return fmt.Errorf("%s: %w", where, err)
		}
		enc, err := c.Encode()
		if err != nil {
			return agentledger.Permanent(fmt.Errorf("%s: %v", where, err))
		}
		if pl.undo == nil {
			pl.undo = map[string]json.RawMessage{}
		}
		pl.undo[functionName(name)] = enc
	}
	return nil
}
