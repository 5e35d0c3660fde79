package render

import (
	"testing"
	"time"

	"github.com/agentledger/agentledger"
	"github.com/agentledger/agentledger/ledger"
	"github.com/agentledger/agentledger/operator"
)

func TestCompensationOf(t *testing.T) {
	ended := time.Now()
	task := &agentledger.Task{State: agentledger.StateCompensated, Generation: 2, Compensation: "failed"}
	atts := []agentledger.Attempt{
		{Generation: 1, Outcome: "compensating", Error: "an earlier generation's", EndedAt: &ended},
		{Generation: 2, Outcome: "compensating", Error: "step 2 (http_request) failed: 422", EndedAt: &ended},
		{Generation: 2, Outcome: "compensated", EndedAt: &ended},
	}
	journal := []operator.Effect{
		{Step: "tool/0", Operation: "http_request", State: ledger.StateCompleted},
		{Step: "tool/2", Operation: "http_request", State: ledger.StateFailed},
		{Step: "compensate/tool/0", Operation: "http_request", State: ledger.StateFailed, Undoes: "tool/0"},
	}
	c, ok := CompensationOf(task, atts, journal, "")
	if !ok || c.String() != "its forward path failed at tool/2 (http_request)" || c.Error != "step 2 (http_request) failed: 422" {
		t.Errorf("CompensationOf = %+v, %v", c, ok)
	}
	// An operator's undo of a task that succeeded, though one of its
	// calls failed (an agent told of a 422 went on), and a cancel, were
	// not at that call.
	done := []agentledger.Attempt{{Generation: 2, Outcome: "succeeded", EndedAt: &ended}, {Generation: 2, Outcome: "compensated", EndedAt: &ended}}
	agentJournal := []operator.Effect{
		{Step: "llm/0", Operation: "llm.chat", State: ledger.StateCompleted},
		{Step: "tool/0/call_1", Operation: "http_request", State: ledger.StateCompleted},
		{Step: "tool/1/call_2", Operation: "http_request", State: ledger.StateFailed},
		{Step: "llm/2", Operation: "llm.chat", State: ledger.StateCompleted},
		{Step: "compensate/tool/0/call_1", Operation: "http_request", State: ledger.StateCompleted, Undoes: "tool/0/call_1"},
	}
	for cause, want := range map[string]string{
		"operator":  "it was asked to undo its effects (agentctl compensate, the console or the API)",
		"cancelled": "it was cancelled",
	} {
		task.Compensation = cause
		if c, ok := CompensationOf(task, done, agentJournal, ""); !ok || c.String() != want || c.Step != "" {
			t.Errorf("%s: CompensationOf = %+v (%q), %v; want %q", cause, c, c.String(), ok, want)
		}
	}
	// Who asked, where it is recorded: an operator at agentctl or the
	// console, a tenant's token through the API. A failure or a cancel
	// was asked by no one, whatever the column holds.
	task.Compensation = "operator"
	for by, want := range map[string]string{
		"operator:alice":                   "it was asked to undo its effects by operator:alice (agentctl compensate or the console)",
		"tenant:acme, token ci-deploy (7)": "it was asked to undo its effects by tenant:acme, token ci-deploy (7) through the API",
		"someone":                          "it was asked to undo its effects by someone",
	} {
		if c, ok := CompensationOf(task, done, agentJournal, by); !ok || c.String() != want || c.RequestedBy != by {
			t.Errorf("asked by %q: CompensationOf = %+v (%q), %v; want %q", by, c, c.String(), ok, want)
		}
	}
	task.Compensation = "cancelled"
	if c, _ := CompensationOf(task, done, agentJournal, "operator:alice"); c.String() != "it was cancelled" || c.RequestedBy != "" {
		t.Errorf("a cancel's compensation: %+v", c)
	}
	task.Compensation = ""
	if _, ok := CompensationOf(task, atts, journal, ""); ok {
		t.Error("a task on its forward path has a compensation")
	}
}
