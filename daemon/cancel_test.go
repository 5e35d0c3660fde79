package daemon_test

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/agentledger/agentledger"
	"github.com/agentledger/agentledger/claims"
	"github.com/agentledger/agentledger/daemon"
	"github.com/agentledger/agentledger/ledger"
	"github.com/agentledger/agentledger/operator"
)

// A task cancelled while its step's call is in flight (the trial's
// charge that answered after the cancel): the call completes and is
// recorded, so the journal says what was sent, the next step is not
// begun, and the task ends cancelled.
func TestCancelDuringACallKeepsItsRecord(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db, down := runGateDaemon(t, func(c *daemon.Config, _ string) {
		c.Worker.Heartbeat = 50 * time.Millisecond
	})
	arrived, release := make(chan struct{}), make(chan struct{})
	var once sync.Once
	down.SetDelay(func() time.Duration {
		once.Do(func() { close(arrived) })
		<-release
		return 0
	})
	store := claims.New(db)
	payload := fmt.Sprintf(`{"steps":[{"tool":"http_request","args":{"method":"POST","url":%q}},
		{"tool":"http_request","args":{"method":"POST","url":%q}}]}`, down.URL+"/charges", down.URL+"/receipts")
	r, err := store.Enqueue(ctx, claims.EnqueueParams{Kind: "steps", Payload: json.RawMessage(payload)})
	if err != nil {
		t.Fatal(err)
	}
	id := r.Task.ID
	<-arrived // the charge is in flight
	if _, err := operator.New(db).Cancel(ctx, "", id); err != nil {
		t.Fatal(err)
	}
	// A heartbeat after the request renews the lease and hands the attempt
	// the cancel: wait for one, then let the downstream answer.
	asked := waitTask(t, store, id, func(t *agentledger.Task) bool { return t.CancelRequested != nil })
	waitTask(t, store, id, func(t *agentledger.Task) bool {
		return t.LeaseExpiresAt != nil && t.LeaseExpiresAt.After(*asked.LeaseExpiresAt)
	})
	close(release)

	done := waitTask(t, store, id, func(t *agentledger.Task) bool {
		return t.State.Finished() || t.State == agentledger.StateNeedsAttention
	})
	if done.State != agentledger.StateCancelled {
		t.Fatalf("task %s (%s), want cancelled", done.State, done.LastError)
	}
	j, err := ledger.New(db).Journal(ctx, id, done.Generation)
	if err != nil {
		t.Fatal(err)
	}
	if len(j) != 1 || j[0].StepPath != "tool/0" || j[0].State != ledger.StateCompleted || j[0].Result.Status != 201 {
		t.Fatalf("journal %+v, want the charge recorded completed, and no second step", j)
	}
	if down.Hits() != 1 || down.Effects() != 1 {
		t.Fatalf("downstream: %d requests, %d effects; want the charge alone", down.Hits(), down.Effects())
	}
}
