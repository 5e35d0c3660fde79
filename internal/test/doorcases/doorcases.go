// Package doorcases holds the rules of package admit's door as cases that
// every entrance's tests put to it: the entrances live in packages that
// cannot share a test (cmd/agentctl is a main package).
package doorcases

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/agentledger/agentledger"
	"github.com/agentledger/agentledger/claims"
	"github.com/agentledger/agentledger/daemon"
	"github.com/agentledger/agentledger/grants"
	"github.com/agentledger/agentledger/registry"
)

// Case is one rule of the door put to every entrance: the task, and
// what each entrance makes of it — "queued p<priority>" (" past" when its
// run_at stayed in the past), "invalid <field>" or "denied". An entrance
// missing from Want cannot express the case (only the API, agentctl and
// the client take a run_at; agentctl and the client a submission key).
type Case struct {
	Name     string
	Kind     string
	Payload  string
	Priority int
	RunAt    time.Time
	Key      string
	Want     map[string]string
}

// The tenant acme may submit echo, steps, refund, ghost and sleep, call
// http_request and create_task, at priority 50 or later; the live worker
// serves every kind but ghost, refund is a typed kind whose schema its
// daemon published, and sleep a built-in kind with a schema of its own.
var Cases = []Case{
	{Name: "served and granted", Kind: "echo", Payload: `{"n":1}`, Priority: 60,
		Want: all("queued p60")},
	{Name: "no live worker serves the kind", Kind: "ghost", Priority: 60,
		Want: with(all("queued p60"), "api", "invalid kind", "agentctl", "invalid kind")},
	{Name: "typed kind's published schema", Kind: "refund", Payload: `{"order":7,"amount":"ten"}`, Priority: 60,
		Want: all("invalid payload")},
	{Name: "typed kind that fits", Kind: "refund", Payload: `{"order":7,"amount":10}`, Priority: 60,
		Want: all("queued p60")},
	{Name: "built-in kind's schema", Kind: "sleep", Payload: `{"ms":"five"}`, Priority: 60,
		Want: all("invalid payload")},
	{Name: "built-in kind that fits", Kind: "sleep", Payload: `{"ms":5}`, Priority: 60,
		Want: all("queued p60")},
	{Name: "steps structure", Kind: "steps", Payload: `{"steps":[]}`, Priority: 60,
		Want: all("invalid payload")},
	{Name: "kind outside the grant", Kind: "secret", Priority: 60,
		Want: with(all("queued p60"), "api", "denied", "parent", "denied")},
	{Name: "what the payload names outside the grant", Kind: "steps", Priority: 60,
		Payload: `{"steps":[{"tool":"unsafe_http","args":{"method":"GET","url":"https://example.com/"}}]}`,
		Want:    with(all("queued p60"), "api", "denied", "parent", "denied")},
	{Name: "priority range", Kind: "echo", Priority: 101,
		Want: all("invalid priority")},
	{Name: "priority floor", Kind: "echo", Priority: 10,
		Want: with(all("queued p10"), "api", "queued p50", "parent", "queued p50")},
	{Name: "encoding", Kind: "echo", Payload: `{"a":"x\u0000"}`, Priority: 60,
		Want: all("invalid payload")},
	{Name: "run_at in the past", Kind: "echo", Priority: 60, RunAt: time.Date(2001, 1, 1, 0, 0, 0, 0, time.UTC),
		Want: map[string]string{"api": "queued p60", "agentctl": "queued p60 past", "client": "queued p60 past"}},
	{Name: "submission key", Kind: "echo", Priority: 60, Key: "bad\x01key",
		Want: map[string]string{"agentctl": "invalid submission_key", "client": "invalid submission_key"}},
}

// Entrances are the ways into the tasks table: admit's
// TestEveryEntranceThroughTheDoor runs all but agentctl, cmd/agentctl's
// TestSubmitThroughTheDoor that one.
var Entrances = []string{"api", "agentctl", "client", "webhook", "schedule", "parent"}

func all(outcome string) map[string]string {
	m := map[string]string{}
	for _, e := range Entrances {
		m[e] = outcome
	}
	return m
}

func with(m map[string]string, kv ...string) map[string]string {
	for i := 0; i < len(kv); i += 2 {
		m[kv[i]] = kv[i+1]
	}
	return m
}

// Outcome words what became of a submission.
func Outcome(task *agentledger.Task, err error) string {
	var ie *agentledger.InvalidError
	var de *grants.DeniedError
	switch {
	case errors.As(err, &de):
		return "denied"
	case errors.As(err, &ie):
		return "invalid " + strings.SplitN(ie.Field, " ", 2)[0]
	case err != nil:
		return "error: " + err.Error()
	case task == nil:
		return "no task"
	}
	s := fmt.Sprintf("queued p%d", task.Priority)
	if task.RunAt.Year() < 2020 {
		s += " past"
	}
	return s
}

// Grant is acme's grant.
func Grant() *grants.Grant {
	return &grants.Grant{Kinds: []string{"echo", "steps", "refund", "ghost", "sleep"},
		Tools: []string{"http_request", "create_task"}, PriorityFloor: 50}
}

// Prepare stores acme's grant, announces the live worker w1 and publishes
// the refund kind's schema, in db.
func Prepare(t testing.TB, db registry.DB, grantStore *grants.Store) {
	t.Helper()
	ctx := context.Background()
	if err := grantStore.Put(ctx, "acme", Grant()); err != nil {
		t.Fatal(err)
	}
	refund := daemon.Kind(func(context.Context, *agentledger.Task, struct {
		Order  int64 `json:"order"`
		Amount int64 `json:"amount"`
	}) (struct{}, error) {
		return struct{}{}, nil
	})
	reg := registry.New(db)
	if err := reg.PublishKinds(ctx, "w1", map[string]json.RawMessage{"refund": refund.PayloadSchema()}); err != nil {
		t.Fatal(err)
	}
	if err := reg.Announce(ctx, "w1", "host", 1, []string{claims.DefaultQueue},
		[]string{"echo", "steps", "refund", "secret", "sleep"}, nil); err != nil {
		t.Fatal(err)
	}
}
