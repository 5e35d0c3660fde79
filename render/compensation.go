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
	// cancelled", "it was asked to undo its effects (agentctl compensate, the
	// console or the API)".
	Why string
	// Step is the forward step whose effect failed, as "tool/2
	// (http_request)"; "" when none failed (a cancel, an operator).
	Step string
	// Error is the error of the attempt that ended the forward path.
	Error string
}

// CompensationOf explains t's compensation from its attempts and the
// journal of its current generation; ok is false on the forward path.
func CompensationOf(t *agentledger.Task, atts []agentledger.Attempt, journal []operator.Effect) (c Compensation, ok bool) {
	switch t.Compensation {
	case "":
		return Compensation{}, false
	case "failed":
		c.Why = "its forward path failed"
	case "cancelled":
		c.Why = "it was cancelled"
	case "operator":
		c.Why = "it was asked to undo its effects (agentctl compensate, the console or the API)"
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
