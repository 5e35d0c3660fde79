package client

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/agentledger/agentledger"
	"github.com/agentledger/agentledger/httpapi"
	"github.com/agentledger/agentledger/problem"
	"github.com/agentledger/agentledger/tracing"
	"github.com/agentledger/agentledger/waits"
)

// HTTP submits, reads, cancels and replays tasks, sends signals and lists
// waits through agentd's HTTP API at baseURL with a tenant's bearer token;
// hc nil is a client with a 30 s timeout. A request that changes something
// and meets a server error, a timeout or its own first try still in flight
// is sent again under the same Idempotency-Key, three times at most (as
// is one answered 408 or 429), after what a Retry-After asks.
func HTTP(baseURL, token string, hc *http.Client) Client {
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
	var t httpapi.Task
	if _, err := h.mutate(ctx, "/v1/tasks", r.Key, body, &t); err != nil {
		return nil, forGo(err)
	}
	task := taskOf(t)
	task.SubmissionKey = r.Key // as given, as Database returns it ("" when Submit chose one)
	return task, nil
}

// apiOverride is the API's advice to queue a task no live worker serves,
// which a Go caller follows with Options.AllowUnserved.
const apiOverride = `send "allow_unserved": true`

// forGo rewords the API's advice for the program that called Submit: the
// request's field is an option here.
func forGo(err error) error {
	var ie *agentledger.InvalidError
	if errors.As(err, &ie) && strings.Contains(ie.Problem, apiOverride) {
		return agentledger.Invalid(ie.Field, "%s", strings.Replace(ie.Problem, apiOverride, "set client.Options.AllowUnserved", 1))
	}
	return err
}

// Send is POST /v1/signals.
func (h httpSubmitter) Send(ctx context.Context, s Signal) (Sent, error) {
	req := httpapi.SendSignalRequest{Name: s.Name, Key: s.Key, Payload: s.Payload}
	if s.Retention != 0 {
		req.Retention = s.Retention.String()
	}
	body, err := json.Marshal(req)
	if err != nil {
		return Sent{}, agentledger.Invalid("payload", "does not encode as JSON: %v", err)
	}
	var v httpapi.Signal
	duplicate, err := h.mutate(ctx, "/v1/signals", s.IdempotencyKey, body, &v)
	if err != nil {
		return Sent{}, err
	}
	return Sent{Duplicate: duplicate, Signal: waits.Signal{ID: v.ID, Tenant: v.Tenant, Name: v.Name, Key: v.Key, Payload: v.Payload,
		SentBy: v.SentBy, SentAt: v.SentAt, ExpiresAt: v.ExpiresAt, State: v.State, ConsumedAt: v.ConsumedAt,
		WaitID: v.WaitID, TaskID: v.TaskID}}, nil
}

// Task is GET /v1/tasks/{id}.
func (h httpSubmitter) Task(ctx context.Context, id int64) (*agentledger.Task, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, h.base+"/v1/tasks/"+strconv.FormatInt(id, 10), nil)
	if err != nil {
		return nil, agentledger.Invalid("base_url", "%v", err)
	}
	var t httpapi.Task
	if _, _, _, err := h.do(req, &t); err != nil {
		return nil, err
	}
	return taskOf(t), nil
}

// Cancel is POST /v1/tasks/{id}/cancel.
func (h httpSubmitter) Cancel(ctx context.Context, id int64) (*agentledger.Task, error) {
	return h.onTask(ctx, id, "cancel")
}

// Replay is POST /v1/tasks/{id}/replay.
func (h httpSubmitter) Replay(ctx context.Context, id int64) (*agentledger.Task, error) {
	return h.onTask(ctx, id, "replay")
}

// onTask POSTs the action to one task under a key of its own, so that the
// call's own retries are one request.
func (h httpSubmitter) onTask(ctx context.Context, id int64, action string) (*agentledger.Task, error) {
	var t httpapi.Task
	if _, err := h.mutate(ctx, "/v1/tasks/"+strconv.FormatInt(id, 10)+"/"+action, "", nil, &t); err != nil {
		return nil, err
	}
	return taskOf(t), nil
}

