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
	c, ok := CompensationOf(task, atts, journal)
	if !ok || c.String() != "its forward path failed at tool/2 (http_request)" || c.Error != "step 2 (http_request) failed: 422" {
		t.Errorf("CompensationOf = %+v, %v", c, ok)
	}
	task.Compensation = ""
	if _, ok := CompensationOf(task, atts, journal); ok {
		t.Error("a task on its forward path has a compensation")
	}
}
