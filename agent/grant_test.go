package agent_test

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/agentledger/agentledger"
	"github.com/agentledger/agentledger/agent"
	"github.com/agentledger/agentledger/agentledgertest/fakeopenai"
	"github.com/agentledger/agentledger/grants"
)

// denied fails t unless err is a permanent denial whose message holds want.
func denied(t *testing.T, err error, want string) {
	t.Helper()
	var d *grants.DeniedError
	var perm *agentledger.PermanentError
	if !errors.As(err, &d) || !errors.As(err, &perm) || !strings.Contains(err.Error(), want) {
		t.Fatalf("err %v, want a permanent denial naming %s", err, want)
	}
}

// A grant's "*" is the daemon's configured model and no other: a payload
// naming another model is refused before anything is sent or recorded,
// unless the grant names that model.
func TestWildcardModelIsTheConfiguredOne(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	e := newEnv(t, nil, fakeopenai.Text("small"), fakeopenai.Text("small, named"), fakeopenai.Text("expensive"))
	store := e.checkGrants(func(c *agent.Config) { c.Model = "small" })
	e.grant(store, "acme", grants.Grant{Models: []string{"*"}})

	for _, model := range []string{"expensive-model", "*"} {
		task := e.submitAs("acme", `{"prompt": "hi", "model": "`+model+`"}`)
		_, err := e.agent.Work(ctx, task)
		denied(t, err, `model "`+model+`" ("*" grants only the configured model, "small") (agentctl tenant grant acme --model `+grants.ShellQuote(model)+`)`)
		if e.fake.Calls() != 0 || len(e.journal(task)) != 0 {
			t.Fatalf("model %s: %d model calls, journal %+v: want nothing sent or recorded", model, e.fake.Calls(), e.journal(task))
		}
		e.fail(task, err)
	}
	for _, payload := range []string{`{"prompt": "hi"}`, `{"prompt": "hi", "model": "small"}`} {
		task := e.submitAs("acme", payload)
		if _, err := e.agent.Work(ctx, task); err != nil {
			t.Fatalf("%s: %v", payload, err)
		}
	}

	e.grant(store, "acme", grants.Grant{Models: []string{"expensive-model"}})
	if _, err := e.agent.Work(ctx, e.submitAs("acme", `{"prompt": "hi", "model": "expensive-model"}`)); err != nil {
		t.Fatalf("granted by name: %v", err)
	}
	var models []string
	for _, r := range e.fake.Requests() {
		models = append(models, r.Model)
	}
	if !slices.Equal(models, []string{"small", "small", "expensive-model"}) {
		t.Fatalf("models asked %v", models)
	}

	// Without a configured model "*" allows none.
	e.grant(store, "acme", grants.Grant{Models: []string{"*"}})
	e.agent = agent.New(e.config(func(c *agent.Config) { c.Model = ""; c.Grants = store }), e.Ledger, e.reg)
	_, err := e.agent.Work(ctx, e.submitAs("acme", `{"prompt": "hi", "model": "small"}`))
	denied(t, err, `no grant for model "small" (agentctl tenant grant acme --model small)`)
	if e.fake.Calls() != 3 {
		t.Fatalf("%d model calls, want 3", e.fake.Calls())
	}
}

// A revoke reaches a running task at its next effect: the grant is read
// before every tool call and completion, not once an attempt. Here the
// tenant is revoked while its task's first tool call runs.
func TestRevokeStopsTheNextEffect(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name    string
		script  []fakeopenai.Reply
		revoke  func(*grants.Grant)
		missing string
	}{
		{"a second tool call of the same answer", []fakeopenai.Reply{fakeopenai.Calls(call("c1", "count", `{"x":1}`), call("c2", "count", `{"x":2}`))},
			func(g *grants.Grant) { g.Tools = nil }, `tool "count"`},
		{"the next completion", []fakeopenai.Reply{fakeopenai.Calls(call("c1", "count", `{"x":1}`))},
			func(g *grants.Grant) { g.Models = nil }, `model "fake-model"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			e := newEnv(t, nil, tc.script...)
			store := e.checkGrants(nil)
			e.grant(store, "acme", grants.Grant{Tools: []string{"count"}, Models: []string{"*"}})
			e.tool.fail = func(n int64) error {
				if n == 1 {
					_, err := store.Update(ctx, "acme", tc.revoke)
					return err
				}
				return nil
			}
			task := e.submitAs("acme", `{"prompt": "count twice", "tools": ["count"]}`)
			_, err := e.agent.Work(ctx, task)
			denied(t, err, tc.missing)
			if p := paths(e.journal(task)); e.tool.performed.Load() != 1 || e.fake.Calls() != 1 ||
				!slices.Equal(p, []string{"llm/0", "tool/0/c1"}) {
				t.Fatalf("tool performed %d, model called %d, journal %v: want nothing after the revoke",
					e.tool.performed.Load(), e.fake.Calls(), p)
			}
		})
	}
}
