package render

import (
	"strconv"
	"strings"

	"github.com/agentledger/agentledger/operator"
	"github.com/agentledger/agentledger/saga"
)

// Summary is a journal row's RESULT: its Outcome, and for a compensation
// first which effect it undoes (its step is cut in a narrow column).
func Summary(e operator.Effect, resultMax int) string {
	if undone, ok := saga.Undoes(e.Step); ok {
		return "undoes " + undone + ": " + Outcome(e, resultMax)
	}
	return Outcome(e, resultMax)
}

// Outcome is one line about an effect's outcome: its error, or its
// status, ref, stored result and note, or "-". A resultMax above zero cuts
// the result to that many characters; the console, which cuts the whole
// cell to its width, passes 0.
func Outcome(e operator.Effect, resultMax int) string {
	if e.Error != "" {
		return OneLine(e.Error)
	}
	var parts []string
	if e.Status != 0 {
		parts = append(parts, strconv.Itoa(e.Status))
	}
	if e.ExternalRef != "" {
		parts = append(parts, "ref "+e.ExternalRef)
	}
	if len(e.Result) > 0 {
		result := CompactJSON(e.Result)
		if resultMax > 0 {
			result = Truncate(result, resultMax)
		}
		parts = append(parts, result)
	}
	if e.Note != "" {
		parts = append(parts, "note: "+e.Note)
	}
	if len(parts) == 0 {
		return "-"
	}
	return strings.Join(parts, " ")
}
