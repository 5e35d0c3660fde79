package steps_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/agentledger/agentledger"
	"github.com/agentledger/agentledger/claims"
	"github.com/agentledger/agentledger/ledger"
	"github.com/agentledger/agentledger/tools"
)

// A replay tries again the forward path's last effect when it failed and
// changed nothing (a wait that timed out), and serves a failed one the
// task went on from: what came after was built from that failure (an
// agent told of it, a Go kind's other branch), so a replay must serve it
// too. The preview says the same.
func TestReplayRereadsOnlyTheLastFailedRead(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	e := newEnv(t)
	calls := 0
	perform := func(context.Context, ledger.Call) (ledger.Result, error) {
		calls++
		return ledger.Result{}, agentledger.Permanent(errors.New("timed out"))
	}
	run := func(steps ...string) int64 {
		id := e.Enqueue(claims.EnqueueParams{Kind: "order"}).ID
		task := e.claim()
		for _, step := range steps {
			class, fails := ledger.Keyed, false
			if name, ok := strings.CutSuffix(step, "!"); ok {
				step, class, fails = name, ledger.Pure, true
			}
			eff := ledger.Effect{Operation: "op." + step, StepPath: step, Class: class, Request: json.RawMessage(`{}`),
				Perform: func(context.Context, ledger.Call) (ledger.Result, error) { return ledger.Result{Status: 200}, nil }}
			if fails {
				eff.Perform = perform
			}
			_, _ = e.Ledger.Do(ctx, tools.AttemptOf(task), eff)
		}
		e.fail(task, agentledger.Permanent(errors.New("gave up")))
		return id
	}
	last := run("call/charge", "call/wait!")         // the wait ended the path
	wentOn := run("call/wait!", "call/cancel-order") // the task went on from it
	for id, want := range map[int64]string{last: "call/charge served from ledger,call/wait will run",
		wentOn: "call/wait served from ledger,call/cancel-order served from ledger"} {
		p, err := e.Operator.Preview(ctx, "", id)
		if err != nil {
			t.Fatal(err)
		}
		var got []string
		for _, pe := range p.Effects {
			got = append(got, fmt.Sprintf("%s %s", pe.Step, pe.Plan))
		}
		if strings.Join(got, ",") != want {
			t.Errorf("task %d's preview: %v, want %s", id, got, want)
		}
		if _, err := e.Operator.Replay(ctx, "", id); err != nil {
			t.Fatal(err)
		}
	}
	states := func(id int64) string {
		task, err := e.Claims.Get(ctx, "", id)
		if err != nil {
			t.Fatal(err)
		}
		var s []string
		for _, en := range e.Journal(task) {
			s = append(s, fmt.Sprintf("%s %s", en.StepPath, en.State))
		}
		return strings.Join(s, ",")
	}
	if got := states(last); got != "call/charge completed,call/wait pending" {
		t.Errorf("the replayed task whose wait ended its path: %s, want the wait reopened", got)
	}
	if got := states(wentOn); got != "call/wait failed,call/cancel-order completed" {
		t.Errorf("the replayed task that went on from its wait: %s, want both served", got)
	}
}
