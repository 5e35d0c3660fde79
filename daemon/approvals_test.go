package daemon_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/agentledger/agentledger"
	"github.com/agentledger/agentledger/agentledgertest/downstream"
	"github.com/agentledger/agentledger/approvals"
	"github.com/agentledger/agentledger/claims"
	"github.com/agentledger/agentledger/daemon"
	"github.com/agentledger/agentledger/grants"
	"github.com/agentledger/agentledger/internal/test/testdaemon"
	"github.com/agentledger/agentledger/internal/test/testdb"
	"github.com/agentledger/agentledger/metrics"
	"github.com/agentledger/agentledger/operator"
	"github.com/agentledger/agentledger/tools"
)

// A step declared "approve" waits for a person, holding no lease and using
// no attempt; approved, its effect runs once; a replay is served from the
// ledger and asks nobody; a re-run, a new intent, asks again, and denied,
// the step is not performed and the task fails for good saying who
// decided; a replay of it then is refused, the denial standing.
func TestApprovalGateOnAStep(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	m := metrics.New()
	db, down := runGateDaemon(t, func(c *daemon.Config, downURL string) {
		c.Hooks = daemon.Hooks{Metrics: m}
	})
	store, gates := claims.New(db), approvals.NewStore(db)
	payload := fmt.Sprintf(`{"steps":[{"tool":"http_request","args":{"method":"POST","url":%q,"body":{"refund":7}},
		"approve":{"approvers":["U1"],"timeout":"1h"}}]}`, down.URL+"/refunds")
	r, err := store.Enqueue(ctx, claims.EnqueueParams{Kind: "steps", Payload: json.RawMessage(payload), MaxAttempts: 1})
	if err != nil {
		t.Fatal(err)
	}
	id := r.Task.ID

	pending := waitRequest(t, gates, id)
	task := waitTask(t, store, id, func(t *agentledger.Task) bool { return t.State == agentledger.StateWaiting && t.WaitReason != "" })
	if task.Attempt != 0 || !strings.HasPrefix(task.WaitReason, fmt.Sprintf("waiting for approval %d of http_request POST %s/refunds (approvers U1)", pending.ID, down.URL)) {
		t.Fatalf("waiting task: attempt %d, reason %q", task.Attempt, task.WaitReason)
	}
	if !strings.Contains(string(pending.Call), `"refund": 7`) || pending.Class != "keyed" || down.Hits() != 0 {
		t.Fatalf("request %+v, %d calls made before the decision", pending, down.Hits())
	}

	if _, won, err := gates.Decide(ctx, approvals.Decision{ID: pending.ID, Approve: true, By: "alice", Via: "agentctl", Reason: "checked"}); err != nil || !won {
		t.Fatalf("approve: %v %v", won, err)
	}
	waitTask(t, store, id, func(t *agentledger.Task) bool { return t.State == agentledger.StateSucceeded })
	if down.Effects() != 1 {
		t.Fatalf("%d effects after the approval, want 1", down.Effects())
	}
	if n := testutil.CollectAndCount(m.Registry, "agentledger_approval_wait_seconds"); n != 1 {
		t.Fatalf("%d approval wait series after one decision, want 1", n)
	}

	// A replay: served from the ledger, nobody asked.
	if _, err := operator.New(db).Replay(ctx, "", id); err != nil {
		t.Fatal(err)
	}
	waitTask(t, store, id, func(t *agentledger.Task) bool {
		return t.State == agentledger.StateSucceeded && t.UpdatedAt.After(task.UpdatedAt)
	})
	if all, _ := gates.List(ctx, approvals.ListParams{TaskID: id, States: []string{approvals.Pending, approvals.Approved, approvals.Denied}}); len(all) != 1 || down.Effects() != 1 {
		t.Fatalf("after the replay: %d requests, %d effects; want 1 and 1", len(all), down.Effects())
	}

	// A re-run asks again; denied, nothing is performed.
	if _, err := operator.New(db).Rerun(ctx, "", id); err != nil {
		t.Fatal(err)
	}
	again := waitRequest(t, gates, id)
	if again.ID == pending.ID || again.Generation != pending.Generation+1 {
		t.Fatalf("the re-run's request %+v, want a new one of generation %d", again, pending.Generation+1)
	}
	if _, won, err := gates.Decide(ctx, approvals.Decision{ID: again.ID, By: "U1", Via: "slack", Reason: "not this time"}); err != nil || !won {
		t.Fatalf("deny: %v %v", won, err)
	}
	dead := waitTask(t, store, id, func(t *agentledger.Task) bool { return t.State == agentledger.StateDead })
	if want := fmt.Sprintf("approval request %d denied by U1 (slack): not this time", again.ID); !strings.Contains(dead.LastError, want) {
		t.Fatalf("last error %q, want it to say %q", dead.LastError, want)
	}
	if down.Effects() != 1 {
		t.Fatalf("%d effects after the denial, want 1", down.Effects())
	}

	// The denial stands for the generation: a replay of the denied steps
	// task would fail as it did, and is refused, the task left dead; the
	// wait that decision took is observed once.
	for range 2 {
		var refused *operator.RefusedStepError
		if _, err := operator.New(db).Replay(ctx, "", id); !errors.As(err, &refused) || refused.Request.ID != again.ID {
			t.Fatalf("replay of the denied task: %v, want it refused at request %d", err, again.ID)
		}
	}
	if got, err := store.Get(ctx, "", id); err != nil || got.State != agentledger.StateDead || !got.UpdatedAt.Equal(dead.UpdatedAt) {
		t.Fatalf("after the refused replays the task is %+v (%v), want it dead as it was", got, err)
	}
	if n := approvalWaits(t, m, "slack", approvals.Denied); n != 1 {
		t.Fatalf("the denial's wait observed %d times after two replays, want once", n)
	}
	if n := approvalWaits(t, m, "agentctl", approvals.Approved); n != 1 {
		t.Fatalf("the approval's wait observed %d times after a replay, want once", n)
	}
}

