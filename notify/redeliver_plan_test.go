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

// A rule's event moves to its rule's channel now only while no post of
// its message may stand in the old one.
func TestMovesOnlyWhatNothingWasPostedOf(t *testing.T) {
	t.Parallel()
	e := outbox.Event{Event: "succeeded", Rule: "ops", Channel: "opz"}
	post := func(step string, st ledger.State) ledger.Entry {
		return ledger.Entry{Operation: notify.OpPost, StepPath: step, State: st, Performed: 1}
	}
	for _, c := range []struct {
		name    string
		e       outbox.Event
		journal []ledger.Entry
		channel string
		want    bool
	}{
		{"never tried", e, nil, "ops", true},
		{"refused", e, []ledger.Entry{post("notify/ops", ledger.StateFailed)}, "ops", true},
		{"refused once taken over", e, []ledger.Entry{{Operation: notify.OpPost, StepPath: "notify/ops", State: ledger.StateFailed, Performed: 2}}, "ops", false},
		{"another rule's post", e, []ledger.Entry{post("notify/other", ledger.StateCompleted)}, "ops", true},
		{"outcome unknown", e, []ledger.Entry{post("notify/ops", ledger.StateUnknown)}, "ops", false},
		{"reserved", e, []ledger.Entry{post("notify/ops", ledger.StatePending)}, "ops", false},
		{"posted", e, []ledger.Entry{post("notify/ops", ledger.StateCompleted)}, "ops", false},
		{"posted again", e, []ledger.Entry{post("notify/ops", ledger.StateFailed), post("notify/ops/9", ledger.StateCompleted)}, "ops", false},
		{"the same channel", e, nil, "opz", false},
		{"no rule now", e, nil, "", false},
		{"a notify tool's message", outbox.Event{Event: outbox.EventMessage, StepPath: "tool/1", Channel: "opz"}, nil, "ops", false},
	} {
		if got := notify.Moves(c.e, c.journal, c.channel); got != c.want {
			t.Errorf("%s: moves %v, want %v", c.name, got, c.want)
		}
	}
}
