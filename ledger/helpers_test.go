package ledger_test

import (
	"context"
	"encoding/json"
	"sync/atomic"
	"testing"

	"github.com/agentledger/agentledger"
	"github.com/agentledger/agentledger/claims"
	"github.com/agentledger/agentledger/internal/test/testenv"
	"github.com/agentledger/agentledger/ledger"
	"github.com/agentledger/agentledger/tools"
)

// env is one test's database (see testenv) with helpers that speak in
// ledger attempts.
type env struct{ *testenv.Env }

func newEnv(t testing.TB) *env { return &env{testenv.New(t)} }

// task enqueues a task and returns its id.
func (e *env) task() int64 { return e.Enqueue(claims.EnqueueParams{}).ID }

// claim claims the only due task for worker and returns its attempt.
func (e *env) claim(worker string) (ledger.Attempt, *agentledger.Task) {
	t := e.Claim(worker)
	return tools.AttemptOf(t), t
}

// expireAndReclaim lets the current lease run out and claims again.
func (e *env) expireAndReclaim(worker string) (ledger.Attempt, *agentledger.Task) {
	t := e.ExpireAndReclaim(worker)
	return tools.AttemptOf(t), t
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

// leaseOf is the task lease an attempt is fenced on.
func leaseOf(a ledger.Attempt) agentledger.Lease {
	return agentledger.Lease(a.Fence.(claims.LeaseFence))
}

// reclaimed is a's task as it was claimed again: the same attempt with
// the token the database now holds.
func (e *env) reclaimed(a ledger.Attempt) ledger.Attempt {
	got, err := e.Claims.Get(context.Background(), "", a.TaskID)
	if err != nil {
		e.T.Fatal(err)
	}
	f := a.Fence.(claims.LeaseFence)
	f.Token = got.LeaseToken
	a.Fence = f
	return a
}
