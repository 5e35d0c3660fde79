package tools_test

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/agentledger/agentledger"
	"github.com/agentledger/agentledger/admit"
	"github.com/agentledger/agentledger/grants"
	"github.com/agentledger/agentledger/ledger"
	"github.com/agentledger/agentledger/tools"
)

const childArgs = `{"kind":"child.work","queue":"children","payload":{"x":1},"priority":5}`

func TestCreateTaskOnce(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	e := newEnv(t)
	tool := tools.NewCreateTask(&admit.Door{})
	a := e.task()
	c := call(a, "tool/0", childArgs)

	first, err := tools.Invoke(ctx, e.Ledger, tool, c)
	var body struct {
		TaskID int64 `json:"task_id"`
	}
	if err != nil || first.Replayed || json.Unmarshal(first.Body, &body) != nil || body.TaskID == 0 {
		t.Fatalf("first: %+v %v", first, err)
	}
	again, err := tools.Invoke(ctx, e.Ledger, tool, c)
	if err != nil || !again.Replayed || !sameJSON(t, again.Body, first.Body) || again.ExternalRef != first.ExternalRef {
		t.Fatalf("again: %+v %v", again, err)
	}
	c.Task = e.ExpireAndReclaim("b") // another attempt of the same generation
	if third, err := tools.Invoke(ctx, e.Ledger, tool, c); err != nil || !third.Replayed || !sameJSON(t, third.Body, first.Body) {
		t.Fatalf("next attempt: %+v %v", third, err)
	}

	key := ledger.EffectKey(a.Tenant, a.ID, a.Generation, "tool/0", "task.create")
	if n := e.count(`SELECT count(*) FROM tasks WHERE id <> $1`, a.ID); n != 1 {
		t.Fatalf("%d children", n)
	}
	child, err := e.Claims.Get(ctx, a.Tenant, body.TaskID)
	if err != nil || child.SubmissionKey != "child:"+key || child.Tenant != "acme" || child.Kind != "child.work" ||
		child.Queue != "children" || child.Priority != 5 || !sameJSON(t, child.Payload, []byte(`{"x":1}`)) {
		t.Fatalf("child %+v %v", child, err)
	}
}

// The child commits with its ledger row or not at all.
func TestCreateTaskFailureAfterInsertLeavesNothing(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	e := newEnv(t)
	a := e.task()
	eff, err := tools.NewCreateTask(&admit.Door{}).Effect(call(a, "tool/0", childArgs))
	if err != nil {
		t.Fatal(err)
	}
	insert := eff.PerformLocal
	inserted := false
	eff.PerformLocal = func(ctx context.Context, c ledger.Call, db ledger.DB) (ledger.Result, error) {
		if _, err := insert(ctx, c, db); err != nil {
			return ledger.Result{}, err
		}
		inserted = true
		return ledger.Result{}, errors.New("crash after insert")
	}
	if _, err := e.Ledger.Do(ctx, tools.AttemptOf(a), eff); err == nil || !inserted {
		t.Fatalf("do: %v, inserted %v", err, inserted)
	}
	if n := e.count(`SELECT count(*) FROM tasks WHERE submission_key LIKE 'child:%'`); n != 0 {
		t.Fatalf("%d children after a failed transaction", n)
	}
	if text := e.LedgerText(); text != "" {
		t.Fatalf("ledger row left: %s", text)
	}
	// Run again for real: one child.
	if _, err := tools.Invoke(ctx, e.Ledger, tools.NewCreateTask(&admit.Door{}), call(a, "tool/0", childArgs)); err != nil {
		t.Fatal(err)
	}
	if n := e.count(`SELECT count(*) FROM tasks WHERE submission_key LIKE 'child:%'`); n != 1 {
		t.Fatalf("%d children", n)
	}
}

func TestCreateTaskBadArgs(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	e := newEnv(t)
	a := e.task()
	for args, want := range map[string]string{
		`{}`:                                   "kind: is required",
		`{"kind":"a b"}`:                       "kind:",
		`{"kind":"k","priority":200}`:          "priority: 200 is outside 0..100",
		`{"kind":"k","payload":"{"}`:           "", // a JSON string is a fine payload
		`{"kind":"k","parent":1}`:              `unknown field "parent"`,
		`{"kind":"k","payload":{"a":1,"a":2}}`: "payload",

		// A child runs now: create_task takes no run_at.
		`{"kind":"k","run_at":"2001-01-01T00:00:00Z"}`: `unknown field "run_at"`,
	} {
		_, err := tools.Invoke(ctx, e.Ledger, tools.NewCreateTask(&admit.Door{}), call(a, "tool/x", args))
		if want == "" {
			if err != nil {
				t.Errorf("%s: %v", args, err)
			}
			continue
		}
		if !isPermanent(err) || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: %v, want %q", args, err, want)
		}
	}
	if n := e.count(`SELECT count(*) FROM tasks`); n != 2 {
		t.Fatalf("%d tasks", n)
	}
}

// A child keeps to its tenant's grant, as an API submission does: a
// priority more urgent than the floor is raised to it, and it runs now.
// The ledger keeps the call as asked: a replay under another floor is the
// same call.
func TestCreateTaskKeepsToTheFloor(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	e := newEnv(t)
	parent := e.task()
	g := &grants.Grant{Kinds: []string{"k"}, Tools: []string{"create_task"}, PriorityFloor: 50}
	create := func(step, args string) (ledger.Result, *agentledger.Task) {
		t.Helper()
		c := call(parent, step, args)
		c.Grant = g
		res, err := tools.Invoke(ctx, e.Ledger, tools.NewCreateTask(&admit.Door{}), c)
		var body struct {
			TaskID int64 `json:"task_id"`
		}
		if err != nil || json.Unmarshal(res.Body, &body) != nil {
			t.Fatalf("%s: %+v %v", args, res, err)
		}
		child, err := e.Claims.Get(ctx, "acme", body.TaskID)
		if err != nil {
			t.Fatal(err)
		}
		return res, child
	}
	const urgent = `{"kind":"k","priority":0}`
	before := time.Now().Add(-time.Second) // the database's clock may trail ours a little
	after := time.Now().Add(time.Minute)
	if _, child := create("tool/0", urgent); child.Priority != 50 || child.RunAt.Before(before) || child.RunAt.After(after) {
		t.Errorf("priority %d run_at %s: want 50 and now", child.Priority, child.RunAt)
	}
	if _, child := create("tool/1", `{"kind":"k","priority":70}`); child.Priority != 70 {
		t.Errorf("priority %d: want 70 as asked", child.Priority)
	}
	if _, child := create("tool/2", `{"kind":"k"}`); child.Priority != 50 {
		t.Errorf("priority %d: want 50 for the default 0", child.Priority)
	}
	g.PriorityFloor = 60
	if res, child := create("tool/0", urgent); !res.Replayed || child.Priority != 50 {
		t.Errorf("replayed %v, priority %d: want the first child, served", res.Replayed, child.Priority)
	}
}
