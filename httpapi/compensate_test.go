package httpapi_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/agentledger/agentledger"
	"github.com/agentledger/agentledger/claims"
	"github.com/agentledger/agentledger/httpapi"
	"github.com/agentledger/agentledger/ledger"
	"github.com/agentledger/agentledger/operator"
	"github.com/agentledger/agentledger/tools"
)

// TestCompensateTask: POST /v1/tasks/{id}/compensate starts the
// compensation phase of a succeeded task with a compensable effect (202,
// keyed like the other actions); a second request, a task with nothing to
// undo and a queued task are 409; another tenant's task is 404. GET
// /v1/tasks/{id}/journal then lists the compensation beside its effect.
func TestCompensateTask(t *testing.T) {
	t.Parallel()
	e := newEnv(t, httpapi.Config{})
	tok := e.tenant("acme")
	other := e.tenant("globex")
	ctx := context.Background()

	saga := e.finishedSteps("acme", `{"steps": [{"tool": "http_request", "args": {},
		"compensate": {"tool": "http_request", "args": {"ref": "${self.body.id}"}}}]}`, true)
	plain := e.finishedSteps("acme", `{"steps": [{"tool": "http_request", "args": {}}]}`, false)
	queued := e.enqueue(claims.EnqueueParams{Tenant: "acme"})

	path := fmt.Sprintf("/v1/tasks/%d/compensate", saga)
	e.problem(e.post(path, other, "g1", ""), http.StatusNotFound, "not_found")
	r := e.post(path, tok, "c1", "")
	v := e.task(r, http.StatusAccepted)
	if v.State != "compensating" || v.Compensation == nil || *v.Compensation != "operator" {
		t.Errorf("compensate: %+v", v)
	}
	if again := e.post(path, tok, "c1", ""); !again.replayed() || string(again.body) != string(r.body) {
		t.Errorf("compensate retry: %d replayed=%v", again.status, again.replayed())
	}
	if p := e.problem(e.post(path, tok, "c2", ""), http.StatusConflict, "conflict"); p.Detail == "" {
		t.Errorf("second compensate: %+v", p)
	}
	e.problem(e.post(fmt.Sprintf("/v1/tasks/%d/compensate", plain), tok, "c3", ""), http.StatusConflict, "conflict")
	e.problem(e.post(fmt.Sprintf("/v1/tasks/%d/compensate", queued), tok, "c4", ""), http.StatusConflict, "conflict")
	e.problem(e.post(path, tok, "c5", `{"now":true}`), http.StatusUnprocessableEntity, "invalid_request")
	e.problem(e.post("/v1/tasks/999999/compensate", tok, "c6", ""), http.StatusNotFound, "not_found")

	if got, err := e.claims.Get(ctx, "acme", plain); err != nil || got.State != "succeeded" {
		t.Errorf("the refused task changed: %+v %v", got, err)
	}

	// The journal lists the compensation beside the effect it undoes.
	claimed, err := e.claims.Claim(ctx, claims.ClaimParams{Queue: claims.DefaultQueue, Worker: "w", Limit: 5, Lease: time.Hour})
	var undo *agentledger.Task
	for _, c := range claimed {
		if c.ID == saga {
			undo = c
		}
	}
	if err != nil || undo == nil || undo.Compensation != "operator" {
		t.Fatalf("claim of the compensation: %v %v", claimed, err)
	}
	if _, err := ledger.New(e.db).Do(ctx, tools.AttemptOf(undo), ledger.Effect{Operation: "http.post", StepPath: "compensate/tool/0",
		Class: ledger.Keyed, Request: []byte(`{"ref":"ch_1"}`),
		Perform: func(context.Context, ledger.Call) (ledger.Result, error) {
			return ledger.Result{Status: 201, Body: json.RawMessage(`{"id":"re_1"}`)}, nil
		}}); err != nil {
		t.Fatal(err)
	}
	// A rule's post about the task is the operator's: not in the tenant's journal.
	if _, err := ledger.New(e.db).Do(ctx, tools.AttemptOf(undo), ledger.Effect{Operation: "notify.post", StepPath: "notify/ops",
		Class: ledger.Keyed, Request: []byte(`{"channel":"ops-private"}`),
		Perform: func(context.Context, ledger.Call) (ledger.Result, error) {
			return ledger.Result{ExternalRef: "C123:1.2"}, nil
		}}); err != nil {
		t.Fatal(err)
	}
	jpath := fmt.Sprintf("/v1/tasks/%d/journal", saga)
	e.problem(e.do("GET", jpath, other, ""), http.StatusNotFound, "not_found")
	jr := e.do("GET", jpath, tok, "")
	var j struct {
		Task    int64
		Effects []httpapi.Effect
	}
	if err := json.Unmarshal(jr.body, &j); err != nil || jr.status != http.StatusOK || j.Task != saga || len(j.Effects) != 2 ||
		j.Effects[0].Step != "tool/0" || j.Effects[1].Step != "compensate/tool/0" || j.Effects[1].Undoes != "tool/0" ||
		j.Effects[0].Undoes != "" || string(j.Effects[1].Result) != `{"id":"re_1"}` {
		t.Errorf("journal %d: %s", jr.status, jr.body)
	}
}

