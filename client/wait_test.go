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

// readerFunc is a client.Reader of a function.
type readerFunc func(ctx context.Context, id int64) (*agentledger.Task, error)

func (f readerFunc) Task(ctx context.Context, id int64) (*agentledger.Task, error) { return f(ctx, id) }

// A read that may pass is read again (a daemon restarting under the API),
// one that cannot ends the wait, and a wait whose context ends returns the
// task as last read.
func TestWaitReadsAgainWhatMayPass(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	reads := 0
	flaky := readerFunc(func(context.Context, int64) (*agentledger.Task, error) {
		reads++
		switch reads {
		case 1:
			return &agentledger.Task{ID: 1, State: agentledger.StateRunning}, nil
		case 2, 3:
			return nil, errors.New("connection reset by peer")
		}
		return &agentledger.Task{ID: 1, State: agentledger.StateSucceeded}, nil
	})
	if got, err := client.Wait(ctx, flaky, 1); err != nil || got.State != agentledger.StateSucceeded || reads != 4 {
		t.Fatalf("through two failed reads: %+v %v after %d reads, want it succeeded after 4", got, err, reads)
	}
	gone := readerFunc(func(context.Context, int64) (*agentledger.Task, error) { return nil, agentledger.ErrNotFound })
	if _, err := client.Wait(ctx, gone, 1); !errors.Is(err, agentledger.ErrNotFound) {
		t.Fatalf("a task not found: %v, want not found at once", err)
	}
	short, cancel := context.WithCancel(ctx)
	n := 0
	ending := readerFunc(func(ctx context.Context, _ int64) (*agentledger.Task, error) {
		n++
		if n == 2 {
			cancel() // the context ends during the second read
			return nil, ctx.Err()
		}
		return &agentledger.Task{ID: 1, State: agentledger.StateQueued}, nil
	})
	if last, err := client.Wait(short, ending, 1); !errors.Is(err, context.Canceled) || last == nil || last.State != agentledger.StateQueued {
		t.Fatalf("the context ending during a read: %+v %v, want the task as last read and the context's error", last, err)
	}
}
