package steps_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"

	"github.com/agentledger/agentledger"
	"github.com/agentledger/agentledger/agentledgertest/downstream"
	"github.com/agentledger/agentledger/claims"
	"github.com/agentledger/agentledger/internal/test/testenv"
	"github.com/agentledger/agentledger/ledger"
	"github.com/agentledger/agentledger/saga"
	"github.com/agentledger/agentledger/steps"
	"github.com/agentledger/agentledger/tools"
)

// post is a minimal keyed tool: it POSTs its args to a counting downstream
// with the effect's downstream key, and can be told to fail.
type post struct {
	url  string
	mu   sync.Mutex
	seen []json.RawMessage // args as performed
	fail func(n int) error // n = performances so far
	// after, when set, is called once the downstream answered: an error
	// from it is a crash after the effect happened, before it is recorded.
	after func(args json.RawMessage) error
}

func (p *post) Name() string                { return "post" }
func (p *post) Description() string         { return "POST args to the test downstream" }
func (p *post) Parameters() json.RawMessage { return json.RawMessage(`{"type":"object"}`) }
func (p *post) Effect(c tools.Call) (ledger.Effect, error) {
	return ledger.Effect{Operation: "test.post", Class: ledger.Keyed, Request: c.Args,
		Perform: func(ctx context.Context, call ledger.Call) (ledger.Result, error) {
			p.mu.Lock()
			p.seen = append(p.seen, c.Args)
			n := len(p.seen)
			p.mu.Unlock()
			if p.fail != nil {
				if err := p.fail(n); err != nil {
					return ledger.Result{}, err
				}
			}
			req, _ := http.NewRequestWithContext(ctx, "POST", p.url, bytes.NewReader(c.Args))
			req.Header.Set("Idempotency-Key", call.DownstreamKey(p.url))
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				return ledger.Result{}, err
			}
			defer resp.Body.Close()
			body, _ := io.ReadAll(resp.Body)
			if p.after != nil {
				if err := p.after(c.Args); err != nil {
					return ledger.Result{}, err
				}
			}
			return ledger.Result{Status: resp.StatusCode, Body: body}, nil
		}}, nil
}

type env struct {
	*testenv.Env
	down   *downstream.Server
	tool   *post
	runner *steps.Runner
	phase  saga.Handler // runner, or its compensation phase
}

func newEnv(t *testing.T) *env {
	e := &env{Env: testenv.New(t), down: downstream.New()}
	t.Cleanup(e.down.Close)
	e.tool = &post{url: e.down.URL}
	e.runner = steps.New(e.Ledger, tools.NewRegistry(e.tool))
	return e
}

func (e *env) submit(payload string) int64 {
	return e.Enqueue(claims.EnqueueParams{Payload: json.RawMessage(payload)}).ID
}

func (e *env) claim() *agentledger.Task { return e.Claim("w") }

// A bad payload fails for good with nothing performed; Check refuses it
// before it is queued with the same message, which speaks of the payload
// as written: no Go types, lists joined with commas.
func TestPayloadErrorsPerformNothing(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	reg := tools.NewRegistry(e.tool)
	known := func(name string, _ json.RawMessage) error { _, err := reg.Get(name); return err }
	for payload, want := range map[string]string{
		`{}`:                                     "steps: payload needs 1 to 100 steps, has 0",
		`{"steps":null}`:                         "steps: payload needs 1 to 100 steps, has 0",
		`"x"`:                                    `steps: payload must be an object {"steps": [{"tool": …, "args": {…}}, …]}, not a string`,
		`{"steps":{"tool":"post"}}`:              `steps: "steps" must be an array [{"tool": …, "args": {…}}, …], not an object`,
		`{"steps":["post"]}`:                     `steps: step 0 must be an object {"tool": …, "args": {…}, "compensate": {…}, "approve": …}, not a string`,
		`{"steps":[{"args":{}}]}`:                "steps: step 0: tool is required",
		`{"steps":[{"tool":7}]}`:                 "steps: step 0: tool must be a string, not a number",
		`{"steps":[{"tool":"post"}],"x":1}`:      `steps: payload has an unknown field "x" (known: steps)`,
		`{"steps":[{"tool":"post","argz":{}}]}`:  `steps: step 0 has an unknown field "argz" (known: approve, args, compensate, tool)`,
		`{"steps":[{"tool":"post","args":"x"}]}`: "steps: step 0: args must be an object, not a string",
		`{"steps":[{"tool":"post","args":["${steps.0.body}"]}]}`:                        "steps: step 0: args must be an object, not an array",
		`{"steps":[{"tool":"nope"}]}`:                                                   `step 0: unknown tool "nope" (known: post)`,
		`{"steps":[{"tool":"post","args":{"a":"${steps.0.body}"}}]}`:                    "steps: step 0: ${steps.0.body} refers to step 0, which does not run before it",
		`{"steps":[{"tool":"post"},{"tool":"post","args":{"a":"${steps.0.headers}"}}]}`: "steps: step 1: ${steps.0.headers} must name status, body[.path] or external_ref",
	} {
		e.submit(payload)
		task := e.claim()
		_, err := e.runner.Work(context.Background(), task)
		var perm *agentledger.PermanentError
		if !errors.As(err, &perm) || err.Error() != want {
			t.Errorf("%s: %v, want the permanent error %q", payload, err, want)
		}
		var ie *agentledger.InvalidError
		if cerr := steps.Check(json.RawMessage(payload), known); !errors.As(cerr, &ie) || ie.Field != "payload" ||
			err == nil || ie.Problem != err.Error() {
			t.Errorf("%s: Check says %v, want an invalid payload saying %v", payload, cerr, err)
		}
		e.Claims.Succeed(context.Background(), claims.LeaseOf(task), nil)
	}
	if e.down.Hits() != 0 {
		t.Fatalf("%d downstream hits for bad payloads", e.down.Hits())
	}
	// Without a step check only the structure is checked.
	if err := steps.Check(json.RawMessage(`{"steps":[{"tool":"nope"}]}`), nil); err != nil {
		t.Errorf("an unknown tool, unchecked: %v", err)
	}
	if err := steps.Check(json.RawMessage(`{"steps":[{"tool":"post"}]}`), known); err != nil {
		t.Errorf("a good payload: %v", err)
	}
}

