package tui

import (
	"context"
	"encoding/json"
	"errors"
	"testing"
	"time"

	"github.com/agentledger/agentledger"
	"github.com/agentledger/agentledger/claims"
	"github.com/agentledger/agentledger/flow"
	"github.com/agentledger/agentledger/grants"
	"github.com/agentledger/agentledger/internal/test/testenv"
	"github.com/agentledger/agentledger/ledger"
	"github.com/agentledger/agentledger/notify/outbox"
	"github.com/agentledger/agentledger/registry"
	"github.com/agentledger/agentledger/tools"
)

// seedDB makes a database holding four tasks and returns the DBStore on
// it, its clock pinned to epoch:
//
//	1  acme/default/echo   succeeded
//	2  acme/billing/steps  dead: a charge (keyed, completed), a child task
//	                       (local, completed), a message whose post was
//	                       never recorded (reconcilable, pending)
//	3  beta/billing/steps  queued
//	4  acme/default/steps  needs_attention: a wire (unsafe) of unknown outcome
//
// A rule notifies ops of every finished task. The timestamps are set to
// fixed instants before epoch, so that screens do not depend on the wall
// clock.
// seeded is the console's store over a seeded database, with the stores the
// tests check it against.
type seeded struct {
	*DBStore
	Claims   *claims.Store
	Registry *registry.Store
	Ledger   *ledger.Ledger
	Outbox   *outbox.Store
	DB       flow.DB
}

