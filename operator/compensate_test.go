package operator_test

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/agentledger/agentledger"
	"github.com/agentledger/agentledger/claims"
	"github.com/agentledger/agentledger/internal/test/testenv"
	"github.com/agentledger/agentledger/ledger"
	"github.com/agentledger/agentledger/operator"
	"github.com/agentledger/agentledger/tools"
)

// sagaPayload: steps 0 and 1 declare compensations, step 2 does not.
const sagaPayload = `{"steps": [
	{"tool": "http_request", "args": {"url": "https://a.example/charges"}, "compensate": {"tool": "http_request", "args": {"url": "https://a.example/refunds"}}},
	{"tool": "http_request", "args": {"url": "https://b.example/rooms"}, "compensate": {"tool": "notify", "args": {"text": "${self.body.id}"}}},
	{"tool": "notify", "args": {"text": "done"}}]}`

// doEffect performs a keyed effect of the running task at step.
func doEffect(t *testing.T, e *testenv.Env, running *agentledger.Task, step string, undoBy string, body string) {
	t.Helper()
	if _, err := e.Ledger.Do(context.Background(), tools.AttemptOf(running), ledger.Effect{Operation: "http.post", StepPath: step,
		Class: ledger.Keyed, Request: []byte(`{}`), Compensate: compensation(undoBy),
		Perform: func(context.Context, ledger.Call) (ledger.Result, error) {
			return ledger.Result{Status: 200, Body: json.RawMessage(body)}, nil
		},
	}); err != nil {
		t.Fatal(err)
	}
}

// The plan lists the completed effects whose steps declared a compensation,
// newest first, with the tool that undoes each; Compensate starts the
// phase, after which the plan is refused like a second Compensate.
func TestPlanCompensation(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	e := testenv.New(t)
	svc := operator.New(e.DB)
	task := e.Enqueue(claims.EnqueueParams{Tenant: "acme", Payload: json.RawMessage(sagaPayload)})
	running := e.Claim("w")
	if _, err := svc.PlanCompensation(ctx, "", task.ID); !errors.Is(err, agentledger.ErrConflict) {
		t.Fatalf("plan of a running task: %v, want a conflict", err)
	}
	doEffect(t, e, running, "tool/0", "http_request", `{"id":"ch_1"}`)
	doEffect(t, e, running, "tool/1", "notify", `{"id":"rm_2"}`)
	doEffect(t, e, running, "tool/2", "", `{}`)
	e.Succeed(running)

	p, err := svc.PlanCompensation(ctx, "acme", task.ID)
	if err != nil {
		t.Fatal(err)
	}
	if len(p.Undos) != 2 || p.Undos[0].Step != "tool/1" || p.Undos[0].Tool != "notify" ||
		p.Undos[1].Step != "tool/0" || p.Undos[1].Tool != "http_request" || !strings.Contains(string(p.Undos[1].Result), "ch_1") {
		t.Fatalf("plan: %+v", p.Undos)
	}
	if _, err := svc.PlanCompensation(ctx, "other", task.ID); !errors.Is(err, agentledger.ErrNotFound) {
		t.Fatalf("another tenant's plan: %v, want not found", err)
	}
	// An effect of unknown outcome was in flight after every completion:
	// newest, and listed first.
	if _, err := e.DB.Exec(ctx, `UPDATE ledger SET state = 'unknown', completed_at = NULL WHERE task_id = $1 AND step_path = 'tool/0'`, task.ID); err != nil {
		t.Fatal(err)
	}
	if p, err := svc.PlanCompensation(ctx, "acme", task.ID); err != nil || len(p.Undos) != 2 || p.Undos[0].Step != "tool/0" {
		t.Fatalf("plan with tool/0 unknown: %+v %v", p, err)
	}
	if _, err := e.DB.Exec(ctx, `UPDATE ledger SET state = 'completed', completed_at = now() - interval '1 hour' WHERE task_id = $1 AND step_path = 'tool/0'`, task.ID); err != nil {
		t.Fatal(err)
	}

	got, err := svc.Compensate(ctx, "acme", task.ID)
	if err != nil || got.State != agentledger.StateCompensating || got.Compensation != "operator" {
		t.Fatalf("compensate: %+v %v", got, err)
	}
	if _, err := svc.PlanCompensation(ctx, "", task.ID); !errors.Is(err, agentledger.ErrConflict) {
		t.Fatalf("plan of a compensating task: %v, want a conflict", err)
	}
	if _, err := svc.Compensate(ctx, "", task.ID); !errors.Is(err, agentledger.ErrConflict) {
		t.Fatalf("second compensate: %v, want a conflict", err)
	}
}

