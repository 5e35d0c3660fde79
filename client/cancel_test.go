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

// A client cancels and replays its tenant's tasks, over the API and over
// the database alike: a queued task is cancelled at once, and cancelling
// it again returns it as it is; a cancelled task is replayed, queued again
// in its generation; a succeeded one is not cancelled, and its replay runs
// it again; another tenant's task is not found.
func TestCancelAndReplay(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	url, addr, token := daemonWithAPI(t)
	db := testdb.Open(t, url)
	other, err := client.Database(db, "globex").Submit(ctx, client.Request{Kind: "refund", Payload: []byte(`{"order":1,"amount":1}`),
		Options: client.Options{Queue: "idle"}})
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name string
		cl   client.Client
	}{
		{"over the API", client.HTTP("http://"+addr, token, nil)},
		{"over the database", client.Database(db, "acme")},
	} {
		t.Run(c.name, func(t *testing.T) {
			idle, err := c.cl.Submit(ctx, client.Request{Kind: "refund", Payload: []byte(`{"order":2,"amount":2}`),
				Options: client.Options{Queue: "idle", AllowUnserved: true}})
			if err != nil {
				t.Fatal(err)
			}
			for range 2 {
				got, err := c.cl.Cancel(ctx, idle.ID)
				if err != nil || got.ID != idle.ID || got.State != agentledger.StateCancelled {
					t.Fatalf("cancel of a queued task: %+v %v, want it cancelled (also a second time)", got, err)
				}
			}
			again, err := c.cl.Replay(ctx, idle.ID)
			if err != nil || again.State != agentledger.StateQueued || again.Generation != idle.Generation {
				t.Fatalf("replay of the cancelled task: %+v %v, want it queued in generation %d", again, err, idle.Generation)
			}

			done, err := client.Submit(ctx, c.cl, "refund", refund{Order: 3, Amount: 3}, client.Options{})
			if err != nil {
				t.Fatal(err)
			}
			done = waitFor(t, c.cl, done.ID, agentledger.StateSucceeded)
			if _, err := c.cl.Cancel(ctx, done.ID); !errors.Is(err, agentledger.ErrConflict) {
				t.Errorf("cancel of a succeeded task: %v, want a conflict", err)
			}
			if queued, err := c.cl.Replay(ctx, done.ID); err != nil || queued.FinishedAt != nil {
				t.Fatalf("replay of the succeeded task: %+v %v, want it unfinished", queued, err)
			}
			if rerun := waitFor(t, c.cl, done.ID, agentledger.StateSucceeded); !rerun.FinishedAt.After(*done.FinishedAt) {
				t.Errorf("the replayed task finished at %v, its first run at %v", rerun.FinishedAt, done.FinishedAt)
			}

			if _, err := c.cl.Cancel(ctx, other.ID); !errors.Is(err, agentledger.ErrNotFound) {
				t.Errorf("cancel of another tenant's task: %v, want not found", err)
			}
			if _, err := c.cl.Replay(ctx, other.ID); !errors.Is(err, agentledger.ErrNotFound) {
				t.Errorf("replay of another tenant's task: %v, want not found", err)
			}
		})
	}
}

// waitFor waits a minute at most for task id to end, and fails t unless it
// ended in want.
func waitFor(t *testing.T, c client.Client, id int64, want agentledger.TaskState) *agentledger.Task {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	got, err := client.Wait(ctx, c, id)
	if err != nil || got.State != want {
		t.Fatalf("task %d: %+v %v, want it %s", id, got, err, want)
	}
	return got
}
