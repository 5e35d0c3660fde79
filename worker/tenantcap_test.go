package worker_test

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/agentledger/agentledger"
	"github.com/agentledger/agentledger/internal/test/testdb"
	"github.com/agentledger/agentledger/worker"
)

// A tenant capped at 2 running tasks has 30 queued; the pool has 20 free
// slots and an hour-long poll. Each claim comes back short (the cap), and
// the next must follow the end of a task, not the poll: every task is
// done, never more than 2 at once.
func TestACapDoesNotStallThePool(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := testdb.New(t)
	if _, err := db.Exec(ctx, `INSERT INTO tenant_shares (tenant, weight, max_running, source) VALUES ('a', 1, 2, 'config')`); err != nil {
		t.Fatal(err)
	}
	if _, err := db.Exec(ctx, `INSERT INTO tasks (tenant, kind) SELECT 'a', 'noop' FROM generate_series(1, 30)`); err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{}, 30)
	running, most := 0, 0
	enter := make(chan int, 30)
	runPool(t, db, worker.Config{PollInterval: time.Hour, Concurrency: 20, Handlers: map[string]worker.Handler{
		"noop": worker.HandlerFunc(func(context.Context, *agentledger.Task) (json.RawMessage, error) {
			enter <- 1
			defer func() { enter <- -1; done <- struct{}{} }()
			return nil, nil
		}),
	}})
	// A hang is the failure; the bound only ends the test that shows it.
	deadline := time.After(20 * time.Second)
	for n := 0; n < 30; {
		select {
		case d := <-enter:
			running += d
			most = max(most, running)
		case <-done:
			n++
		case <-deadline:
			t.Fatalf("%d of 30 capped tasks ran without the poll", n)
		}
	}
	if most > 2 {
		t.Fatalf("%d of a's tasks ran at once, cap 2", most)
	}
}
