package tools_test

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/agentledger/agentledger"
	"github.com/agentledger/agentledger/claims"
	"github.com/agentledger/agentledger/ledger"
	"github.com/agentledger/agentledger/tools"
)

// nopDoer serves every effect without a database: what is left is the
// cost of the path itself.
type nopDoer struct{}

func (nopDoer) Do(context.Context, ledger.Attempt, ledger.Effect) (ledger.Result, error) {
	return ledger.Result{Status: 200}, nil
}

// nopTool is a keyed tool whose effect does nothing.
type nopTool struct{}

func (nopTool) Name() string                { return "nop" }
func (nopTool) Description() string         { return "does nothing" }
func (nopTool) Parameters() json.RawMessage { return json.RawMessage(`{"type":"object"}`) }
func (nopTool) Effect(c tools.Call) (ledger.Effect, error) {
	return ledger.Effect{Operation: "nop", Class: ledger.Keyed, Request: c.Args,
		Perform: func(context.Context, ledger.Call) (ledger.Result, error) { return ledger.Result{}, nil }}, nil
}

func benchTask() *agentledger.Task {
	return &agentledger.Task{ID: 1, Tenant: "acme", Generation: 1, LeaseToken: 1, LeaseOwner: "w"}
}

// BenchmarkInvoke measures one tool call through the effect path with a
// ledger that does nothing: the path's own time and allocations per effect.
func BenchmarkInvoke(b *testing.B) {
	ctx, task := context.Background(), benchTask()
	_ = claims.LeaseOf(task)
	call := tools.Call{Task: task, StepPath: "tool/0", Args: json.RawMessage(`{}`)}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := tools.Invoke(ctx, nopDoer{}, nopTool{}, call); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkPathShared is BenchmarkInvoke through a Path built once, as a
// daemon's, with one interceptor that passes every effect on.
func BenchmarkPathShared(b *testing.B) {
	ctx, task := context.Background(), benchTask()
	pass := func(ctx context.Context, o *tools.Outgoing, next tools.Next) (ledger.Result, error) {
		return next(ctx, o)
	}
	p := &tools.Path{Ledger: nopDoer{}, Interceptors: []tools.Interceptor{pass}}
	args := json.RawMessage(`{}`)
	b.ReportAllocs()
	for b.Loop() {
		if _, err := p.Perform(ctx, &tools.Outgoing{Tool: nopTool{},
			Call: tools.Call{Task: task, StepPath: "tool/0", Args: args}}); err != nil {
			b.Fatal(err)
		}
	}
}
