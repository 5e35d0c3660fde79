package agent

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"strconv"
	"strings"
	"time"

	openai "github.com/sashabaranov/go-openai"

	"github.com/agentledger/agentledger"
	"github.com/agentledger/agentledger/grants"
	"github.com/agentledger/agentledger/ledger"
	"github.com/agentledger/agentledger/tools"
	"github.com/agentledger/agentledger/tracing"
)

// Operation is the ledger operation of a completion.
const Operation = "llm.chat"

// maxInAttemptWait is the longest Retry-After waited for within an attempt;
// a longer one ends the attempt at once and the worker schedules the next
// one after it (agentledger.RetryAfter), instead of holding a lease idle.
const maxInAttemptWait = 30 * time.Second

// MaxAnswerBytes caps the body of one answer of the model endpoint: a
// chat completion of even a million tokens is a few megabytes, and an
// answer past it (a runaway server, a proxy streaming a file) would be
// held in memory and then refused by the ledger's JSON column, at every
// attempt.
const MaxAnswerBytes = 4 << 20

// maxErrorText bounds the endpoint's text quoted in an error.
const maxErrorText = 1000

// maxBackoff caps the exponential backoff between in-attempt retries.
const maxBackoff = 10 * time.Second

// complete runs step n's completion of req through the effect path as a
// pure effect: the grant in force checked first (the model, and the
// tokens the task has used), then served from the ledger when recorded,
// performed otherwise, with a max_tokens within the budget the grant
// leaves (a prompt it cannot hold is refused, not sent).
func (a *Agent) complete(ctx context.Context, task *agentledger.Task, n int, req chatRequest, used int) (completion, error) {
	body, err := json.Marshal(req)
	if err != nil {
		return completion{}, fmt.Errorf("encoding the request of llm/%d: %w", n, err)
	}
	var b budget // set by the grant stage, before Perform
	res, err := a.path.Perform(ctx, &tools.Outgoing{
		Call: tools.Call{Task: task, StepPath: fmt.Sprintf("llm/%d", n), Args: body},
		Allow: func(g *grants.Grant) error {
			if g == nil {
				return nil
			}
			if err := g.Allow(task.Tenant, grants.Need{Model: req.Model, DefaultModel: a.cfg.Model, Tokens: int64(used)}); err != nil {
				return err
			}
			b = budgetOf(task.Tenant, g, used)
			return nil
		},
		Effect: ledger.Effect{
			Operation: Operation,
			StepPath:  fmt.Sprintf("llm/%d", n),
			Class:     ledger.Pure,
			Request:   body,
			Perform: func(ctx context.Context, _ ledger.Call) (ledger.Result, error) {
				if err := b.bound(&req, a.cfg.MaxAnswerTokens); err != nil {
					return ledger.Result{}, err
				}
				return a.chat(ctx, n, req)
			},
		},
	})
	if err != nil {
		return completion{}, err
	}
	var c completion
	if err := json.Unmarshal(res.Body, &c); err != nil {
		return completion{}, agentledger.Permanent(fmt.Errorf("llm/%d: the recorded completion is unreadable: %w", n, err))
	}
	return c, nil
}

// chat asks the model, retrying transient failures within the attempt.
//
// It never returns agentledger.Permanent, so the ledger never records a
// completion as failed: a refused request changed nothing in the world, and
// a replay after the operator fixed the cause (a model name, a key) asks
// again. Work turns a *llmError that is not transient into a permanent
// task failure instead.
func (a *Agent) chat(ctx context.Context, n int, req chatRequest) (ledger.Result, error) {
	for try := 0; ; try++ {
		if cerr := agentledger.CancelRequested(ctx); cerr != nil && try > 0 {
			// The request sent before failed: no other goes out once an
			// operator cancelled the task.
			return ledger.Result{}, fmt.Errorf("interrupted before retrying: %w", cerr)
		}
		c, err, waits := a.gatedChat(ctx, n, req)
		if waits != nil {
			return ledger.Result{}, waits
		}
		if err == nil {
			body, err := json.Marshal(c)
			if err != nil {
				return ledger.Result{}, err
			}
			return ledger.Result{Status: http.StatusOK, Body: body, ExternalRef: c.ID}, nil
		}
		if ctx.Err() != nil {
			return ledger.Result{}, fmt.Errorf("interrupted: %w", context.Cause(ctx))
		}
		if !err.transient {
			return ledger.Result{}, err
		}
		wait := backoff(a.cfg.RetryBase, try)
		if err.retryAfter > 0 {
			wait = err.retryAfter
		}
		if try >= a.cfg.Retries || wait > maxInAttemptWait {
			if err.retryAfter > 0 {
				return ledger.Result{}, agentledger.RetryAfter(err, err.retryAfter)
			}
			return ledger.Result{}, err
		}
		t := time.NewTimer(wait)
		waiting := agentledger.UntilCancelled(ctx) // an operator's cancel ends the wait too
		select {
		case <-t.C:
		case <-waiting.Done():
			t.Stop()
			return ledger.Result{}, fmt.Errorf("interrupted while waiting to retry (%v): %w", err, context.Cause(waiting))
		}
	}
}

