package tools_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/agentledger/agentledger"
	"github.com/agentledger/agentledger/grants"
	"github.com/agentledger/agentledger/ledger"
	"github.com/agentledger/agentledger/tools"
)

// countingTool is nopTool counting its performances.
type countingTool struct {
	nopTool
	n *int
}

func (t countingTool) Effect(c tools.Call) (ledger.Effect, error) {
	e, _ := t.nopTool.Effect(c)
	e.Perform = func(context.Context, ledger.Call) (ledger.Result, error) {
		*t.n++
		return ledger.Result{Status: 201}, nil
	}
	return e, nil
}

// An interceptor sees the call looked up, its grant read and its effect
// built; interceptors run in order; a gate that parks stops the effect
// before the ledger, and a call the ledger would serve is told apart so
// that it is not asked again.
func TestPathInterceptors(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	var performed int
	reg := tools.NewRegistry(countingTool{n: &performed})
	var order []string
	var asked int
	approved := false
	audit := func(ctx context.Context, o *tools.Outgoing, next tools.Next) (ledger.Result, error) {
		order = append(order, "audit "+o.Tool.Name()+" "+o.StepPath+" "+string(o.Effect.Class)+" "+string(o.Args))
		if o.Grant == nil {
			t.Error("the interceptor runs before the grant is read")
		}
		return next(ctx, o)
	}
	gate := func(ctx context.Context, o *tools.Outgoing, next tools.Next) (ledger.Result, error) {
		order = append(order, "gate")
		recorded, err := o.Recorded(ctx)
		if err != nil || recorded {
			return next(ctx, o) // a replay served from the ledger is not asked again
		}
		asked++
		if !approved {
			return ledger.Result{}, tools.Park("nop waits for a person's approval")
		}
		return next(ctx, o)
	}
	p := &tools.Path{Ledger: e.Ledger, Tools: reg, Grants: static{&grants.Grant{All: true}},
		Interceptors: []tools.Interceptor{audit, gate}}
	task := e.task()

	_, err := p.Perform(ctx, &tools.Outgoing{ToolName: "nop", Call: call(task, "tool/0", `{"a":1}`)})
	if !errors.Is(err, agentledger.ErrNeedsAttention) || !strings.Contains(err.Error(), "approval") || performed != 0 {
		t.Fatalf("parked: %v, performed %d", err, performed)
	}
	if got := strings.Join(order, "; "); got != `audit nop tool/0 keyed {"a":1}; gate` {
		t.Fatalf("order: %s", got)
	}
	approved = true
	if res, err := p.Perform(ctx, &tools.Outgoing{ToolName: "nop", Call: call(task, "tool/0", `{"a":1}`)}); err != nil ||
		res.Status != 201 || performed != 1 {
		t.Fatalf("approved: %+v %v, performed %d", res, err, performed)
	}
	res, err := p.Perform(ctx, &tools.Outgoing{ToolName: "nop", Call: call(task, "tool/0", `{"a":1}`)})
	if err != nil || !res.Replayed || performed != 1 || asked != 2 {
		t.Fatalf("replay: %+v %v, performed %d, asked %d", res, err, performed, asked)
	}
}

// The grant stage reads the grant in force before every call: a call
// outside it reaches neither the interceptors nor the ledger.
func TestPathGrantBeforeInterceptors(t *testing.T) {
	e := newEnv(t)
	var performed, seen int
	p := &tools.Path{Ledger: e.Ledger, Tools: tools.NewRegistry(countingTool{n: &performed}),
		Grants: static{&grants.Grant{Tools: []string{"other"}}},
		Interceptors: []tools.Interceptor{func(ctx context.Context, o *tools.Outgoing, next tools.Next) (ledger.Result, error) {
			seen++
			return next(ctx, o)
		}}}
	_, err := p.Perform(context.Background(), &tools.Outgoing{ToolName: "nop", Call: call(e.task(), "tool/0", `{}`)})
	var denied *grants.DeniedError
	if !errors.As(err, &denied) || seen != 0 || performed != 0 {
		t.Fatalf("denied: %v, seen %d, performed %d", err, seen, performed)
	}
}

// static is one grant for every tenant.
type static struct{ g *grants.Grant }

func (s static) For(context.Context, string) (*grants.Grant, error) { return s.g, nil }

// A call's approval gate that names a channel the grant in force lacks is
// refused at the grant stage: no request is posted there, nothing runs.
func TestPathGrantBoundsTheApprovalChannel(t *testing.T) {
	e := newEnv(t)
	var performed, seen int
	p := &tools.Path{Ledger: e.Ledger, Tools: tools.NewRegistry(countingTool{n: &performed}),
		Grants: static{&grants.Grant{Tools: []string{"nop"}, Channels: []string{"payments"}}},
		Interceptors: []tools.Interceptor{func(ctx context.Context, o *tools.Outgoing, next tools.Next) (ledger.Result, error) {
			seen++
			return next(ctx, o)
		}}}
	c := call(e.task(), "tool/0", `{}`)
	c.Approval = &tools.Approval{Channel: "general"}
	_, err := p.Perform(context.Background(), &tools.Outgoing{ToolName: "nop", Call: c})
	var denied *grants.DeniedError
	if !errors.As(err, &denied) || !strings.Contains(err.Error(), `its approval: tenant "acme" has no grant for channel "general"`) ||
		seen != 0 || performed != 0 {
		t.Fatalf("denied: %v, seen %d, performed %d", err, seen, performed)
	}
	c = call(e.task(), "tool/0", `{}`)
	c.Approval = &tools.Approval{Channel: "payments"}
	if _, err := p.Perform(context.Background(), &tools.Outgoing{ToolName: "nop", Call: c}); err != nil || performed != 1 {
		t.Fatalf("a granted channel: %v, performed %d", err, performed)
	}
}