func seedDB(t *testing.T) *seeded {
	t.Helper()
	ctx := context.Background()
	e := testenv.NewSmallIDs(t)
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	_, err := outbox.NewRules(e.DB).Put(ctx, outbox.Rule{Name: "ops", Channel: "ops",
		Events: []string{"succeeded", "dead", "needs_attention"}}, false)
	must(err)
	raw := func(s string) json.RawMessage { return json.RawMessage(s) }
	ok := func(status int, body string) func(context.Context, ledger.Call) (ledger.Result, error) {
		return func(context.Context, ledger.Call) (ledger.Result, error) {
			return ledger.Result{Status: status, Body: raw(body)}, nil
		}
	}
	broken := func(msg string) func(context.Context, ledger.Call) (ledger.Result, error) {
		return func(context.Context, ledger.Call) (ledger.Result, error) { return ledger.Result{}, errors.New(msg) }
	}

	// acme may call what its steps task called: its replay is not refused.
	must(grants.NewStore(e.DB).Put(ctx, "acme", &grants.Grant{AllKinds: true, Tools: []string{"http_request", "create_task", "notify"}}))

	// 1: an echo that succeeded.
	e.Enqueue(claims.EnqueueParams{Tenant: "acme", Kind: "echo", Payload: raw(`{"hello":"world"}`)})
	must(e.Claims.Succeed(ctx, claims.LeaseOf(e.Claim("worker-a")), raw(`{"hello":"world"}`)))

	// 2: a steps task of the billing queue that died.
	e.Enqueue(claims.EnqueueParams{Tenant: "acme", Queue: "billing", Kind: "steps", SubmissionKey: "order-7",
		Payload: raw(`{"steps":[{"tool":"http_request"},{"tool":"create_task"},{"tool":"notify"}]}`)})
	got, err := e.Claims.Claim(ctx, claims.ClaimParams{Queue: "billing", Worker: "worker-b", Limit: 1, Lease: testenv.Lease})
	must(err)
	a := tools.AttemptOf(got[0])
	_, err = e.Ledger.Do(ctx, a, ledger.Effect{Operation: "http_request", StepPath: "tool/0", Class: ledger.Keyed,
		Request: raw(`{"method":"POST","url":"http://billing.internal/charges","body":{"order":7}}`), Perform: ok(201, `{"id":"ch_1"}`)})
	must(err)
	_, err = e.Ledger.Do(ctx, a, ledger.Effect{Operation: "task.create", StepPath: "tool/1", Class: ledger.Local,
		Request: raw(`{"kind":"echo"}`), PerformLocal: func(context.Context, ledger.Call, ledger.DB) (ledger.Result, error) {
			return ledger.Result{Body: raw(`{"task_id":99}`)}, nil
		}})
	must(err)
	_, err = e.Ledger.Do(ctx, a, ledger.Effect{Operation: "notify.post", StepPath: "tool/2", Class: ledger.Reconcilable,
		Request: raw(`{"channel":"billing","text":"charged order 7"}`), Perform: broken("slack: ratelimited"),
		Reconcile: func(context.Context, ledger.Call) (ledger.Result, bool, error) { return ledger.Result{}, false, nil }})
	if err == nil {
		t.Fatal("the post succeeded")
	}
	_, err = e.Claims.Fail(ctx, claims.Failure{Lease: claims.LeaseOf(got[0]), Error: "tool/2 notify.post: slack: ratelimited", Final: true})
	must(err)

	// 3: queued for another tenant.
	e.Enqueue(claims.EnqueueParams{Tenant: "beta", Queue: "billing", Kind: "steps", Payload: raw(`{"steps":[]}`)})

	// 4: a wire sent by an attempt that died before recording it.
	e.Enqueue(claims.EnqueueParams{Tenant: "acme", Kind: "steps", Payload: raw(`{"steps":[{"tool":"unsafe_http"}]}`)})
	wire := ledger.Effect{Operation: "unsafe_http", StepPath: "tool/0", Class: ledger.Unsafe,
		Request: raw(`{"method":"POST","url":"http://bank.internal/wires","body":{"amount":100}}`), Perform: broken("connection reset")}
	_, err = e.Ledger.Do(ctx, tools.AttemptOf(e.Claim("worker-a")), wire)
	if err == nil {
		t.Fatal("the wire succeeded")
	}
	again := e.ExpireAndReclaim("worker-c")
	_, err = e.Ledger.Do(ctx, tools.AttemptOf(again), wire)
	if !errors.Is(err, agentledger.ErrNeedsAttention) {
		t.Fatalf("the wire again: %v", err)
	}
	must(e.Claims.NeedsAttention(ctx, claims.LeaseOf(again), err.Error()))

	// Fixed tokens: each task's claims numbered 1, 2, … in order (a
	// claim's token is its clock in µs).
	for _, q := range []string{
		recordSuccesses,
		`UPDATE tasks t SET lease_token = (SELECT count(*) FROM task_attempts a WHERE a.task_id = t.id AND a.lease_token <= t.lease_token)
			WHERE lease_token > 0`,
		`UPDATE ledger l SET owner_token = (SELECT count(*) FROM task_attempts a WHERE a.task_id = l.task_id AND a.lease_token <= l.owner_token)
			WHERE owner_token > 0`,
		`UPDATE task_attempts a SET lease_token = r.n
			FROM (SELECT task_id, lease_token, row_number() OVER (PARTITION BY task_id ORDER BY lease_token) AS n FROM task_attempts) r
			WHERE r.task_id = a.task_id AND r.lease_token = a.lease_token`,
	} {
		_, err := e.DB.Exec(ctx, q)
		must(err)
	}
	// Fixed instants: task n was created n+10 minutes before epoch and
	// last changed n minutes before it; its attempts took 2 seconds each.
	for _, q := range []string{
		`UPDATE tasks SET created_at = $1::timestamptz - (10 + id) * interval '1 minute', run_at = $1::timestamptz - (10 + id) * interval '1 minute',
			updated_at = $1::timestamptz - id * interval '1 minute',
			finished_at = CASE WHEN finished_at IS NULL THEN NULL ELSE $1::timestamptz - id * interval '1 minute' END,
			lease_expires_at = CASE WHEN lease_expires_at IS NULL THEN NULL ELSE $1::timestamptz - id * interval '1 minute' END`,
		`UPDATE task_attempts SET started_at = $1::timestamptz - (5 + task_id) * interval '1 minute' + lease_token * interval '10 seconds',
			ended_at = CASE WHEN ended_at IS NULL THEN NULL
				ELSE $1::timestamptz - (5 + task_id) * interval '1 minute' + lease_token * interval '10 seconds' + interval '2 seconds' END`,
	} {
		_, err := e.DB.Exec(ctx, q, epoch)
		must(err)
	}
	s := &seeded{DBStore: NewDBStore(e.DB), Claims: claims.New(e.DB), Registry: registry.New(e.DB), Ledger: ledger.New(e.DB),
		Outbox: outbox.NewStore(e.DB), DB: e.DB}
	s.Operator.PinClock(func() time.Time { return epoch })
	s.Claims.Now = func() time.Time { return epoch }
	s.Registry.Now = s.Claims.Now
	return s
}

// recordSuccesses writes the attempt record of every success its task's
// row holds (attempt_records), as a trigger would once the row moves on:
// a seed that renumbers tokens and times in task_attempts then reaches
// every attempt.
const recordSuccesses = `INSERT INTO task_attempts (task_id, lease_token, attempt, generation, worker, started_at, ended_at, outcome, error)
	SELECT task_id, lease_token, attempt, generation, worker, started_at, ended_at, outcome, error FROM attempt_records r
	WHERE NOT EXISTS (SELECT FROM task_attempts a WHERE a.task_id = r.task_id AND a.lease_token = r.lease_token)`