// gatedChat makes one call through the gate: admitted against the
// endpoint's limits, its tokens booked, its outcome told to the breaker.
// waits is an *agentledger.DeferredError when the call must wait for the
// gate (before it, or after it when its failure left the breaker open),
// or the gate's error.
func (a *Agent) gatedChat(ctx context.Context, n int, req chatRequest) (c completion, err *llmError, waits error) {
	if a.cfg.Gate == nil {
		c, err = a.chatOnce(ctx, n, req)
		return c, err, nil
	}
	// Waiting to be admitted sends nothing: an operator's cancel ends it.
	pass, gerr := a.cfg.Gate.Admit(agentledger.UntilCancelled(ctx), a.target, a.cfg.RequestTimeout)
	if gerr != nil {
		return completion{}, nil, gerr
	}
	if cerr := agentledger.CancelRequested(ctx); cerr != nil {
		pass.Release() // not made: its slot and a probe's turn go to the next call
		return completion{}, nil, cerr
	}
	c, err = a.chatOnce(ctx, n, req)
	switch {
	case err == nil:
		pass.Used(int64(c.Usage.TotalTokens))
		pass.Succeeded()
	case err.status == 0 && err.transient, err.status >= 500:
		why := "connection error"
		if err.status != 0 {
			why = fmt.Sprintf("HTTP %d", err.status)
		} else if err.timeout {
			why = fmt.Sprintf("no answer within %s", a.cfg.RequestTimeout)
		}
		if w := pass.Failed(why); w != nil {
			var d *agentledger.DeferredError
			if errors.As(w, &d) && (err.status != 0 || err.timeout) {
				d.Performed = true // the endpoint saw the request: its attempt is recorded
			}
			return completion{}, err, w
		}
	default:
		pass.Succeeded() // an answer: the endpoint is up
	}
	return c, err, nil
}

// chatOnce makes one HTTP call to the model and classifies its failure.
func (a *Agent) chatOnce(ctx context.Context, n int, req chatRequest) (c completion, e *llmError) {
	ctx, span := traceChat(ctx, req)
	defer func() { endChat(span, c, e) }()
	obs := &observer{next: a.cfg.HTTPClient}
	oc := a.clientConfig()
	oc.HTTPClient = obs
	client := openai.NewClientWithConfig(oc)

	cctx, cancel := context.WithTimeout(ctx, a.cfg.RequestTimeout)
	defer cancel()
	resp, err := client.CreateChatCompletion(cctx, req.toOpenAI())
	if err == nil && len(resp.Choices) == 0 {
		err = errors.New("the model answered with no choices")
	}
	if err == nil {
		return completionOf(resp), nil
	}
	e = &llmError{step: n, status: obs.status, retryAfter: obs.retryAfter}
	switch {
	case obs.tooLarge != nil && obs.tooLarge.over && obs.status < 300:
		// Asking again asks for the same answer, and pays for it. (A
		// 429's or a 5xx's page past the cap is its status's to classify,
		// below.)
		e.msg = fmt.Sprintf("the model's answer is larger than %d MiB; nothing of it was kept", MaxAnswerBytes>>20)
		return completion{}, e
	case !obs.sent: // go-openai refused the request before sending it
	case obs.status == 0: // connection error or timeout
		e.transient = true
		if cctx.Err() != nil && ctx.Err() == nil {
			e.timeout = true
			err = fmt.Errorf("no answer within %s: %w", a.cfg.RequestTimeout, err)
		}
	case obs.status < 300: // an answer we could not read
		e.transient = true
		var syntax *json.SyntaxError
		if errors.As(err, &syntax) {
			// A proxy's or a login page's HTML, most often: no chat
			// completion at all.
			err = fmt.Errorf("the answer is not a chat completion (not JSON: %w); is --llm-base-url the API's, ending in /v1?", err)
		}
	default:
		e.transient = transientStatus(obs.status)
		err = answerError(err)
	}
	if obs.status != http.StatusTooManyRequests && obs.status != http.StatusServiceUnavailable {
		e.retryAfter = 0
	}
	// Cut after redaction, so that no part of the key is left; go-openai
	// quotes the whole body of an answer it cannot read (a proxy's HTML
	// page), which is not worth storing with every attempt.
	e.msg = clip(a.secretFree(err.Error()), maxErrorText)
	return completion{}, e
}

