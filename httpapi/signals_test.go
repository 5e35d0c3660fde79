package httpapi_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/agentledger/agentledger/claims"
	"github.com/agentledger/agentledger/httpapi"
	"github.com/agentledger/agentledger/waits"
)

// await records a signal wait of a new task of tenant, as wait_for_signal
// does, and returns the task and the wait.
func (e *env) await(tenant, name, key string) (int64, waits.Wait) {
	e.t.Helper()
	task := e.enqueue(claims.EnqueueParams{Tenant: tenant, Kind: "steps"})
	w, err := waits.NewStore(e.db).Await(context.Background(), waits.Wait{TaskID: task, Generation: 1, Step: "wait_for_signal/0",
		Tenant: tenant, Kind: waits.KindSignal, Signal: name, Key: key}, nil, time.Hour)
	if err != nil || w.State != waits.Waiting {
		e.t.Fatalf("await: %+v %v", w, err)
	}
	return task, w
}

// signal decodes a signal answer with the wanted status.
func (e *env) signal(r resp, status int) httpapi.Signal {
	e.t.Helper()
	if r.status != status {
		e.t.Fatalf("status %d, want %d: %s", r.status, status, r.body)
	}
	var v httpapi.Signal
	if err := json.Unmarshal(r.body, &v); err != nil {
		e.t.Fatalf("not a signal: %v: %s", err, r.body)
	}
	return v
}

// A signal wakes the task waiting for its name and key at once, and is
// sent once under its Idempotency-Key: a retry replays the answer, the
// key with another body is refused.
func TestSendSignalWakesItsWaiter(t *testing.T) {
	t.Parallel()
	e := newEnv(t, httpapi.Config{})
	token := e.tenant("acme")
	task, w := e.await("acme", "payment.settled", "order-7")

	body := `{"name":"payment.settled","key":"order-7","payload":{"amount":120}}`
	s := e.signal(e.post("/v1/signals", token, "pay-7", body), http.StatusCreated)
	if s.State != "consumed" || s.TaskID == nil || *s.TaskID != task || s.WaitID == nil || *s.WaitID != w.ID ||
		s.Tenant != "acme" || string(s.Payload) != `{"amount":120}` || !strings.HasPrefix(s.SentBy, "tenant:acme, token test (") {
		t.Fatalf("the signal: %+v, want consumed by task %d's wait %d, sent by the token", s, task, w.ID)
	}
	got, err := waits.NewStore(e.db).Get(context.Background(), "acme", w.ID)
	if err != nil || got.State != waits.Done || string(got.Result) != `{"amount": 120}` {
		t.Fatalf("the wait: %+v %v, want done with the payload", got, err)
	}

	// Consumed once: a later wait for it waits on.
	if _, later := e.await("acme", "payment.settled", "order-7"); later.SignalID != nil {
		t.Fatalf("a later wait took the consumed signal: %+v", later)
	}

	again := e.post("/v1/signals", token, "pay-7", body)
	if s2 := e.signal(again, http.StatusCreated); !again.replayed() || s2.ID != s.ID {
		t.Errorf("the retry: %+v (replayed %v), want signal %d replayed", s2, again.replayed(), s.ID)
	}
	e.problem(e.post("/v1/signals", token, "pay-7", `{"name":"payment.settled","key":"order-8"}`),
		http.StatusUnprocessableEntity, "idempotency_key_reused")
	e.problem(e.post("/v1/signals", token, "", body), http.StatusBadRequest, "idempotency_key_missing")
	if n := e.count(`SELECT count(*) FROM signals`); n != 1 {
		t.Errorf("%d signals stored, want 1", n)
	}
}

// Bad input is a 422 naming the field, and stores nothing.
func TestSendSignalRefusesBadInput(t *testing.T) {
	t.Parallel()
	e := newEnv(t, httpapi.Config{})
	token := e.tenant("acme")
	long := strings.Repeat("x", 256)
	for i, c := range []struct{ body, field string }{
		{`{"name":"","key":"k"}`, "name"},
		{`{"key":"k"}`, "name"},
		{`{"name":"` + long[:129] + `","key":"k"}`, "name"},
		{`{"name":"has space","key":"k"}`, "name"},
		{`{"name":"n","key":""}`, "key"},
		{`{"name":"n","key":"` + long + `"}`, "key"},
		{`{"name":"n","key":"k","payload":{"a":"x\u0000"}}`, "payload"},
		{`{"name":"n","key":"k","payload":"` + strings.Repeat("p", waits.MaxPayload) + `"}`, "payload"},
		{`{"name":"n","key":"k","retention":"a week"}`, "retention"},
		{`{"name":"n","key":"k","retention":"0s"}`, "retention"},
		{`{"name":"n","key":"k","retention":"100ms"}`, "retention"},
		{`{"name":"n","key":"k","retention":"2200h"}`, "retention"},
		{`{"name":"n","key":"k","tenant":"globex"}`, "tenant"},
		{`{"name":"n","key":"k","wake":true}`, "wake"},
		{`{"name":7,"key":"k"}`, "name"},
	} {
		r := e.do(http.MethodPost, "/v1/signals", token, c.body, httpapi.KeyHeader, fmt.Sprint("bad-", i))
		if p := e.problem(r, http.StatusUnprocessableEntity, "invalid_request"); p.Field != c.field {
			t.Errorf("%s: field %q (%s), want %q", c.body[:min(len(c.body), 60)], p.Field, p.Detail, c.field)
		}
	}
	e.problem(e.post("/v1/signals", token, "bad-json", `{"name":"n","key":"k","payload":nope}`), http.StatusBadRequest, "malformed_request")
	if n := e.count(`SELECT count(*) FROM signals`) + e.count(`SELECT count(*) FROM idempotency_keys`); n != 0 {
		t.Errorf("%d signals and key records stored, want none", n)
	}
}

