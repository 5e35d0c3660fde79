package httpapi

import (
	"context"
	"net/http"
	"testing"
	"time"

	"github.com/agentledger/agentledger/internal/test/syncrep"
)

// A stored answer is replayed only once a synchronous standby has it: the
// request that stored it may have had its commit's wait for the standby
// cut short, its client told of an error and retrying under the key, and
// a replay that wrote nothing would commit without waiting — acknowledging
// what a failover can lose.
func TestAStoredAnswerIsReplayedOnceTheStandbyHasIt(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	url, admin := syncrep.Server(t)
	syncrep.Release(t, admin) // the first request's record goes through
	ks := &keyStore{db: syncrep.Open(t, url, "api"), lease: time.Minute}
	req := keyRequest{tenant: "acme", operation: "POST /v1/tasks", key: "k1", fingerprint: []byte("fp")}
	held, _, err := ks.acquire(ctx, req)
	if err != nil || held == nil {
		t.Fatalf("first request: %v", err)
	}
	if ok, err := ks.complete(ctx, held, reply{status: http.StatusCreated, header: http.Header{}, body: []byte(`{"id":1}`)}); !ok || err != nil {
		t.Fatalf("storing the answer: %v %v", ok, err)
	}

	syncrep.Hold(t, admin)
	var stored *reply
	syncrep.AwaitsStandby(t, admin, "api", "the replay of the stored answer", func() { _, stored, err = ks.acquire(ctx, req) })
	if err != nil || stored == nil || stored.status != http.StatusCreated {
		t.Fatalf("the retry once the standby had it: %+v %v, want the stored 201", stored, err)
	}
}
