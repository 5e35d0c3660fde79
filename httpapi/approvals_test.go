package httpapi_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agentledger/agentledger/approvals"
	"github.com/agentledger/agentledger/claims"
	"github.com/agentledger/agentledger/grants"
	"github.com/agentledger/agentledger/httpapi"
)

// ask records a pending approval request of a new task of tenant, as the
// gate does, and returns its id.
func (e *env) ask(tenant, call string) int64 {
	e.t.Helper()
	task := e.enqueue(claims.EnqueueParams{Tenant: tenant, Kind: "steps"})
	r, _, err := approvals.NewStore(e.db).Ensure(context.Background(), approvals.Request{TaskID: task, Generation: 1,
		Step: "tool/0", Tenant: tenant, Tool: "http_request", Class: "keyed", Call: json.RawMessage(call),
		Approvers: []string{"U1"}, OnTimeout: "deny"}, time.Hour)
	if err != nil {
		e.t.Fatal(err)
	}
	return r.ID
}

// approval decodes an approval answer with the wanted status.
func (e *env) approval(r resp, status int) httpapi.Approval {
	e.t.Helper()
	if r.status != status {
		e.t.Fatalf("status %d, want %d: %s", r.status, status, r.body)
	}
	var v httpapi.Approval
	if err := json.Unmarshal(r.body, &v); err != nil {
		e.t.Fatalf("not an approval: %v: %s", err, r.body)
	}
	return v
}

// A tenant reads and decides its own tasks' approval requests, and only
// once its grant lets it decide: without it a decision is 403 naming
// --decide and stores nothing. A decision needs an Idempotency-Key and is
// replayed under it; a denial needs a reason; a later decision is 409
// with the request as the first left it; another tenant's request is 404.
func TestDecideApprovals(t *testing.T) {
	t.Parallel()
	e, token := grantedEnv(t, &grants.Grant{AllKinds: true})
	other := e.tenant("globex")
	id := e.ask("acme", `{"method":"POST","url":"https://pay.example/refunds","body":{"amount":120}}`)
	theirs := e.ask("globex", `{}`)
	path := fmt.Sprintf("/v1/approvals/%d", id)

	p := e.problem(e.post(path+"/approve", token, "a1", ""), http.StatusForbidden, "forbidden")
	if !strings.Contains(p.Detail, "agentctl tenant grant acme --decide") {
		t.Errorf("403 detail %q: want the flag named", p.Detail)
	}
	if err := grants.NewStore(e.db).Put(context.Background(), "acme", &grants.Grant{AllKinds: true, Decide: true}); err != nil {
		t.Fatal(err)
	}

	var list httpapi.ApprovalList
	r := e.do("GET", "/v1/approvals", token, "")
	if err := json.Unmarshal(r.body, &list); err != nil || r.status != http.StatusOK || len(list.Approvals) != 1 ||
		list.Approvals[0].ID != id || list.Approvals[0].State != "pending" || list.Approvals[0].DecidedBy != nil {
		t.Fatalf("list %d: %s", r.status, r.body)
	}
	got := e.approval(e.do("GET", path, token, ""), http.StatusOK)
	if string(got.Call) != `{"url":"https://pay.example/refunds","body":{"amount":120},"method":"POST"}` || got.TaskID == 0 ||
		len(got.Approvers) != 1 {
		t.Errorf("get: %+v call %s", got, got.Call)
	}
	e.problem(e.do("GET", fmt.Sprintf("/v1/approvals/%d", theirs), token, ""), http.StatusNotFound, "not_found")
	e.problem(e.do("GET", "/v1/approvals?state=maybe", token, ""), http.StatusBadRequest, "invalid_parameter")
	e.problem(e.do("GET", "/v1/approvals?order=old", token, ""), http.StatusBadRequest, "invalid_parameter")
	e.problem(e.do("GET", "/v1/approvals?state=%ff", token, ""), http.StatusBadRequest, "invalid_parameter")
	// A route that takes no parameters refuses one as the lists do.
	for _, route := range []string{path, fmt.Sprintf("/v1/tasks/%d", got.TaskID), fmt.Sprintf("/v1/tasks/%d/journal", got.TaskID)} {
		if p := e.problem(e.do("GET", route+"?x=1", token, ""), http.StatusBadRequest, "invalid_parameter"); p.Field != "x" ||
			!strings.Contains(p.Detail, "takes none") {
			t.Errorf("%s?x=1: %+v", route, p)
		}
	}

	// Refused before anything is stored or decided.
	e.problem(e.post(path+"/approve", token, "", ""), http.StatusBadRequest, "idempotency_key_missing")
	if p := e.problem(e.post(path+"/deny", token, "d0", `{"reason":" "}`), http.StatusUnprocessableEntity, "invalid_request"); p.Field != "reason" {
		t.Errorf("a denial without a reason: %+v", p)
	}
	e.problem(e.post(path+"/approve", token, "a0", `{"why":"x"}`), http.StatusUnprocessableEntity, "invalid_request")
	// Text no column takes as sent: refused naming the field, not a 500
	// that a retry would meet forever.
	for i, reason := range []string{`a\u0000b`, `a\ud800b`, `a\udc00`, `\ud83d`} {
		p := e.problem(e.post(path+"/deny", token, fmt.Sprintf("n%d", i), `{"reason":"`+reason+`"}`), http.StatusUnprocessableEntity, "invalid_request")
		if p.Field != "reason" || !strings.Contains(p.Detail, "holds a") {
			t.Errorf("reason %s: %+v", reason, p)
		}
	}
	// A field name is echoed cut, not whole.
	if p := e.problem(e.post(path+"/approve", token, "a1", `{"`+strings.Repeat("f", 5000)+`":1}`), http.StatusUnprocessableEntity, "invalid_request"); len(p.Field) > 100 || len(p.Detail) > 300 {
		t.Errorf("a 5000-byte field name echoed: field %d bytes, detail %d bytes", len(p.Field), len(p.Detail))
	}
	e.problem(e.post(fmt.Sprintf("/v1/approvals/%d/approve", theirs), token, "a2", ""), http.StatusNotFound, "not_found")
	e.problem(e.post("/v1/approvals/x7/approve", token, "a3", ""), http.StatusNotFound, "not_found")
	if n := e.count(`SELECT count(*) FROM approvals WHERE state <> 'pending'`); n != 0 {
		t.Fatalf("%d requests decided by refused decisions", n)
	}

	// The key refused for want of a grant was not stored: it decides now.
	r = e.post(path+"/approve", token, "a1", `{"reason":"checked"}`)
	won := e.approval(r, http.StatusOK)
	if won.State != "approved" || won.DecidedVia == nil || *won.DecidedVia != "api" || won.DecidedBy == nil ||
		!strings.HasPrefix(*won.DecidedBy, "tenant:acme, token test (") || won.DecisionReason == nil || *won.DecisionReason != "checked" {
		t.Errorf("approve: %s", r.body)
	}
	if again := e.post(path+"/approve", token, "a1", `{"reason":"checked"}`); !again.replayed() || string(again.body) != string(r.body) {
		t.Errorf("approve retried: %d replayed=%v", again.status, again.replayed())
	}

	late := e.do(http.MethodPost, path+"/deny", token, `{"reason":"too much"}`, httpapi.KeyHeader, "d1")
	e.problem(late, http.StatusConflict, "conflict")
	var body struct {
		Detail   string
		Approval httpapi.Approval
	}
	if err := json.Unmarshal(late.body, &body); err != nil || body.Approval.State != "approved" || body.Approval.ID != id ||
		!strings.Contains(body.Detail, "was decided already: approved by tenant:acme, token test (") {
		t.Errorf("late denial: %s", late.body)
	}
	r = e.do("GET", "/v1/approvals?state=approved,denied", token, "")
	if err := json.Unmarshal(r.body, &list); err != nil || len(list.Approvals) != 1 || list.Approvals[0].State != "approved" {
		t.Errorf("decided list: %s", r.body)
	}
	r = e.do("GET", "/v1/approvals", other, "")
	if err := json.Unmarshal(r.body, &list); err != nil || len(list.Approvals) != 1 || list.Approvals[0].ID != theirs {
		t.Errorf("globex's list: %s", r.body)
	}
}

