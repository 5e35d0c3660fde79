package admit_test

import (
	"context"
	"strings"
	"testing"

	"github.com/agentledger/agentledger/admit"
	"github.com/agentledger/agentledger/claims"
)

// A caller without a row in the caller table (Signal, until durable waits
// give it one) is refused before anything is read.
func TestDoorRefusesCallersWithoutRules(t *testing.T) {
	t.Parallel()
	for _, c := range []admit.Caller{admit.Signal, 0} {
		_, err := (&admit.Door{}).Admit(context.Background(), nil, admit.Submission{Caller: c, Params: claims.EnqueueParams{Kind: "echo"}})
		if err == nil || !strings.Contains(err.Error(), "no rules for caller "+c.String()) {
			t.Errorf("%s: %v, want no rules", c, err)
		}
	}
}