// transientStatus reports whether an HTTP status may succeed if asked again.
func transientStatus(code int) bool {
	switch {
	case code == http.StatusRequestTimeout, code == http.StatusTooEarly, code == http.StatusTooManyRequests:
		return true
	case code >= 500:
		return true
	}
	return false
}

// llmError is a failed completion. Its message never holds the API key.
type llmError struct {
	step       int
	status     int // HTTP status, 0 when none came back
	transient  bool
	timeout    bool // no answer within the request timeout
	retryAfter time.Duration
	msg        string
}

func (e *llmError) Error() string {
	if e.status != 0 {
		return fmt.Sprintf("llm/%d: model endpoint answered %s: %s", e.step, strings.TrimSpace(fmt.Sprintf("%d %s", e.status, http.StatusText(e.status))), e.msg)
	}
	return fmt.Sprintf("llm/%d: %s", e.step, e.msg)
}

// answerError is what an error answer said, without go-openai's words
// around it ("error, status code: 404, status: 404 Not Found, message:
// …"): llmError says the status once. OpenAI's error JSON gives its
// message; a server's own ({"message": …} as vLLM's, {"error": "…"}) its
// message too; any other answer (a proxy's page) its body, on one line.
func answerError(err error) error {
	var api *openai.APIError
	var req *openai.RequestError
	switch {
	case errors.As(err, &api) && api.Message != "":
		return errors.New(api.Message)
	case errors.As(err, &req) && len(bytes.TrimSpace(req.Body)) > 0:
		var body struct {
			Message string          `json:"message"`
			Error   json.RawMessage `json:"error"`
		}
		var text string
		switch {
		case json.Unmarshal(req.Body, &body) != nil:
		case body.Message != "":
			return errors.New(body.Message)
		case json.Unmarshal(body.Error, &text) == nil && text != "":
			return errors.New(text)
		}
		return errors.New(strings.Join(strings.Fields(string(req.Body)), " "))
	}
	return err
}

// observer is the HTTP client of one call: it notes whether the request was
// sent, the answer's status and its Retry-After, which go-openai's errors
// do not carry.
type observer struct {
	next       *http.Client
	sent       bool
	status     int
	retryAfter time.Duration
	tooLarge   *cappedBody // the answer's body, read up to MaxAnswerBytes
}

// Do sends req through the configured client.
func (o *observer) Do(req *http.Request) (*http.Response, error) {
	o.sent = true
	tracing.Inject(req.Context(), req.Header) // go-openai builds req for this call alone
	resp, err := o.next.Do(req)
	if err != nil {
		return nil, err
	}
	o.status = resp.StatusCode
	o.retryAfter = retryAfterOf(resp.StatusCode, resp.Header, time.Now())
	o.tooLarge = &cappedBody{body: resp.Body, left: MaxAnswerBytes}
	resp.Body = o.tooLarge
	return resp, nil
}

// cappedBody reads a body up to left bytes and fails past them, noting it.
type cappedBody struct {
	body io.ReadCloser
	left int64
	over bool
}

