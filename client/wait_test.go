package client_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/agentledger/agentledger"
	"github.com/agentledger/agentledger/client"
	"github.com/agentledger/agentledger/internal/test/testdb"
)

// A client reads its tenant's tasks back, over the API (the daemon runs
// the refund it submitted, and Wait returns it succeeded) and over the
// database (another tenant's task is not found, and Wait on a task nobody
// runs ends with its context, the task as last read).
func TestTaskAndWait(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	url, addr, token := daemonWithAPI(t)
	api := client.HTTP("http://"+addr, token, nil)
	task, err := client.Submit(ctx, api, "refund", refund{Order: 9, Amount: 3}, client.Options{})
	if err != nil {
		t.Fatal(err)
	}
	wctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	done, err := client.Wait(wctx, api, task.ID)
	if err != nil || done.State != agentledger.StateSucceeded || string(done.Result) != `{"order":9,"amount":3}` {
		t.Fatalf("waited for task %d over the API: %+v %v, want it succeeded with the refund", task.ID, done, err)
	}
	if got, err := api.Task(ctx, task.ID); err != nil || got.ID != task.ID || got.State != agentledger.StateSucceeded {
		t.Fatalf("read back over the API: %+v %v", got, err)
	}

	db := testdb.Open(t, url)
	other, err := client.Database(db, "globex").Submit(ctx, client.Request{Kind: "nobody_serves", Options: client.Options{Queue: "idle"}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := client.Database(db, "acme").Task(ctx, other.ID); !errors.Is(err, agentledger.ErrNotFound) {
		t.Errorf("another tenant's task: %v, want not found", err)
	}
	if _, err := api.Task(ctx, other.ID); !errors.Is(err, agentledger.ErrNotFound) {
		t.Errorf("another tenant's task over the API: %v, want not found", err)
	}
	short, cancelShort := context.WithTimeout(ctx, 300*time.Millisecond)
	defer cancelShort()
	last, err := client.Wait(short, client.Database(db, "globex"), other.ID)
	if !errors.Is(err, context.DeadlineExceeded) || last == nil || last.State != agentledger.StateQueued {
		t.Errorf("waiting for a task nobody runs: %+v %v, want the deadline, the task queued", last, err)
	}
}
