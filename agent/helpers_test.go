package agent_test

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/agentledger/agentledger"
	"github.com/agentledger/agentledger/agent"
	"github.com/agentledger/agentledger/agentledgertest/fakeopenai"
	"github.com/agentledger/agentledger/claims"
	"github.com/agentledger/agentledger/grants"
	"github.com/agentledger/agentledger/internal/test/testenv"
	"github.com/agentledger/agentledger/ledger"
	"github.com/agentledger/agentledger/tools"
)

// testKey is the API key the tests configure; it must reach the fake model
// and nothing else.
const testKey = "sk-test-7f3a9c1e5b2d48e6a0c4-do-not-store"

// env is one test's world: a database with a pinned clock, a ledger, a fake
// model, a counting tool and the agent under test.
type env struct {
	*testenv.Env
	fake  *fakeopenai.Server
	tool  *countTool
	reg   *tools.Registry
	agent *agent.Agent
}

// newEnv starts the world; tweak adjusts the agent's configuration.
func newEnv(t *testing.T, tweak func(*agent.Config), replies ...fakeopenai.Reply) *env {
	t.Helper()
	e := &env{Env: testenv.New(t)}
	e.fake = fakeopenai.New(t, testKey, replies...)
	e.tool = &countTool{name: "count", class: ledger.Keyed}
	e.reg = tools.NewRegistry(e.tool, &countTool{name: "secret", class: ledger.Keyed})
	e.agent = agent.New(e.config(tweak), e.Ledger, e.reg)
	return e
}

// config is the agent configuration pointing at the fake model.
func (e *env) config(tweak func(*agent.Config)) agent.Config {
	cfg := agent.Config{
		BaseURL:        e.fake.BaseURL(),
		APIKey:         testKey,
		Model:          "fake-model",
		RequestTimeout: 5 * time.Second,
		RetryBase:      10 * time.Millisecond,
		HTTPClient:     e.fake.Client(),
	}
	if tweak != nil {
		tweak(&cfg)
	}
	return cfg
}

// submit enqueues an agent task and claims it.
func (e *env) submit(payload string) *agentledger.Task {
	e.T.Helper()
	if _, err := e.Claims.Enqueue(context.Background(), claims.EnqueueParams{Kind: agent.Kind, Payload: json.RawMessage(payload)}); err != nil {
		e.T.Fatal(err)
	}
	return e.claim()
}

// submitAs enqueues an agent task of tenant and claims it.
func (e *env) submitAs(tenant, payload string) *agentledger.Task {
	e.T.Helper()
	e.Enqueue(claims.EnqueueParams{Tenant: tenant, Kind: agent.Kind, Payload: json.RawMessage(payload)})
	return e.claim()
}

// checkGrants makes the agent check every task against the grants stored
// in the test's database, read before every effect; tweak adjusts the
// rest of its configuration.
func (e *env) checkGrants(tweak func(*agent.Config)) *grants.Store {
	store := grants.NewStore(e.DB)
	e.agent = agent.New(e.config(func(c *agent.Config) {
		c.Grants = store
		if tweak != nil {
			tweak(c)
		}
	}), e.Ledger, e.reg)
	return store
}

// grant stores g as tenant's grant.
func (e *env) grant(store *grants.Store, tenant string, g grants.Grant) {
	e.T.Helper()
	if err := store.Put(context.Background(), tenant, &g); err != nil {
		e.T.Fatal(err)
	}
}

// claim claims the only due task.
func (e *env) claim() *agentledger.Task { return e.Claim("w") }

// expireAndReclaim lets the lease run out and claims the task again: a new
// attempt with a new fencing token, as after a worker crash.
func (e *env) expireAndReclaim() *agentledger.Task { return e.ExpireAndReclaim("w") }