// A task whose steps declared no compensation has an empty plan, and
// Compensate refuses it.
func TestPlanCompensationNothing(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	e := testenv.New(t)
	svc := operator.New(e.DB)
	task := e.Enqueue(claims.EnqueueParams{Payload: json.RawMessage(`{"steps": [{"tool": "http_request", "args": {}}]}`)})
	running := e.Claim("w")
	doEffect(t, e, running, "tool/0", "", `{}`)
	e.Succeed(running)
	if p, err := svc.PlanCompensation(ctx, "", task.ID); err != nil || len(p.Undos) != 0 {
		t.Fatalf("plan: %+v %v", p, err)
	}
	if _, err := svc.Compensate(ctx, "", task.ID); !errors.Is(err, agentledger.ErrConflict) {
		t.Fatalf("compensate: %v, want a conflict", err)
	}
}

// compensation is the compensation an effect declares: a call of tool, or
// none when tool is empty.
func compensation(tool string) json.RawMessage {
	if tool == "" {
		return nil
	}
	return json.RawMessage(`{"tool":"` + tool + `","args":{}}`)
}

// A compensation refused for good parks the task; the operator who undid
// the effect by hand resolves it as done, and the task goes on undoing.
// Resolving it as "retry" is refused with what to do instead.
func TestResolveFailedCompensation(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	e := testenv.New(t)
	svc := operator.New(e.DB)
	task := e.Enqueue(claims.EnqueueParams{Payload: json.RawMessage(sagaPayload)})
	running := e.Claim("w")
	doEffect(t, e, running, "tool/0", "http_request", `{"id":"ch_1"}`)
	if st, err := e.Claims.Fail(ctx, claims.Failure{Lease: claims.LeaseOf(running), Error: "courier refused", Final: true}); err != nil || st != agentledger.StateCompensating {
		t.Fatalf("fail: %s %v", st, err)
	}
	undo := e.Claim("w")
	_, err := e.Ledger.Do(ctx, tools.AttemptOf(undo), ledger.Effect{Operation: "http_request", StepPath: "compensate/tool/0",
		Class: ledger.Keyed, Request: []byte(`{}`),
		Perform: func(context.Context, ledger.Call) (ledger.Result, error) {
			return ledger.Result{Status: 422}, agentledger.Permanent(errors.New("card closed"))
		}})
	if st, ferr := e.Claims.Fail(ctx, claims.Failure{Lease: claims.LeaseOf(undo), Error: err.Error(), Final: true}); ferr != nil || st != agentledger.StateNeedsAttention {
		t.Fatalf("failed compensation: %s %v", st, ferr)
	}
	_, err = svc.Resolve(ctx, "", task.ID, "compensate/tool/0", operator.Resolution{Note: "try again"})
	if !errors.Is(err, agentledger.ErrInvalid) || !strings.Contains(err.Error(), "replay task") {
		t.Fatalf("retry of a failed compensation: %v", err)
	}
	got, err := svc.Resolve(ctx, "", task.ID, "compensate/tool/0", operator.Resolution{Done: true, Note: "refunded by hand"})
	if err != nil || got.State != agentledger.StateCompensating {
		t.Fatalf("resolve done: %v %+v", err, got)
	}
	for _, en := range e.Journal(got) {
		if en.StepPath == "compensate/tool/0" && (en.State != ledger.StateCompleted || en.Note != "refunded by hand") {
			t.Fatalf("compensation after resolve: %s %q", en.State, en.Note)
		}
	}
}

// Each undo carries the call it sends: the declared arguments with the
// effect's result filled in, or as declared when the result lacks what
// they name.
func TestPlanCompensationArgs(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	e := testenv.New(t)
	svc := operator.New(e.DB)
	task := e.Enqueue(claims.EnqueueParams{Payload: json.RawMessage(sagaPayload)})
	running := e.Claim("w")
	for _, d := range []struct{ step, undo string }{
		{"tool/0", `{"tool":"notify","args":{"text":"refund ${self.body.id}"}}`},
		{"tool/1", `{"tool":"notify","args":{"text":"release ${self.body.nope}"}}`},
	} {
		if _, err := e.Ledger.Do(ctx, tools.AttemptOf(running), ledger.Effect{Operation: "http.post", StepPath: d.step,
			Class: ledger.Keyed, Request: []byte(`{}`), Compensate: json.RawMessage(d.undo),
			Perform: func(context.Context, ledger.Call) (ledger.Result, error) {
				return ledger.Result{Status: 200, Body: json.RawMessage(`{"id":"ch_1"}`)}, nil
			},
		}); err != nil {
			t.Fatal(err)
		}
	}
	e.Succeed(running)
	p, err := svc.PlanCompensation(ctx, "", task.ID)
	if err != nil {
		t.Fatal(err)
	}
	args := map[string]string{}
	for _, u := range p.Undos {
		var a struct{ Text string }
		if err := json.Unmarshal(u.Args, &a); err != nil {
			t.Fatalf("%s: %s: %v", u.Step, u.Args, err)
		}
		args[u.Step] = a.Text
	}
	if args["tool/0"] != "refund ch_1" || args["tool/1"] != "release ${self.body.nope}" {
		t.Errorf("the undos' calls: %v", args)
	}
}

