package waits_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/agentledger/agentledger/waits"
)

// A call that looks at its wait while its ledger transaction holds the
// task's row, as a signal for it is being sent (the sender holds the
// signal's lock and waits for that row to wake the task), is handed back
// as busy instead of waiting on a cycle PostgreSQL cannot see; once the
// ledger transaction lets go, the send finishes and the next look finds
// the wait done.
func TestAwaitDuringASendIsBusy(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := pool(t, 8)
	s := waits.NewStore(db)
	task := newTask(t, db)
	w := signalWait(task, "tool/0", "payment.settled", "order-1")
	await(t, s, w)
	park(t, db, task.ID)

	// The ledger's transaction: it holds the task's row as the fence does.
	fence, err := db.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = fence.Rollback(ctx) }) // a failed test lets the send go too
	if _, err := fence.Exec(ctx, `SELECT FROM tasks WHERE id = $1 FOR SHARE`, task.ID); err != nil {
		t.Fatal(err)
	}
	sent := make(chan error, 1)
	go func() {
		_, err := s.Send(ctx, waitsSignal("payment.settled", "order-1"))
		sent <- err
	}()
	// The send holds the signal's lock once it waits for the task's row.
	for {
		var waiting bool
		if err := db.QueryRow(ctx, `SELECT EXISTS (SELECT FROM pg_stat_activity WHERE wait_event_type = 'Lock'
			AND query LIKE '%waits.send%')`).Scan(&waiting); err != nil {
			t.Fatal(err)
		}
		if waiting {
			break
		}
		time.Sleep(10 * time.Millisecond) // polling the server's view of another connection: nothing signals it
	}

	actx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	_, err = s.Await(actx, w, nil, time.Hour)
	if !errors.Is(err, waits.ErrBusy) {
		t.Fatalf("the look during the send: %v, want ErrBusy", err)
	}
	if err := fence.Rollback(ctx); err != nil {
		t.Fatal(err)
	}
	if err := <-sent; err != nil {
		t.Fatalf("send: %v", err)
	}
	if got := await(t, s, w); got.State != waits.Done {
		t.Fatalf("the next look: %s, want done", got.State)
	}
}

func waitsSignal(name, key string) waits.SignalParams {
	return waits.SignalParams{Tenant: "acme", Name: name, Key: key, SentBy: "test"}
}
