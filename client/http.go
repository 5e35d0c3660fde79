package client

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"

	"github.com/agentledger/agentledger"
	"github.com/agentledger/agentledger/httpapi"
	"github.com/agentledger/agentledger/problem"
	"github.com/agentledger/agentledger/tracing"
)

// HTTP submits through agentd's HTTP API at baseURL with a tenant's bearer
// token; hc nil is a client with a 30 s timeout. A submission that meets a
// server error, a timeout or a request still in flight is sent again under
// the same key, three times at most.
func HTTP(baseURL, token string, hc *http.Client) Submitter {
	if hc == nil {
		hc = &http.Client{Timeout: 30 * time.Second}
	}
	return httpSubmitter{base: strings.TrimRight(baseURL, "/"), token: token, hc: hc}
}

type httpSubmitter struct {
	base, token string
	hc          *http.Client
}

func (h httpSubmitter) Submit(ctx context.Context, r Request) (*agentledger.Task, error) {
	req := httpapi.CreateTaskRequest{Queue: r.Queue, Kind: r.Kind, Payload: r.Payload, Priority: r.Priority,
		AllowUnserved: r.AllowUnserved}
	if !r.RunAt.IsZero() {
		req.RunAt = &r.RunAt
	}
	if r.MaxAttempts != 0 {
		req.MaxAttempts = &r.MaxAttempts
	}
	body, err := json.Marshal(req)
	if err != nil {
		return nil, agentledger.Invalid("payload", "does not encode as JSON: %v", err)
	}
	key := r.Key
	if key == "" {
		b := make([]byte, 16)
		_, _ = rand.Read(b)
		key = "client-" + hex.EncodeToString(b)
	}
	var lastErr error
	for try := range 3 {
		if try > 0 {
			select {
			case <-ctx.Done():
				return nil, ctx.Err()
			case <-time.After(time.Duration(try) * 200 * time.Millisecond):
			}
		}
		t, retry, err := h.post(ctx, key, body)
		if !retry {
			return t, err
		}
		lastErr = err
	}
	return nil, lastErr
}

// post sends one attempt; retry says whether sending it again under the
// same key may succeed.
func (h httpSubmitter) post(ctx context.Context, key string, body []byte) (*agentledger.Task, bool, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, h.base+"/v1/tasks", bytes.NewReader(body))
	if err != nil {
		return nil, false, agentledger.Invalid("base_url", "%v", err)
	}
	req.Header.Set("Authorization", "Bearer "+h.token)
	req.Header.Set("Idempotency-Key", key)
	req.Header.Set("Content-Type", "application/json")
	tracing.Inject(ctx, req.Header) // the task joins the caller's trace
	resp, err := h.hc.Do(req)
	if err != nil {
		return nil, ctx.Err() == nil, fmt.Errorf("submit to %s: %w", h.base, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if err != nil {
		return nil, true, fmt.Errorf("submit to %s: reading the answer: %w", h.base, err)
	}
	if resp.StatusCode == http.StatusCreated {
		var t httpapi.Task
		if err := json.Unmarshal(b, &t); err != nil {
			return nil, false, fmt.Errorf("submit to %s: the answer is not a task: %w", h.base, err)
		}
		return taskOf(t), false, nil
	}
	return nil, resp.StatusCode >= 500 || resp.StatusCode == http.StatusConflict, problemError(resp.StatusCode, b)
}

// problemError is the server's problem+json answer as an error of its code
// (an invalid input keeps the field at fault), so that errors.Is works as
// it does in the server.
func problemError(status int, body []byte) error {
	var p problem.Problem
	if json.Unmarshal(body, &p) != nil || p.Code == "" {
		return agentledger.Errorf(agentledger.CodeInternal, "the server answered %d: %s", status, strings.TrimSpace(string(body)))
	}
	if p.Code == string(agentledger.CodeInvalid) {
		detail := strings.TrimPrefix(p.Detail, p.Field+": ")
		return agentledger.Invalid(p.Field, "%s", detail)
	}
	if code := agentledger.Code(p.Code); agentledger.Known(code) {
		return agentledger.NewError(code, p.Detail)
	}
	return agentledger.Errorf(agentledger.CodeInternal, "the server answered %d %s: %s", status, p.Code, p.Detail)
}

func taskOf(v httpapi.Task) *agentledger.Task {
	t := &agentledger.Task{ID: v.ID, Tenant: v.Tenant, Queue: v.Queue, Kind: v.Kind, Payload: v.Payload, Priority: v.Priority,
		RunAt: v.RunAt, State: agentledger.TaskState(v.State), Attempt: v.Attempt, MaxAttempts: v.MaxAttempts,
		Generation: v.Generation, CancelRequested: v.CancelRequestedAt, Result: v.Result,
		CreatedAt: v.CreatedAt, UpdatedAt: v.UpdatedAt, FinishedAt: v.FinishedAt}
	if v.LastError != nil {
		t.LastError = *v.LastError
	}
	return t
}
