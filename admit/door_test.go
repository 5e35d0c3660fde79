package admit_test

import (
	"context"
	"strings"
	"testing"

	"github.com/agentledger/agentledger/admit"
	"github.com/agentledger/agentledger/claims"
	"github.com/agentledger/agentledger/waits"
)

// A caller without a row in the caller table is refused before anything
// is read; so is one without a row in the signal caller table.
func TestDoorRefusesCallersWithoutRules(t *testing.T) {
	t.Parallel()
	for _, c := range []admit.Caller{0, 7} {
		_, err := (&admit.Door{}).Admit(context.Background(), nil, admit.Submission{Caller: c, Params: claims.EnqueueParams{Kind: "echo"}})
		if err == nil || !strings.Contains(err.Error(), "no rules for caller "+c.String()) {
			t.Errorf("%s: %v, want no rules", c, err)
		}
	}
	for _, c := range []admit.Caller{admit.Schedule, admit.Parent, 0} {
		_, err := (&admit.Door{}).Signal(context.Background(), nil, admit.SignalSubmission{Caller: c,
			Params: waits.SignalParams{Name: "payment.settled", Key: "order-7"}, Own: "acme"})
		if err == nil || !strings.Contains(err.Error(), "no signal rules for caller "+c.String()) {
			t.Errorf("%s: %v, want no signal rules", c, err)
		}
	}
}