// A tenant's compensation records its token as who asked for it, as a
// cancel does; the answer and GET /v1/tasks/{id} say so, and name an
// operator who asked (agentctl, the console) too. A compensation no one
// asked for (a failure), or asked for with no name, names no one.
func TestCompensationRequester(t *testing.T) {
	t.Parallel()
	e := newEnv(t, httpapi.Config{})
	tok := e.tenant("acme")
	ctx := context.Background()
	saga := `{"steps": [{"tool": "http_request", "args": {}, "compensate": {"tool": "http_request", "args": {}}}]}`
	byTenant := e.finishedSteps("acme", saga, true)
	byOperator := e.finishedSteps("acme", saga, true)
	byNoOne := e.finishedSteps("acme", saga, true)
	failed := e.endedSteps("acme", saga, true, "step 1 (http_request) failed: 422")

	v := e.task(e.post(fmt.Sprintf("/v1/tasks/%d/compensate", byTenant), tok, "c1", ""), http.StatusAccepted)
	if v.CompensationRequestedBy == nil || !strings.HasPrefix(*v.CompensationRequestedBy, "tenant:acme, token test (") {
		t.Fatalf("the compensate's answer: asked by %v", v.CompensationRequestedBy)
	}
	want := *v.CompensationRequestedBy
	var stored *string
	if err := e.db.QueryRow(ctx, `SELECT compensation_requested_by FROM tasks WHERE id = $1`, byTenant).Scan(&stored); err != nil ||
		stored == nil || *stored != want {
		t.Fatalf("compensation_requested_by = %v (%v), want %q", stored, err, want)
	}
	op := operator.New(e.db)
	if _, err := op.CompensateBy(ctx, "", byOperator, operator.Actor("alice")); err != nil {
		t.Fatal(err)
	}
	if _, err := op.Compensate(ctx, "", byNoOne); err != nil {
		t.Fatal(err)
	}
	for id, want := range map[int64]string{byTenant: want, byOperator: "operator:alice", byNoOne: "", failed: ""} {
		v := e.task(e.do("GET", fmt.Sprintf("/v1/tasks/%d", id), tok, ""), http.StatusOK)
		if got := v.CompensationRequestedBy; (want == "") != (got == nil) || got != nil && *got != want {
			t.Errorf("task %d (%s): asked by %v, want %q", id, *v.Compensation, got, want)
		}
	}
}

// finishedSteps enqueues a steps task of tenant, performs its step 0
// (compensable or not) and lets it succeed; it returns the task's id.
func (e *env) finishedSteps(tenant, payload string, compensable bool) int64 {
	e.t.Helper()
	return e.endedSteps(tenant, payload, compensable, "")
}

