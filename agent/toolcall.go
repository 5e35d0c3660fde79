package agent

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/agentledger/agentledger"
	"github.com/agentledger/agentledger/canonjson"
	"github.com/agentledger/agentledger/grants"
	"github.com/agentledger/agentledger/ledger"
	"github.com/agentledger/agentledger/registry"
	"github.com/agentledger/agentledger/tools"
)

// runTool performs the model's tool call c of step n and returns the
// content of the tool message that answers it; reason is the model's text
// beside the call, shown to whoever decides a gated call.
//
// What the model did wrong — a tool it may not use, arguments that are not
// JSON, a call the tool rejects or a permanent failure of the tool — becomes
// an error text in that content, for the model to react to. What the
// attempt cannot decide — a transient failure, a lost lease, an effect
// needing an operator — is returned, and the task stops.
//
// The ledger returns results in their stored (jsonb) form on the first run
// as on every replay, so the next request is built from the same bytes.
func (a *Agent) runTool(ctx context.Context, task *agentledger.Task, pl *plan, n int, c toolCall, reason string) (string, error) {
	t, ok := pl.allowed[c.Name]
	if !ok {
		a.refused(task, n, c, "a tool this task may not use")
		return failure(fmt.Sprintf("tool %q is not available to this task (it may use: %s)", c.Name, allowedNames(pl)), ledger.Result{}), nil
	}
	args := c.Arguments
	if strings.TrimSpace(args) == "" {
		args = "{}"
	}
	if !json.Valid([]byte(args)) {
		a.refused(task, n, c, "arguments that are not JSON")
		return failure(fmt.Sprintf("the arguments of %s are not valid JSON", c.Name), ledger.Result{}), nil
	}
	// A key given twice would be read as its last value by the tool and
	// its first by a reader of the journal: refused, as the API refuses it.
	if _, err := canonjson.Marshal([]byte(args)); err != nil {
		a.refused(task, n, c, strings.TrimPrefix(err.Error(), "canonjson: "))
		return failure(fmt.Sprintf("the arguments of %s are not valid: %s", c.Name, strings.TrimPrefix(err.Error(), "canonjson: ")),
			ledger.Result{}), nil
	}
	// The path reads the grant in force now: a revoke since the last
	// effect holds.
	call := tools.Call{Task: task, StepPath: fmt.Sprintf("tool/%d/%s", n, c.ID), Args: json.RawMessage(args),
		Compensate: pl.undo[c.Name], Approval: pl.approve[c.Name], Reason: reason}
	res, err := a.path.Perform(ctx, &tools.Outgoing{Call: call, Tool: t})
	var failed *ledger.FailedError
	var perm *agentledger.PermanentError
	var denied *grants.DeniedError
	switch {
	case errors.As(err, &denied): // the operator's decision, not the model's mistake: the task fails
		return "", err
	case err == nil && res.Status == 0 && (len(res.Body) == 0 || secondWording(task)):
		// A result with no HTTP status: an MCP tool's or a Go tool's, or
		// an operator's resolve --done of a call whose outcome was
		// unknown (nothing recorded). {"status":0} would read as a
		// failure, and a model could make the call again.
		result := compact(res.Body)
		if result == nil {
			result = json.RawMessage("null")
		}
		return encode(struct {
			Performed bool            `json:"performed"`
			Result    json.RawMessage `json:"result"`
		}{true, result}), nil
	case err == nil:
		return encode(struct {
			Status int             `json:"status"`
			Body   json.RawMessage `json:"body"`
		}{res.Status, compact(res.Body)}), nil
	case errors.As(err, &failed):
		return failure(bare(task, failed.Message, t.Name(), call.StepPath), failed.Result), nil
	case errors.Is(err, agentledger.ErrKeyReuse):
		return "", agentledger.Permanent(fmt.Errorf("%s (%s): the call differs from the one recorded for this step; "+
			"re-run the task as a new intent: %w", call.StepPath, c.Name, err))
	case errors.As(err, &perm), errors.Is(err, agentledger.ErrInvalid):
		a.refused(task, n, c, err.Error())
		return failure(bare(task, err.Error(), t.Name(), call.StepPath), ledger.Result{}), nil
	}
	return "", fmt.Errorf("%s (%s): %w", call.StepPath, c.Name, err)
}

// refused logs a tool call of the model's that is not performed, and why:
// the model reads the reason in its conversation, an operator in the log.
func (a *Agent) refused(task *agentledger.Task, n int, c toolCall, why string) {
	a.cfg.Logger.Info("agent: a tool call the model asked for was refused; the model is told why",
		"task", task.ID, "step", n, "tool", c.Name, "reason", why)
}

// secondWording reports whether task was submitted to the agent loop of
// release 2 (registry.CapAgent2), which answers a result with no HTTP
// status as performed. A task submitted before keeps the first wording,
// {"status":0,"body":…}: its recorded completions were asked with it, and
// a conversation worded otherwise would differ from its record.
func secondWording(task *agentledger.Task) bool {
	return slices.Contains(task.Needs, registry.CapAgent2)
}

// bare is a failed call's message as the model of a task of the second
// wording reads it: without the prefixes that name the call in the
// operator's terms ("shop/charge at tool/0/call_13: ", "shop/charge: ":
// the tool's registered name, not the function the model called, and the
// journal's step), since the message answers that very call. A task of
// the first wording reads msg whole, as its recorded completions did.
func bare(task *agentledger.Task, msg, name, step string) string {
	if !secondWording(task) {
		return msg
	}
	msg = strings.TrimPrefix(msg, name+" at "+step+": ")
	return strings.TrimPrefix(msg, name+": ")
}

// failure is the content of a tool message reporting a failed call.
func failure(msg string, r ledger.Result) string {
	return encode(struct {
		Error  string          `json:"error"`
		Status int             `json:"status,omitempty"`
		Body   json.RawMessage `json:"body,omitempty"`
	}{msg, r.Status, compact(r.Body)})
}

func allowedNames(pl *plan) string {
	if len(pl.tools) == 0 {
		return "no tools"
	}
	names := make([]string, 0, len(pl.tools))
	for _, t := range pl.tools {
		names = append(names, functionName(t.Name()))
	}
	return strings.Join(names, ", ")
}

// compact removes insignificant whitespace from a JSON body. A body that
// is not JSON (the ledger stores none) is kept as a JSON string.
func compact(body json.RawMessage) json.RawMessage {
	if len(body) == 0 {
		return nil
	}
	var b bytes.Buffer
	if err := json.Compact(&b, body); err != nil {
		s, _ := json.Marshal(string(body))
		return s
	}
	return b.Bytes()
}

// encode is v as JSON without HTML escaping, for the model to read.
func encode(v any) string {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		// Only strings, ints and compacted JSON bodies are encoded here.
		panic("agent: encoding a tool message: " + err.Error())
	}
	return strings.TrimSuffix(b.String(), "\n")
}