// approvalWaits is how many decisions via, of outcome, m observed the wait
// of.
func approvalWaits(t *testing.T, m *metrics.Metrics, via, outcome string) uint64 {
	t.Helper()
	families, err := m.Registry.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range families {
		if f.GetName() != "agentledger_approval_wait_seconds" {
			continue
		}
		for _, s := range f.GetMetric() {
			labels := map[string]string{}
			for _, l := range s.GetLabel() {
				labels[l.GetName()] = l.GetValue()
			}
			if labels["via"] == via && labels["outcome"] == outcome {
				return s.GetHistogram().GetSampleCount()
			}
		}
	}
	return 0
}

// waitRequest waits for task id's pending approval request.
func waitRequest(t *testing.T, s *approvals.Store, id int64) approvals.Request {
	t.Helper()
	for range 400 {
		rs, err := s.List(context.Background(), approvals.ListParams{TaskID: id})
		if err != nil {
			t.Fatal(err)
		}
		if len(rs) == 1 {
			return rs[0]
		}
		time.Sleep(25 * time.Millisecond) // polling another goroutine's work: nothing signals it
	}
	t.Fatalf("task %d asked for no approval within 10 s", id)
	return approvals.Request{}
}

// waitTask waits until task id is as ok says.
func waitTask(t *testing.T, s *claims.Store, id int64, ok func(*agentledger.Task) bool) *agentledger.Task {
	t.Helper()
	for range 400 {
		task, err := s.Get(context.Background(), "", id)
		if err != nil {
			t.Fatal(err)
		}
		if ok(task) {
			return task
		}
		time.Sleep(25 * time.Millisecond) // polling the daemon's work: nothing signals it
	}
	task, _ := s.Get(context.Background(), "", id)
	t.Fatalf("task %d is not as expected within 10 s: %+v", id, task)
	return nil
}

// A request nobody decides in time is decided by its timeout: deny (the
// default) fails the step unperformed, saying it timed out; a gate whose
// timeout approves performs it.
func TestApprovalTimeout(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db, down := runGateDaemon(t, nil)
	store := claims.New(db)
	submit := func(onTimeout string, n int) int64 {
		payload := fmt.Sprintf(`{"steps":[{"tool":"http_request","args":{"method":"POST","url":%q,"body":{"n":%d}},
			"approve":{"timeout":"1s","on_timeout":%q}}]}`, down.URL+"/x", n, onTimeout)
		r, err := store.Enqueue(ctx, claims.EnqueueParams{Kind: "steps", Payload: json.RawMessage(payload), MaxAttempts: 1})
		if err != nil {
			t.Fatal(err)
		}
		return r.Task.ID
	}
	denied, approved := submit("deny", 1), submit("approve", 2)
	dead := waitTask(t, store, denied, func(t *agentledger.Task) bool { return t.State == agentledger.StateDead })
	if !strings.Contains(dead.LastError, "timed out: no decision by") {
		t.Fatalf("the timed-out step's error %q", dead.LastError)
	}
	waitTask(t, store, approved, func(t *agentledger.Task) bool { return t.State == agentledger.StateSucceeded })
	if down.Effects() != 1 {
		t.Fatalf("%d effects, want 1 (the gate whose timeout approves)", down.Effects())
	}
}