// requester is task id's compensation_requested_by as stored: "NULL" for
// none.
func requester(t *testing.T, e *testenv.Env, id int64) string {
	t.Helper()
	var by *string
	if err := e.DB.QueryRow(context.Background(), `SELECT compensation_requested_by FROM tasks WHERE id = $1`, id).Scan(&by); err != nil {
		t.Fatal(err)
	}
	if by == nil {
		return "NULL"
	}
	return *by
}

// CompensateBy records who asked beside the compensation, and Show reads
// it back; a replay that continues the compensation keeps it, a re-run
// clears it with the compensation, and a compensation no one asked for (a
// failure) has none.
func TestCompensateRecordsWhoAsked(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	e := testenv.New(t)
	svc := operator.New(e.DB)
	svc.PinClock(e.Now) // the phase is due when the env's claims look
	task := e.Enqueue(claims.EnqueueParams{Tenant: "acme", Payload: json.RawMessage(sagaPayload)})
	running := e.Claim("w")
	doEffect(t, e, running, "tool/0", "http_request", `{"id":"ch_1"}`)
	e.Succeed(running)

	got, err := svc.CompensateBy(ctx, "acme", task.ID, operator.Actor("alice"))
	if err != nil || got.State != agentledger.StateCompensating || got.Compensation != "operator" {
		t.Fatalf("compensate: %+v %v", got, err)
	}
	if by := requester(t, e, task.ID); by != "operator:alice" {
		t.Fatalf("compensation_requested_by = %s, want operator:alice", by)
	}
	d, err := svc.Show(ctx, "acme", task.ID)
	if err != nil || d.CompensationRequestedBy != "operator:alice" {
		t.Fatalf("show: %q %v", d.CompensationRequestedBy, err)
	}
	if _, err := svc.CompensationRequester(ctx, "globex", task.ID); !errors.Is(err, agentledger.ErrNotFound) {
		t.Fatalf("another tenant's requester: %v, want not found", err)
	}

	// The compensation fails for good and parks; the replay that goes on
	// undoing goes on with alice's request.
	undo := e.Claim("w")
	if st, err := e.Claims.Fail(ctx, claims.Failure{Lease: claims.LeaseOf(undo), Error: "refund refused", Final: true}); err != nil || st != agentledger.StateNeedsAttention {
		t.Fatalf("failed compensation: %s %v", st, err)
	}
	if p, err := svc.Replay(ctx, "", task.ID); err != nil || p.Task.State != agentledger.StateCompensating {
		t.Fatalf("replay: %+v %v", p, err)
	}
	if by := requester(t, e, task.ID); by != "operator:alice" {
		t.Fatalf("after the replay: compensation_requested_by = %s, want operator:alice", by)
	}

	// Undone, then re-run: a new intent on its forward path, asked by no
	// one; its failure's compensation is no one's request either.
	e.Succeed(e.Claim("w"))
	if got, err := svc.Rerun(ctx, "", task.ID); err != nil || got.Compensation != "" {
		t.Fatalf("rerun: %+v %v", got, err)
	}
	if by := requester(t, e, task.ID); by != "NULL" {
		t.Fatalf("after the re-run: compensation_requested_by = %s, want NULL", by)
	}
	running = e.Claim("w")
	doEffect(t, e, running, "tool/0", "http_request", `{"id":"ch_2"}`)
	if st, err := e.Claims.Fail(ctx, claims.Failure{Lease: claims.LeaseOf(running), Error: "courier refused", Final: true}); err != nil || st != agentledger.StateCompensating {
		t.Fatalf("fail: %s %v", st, err)
	}
	if d, err := svc.Show(ctx, "", task.ID); err != nil || d.Task.Compensation != "failed" || d.CompensationRequestedBy != "" {
		t.Fatalf("a failure's compensation: %q asked by %q, %v", d.Task.Compensation, d.CompensationRequestedBy, err)
	}
}

// Compensate names no one: it records no requester, and Show says none.
func TestCompensateNamesNoOne(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	e := testenv.New(t)
	svc := operator.New(e.DB)
	other := e.Enqueue(claims.EnqueueParams{Payload: json.RawMessage(sagaPayload)})
	running := e.Claim("w")
	doEffect(t, e, running, "tool/0", "http_request", `{"id":"ch_3"}`)
	e.Succeed(running)
	if _, err := svc.Compensate(ctx, "", other.ID); err != nil {
		t.Fatal(err)
	}
	if by := requester(t, e, other.ID); by != "NULL" {
		t.Fatalf("Compensate's compensation_requested_by = %s, want NULL", by)
	}
	if d, err := svc.Show(ctx, "", other.ID); err != nil || d.Task.Compensation != "operator" || d.CompensationRequestedBy != "" {
		t.Fatalf("show: %q asked by %q, %v", d.Task.Compensation, d.CompensationRequestedBy, err)
	}
}