// endedSteps is finishedSteps whose attempt, when failure is set, fails
// for good with it instead of succeeding.
func (e *env) endedSteps(tenant, payload string, compensable bool, failure string) int64 {
	e.t.Helper()
	ctx := context.Background()
	id := e.enqueue(claims.EnqueueParams{Tenant: tenant, Kind: "steps", Payload: json.RawMessage(payload)})
	got, err := e.claims.Claim(ctx, claims.ClaimParams{Queue: claims.DefaultQueue, Worker: "w", Limit: 1, Lease: time.Hour})
	if err != nil || len(got) != 1 || got[0].ID != id {
		e.t.Fatalf("claim: %v %v", got, err)
	}
	if _, err := ledger.New(e.db).Do(ctx, tools.AttemptOf(got[0]), ledger.Effect{Operation: "http.post", StepPath: "tool/0",
		Class: ledger.Keyed, Request: []byte(`{}`), Compensate: undoBy(compensable),
		Perform: func(context.Context, ledger.Call) (ledger.Result, error) {
			return ledger.Result{Status: 200, Body: json.RawMessage(`{"id":"ch_1"}`)}, nil
		},
	}); err != nil {
		e.t.Fatal(err)
	}
	if failure != "" {
		if _, err := e.claims.Fail(ctx, claims.Failure{Lease: claims.LeaseOf(got[0]), Error: failure, Final: true}); err != nil {
			e.t.Fatal(err)
		}
		return id
	}
	if err := e.claims.Succeed(ctx, claims.LeaseOf(got[0]), nil); err != nil {
		e.t.Fatal(err)
	}
	return id
}

// A task undoing its effects tells its tenant why: the forward path's
// failure, which its last error no longer carries once the undo ends.
func TestCompensationCause(t *testing.T) {
	t.Parallel()
	e := newEnv(t, httpapi.Config{})
	tok := e.tenant("acme")
	plain := e.finishedSteps("acme", `{"steps": [{"tool": "http_request", "args": {}}]}`, false)
	id := e.endedSteps("acme", `{"steps": [{"tool": "http_request", "args": {},
		"compensate": {"tool": "http_request", "args": {"ref": "${self.body.id}"}}}]}`, true, "step 1 (http_request) failed: 422 no courier")
	v := e.task(e.do("GET", fmt.Sprintf("/v1/tasks/%d", id), tok, ""), http.StatusOK)
	if v.State != "compensating" || v.CompensationCause == nil || *v.CompensationCause != "step 1 (http_request) failed: 422 no courier" {
		t.Errorf("a compensating task: %s, cause %v", v.State, v.CompensationCause)
	}
	if v := e.task(e.do("GET", fmt.Sprintf("/v1/tasks/%d", plain), tok, ""), http.StatusOK); v.CompensationCause != nil {
		t.Errorf("a task on its forward path: cause %q", *v.CompensationCause)
	}
	// Undone: the cause stays, and a replay is refused with the way an
	// API client has to a new intent (it has no re-run).
	ctx := context.Background()
	undo, err := e.claims.Claim(ctx, claims.ClaimParams{Queue: claims.DefaultQueue, Worker: "w", Limit: 1, Lease: time.Hour})
	if err != nil || len(undo) != 1 || undo[0].ID != id {
		t.Fatalf("claim of the compensation: %v %v", undo, err)
	}
	if err := e.claims.Succeed(ctx, claims.LeaseOf(undo[0]), json.RawMessage(`{"compensations":[]}`)); err != nil {
		t.Fatal(err)
	}
	if v := e.task(e.do("GET", fmt.Sprintf("/v1/tasks/%d", id), tok, ""), http.StatusOK); v.State != "compensated" || v.CompensationCause == nil {
		t.Errorf("a compensated task: %s, cause %v", v.State, v.CompensationCause)
	}
	p := e.problem(e.post(fmt.Sprintf("/v1/tasks/%d/replay", id), tok, "r1", ""), http.StatusConflict, "conflict")
	if !strings.Contains(p.Detail, "submit it again as a new task") || strings.Contains(p.Detail, "re-run") {
		t.Errorf("replay of a compensated task: %q", p.Detail)
	}
}

// undoBy is the compensation a compensable effect declares.
func undoBy(compensable bool) json.RawMessage {
	if !compensable {
		return nil
	}
	return json.RawMessage(`{"tool":"http_request","args":{}}`)
}