// Waits is GET /v1/waits.
func (h httpSubmitter) Waits(ctx context.Context, q WaitQuery) ([]waits.Wait, error) {
	v := url.Values{}
	if q.TaskID != 0 {
		v.Set("task", strconv.FormatInt(q.TaskID, 10))
	}
	if q.Kind != "" {
		v.Set("kind", q.Kind)
	}
	if len(q.States) > 0 {
		v.Set("state", strings.Join(q.States, ","))
	}
	if q.Limit != 0 {
		v.Set("limit", strconv.Itoa(q.Limit))
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, h.base+"/v1/waits?"+v.Encode(), nil)
	if err != nil {
		return nil, agentledger.Invalid("base_url", "%v", err)
	}
	var list httpapi.WaitList
	if _, _, _, err := h.do(req, &list); err != nil {
		return nil, err
	}
	out := make([]waits.Wait, len(list.Waits))
	for i, w := range list.Waits {
		out[i] = waits.Wait{ID: w.ID, TaskID: w.TaskID, Generation: w.Generation, Step: w.Step, Tenant: w.Tenant, Kind: w.Kind,
			Signal: deref(w.Signal), Key: deref(w.Key), Spec: w.Spec, CreatedAt: w.CreatedAt, Deadline: w.Deadline, State: w.State,
			Result: w.Result, SignalID: w.SignalID, EndedAt: w.EndedAt, EndedBy: deref(w.EndedBy), EndReason: deref(w.EndReason)}
	}
	return out, nil
}

func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}

// mutate POSTs body to path under key (a random one when empty) and
// decodes the 2xx answer into v; duplicate says the server had made it
// before (replayed under the key, or 200 for a signal sent before). A
// server error, a timeout or a request still in flight is sent again
// under the same key, three times at most.
func (h httpSubmitter) mutate(ctx context.Context, path, key string, body []byte, v any) (duplicate bool, err error) {
	if key == "" {
		b := make([]byte, 16)
		_, _ = rand.Read(b)
		key = "client-" + hex.EncodeToString(b)
	}
	var lastErr error
	var wait time.Duration
	for try := range 3 {
		if try > 0 {
			select {
			case <-ctx.Done():
				return false, ctx.Err()
			case <-time.After(wait):
			}
		}
		req, err := http.NewRequestWithContext(ctx, http.MethodPost, h.base+path, bytes.NewReader(body))
		if err != nil {
			return false, agentledger.Invalid("base_url", "%v", err)
		}
		req.Header.Set("Idempotency-Key", key)
		req.Header.Set("Content-Type", "application/json")
		tracing.Inject(ctx, req.Header) // the task joins the caller's trace
		status, header, retry, err := h.do(req, v)
		if !retry {
			return err == nil && (status == http.StatusOK || header.Get(httpapi.ReplayedHeader) == "true"), err
		}
		lastErr = err
		wait = retryWait(try+1, header)
	}
	return false, lastErr
}

// retryWait is how long to wait before the try-th retry: what the
// server's Retry-After asks (in seconds; 5 s at most), else 200 ms more
// at each try.
func retryWait(try int, header http.Header) time.Duration {
	if s, err := strconv.Atoi(header.Get("Retry-After")); err == nil && s >= 0 {
		return min(time.Duration(s)*time.Second, 5*time.Second)
	}
	return time.Duration(try) * 200 * time.Millisecond
}

// do sends req with the token and decodes a 2xx answer into v; retry
// says whether sending it again under the same key may succeed.
func (h httpSubmitter) do(req *http.Request, v any) (status int, header http.Header, retry bool, err error) {
	ctx := req.Context()
	req.Header.Set("Authorization", "Bearer "+h.token)
	resp, err := h.hc.Do(req)
	if err != nil {
		return 0, nil, ctx.Err() == nil, fmt.Errorf("%s %s: %w", req.Method, h.base+req.URL.Path, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if err != nil {
		return 0, nil, true, fmt.Errorf("%s %s: reading the answer: %w", req.Method, h.base+req.URL.Path, err)
	}
	if resp.StatusCode/100 == 2 {
		if err := json.Unmarshal(b, v); err != nil {
			return 0, nil, false, fmt.Errorf("%s %s: the answer is not what was asked for: %w", req.Method, h.base+req.URL.Path, err)
		}
		return resp.StatusCode, resp.Header, false, nil
	}
	err = problemError(resp.StatusCode, b)
	// Sent again: a server error, a request timed out or limited (the
	// server frees the key for those), and a conflict only while the
	// key's first request is in flight; a state conflict would answer the
	// same.
	retry = resp.StatusCode >= 500 || resp.StatusCode == http.StatusRequestTimeout ||
		resp.StatusCode == http.StatusTooManyRequests || inFlight(err)
	return resp.StatusCode, resp.Header, retry, err
}

// inFlight says err is the API's answer to a request whose key's first
// request is still being served.
func inFlight(err error) bool {
	var ce *agentledger.CodedError
	return errors.As(err, &ce) && ce.Code == agentledger.CodeIdempotencyKeyInFlight
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
		Generation: v.Generation, CancelRequested: v.CancelRequestedAt,
		CreatedAt: v.CreatedAt, UpdatedAt: v.UpdatedAt, FinishedAt: v.FinishedAt}
	t.LastError, t.WaitReason, t.Compensation = deref(v.LastError), deref(v.WaitReason), deref(v.Compensation)
	if string(v.Result) != "null" {
		t.Result = v.Result // none yet reads as Database's: nil
	}
	return t
}