// The daemon's policy gates calls their payloads do not: a tool it names
// (agentd's --approve-tools) and, with ApproveUnsafe, every unsafe effect.
func TestApprovalPolicy(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	gate := &tools.Approval{Approvers: []string{"U9"}, Timeout: time.Hour, OnTimeout: "deny"}
	db, down := runGateDaemon(t, func(c *daemon.Config, downURL string) {
		c.HTTPTools.UnsafeAllowedHosts = []string{downURL}
		c.Policy = daemon.Policy{ApproveUnsafe: true, Approval: gate, ToolApprovals: map[string]*tools.Approval{"notify": gate}}
	})
	store, gates := claims.New(db), approvals.NewStore(db)
	submit := func(payload string) int64 {
		r, err := store.Enqueue(ctx, claims.EnqueueParams{Kind: "steps", Payload: json.RawMessage(payload)})
		if err != nil {
			t.Fatal(err)
		}
		return r.Task.ID
	}
	unsafe := submit(fmt.Sprintf(`{"steps":[{"tool":"unsafe_http","args":{"method":"POST","url":%q}}]}`, down.URL+"/legacy"))
	named := submit(`{"steps":[{"tool":"notify","args":{"channel":"ops","text":"hi"}}]}`)
	free := submit(fmt.Sprintf(`{"steps":[{"tool":"http_request","args":{"method":"POST","url":%q}}]}`, down.URL+"/keyed"))
	for _, id := range []int64{unsafe, named} {
		r := waitRequest(t, gates, id)
		if len(r.Approvers) != 1 || r.Approvers[0] != "U9" {
			t.Fatalf("task %d's request %+v, want the policy's approvers", id, r)
		}
	}
	waitTask(t, store, free, func(t *agentledger.Task) bool { return t.State == agentledger.StateSucceeded })
	if rs, _ := gates.List(ctx, approvals.ListParams{TaskID: free}); len(rs) != 0 || down.Effects() != 1 {
		t.Fatalf("an ungated call asked %d times; %d effects", len(rs), down.Effects())
	}
}

// A tenant's grant can ask a person's approval before its calls to a
// host, whatever its payloads declare; another tenant's calls there go
// through.
func TestApprovalAskedByTheGrant(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db, down := runGateDaemon(t, nil)
	if err := grants.NewStore(db).Put(ctx, "acme", &grants.Grant{AllKinds: true, Tools: []string{"http_request"},
		Hosts: []grants.Host{{URL: down.URL}}, Approve: &grants.Approve{Hosts: []string{down.URL}}}); err != nil {
		t.Fatal(err)
	}
	store, gates := claims.New(db), approvals.NewStore(db)
	submit := func(tenant string) int64 {
		payload := fmt.Sprintf(`{"steps":[{"tool":"http_request","args":{"method":"POST","url":%q,"body":{"by":%q}}}]}`, down.URL+"/x", tenant)
		r, err := store.Enqueue(ctx, claims.EnqueueParams{Tenant: tenant, Kind: "steps", Payload: json.RawMessage(payload)})
		if err != nil {
			t.Fatal(err)
		}
		return r.Task.ID
	}
	asked, free := submit("acme"), submit("default")
	waitRequest(t, gates, asked)
	waitTask(t, store, free, func(t *agentledger.Task) bool { return t.State == agentledger.StateSucceeded })
	if got := waitTask(t, store, asked, func(t *agentledger.Task) bool { return t.State == agentledger.StateWaiting }); got.Attempt != 0 || down.Effects() != 1 {
		t.Fatalf("acme's call: %s at attempt %d; %d effects, want the other tenant's only", got.State, got.Attempt, down.Effects())
	}
}

// runGateDaemon runs a daemon whose HTTP tools may call a counting
// downstream, tweaked by tweak (given its URL; nil: as it is), on a new database; it
// returns the database and the downstream.
func runGateDaemon(t *testing.T, tweak func(c *daemon.Config, down string)) (*pgxpool.Pool, *downstream.Server) {
	t.Helper()
	url := testdb.URL(t)
	down := downstream.New()
	t.Cleanup(down.Close)
	cfg := daemon.Config{
		Database:    daemon.Database{URL: url},
		Worker:      daemon.Worker{PollInterval: 50 * time.Millisecond},
		Maintenance: daemon.Maintenance{NoCron: true, NoJanitor: true},
		HTTPTools:   daemon.HTTPTools{AllowedHosts: []string{down.URL}},
		Logger:      quiet(),
		Stdout:      io.Discard,
	}
	if tweak != nil {
		tweak(&cfg, down.URL)
	}
	testdaemon.Run(t, daemon.New(cfg))
	return testdb.Open(t, url), down
}
