package render

import (
	"encoding/json"
	"strings"

	"github.com/agentledger/agentledger"
	"github.com/agentledger/agentledger/ledger"
	"github.com/agentledger/agentledger/operator"
)

// Compensation is why a task is undoing, or undid, its effects. Once the
// compensation succeeded the task's last error is cleared, so the cause is
// read from the attempt that ended the forward path and from the journal.
type Compensation struct {
	// Why is the cause in words: "its forward path failed", "it was
	// cancelled", "it was asked to undo its effects by operator:alice
	// (agentctl compensate or the console)", "… by tenant:acme, token
	// ci-deploy (7) through the API", or, when who asked is not recorded,
	// "it was asked to undo its effects (agentctl compensate, the console
	// or the API)".
	Why string
	// RequestedBy is who asked for the compensation ("operator:alice",
	// "tenant:acme, token ci-deploy (7)"); "" for a failure or a cancel,
	// and when who asked is not recorded.
	RequestedBy string
	// Step is the forward step whose effect failed, as "tool/2
	// (http_request)"; "" when none failed (a cancel, an operator).
	Step string
	// Error is the error of the attempt that ended the forward path.
	Error string
}

// CompensationOf explains t's compensation from its attempts, the journal
// of its current generation and who asked for it (by, as
// operator.Detail.CompensationRequestedBy has it; "" when not recorded);
// ok is false on the forward path.
func CompensationOf(t *agentledger.Task, atts []agentledger.Attempt, journal []operator.Effect, by string) (c Compensation, ok bool) {
	switch t.Compensation {
	case "":
		return Compensation{}, false
	case "failed":
		c.Why = "its forward path failed"
	case "cancelled":
		c.Why = "it was cancelled"
	case "operator":
		c.Why, c.RequestedBy = askedBy(by), by
	default:
		c.Why = t.Compensation
	}
	// The attempt that entered the phase closed with outcome compensating;
	// the last one of the generation is this phase's.
	c.Error = agentledger.CompensationCause(t.Generation, atts)
	if t.Compensation != "failed" {
		// A cancel or an operator's undo did not happen at a step: a
		// failed effect in the journal (an agent's tool call the model
		// was told of and went on from) is not why.
		return c, true
	}
	for _, e := range journal {
		if e.State == ledger.StateFailed && e.Undoes == "" && !strings.HasPrefix(e.Step, ledger.CompensationPrefix) {
			c.Step = e.Step + " (" + e.Operation + ")"
		}
	}
	return c, true
}

// askedBy is why a task undoes its effects when someone asked, by (""
// when who asked is not recorded: before migration 00051, or an older
// release's request), with the way in the requester's kind names.
func askedBy(by string) string {
	const asked = "it was asked to undo its effects"
	switch {
	case by == "":
		return asked + " (agentctl compensate, the console or the API)"
	case strings.HasPrefix(by, "operator:"):
		return asked + " by " + by + " (agentctl compensate or the console)"
	case strings.HasPrefix(by, "tenant:"):
		return asked + " by " + by + " through the API"
	}
	return asked + " by " + by
}

// String is the cause on one line: why, and at which step.
func (c Compensation) String() string {
	if c.Step == "" {
		return c.Why
	}
	return c.Why + " at " + c.Step
}

// CallText is a tool call in words: an HTTP one as its method, URL and
// body; any other as its arguments: what an operator checks before an
// undo is sent.
func CallText(tool string, args json.RawMessage) string {
	var http struct {
		Method string          `json:"method"`
		URL    string          `json:"url"`
		Body   json.RawMessage `json:"body"`
	}
	if json.Unmarshal(args, &http) != nil || http.Method == "" || http.URL == "" {
		return tool + " " + CompactJSON(args)
	}
	text := tool + " " + http.Method + " " + http.URL
	if len(http.Body) > 0 {
		text += " " + CompactJSON(http.Body)
	}
	return text
}
