package ledger_test

import (
	"context"
	"encoding/json"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/agentledger/agentledger"
	"github.com/agentledger/agentledger/claims"
	"github.com/agentledger/agentledger/internal/testdb"
	"github.com/agentledger/agentledger/ledger"
)

// env is one test's database: a task store with a pinned clock and a ledger.
type env struct {
	t      testing.TB
	db     *pgxpool.Pool
	claims *claims.Store
	ledger *ledger.Ledger
	mu     sync.Mutex
	now    time.Time
}

func newEnv(t testing.TB) *env {
	t.Helper()
	db := testdb.New(t)
	e := &env{t: t, db: db, claims: claims.New(db), ledger: ledger.New(db), now: time.Now().UTC().Truncate(time.Second)}
	e.claims.Now = e.clock
	return e
}

func (e *env) clock() time.Time {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.now
}

func (e *env) advance(d time.Duration) {
	e.mu.Lock()
	e.now = e.now.Add(d)
	e.mu.Unlock()
}

// task enqueues a task and returns its id.
func (e *env) task() int64 {
	e.t.Helper()
	r, err := e.claims.Enqueue(context.Background(), claims.EnqueueParams{Kind: "steps"})
	if err != nil {
		e.t.Fatal(err)
	}
	return r.Task.ID
}

// claim claims the only due task for worker and returns its attempt.
func (e *env) claim(worker string) (ledger.Attempt, *agentledger.Task) {
	e.t.Helper()
	got, err := e.claims.Claim(context.Background(), claims.ClaimParams{Queue: "default", Worker: worker, Limit: 1, Lease: time.Minute})
	if err != nil || len(got) != 1 {
		e.t.Fatalf("claim: %d tasks, %v", len(got), err)
	}
	return ledger.AttemptOf(got[0]), got[0]
}

// expireAndReclaim lets the current lease run out and claims again.
func (e *env) expireAndReclaim(worker string) (ledger.Attempt, *agentledger.Task) {
	e.t.Helper()
	e.advance(2 * time.Minute)
	return e.claim(worker)
}

// counter is a performer that counts its calls.
type counter struct {
	calls atomic.Int64
	fn    func(ctx context.Context, call ledger.Call) (ledger.Result, error)
}

func (c *counter) perform(ctx context.Context, call ledger.Call) (ledger.Result, error) {
	n := c.calls.Add(1)
	if c.fn != nil {
		return c.fn(ctx, call)
	}
	return ledger.Result{Status: 200, Body: json.RawMessage(`{"n":` + itoa(n) + `}`)}, nil
}

func itoa(n int64) string { b, _ := json.Marshal(n); return string(b) }

func effect(class ledger.Class, step string, req string, perform func(context.Context, ledger.Call) (ledger.Result, error)) ledger.Effect {
	return ledger.Effect{Operation: "test.op", StepPath: step, Class: class, Request: json.RawMessage(req), Perform: perform}
}
