package notify_test

import (
	"encoding/json"
	"testing"

	"github.com/agentledger/agentledger/ledger"
	"github.com/agentledger/agentledger/notify"
	"github.com/agentledger/agentledger/notify/outbox"
)

// Delivering a rule's update-only event again edits the message its rule
// posted, and with none sends nothing; any other event posts then.
func TestPlanOfAnUpdateOnlyEvent(t *testing.T) {
	t.Parallel()
	updateOnly := outbox.Event{Event: "succeeded", Rule: "early", Payload: json.RawMessage(`{"state":"succeeded","update_only":true}`)}
	followed := outbox.Event{Event: "retrying", Rule: "early", Payload: json.RawMessage(`{"state":"retrying"}`)}
	posted := []ledger.Entry{{Operation: notify.OpPost, StepPath: "notify/early", State: ledger.StateCompleted,
		Result: ledger.Result{ExternalRef: "C1/1700000000.000100"}}}
	for _, c := range []struct {
		name    string
		e       outbox.Event
		journal []ledger.Entry
		want    string
	}{
		{"update only, nothing posted", updateOnly, nil, "nothing: its rule's message was never posted, and this state posts none (redeliver the post with it)"},
		{"update only, posted", updateOnly, posted, "update C1/1700000000.000100"},
		{"followed, nothing posted", followed, nil, "post"},
	} {
		if got := notify.PlanOf(c.e, c.journal).String(); got != c.want {
			t.Errorf("%s: plan %q, want %q", c.name, got, c.want)
		}
	}
}