// Check gives the step check each step's tool and arguments as the tool
// is called with them: absent or null arguments are {}; arguments that
// refer to earlier results are nil (known only when the step runs). Its
// error names the step.
func TestCheckSeesArguments(t *testing.T) {
	t.Parallel()
	var seen []string
	err := steps.Check(json.RawMessage(`{"steps":[
		{"tool":"a"}, {"tool":"b","args":null}, {"tool":"c","args":{"n":1}},
		{"tool":"d","args":{"x":"id ${steps.2.body.id}"}}, {"tool":"e","args":{"x":"${nope}"}}]}`),
		func(tool string, args json.RawMessage) error {
			seen = append(seen, fmt.Sprintf("%s %s", tool, args))
			if tool == "e" {
				return errors.New("e: arguments: bad")
			}
			return nil
		})
	want := []string{"a {}", "b {}", `c {"n":1}`, "d ", `e {"x":"${nope}"}`}
	if fmt.Sprint(seen) != fmt.Sprint(want) {
		t.Errorf("the check saw %q, want %q", seen, want)
	}
	var ie *agentledger.InvalidError
	if !errors.As(err, &ie) || ie.Field != "payload" || ie.Problem != "step 4: e: arguments: bad" {
		t.Errorf("Check: %v", err)
	}
}

func TestReferencesAndReplay(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	e := newEnv(t)
	e.submit(`{"steps":[
		{"tool":"post","args":{"order":42}},
		{"tool":"post","args":{"charge":"${steps.0.body.id}","note":"effect ${steps.0.body.effect} of ${steps.0.status}","echo":"${steps.0.body.echo}"}}
	]}`)
	task := e.claim()
	first, err := e.runner.Work(ctx, task)
	if err != nil {
		t.Fatal(err)
	}
	if got := string(e.tool.seen[1]); got != `{"charge":"eff_1","echo":{"order":42},"note":"effect 1 of 201"}` {
		t.Fatalf("resolved args %s", got)
	}
	// Running again (a re-poll of the same attempt) serves every step.
	again, err := e.runner.Work(ctx, task)
	if err != nil {
		t.Fatal(err)
	}
	var a, b struct{ Steps []steps.StepResult }
	json.Unmarshal(first, &a)
	json.Unmarshal(again, &b)
	if e.down.Effects() != 2 || e.down.Hits() != 2 || len(e.tool.seen) != 2 || !b.Steps[0].Replayed || !b.Steps[1].Replayed {
		t.Fatalf("replay: %d effects, %d hits, %d performances; %s", e.down.Effects(), e.down.Hits(), len(e.tool.seen), again)
	}
	for i := range a.Steps {
		if a.Steps[i].Status != b.Steps[i].Status || !jsonEqual(a.Steps[i].Body, b.Steps[i].Body) {
			t.Fatalf("step %d: first %+v, replayed %+v", i, a.Steps[i], b.Steps[i])
		}
	}
}

