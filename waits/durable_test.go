package waits_test

import (
	"context"
	"testing"

	"github.com/agentledger/agentledger/internal/test/syncrep"
	"github.com/agentledger/agentledger/waits"
)

// A signal sent again under its idempotency key is acknowledged as a
// duplicate only once a synchronous standby has the first: that one's
// commit's wait for the standby may have been cut short, its sender told
// of an error and sending again.
func TestADuplicateSignalIsAcknowledgedOnceTheStandbyHasIt(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	url, admin := syncrep.Server(t)
	syncrep.Release(t, admin)
	s := waits.NewStore(syncrep.Open(t, url, "sender"))
	p := waits.SignalParams{Tenant: "acme", Name: "payment.settled", Key: "order-1", DedupeKey: "evt-1", SentBy: "operator"}
	if _, err := s.Send(ctx, p); err != nil {
		t.Fatal(err)
	}
	syncrep.Hold(t, admin)
	var sent waits.Sent
	var err error
	syncrep.AwaitsStandby(t, admin, "sender", "the signal sent again", func() { sent, err = s.Send(ctx, p) })
	if err != nil || !sent.Duplicate {
		t.Fatalf("sent again once the standby had it: %+v %v, want the duplicate", sent, err)
	}
}
