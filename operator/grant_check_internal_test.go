package operator

import (
	"testing"

	"github.com/agentledger/agentledger/ledger"
)

// An effect's operation names the grant it needs; a compensation recorded
// unbuilt needs its tool's, not a tool named after the record.
func TestToolNeed(t *testing.T) {
	for op, want := range map[string]string{
		"http_request":                      "http_request",
		"task.create":                       "create_task",
		"wait.signal":                       "wait_for_signal",
		"wait.timer":                        "wait_timer",
		"wait.children":                     "wait_for_children",
		"mcp.crm.refund":                    "crm/refund",
		ledger.UnbuiltPrefix + "refund":     "refund",
		ledger.UnbuiltPrefix + "crm/refund": "crm/refund",
	} {
		if need, ok := toolNeed(op); !ok || need.Tool != want {
			t.Errorf("toolNeed(%q) = %+v, %v; want tool %s", op, need, ok, want)
		}
	}
	for _, op := range []string{"notify.post", ledger.UnbuiltPrefix + "compensate"} {
		if need, ok := toolNeed(op); ok {
			t.Errorf("toolNeed(%q) = %+v, want none", op, need)
		}
	}
}