// A signal nobody waits for is kept, pending, and listed; a tenant sees
// only its own signals and waits, signals only its own tasks and ends
// only their waits.
func TestSignalsAndWaitsAreTheTenants(t *testing.T) {
	t.Parallel()
	e := newEnv(t, httpapi.Config{})
	acme, globex := e.tenant("acme"), e.tenant("globex")
	task, w := e.await("acme", "payment.settled", "order-7")

	// globex's signal of the same name and key is globex's: acme's task
	// still waits.
	theirs := e.signal(e.post("/v1/signals", globex, "g1", `{"name":"payment.settled","key":"order-7","retention":"1h"}`), http.StatusCreated)
	if theirs.State != "pending" || theirs.TaskID != nil || theirs.ExpiresAt.Sub(theirs.SentAt).Round(time.Second) != time.Hour {
		t.Fatalf("globex's signal: %+v, want pending for an hour", theirs)
	}
	var list httpapi.SignalList
	decode(t, e.do(http.MethodGet, "/v1/signals", acme, ""), &list)
	if len(list.Signals) != 0 {
		t.Errorf("acme lists %+v, want none of globex's", list.Signals)
	}
	decode(t, e.do(http.MethodGet, "/v1/signals?state=pending&name=payment.settled", globex, ""), &list)
	if len(list.Signals) != 1 || list.Signals[0].ID != theirs.ID {
		t.Errorf("globex lists %+v, want its signal %d", list.Signals, theirs.ID)
	}
	e.problem(e.do(http.MethodGet, "/v1/signals?state=lost", globex, ""), http.StatusBadRequest, "invalid_parameter")
	e.problem(e.do(http.MethodGet, "/v1/signals?name=%00", globex, ""), http.StatusBadRequest, "invalid_parameter")
	e.problem(e.do(http.MethodGet, "/v1/waits?signal=%ff", acme, ""), http.StatusBadRequest, "invalid_parameter")

	var ws httpapi.WaitList
	decode(t, e.do(http.MethodGet, "/v1/waits", acme, ""), &ws)
	if len(ws.Waits) != 1 || ws.Waits[0].ID != w.ID || ws.Waits[0].TaskID != task || *ws.Waits[0].Key != "order-7" ||
		ws.Waits[0].Description == nil || !strings.HasPrefix(*ws.Waits[0].Description, "waiting for signal payment.settled key order-7") {
		t.Fatalf("acme's waits: %+v, want its task's", ws.Waits)
	}
	decode(t, e.do(http.MethodGet, "/v1/waits", globex, ""), &ws)
	if len(ws.Waits) != 0 {
		t.Errorf("globex lists %+v, want none of acme's", ws.Waits)
	}
	decode(t, e.do(http.MethodGet, fmt.Sprintf("/v1/waits?task=%d&kind=timer", task), acme, ""), &ws)
	if len(ws.Waits) != 0 {
		t.Errorf("acme's timer waits: %+v, want none", ws.Waits)
	}
	e.problem(e.do(http.MethodGet, "/v1/waits?kind=sleep", acme, ""), http.StatusBadRequest, "invalid_parameter")
	path := fmt.Sprintf("/v1/waits/%d", w.ID)
	e.problem(e.do(http.MethodGet, path, globex, ""), http.StatusNotFound, "not_found")
	e.problem(e.post(path+"/end", globex, "e1", `{"reason":"not mine"}`), http.StatusNotFound, "not_found")
	if p := e.problem(e.post(path+"/end", acme, "e2", `{}`), http.StatusUnprocessableEntity, "invalid_request"); p.Field != "reason" {
		t.Errorf("an end without a reason: field %q, want reason", p.Field)
	}
	if p := e.problem(e.post(path+"/end", acme, "e2b", ""), http.StatusUnprocessableEntity, "invalid_request"); p.Field != "reason" {
		t.Errorf("an end with no body: field %q, want reason, as a denial's", p.Field)
	}

	var got httpapi.Wait
	r := e.post(path+"/end", acme, "e3", `{"reason":"the order was cancelled"}`)
	if r.status != http.StatusOK {
		t.Fatalf("end: %d %s", r.status, r.body)
	}
	decode(t, r, &got)
	if got.State != waits.Ended || *got.EndReason != "the order was cancelled" || !strings.HasPrefix(*got.EndedBy, "tenant:acme, token test") ||
		got.Description != nil {
		t.Fatalf("ended: %+v", got)
	}
	var late struct {
		httpapi.Problem
		Wait httpapi.Wait `json:"wait"`
	}
	r = e.post(path+"/end", acme, "e4", `{"reason":"again"}`)
	e.problem(r, http.StatusConflict, "conflict")
	decode(t, r, &late)
	if late.Wait.State != waits.Ended || *late.Wait.EndReason != "the order was cancelled" {
		t.Errorf("the late end: %+v, want the wait as the first end left it", late.Wait)
	}
	decode(t, e.do(http.MethodGet, path, acme, ""), &got)
	if got.State != waits.Ended {
		t.Errorf("GET the wait: %+v, want ended", got)
	}
}

func decode(t *testing.T, r resp, v any) {
	t.Helper()
	if r.status >= 300 && r.status != http.StatusConflict {
		t.Fatalf("status %d: %s", r.status, r.body)
	}
	if err := json.Unmarshal(r.body, v); err != nil {
		t.Fatalf("%v: %s", err, r.body)
	}
}
