package notify_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/agentledger/agentledger"
	"github.com/agentledger/agentledger/claims"
	"github.com/agentledger/agentledger/internal/test/testenv"
	"github.com/agentledger/agentledger/ledger"
	"github.com/agentledger/agentledger/notify"
	"github.com/agentledger/agentledger/notify/outbox"
	"github.com/agentledger/agentledger/tools"
)

// toolEnv is one notify-tool test's database (see testenv).
type toolEnv struct{ *testenv.Env }

func newToolEnv(t *testing.T) *toolEnv { return &toolEnv{testenv.New(t)} }

// task enqueues a task of tenant acme and claims it for worker a.
func (e *toolEnv) task() *agentledger.Task {
	e.Enqueue(claims.EnqueueParams{Tenant: "acme"})
	return e.Claim("a")
}

func call(task *agentledger.Task, step, args string) tools.Call {
	return tools.Call{Task: task, StepPath: step, Args: []byte(args)}
}

const notifyArgs = `{"channel":"ops","text":"deploy finished"}`

// events are the outbox events of a task.
func (e *toolEnv) events(id int64) []outbox.Event {
	e.T.Helper()
	es, err := outbox.NewStore(e.DB).ForTask(context.Background(), "", id)
	if err != nil {
		e.T.Fatal(err)
	}
	return es
}

// A notify call writes one outbox event, once: calling it again is served
// from the ledger and writes nothing.
func TestNotifyWritesOneEvent(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	e := newToolEnv(t)
	a := e.task()
	c := call(a, "tool/2", notifyArgs)

	first, err := tools.Invoke(ctx, e.Ledger, notify.NewTool(), c)
	if err != nil || !strings.HasPrefix(first.ExternalRef, "outbox:") {
		t.Fatalf("first: %+v %v", first, err)
	}
	again, err := tools.Invoke(ctx, e.Ledger, notify.NewTool(), c)
	if err != nil || !again.Replayed || again.ExternalRef != first.ExternalRef {
		t.Fatalf("again: %+v %v, want %s served from the ledger", again, err, first.ExternalRef)
	}
	es := e.events(a.ID)
	if len(es) != 1 {
		t.Fatalf("%d events, want 1", len(es))
	}
	p, err := es[0].Decode()
	if ev := es[0]; err != nil || ev.Event != outbox.EventMessage || ev.StepPath != "tool/2" || ev.Channel != "ops" ||
		ev.Tenant != "acme" || ev.Generation != a.Generation || ev.Attempt != a.Attempt || ev.Attempt != 1 || p.Text != "deploy finished" || ev.State != outbox.StatePending {
		t.Fatalf("event = %+v (%+v, %v)", ev, p, err)
	}
	if j := e.Journal(a); len(j) != 1 || j[0].Class != ledger.Local || j[0].State != ledger.StateCompleted {
		t.Fatalf("journal = %+v", j)
	}
}

// A stale attempt's call writes no event: the event is part of the fenced
// local effect.
func TestNotifyFencedOnTheLease(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	e := newToolEnv(t)
	a := e.task()
	b := e.ExpireAndReclaim("b")
	if _, err := tools.Invoke(ctx, e.Ledger, notify.NewTool(), call(a, "tool/2", notifyArgs)); !errors.Is(err, agentledger.ErrLeaseLost) {
		t.Fatalf("stale attempt: %v, want ErrLeaseLost", err)
	}
	if es := e.events(a.ID); len(es) != 0 {
		t.Fatalf("the stale attempt wrote %d events", len(es))
	}
	if _, err := tools.Invoke(ctx, e.Ledger, notify.NewTool(), call(b, "tool/2", notifyArgs)); err != nil {
		t.Fatal(err)
	}
	if es := e.events(a.ID); len(es) != 1 {
		t.Fatalf("%d events, want 1", len(es))
	}
}

func TestNotifyBadArgs(t *testing.T) {
	t.Parallel()
	task := &agentledger.Task{ID: 1, Tenant: "acme", Generation: 1}
	for args, want := range map[string]string{
		`{"text":"x"}`:                       "channel",
		`{"channel":"o ps","text":"x"}`:      "without spaces",
		`{"channel":"ops","text":"  "}`:      "text is empty",
		`{"channel":"ops","text":"x","y":1}`: `unknown field "y"`,
		`"hello"`:                            "arguments must be",
	} {
		_, err := notify.NewTool().Effect(call(task, "notify/x", args))
		if !isPermanent(err) || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: %v, want %q", args, err, want)
		}
	}
	eff, err := notify.NewTool().Effect(call(task, "notify/x", notifyArgs))
	if err != nil || eff.Class != ledger.Local || eff.Operation != "notify" || eff.PerformLocal == nil {
		t.Fatalf("%+v %v", eff, err)
	}
}

func isPermanent(err error) bool {
	var p *agentledger.PermanentError
	return errors.As(err, &p)
}