// Drill 4: a step is recorded, then the attempt dies before the task
// finishes; the next attempt serves that step from the ledger.
func TestNextAttemptServesRecordedSteps(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	e := newEnv(t)
	e.submit(`{"steps":[{"tool":"post","args":{"n":0}},{"tool":"post","args":{"n":1,"prev":"${steps.0.body.id}"}}]}`)
	e.tool.fail = func(n int) error {
		if n == 2 {
			return errors.New("worker died here")
		}
		return nil
	}
	first := e.claim()
	if _, err := e.runner.Work(ctx, first); err == nil {
		t.Fatal("want the injected failure")
	}
	second := e.ExpireAndReclaim("w") // the lease runs out; another worker claims
	if second.Attempt != 2 {
		t.Fatalf("attempt %d", second.Attempt)
	}
	res, err := e.runner.Work(ctx, second)
	if err != nil {
		t.Fatal(err)
	}
	if e.down.Effects() != 2 || fmt.Sprint(len(e.tool.seen)) != "3" {
		t.Fatalf("%d effects, %d performances (want 2 effects: step 0 once, step 1 once)", e.down.Effects(), len(e.tool.seen))
	}
	if !strings.Contains(string(res), `"replayed":true`) {
		t.Fatalf("step 0 was not served from the ledger: %s", res)
	}
}

func jsonEqual(a, b json.RawMessage) bool {
	var x, y any
	json.Unmarshal(a, &x)
	json.Unmarshal(b, &y)
	return fmt.Sprint(x) == fmt.Sprint(y)
}

// Check refuses a literal call of the HTTP tools that can only fail when
// it runs — a URL with credentials, no scheme or no host, an unknown
// method — naming the step, as the tool names it; a URL made of an earlier
// result is checked when it runs.
func TestCheckRefusesHTTPCallsThatCannotRun(t *testing.T) {
	t.Parallel()
	noCheck := func(string, json.RawMessage) error { return nil }
	for args, want := range map[string]string{
		`{"method":"POST","url":"http://127.0.0.1:7462@evil.example/x"}`: "step 0: url must not carry credentials: configure them as host headers",
		`{"method":"GET","url":"evil.example/x"}`:                        `step 0: url "evil.example/x" must be absolute, with scheme http or https`,
		`{"method":"GET","url":"http:///x"}`:                             `step 0: url "http:///x" has no host`,
		`{"method":"TRACE","url":"http://a.example/"}`:                   `step 0: method "TRACE" is not one of GET, POST, PUT, PATCH, DELETE`,
	} {
		for _, tool := range []string{"http_request", "unsafe_http"} {
			payload := fmt.Sprintf(`{"steps":[{"tool":%q,"args":%s}]}`, tool, args)
			var ie *agentledger.InvalidError
			if err := steps.Check(json.RawMessage(payload), noCheck); !errors.As(err, &ie) || ie.Problem != want {
				t.Errorf("%s: %v, want an invalid payload saying %q", payload, err, want)
			}
		}
	}
	for _, payload := range []string{
		`{"steps":[{"tool":"http_request","args":{"method":"GET","url":"https://a.example/x"}}]}`,
		`{"steps":[{"tool":"http_request","args":{"method":"GET","url":"https://a.example/"}},
			{"tool":"http_request","args":{"method":"GET","url":"${steps.0.body.next}"}}]}`,
		`{"steps":[{"tool":"other","args":{"method":"TRACE","url":"x"}}]}`,
	} {
		if err := steps.Check(json.RawMessage(payload), noCheck); err != nil {
			t.Errorf("%s: %v", payload, err)
		}
	}
}

// A step's "approve" is checked before anything runs.
func TestApproveIsChecked(t *testing.T) {
	t.Parallel()
	for payload, want := range map[string]string{
		`{"steps":[{"tool":"post","approve":{"timeout":"soon"}}]}`:      `approve: timeout "soon" must be a duration`,
		`{"steps":[{"tool":"post","approve":{"on_timeout":"maybe"}}]}`:  `approve: on_timeout "maybe" must be deny or approve`,
		`{"steps":[{"tool":"post","approve":{"approvers":["a b"]}}]}`:   `approve: approver "a b" is not a Slack user or group id`,
		`{"steps":[{"tool":"post","approve":{"approvers":["bob"]}}]}`:   `approve: approver "bob" is not a Slack user or group id`,
		`{"steps":[{"tool":"post","approve":{"approvers":["C0123"]}}]}`: `approve: approver "C0123" is not a Slack user or group id`,
		`{"steps":[{"tool":"post","approve":{"who":["U1"]}}]}`:          `unknown field "who"`,
		`{"steps":[{"tool":"post","approve":"yes"}]}`:                   `"channel": "…"}, not a string`,
		`{"steps":[{"tool":"post","approve":{"channel":"#pay"}}]}`:      `approve: channel "#pay" must be a Slack channel name`,
	} {
		if err := steps.Check(json.RawMessage(payload), nil); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: %v, want it to say %q", payload, err, want)
		}
	}
	if err := steps.Check(json.RawMessage(`{"steps":[{"tool":"post","approve":true},{"tool":"post","approve":{"approvers":["U1","S2","W0ABC"],"timeout":"2h","on_timeout":"approve","channel":"payments-approvals"}}]}`), nil); err != nil {
		t.Fatalf("good gates refused: %v", err)
	}
}