// Concurrent decisions through the API, each with its own key: one wins
// (200), every other is 409 holding that decision.
func TestConcurrentDecisions(t *testing.T) {
	t.Parallel()
	e, token := grantedEnv(t, &grants.Grant{AllKinds: true, Decide: true})
	id := e.ask("acme", `{}`)
	const deciders = 12
	answers := make([]resp, deciders)
	var wg sync.WaitGroup
	start := make(chan struct{})
	for i := range deciders {
		wg.Go(func() {
			<-start
			verb := map[bool]string{true: "approve", false: "deny"}[i%2 == 0]
			answers[i] = e.post(fmt.Sprintf("/v1/approvals/%d/%s", id, verb), token, fmt.Sprintf("k%d", i), `{"reason":"mine"}`)
		})
	}
	close(start)
	wg.Wait()
	var won []int
	for i, a := range answers {
		switch a.status {
		case http.StatusOK:
			won = append(won, i)
		case http.StatusConflict:
		default:
			t.Errorf("decider %d: %d %s", i, a.status, a.body)
		}
	}
	if len(won) != 1 {
		t.Fatalf("%d decisions won, want 1", len(won))
	}
	winner := e.approval(answers[won[0]], http.StatusOK)
	for i, a := range answers {
		if i == won[0] {
			continue
		}
		var body struct{ Approval httpapi.Approval }
		if err := json.Unmarshal(a.body, &body); err != nil || body.Approval.State != winner.State {
			t.Errorf("decider %d's 409 holds %s, want %s: %s", i, body.Approval.State, winner.State, a.body)
		}
	}
}