// finishAndReplay records the task's success, then has an operator replay
// it (same generation) and claims it again.
func (e *env) finishAndReplay(task *agentledger.Task, result json.RawMessage) *agentledger.Task {
	e.T.Helper()
	ctx := context.Background()
	if err := e.Claims.Succeed(ctx, claims.LeaseOf(task), result); err != nil {
		e.T.Fatal(err)
	}
	if _, err := e.Operator.Replay(ctx, "", task.ID); err != nil {
		e.T.Fatal(err)
	}
	return e.claim()
}

// fail records err as the task's final failure, as the worker would.
func (e *env) fail(task *agentledger.Task, err error) {
	e.T.Helper()
	if _, ferr := e.Claims.Fail(context.Background(), claims.Failure{Lease: claims.LeaseOf(task), Error: err.Error(), Final: true}); ferr != nil {
		e.T.Fatal(ferr)
	}
}

// journal is the task's journal.
func (e *env) journal(task *agentledger.Task) []ledger.Entry { return e.Journal(task) }

func paths(j []ledger.Entry) []string {
	out := make([]string, len(j))
	for i, en := range j {
		out[i] = en.StepPath
	}
	return out
}

// answer decodes a Work result.
func answer(t *testing.T, raw json.RawMessage) agent.Answer {
	t.Helper()
	var a agent.Answer
	if err := json.Unmarshal(raw, &a); err != nil {
		t.Fatalf("result %s: %v", raw, err)
	}
	return a
}

// countTool is a tool that counts its performances. Its argument is
// {"x": n}; its result echoes x with some JSON the database reformats.
type countTool struct {
	name      string
	class     ledger.Class
	performed atomic.Int64
	// fail, when set, may fail performance n (1, 2, …).
	fail func(n int64) error
	// noStatus: the result has no HTTP status, as an MCP tool's.
	noStatus bool
	mu       sync.Mutex
	keys     []string
}

func (c *countTool) Name() string        { return c.name }
func (c *countTool) Description() string { return "returns x+1" }
func (c *countTool) Parameters() json.RawMessage {
	return json.RawMessage(`{"type":"object","properties":{"x":{"type":"integer"}},"required":["x"]}`)
}

func (c *countTool) Effect(call tools.Call) (ledger.Effect, error) {
	var args struct {
		X *int `json:"x"`
	}
	if err := json.Unmarshal(call.Args, &args); err != nil || args.X == nil {
		return ledger.Effect{}, agentledger.Permanent(fmt.Errorf(`want {"x": <integer>}`))
	}
	x := *args.X
	return ledger.Effect{
		Operation: "test.count",
		Class:     c.class,
		Request:   call.Args,
		Perform: func(ctx context.Context, lc ledger.Call) (ledger.Result, error) {
			n := c.performed.Add(1)
			c.mu.Lock()
			c.keys = append(c.keys, lc.Key)
			c.mu.Unlock()
			if c.fail != nil {
				if err := c.fail(n); err != nil {
					return ledger.Result{}, err
				}
			}
			// Spaces, key order and 1e-7 are all rewritten by jsonb.
			body := fmt.Sprintf(`{ "x" : %d, "next": %d, "tiny": 1e-7, "html": "<b>" }`, x, x+1)
			if c.noStatus {
				return ledger.Result{Body: json.RawMessage(body)}, nil
			}
			return ledger.Result{Status: 200, Body: json.RawMessage(body)}, nil
		},
	}, nil
}

func (c *countTool) performedKeys() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]string(nil), c.keys...)
}

// noDoer fails the test if the agent touches the ledger.
type noDoer struct{ t *testing.T }

func (d noDoer) Do(context.Context, ledger.Attempt, ledger.Effect) (ledger.Result, error) {
	d.t.Error("the ledger was used")
	return ledger.Result{}, fmt.Errorf("no ledger here")
}

func call(id, name, args string) fakeopenai.ToolCall {
	return fakeopenai.ToolCall{ID: id, Name: name, Arguments: args}
}