// errAnswerTooLarge fails the read of an answer past MaxAnswerBytes.
var errAnswerTooLarge = errors.New("the answer is too large")

func (b *cappedBody) Read(p []byte) (int, error) {
	if b.left <= 0 {
		// One byte more tells a body of exactly the cap from a longer one.
		var one [1]byte
		for {
			n, err := b.body.Read(one[:])
			if n > 0 {
				b.over = true
				return 0, errAnswerTooLarge
			}
			if err != nil {
				return 0, err // io.EOF: exactly the cap
			}
		}
	}
	if int64(len(p)) > b.left {
		p = p[:b.left]
	}
	n, err := b.body.Read(p)
	b.left -= int64(n)
	return n, err
}

func (b *cappedBody) Close() error { return b.body.Close() }

// retryAfterOf reads how long an answer asks to wait. retry-after-ms
// (Azure OpenAI's, finer than Retry-After) comes first, then Retry-After;
// a 429 with neither waits for the reset of the OpenAI-style limit it ran
// out of: x-ratelimit-remaining-requests or -tokens at 0, reset as
// x-ratelimit-reset-requests or -tokens says. Zero when none applies. At
// most a day.
func retryAfterOf(status int, h http.Header, now time.Time) time.Duration {
	if ms, err := strconv.ParseInt(strings.TrimSpace(h.Get("retry-after-ms")), 10, 64); err == nil && ms > 0 {
		return min(time.Duration(ms)*time.Millisecond, maxRetryAfter)
	}
	if d := parseRetryAfter(h.Get("Retry-After"), now); d > 0 || status != http.StatusTooManyRequests {
		return d
	}
	var d time.Duration
	for _, limit := range []string{"requests", "tokens"} {
		if strings.TrimSpace(h.Get("x-ratelimit-remaining-"+limit)) != "0" {
			continue
		}
		d = max(d, parseReset(h.Get("x-ratelimit-reset-"+limit), now))
	}
	return min(d, maxRetryAfter)
}

// parseReset reads an x-ratelimit-reset-* header: a Go-style duration as
// OpenAI sends it ("1s", "6m0s", "17ms"), a number of seconds as Azure
// does, or a Unix time as LiteLLM documents it (a number past 1e9: no
// window lasts 31 years). Zero when absent, past or unreadable.
func parseReset(v string, now time.Time) time.Duration {
	v = strings.TrimSpace(v)
	if s, err := strconv.ParseFloat(v, 64); err == nil {
		if s > unixTimeFrom {
			s -= float64(now.UnixNano()) / float64(time.Second)
		}
		if !(s > 0) { // NaN too
			return 0
		}
		return time.Duration(min(s, maxRetryAfter.Seconds()) * float64(time.Second))
	}
	if d, err := time.ParseDuration(v); err == nil && d > 0 {
		return d
	}
	return 0
}

// unixTimeFrom is where a reset header's number is read as a Unix time.
const unixTimeFrom = 1e9

// maxRetryAfter caps any wait an answer asks for.
const maxRetryAfter = 24 * time.Hour

// parseRetryAfter reads a Retry-After header: delay-seconds or an HTTP
// date. Zero when absent or unreadable.
func parseRetryAfter(v string, now time.Time) time.Duration {
	v = strings.TrimSpace(v)
	if v == "" {
		return 0
	}
	if s, err := strconv.ParseInt(v, 10, 64); err == nil {
		if s <= 0 {
			return 0
		}
		if s > int64(maxRetryAfter/time.Second) {
			s = int64(maxRetryAfter / time.Second)
		}
		return time.Duration(s) * time.Second
	}
	if t, err := http.ParseTime(v); err == nil && t.After(now) {
		return t.Sub(now)
	}
	return 0
}

// backoff is the wait before retry try+1: base·2^try capped at maxBackoff,
// the upper half jittered so that workers do not retry in step.
func backoff(base time.Duration, try int) time.Duration {
	d := base
	for i := 0; i < try && d < maxBackoff; i++ {
		d *= 2
	}
	d = min(d, maxBackoff)
	return d/2 + rand.N(d/2+1)
}
