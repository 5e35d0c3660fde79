package tools_test

import (
	"context"
	"testing"
	"time"

	"github.com/agentledger/agentledger/flow"
	"github.com/agentledger/agentledger/ledger"
	"github.com/agentledger/agentledger/tools"
)

// targetTool is countingTool naming a target, as the HTTP and MCP tools
// do, with the class given.
type targetTool struct {
	countingTool
	class ledger.Class
}

func (t targetTool) Effect(c tools.Call) (ledger.Effect, error) {
	e, _ := t.countingTool.Effect(c)
	e.Target, e.Hold, e.Class = "api:billing", 5*time.Second, t.class
	if t.class == ledger.Local {
		e.Perform, e.PerformLocal = nil, func(context.Context, ledger.Call, ledger.DB) (ledger.Result, error) {
			*t.n++
			return ledger.Result{}, nil
		}
	}
	return e, nil
}

// countingGate admits every call, counting them by target.
type countingGate struct{ admitted map[string]int }

func (g *countingGate) Admit(_ context.Context, target string, hold time.Duration) (*flow.Pass, error) {
	if hold != 5*time.Second {
		return nil, nil
	}
	g.admitted[target]++
	return nil, nil
}

// The flow stage admits any tool's effect that names its target — not
// only the built-in HTTP and MCP tools' — once per performance: a replay
// served from the ledger books nothing, and neither does a local effect,
// which commits with its row.
func TestPathFlowStage(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	var performed int
	g := &countingGate{admitted: map[string]int{}}
	keyed := targetTool{countingTool{n: &performed}, ledger.Keyed}
	local := targetTool{countingTool{n: &performed}, ledger.Local}
	p := &tools.Path{Ledger: e.Ledger, Gate: g}
	task := e.task()
	for range 2 { // the second is a replay, served from the ledger
		if _, err := p.Perform(ctx, &tools.Outgoing{Tool: keyed, Call: call(task, "tool/0", `{}`)}); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := p.Perform(ctx, &tools.Outgoing{Tool: local, Call: call(task, "tool/1", `{}`)}); err != nil {
		t.Fatal(err)
	}
	if performed != 2 || g.admitted["api:billing"] != 1 || len(g.admitted) != 1 {
		t.Fatalf("performed %d, admitted %v; want 2 performed and the keyed call admitted once", performed, g.admitted)
	}
}
