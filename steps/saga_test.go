package steps_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/agentledger/agentledger"
	"github.com/agentledger/agentledger/claims"
	"github.com/agentledger/agentledger/ledger"
	"github.com/agentledger/agentledger/notify/outbox"
	"github.com/agentledger/agentledger/operator"
	"github.com/agentledger/agentledger/saga"
	"github.com/agentledger/agentledger/steps"
	"github.com/agentledger/agentledger/tools"
)

// saga is a charge and a reservation, each with its compensation, then a
// shipment that fails for good.
const sagaPayload = `{"steps":[
	{"tool":"post","args":{"charge":42},"compensate":{"tool":"post","args":{"refund":"${self.body.id}"}}},
	{"tool":"post","args":{"reserve":7,"for":"${steps.0.body.id}"},"compensate":{"tool":"post","args":{"release":"${self.body.id}","charge":"${steps.0.body.id}"}}},
	{"tool":"ship","args":{"order":42}}
]}`

// ship fails for good.
type ship struct{ calls atomic.Int64 }

func (*ship) Name() string                { return "ship" }
func (*ship) Description() string         { return "fails" }
func (*ship) Parameters() json.RawMessage { return json.RawMessage(`{"type":"object"}`) }
func (s *ship) Effect(c tools.Call) (ledger.Effect, error) {
	return ledger.Effect{Operation: "test.ship", Class: ledger.Keyed, Request: c.Args,
		Perform: func(context.Context, ledger.Call) (ledger.Result, error) {
			s.calls.Add(1)
			return ledger.Result{}, agentledger.Permanent(errors.New("no courier for order 42"))
		}}, nil
}

func newSagaEnv(t *testing.T, more ...tools.Tool) *env {
	e := newEnv(t)
	reg := tools.NewRegistry(append([]tools.Tool{e.tool, &ship{}}, more...)...)
	e.runner = steps.New(e.Ledger, reg)
	e.phase = saga.Phase(e.runner, &saga.Undoer{Ledger: e.Ledger, Journal: e.Ledger, Tools: reg})
	return e
}

// performed lists, in order, the calls of the post tool whose args have
// field name.
func (e *env) performed(name string) []string {
	e.tool.mu.Lock()
	defer e.tool.mu.Unlock()
	var out []string
	for _, a := range e.tool.seen {
		var m map[string]any
		json.Unmarshal(a, &m)
		if _, ok := m[name]; ok {
			out = append(out, string(a))
		}
	}
	return out
}

// fail records the attempt's error as the worker does.
func (e *env) fail(task *agentledger.Task, err error) agentledger.TaskState {
	e.T.Helper()
	var perm *agentledger.PermanentError
	st, ferr := e.Claims.Fail(context.Background(), claims.Failure{Lease: claims.LeaseOf(task), Error: err.Error(), Final: errors.As(err, &perm)})
	if ferr != nil {
		e.T.Fatal(ferr)
	}
	return st
}

func (e *env) succeed(task *agentledger.Task, result json.RawMessage) {
	e.T.Helper()
	if err := e.Claims.Succeed(context.Background(), claims.LeaseOf(task), result); err != nil {
		e.T.Fatal(err)
	}
}

// undoToTheEnd claims the task whose compensation goes on, runs it, and
// records its success: it must end without an error.
func (e *env) undoToTheEnd(ctx context.Context) {
	e.T.Helper()
	again := e.claim()
	res, err := e.phase.Work(ctx, again)
	if err != nil {
		e.T.Fatal(err)
	}
	e.succeed(again, res)
}

// unbuildable submits a charge whose refund's arguments never render
// ("${self.body.nope}") and a shipment that fails for good, runs the
// forward path, and claims and runs the compensation phase: it returns
// the task, the compensation's attempt and its error, not yet recorded.
func (e *env) unbuildable(ctx context.Context) (int64, *agentledger.Task, error) {
	e.T.Helper()
	id := e.submit(`{"steps":[{"tool":"post","args":{"charge":42},"compensate":{"tool":"post","args":{"refund":"${self.body.nope}"}}},
		{"tool":"ship","args":{}}]}`)
	task := e.claim()
	_, err := e.phase.Work(ctx, task)
	e.fail(task, err)
	undo := e.claim()
	_, err = e.phase.Work(ctx, undo)
	return id, undo, err
}

func (e *env) get(id int64) *agentledger.Task {
	e.T.Helper()
	got, err := e.Claims.Get(context.Background(), "", id)
	if err != nil {
		e.T.Fatal(err)
	}
	return got
}

// A saga whose third step fails for good undoes steps 1 and 0, in that
// order, once each; a re-poll of the compensation serves them; the task
// ends compensated, and a replay of it is refused.
func TestSagaCompensatesInReverse(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	e := newSagaEnv(t)
	if _, err := outbox.NewRules(e.DB).Put(ctx, outbox.Rule{Name: "undo", Events: []string{"dead", "compensating", "compensated"},
		Channel: "ops"}, false); err != nil {
		t.Fatal(err)
	}
	id := e.submit(sagaPayload)
	task := e.claim()
	_, err := e.phase.Work(ctx, task)
	if err == nil || !strings.Contains(err.Error(), "no courier") {
		t.Fatalf("forward path: %v", err)
	}
	if st := e.fail(task, err); st != agentledger.StateCompensating {
		t.Fatalf("after the failure: %s, want compensating", st)
	}
	if got := e.get(id); got.Compensation != "failed" || got.Attempt != 0 || got.FinishedAt != nil {
		t.Fatalf("compensating task: %+v", got)
	}
	undo := e.claim()
	if undo.Compensation != "failed" || undo.Attempt != 1 {
		t.Fatalf("claimed compensation: attempt %d, compensation %q", undo.Attempt, undo.Compensation)
	}
	res, err := e.phase.Work(ctx, undo)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{`{"charge":"eff_1","release":"eff_2"}`, `{"refund":"eff_1"}`}
	undone := append(e.performed("release"), e.performed("refund")...)
	if strings.Join(undone, " ") != strings.Join(want, " ") || !strings.Contains(string(res), `"undoes":"tool/1"`) {
		t.Fatalf("undone %v, want %v; result %s", undone, want, res)
	}
	var r struct{ Compensations []saga.Result }
	json.Unmarshal(res, &r)
	if len(r.Compensations) != 2 || r.Compensations[0].Undoes != "tool/1" || r.Compensations[1].Undoes != "tool/0" {
		t.Fatalf("order: %s", res)
	}
	// A re-poll of the same compensation performs nothing again.
	if again, err := e.phase.Work(ctx, undo); err != nil || strings.Count(string(again), `"replayed":true`) != 2 {
		t.Fatalf("re-poll: %s %v", again, err)
	}
	e.succeed(undo, res)
	if got := e.get(id); got.State != agentledger.StateCompensated || got.FinishedAt == nil {
		t.Fatalf("after compensation: %s", got.State)
	}
	if n := len(e.performed("refund")) + len(e.performed("release")); n != 2 || e.down.Effects() != 4 {
		t.Fatalf("%d compensations performed, %d downstream effects (want 2, 4)", n, e.down.Effects())
	}
	// A rule on the saga's states heard each once; the task was never dead.
	var events string
	e.DB.QueryRow(ctx, `SELECT string_agg(event, ',' ORDER BY id) FROM outbox WHERE task_id = $1`, id).Scan(&events)
	if events != "compensating,compensated" {
		t.Fatalf("notified on %q, want compensating,compensated", events)
	}
	_, err = e.Operator.Replay(ctx, "", id)
	if !errors.Is(err, agentledger.ErrConflict) || !strings.Contains(err.Error(), "compensated") {
		t.Fatalf("replay of a compensated task: %v", err)
	}
	if _, err := e.Operator.Rerun(ctx, "", id); err != nil {
		t.Fatalf("re-run of a compensated task: %v", err)
	}
	if got := e.get(id); got.State != agentledger.StateQueued || got.Compensation != "" || got.Generation != task.Generation+1 {
		t.Fatalf("re-run: %s %q gen %d", got.State, got.Compensation, got.Generation)
	}
}

// A worker that dies after the refund happened and before it is recorded:
// the next attempt sends it again under the same key, and the downstream
// sees one refund.
func TestCompensationCrashAfterPerformance(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	e := newSagaEnv(t)
	id := e.submit(sagaPayload)
	task := e.claim()
	_, err := e.phase.Work(ctx, task)
	e.fail(task, err)
	var crashed atomic.Bool
	e.tool.after = func(args json.RawMessage) error {
		if strings.Contains(string(args), "refund") && crashed.CompareAndSwap(false, true) {
			return errors.New("worker killed after the refund, before its record")
		}
		return nil
	}
	undo := e.claim()
	if _, err := e.phase.Work(ctx, undo); err == nil || !crashed.Load() {
		t.Fatalf("want the crash: %v", err)
	}
	again := e.ExpireAndReclaim("w2") // its lease runs out; another worker claims
	if again.Compensation != "failed" || again.Attempt != 2 {
		t.Fatalf("reclaimed: attempt %d, compensation %q", again.Attempt, again.Compensation)
	}
	res, err := e.phase.Work(ctx, again)
	if err != nil {
		t.Fatal(err)
	}
	e.succeed(again, res)
	refunds := e.performed("refund")
	if len(refunds) != 2 || e.down.Effects() != 4 || e.get(id).State != agentledger.StateCompensated {
		t.Fatalf("refund sent %d times, %d downstream effects (want 2 sends, 4 effects: one refund), state %s",
			len(refunds), e.down.Effects(), e.get(id).State)
	}
}

// gate stops a task before its step's effect is reserved, until the test
// lets it go on (with an error: the attempt was cancelled meanwhile).
type gate struct {
	entered chan struct{}
	release chan error
}

func (*gate) Name() string                { return "gate" }
func (*gate) Description() string         { return "waits" }
func (*gate) Parameters() json.RawMessage { return json.RawMessage(`{"type":"object"}`) }
func (g *gate) Effect(tools.Call) (ledger.Effect, error) {
	close(g.entered)
	return ledger.Effect{}, <-g.release
}

// An operator's cancel of a running task between its steps undoes only the
// steps that completed: the step that had not started is not undone.
func TestCancelUndoesOnlyCompletedSteps(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	g := &gate{entered: make(chan struct{}), release: make(chan error)}
	e := newSagaEnv(t, g)
	id := e.submit(`{"steps":[
		{"tool":"post","args":{"charge":42},"compensate":{"tool":"post","args":{"refund":"${self.body.id}"}}},
		{"tool":"gate","args":{"after":"${steps.0.body.id}"},"compensate":{"tool":"post","args":{"release":"${self.body.id}"}}}
	]}`)
	task := e.claim()
	done := make(chan error, 1)
	go func() { _, err := e.phase.Work(ctx, task); done <- err }()
	<-g.entered
	got, err := e.Operator.Cancel(ctx, "", id) // running: flagged
	if err != nil || got.CancelRequested == nil {
		t.Fatalf("cancel of a running task: %v", err)
	}
	g.release <- agentledger.ErrCancelled // what the attempt sees at its next heartbeat
	if err := <-done; !errors.Is(err, agentledger.ErrCancelled) {
		t.Fatalf("attempt: %v", err)
	}
	if err := e.Claims.Cancelled(ctx, claims.LeaseOf(task), "cancelled by operator"); err != nil {
		t.Fatal(err)
	}
	if got := e.get(id); got.State != agentledger.StateCompensating || got.Compensation != "cancelled" || got.CancelRequested != nil {
		t.Fatalf("acknowledged cancel: %s %q\n%s", got.State, got.Compensation, e.LedgerText())
	}
	if _, err := e.Operator.Cancel(ctx, "", id); !errors.Is(err, agentledger.ErrConflict) {
		t.Fatalf("cancel of a compensation: %v", err)
	}
	undo := e.claim()
	res, err := e.phase.Work(ctx, undo)
	if err != nil {
		t.Fatal(err)
	}
	e.succeed(undo, res)
	if r := e.performed("refund"); len(r) != 1 || len(e.performed("release")) != 0 || e.get(id).State != agentledger.StateCompensated {
		t.Fatalf("refunds %v, releases %v, state %s", r, e.performed("release"), e.get(id).State)
	}
}

// A task cancelled with nothing to undo ends cancelled, as before sagas.
func TestCancelWithNothingToUndo(t *testing.T) {
	t.Parallel()
	e := newSagaEnv(t)
	id := e.submit(sagaPayload)
	if got, err := e.Operator.Cancel(context.Background(), "", id); err != nil || got.State != agentledger.StateCancelled {
		t.Fatalf("cancel of a queued saga: %v %+v", err, got)
	}
	if _, err := e.Operator.Compensate(context.Background(), "", id); !errors.Is(err, agentledger.ErrConflict) ||
		!strings.Contains(err.Error(), "nothing to compensate") {
		t.Fatalf("compensate with nothing done: %v", err)
	}
}

// An operator asks to undo a task that succeeded.
func TestOperatorCompensatesSucceededTask(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	e := newSagaEnv(t)
	if _, err := outbox.NewRules(e.DB).Put(ctx, outbox.Rule{Name: "undo", Events: []string{"succeeded", "compensating", "compensated"},
		Channel: "ops"}, false); err != nil {
		t.Fatal(err)
	}
	id := e.submit(`{"steps":[{"tool":"post","args":{"charge":42},"compensate":{"tool":"post","args":{"refund":"${self.body.id}"}}}]}`)
	task := e.claim()
	res, err := e.phase.Work(ctx, task)
	if err != nil {
		t.Fatal(err)
	}
	e.succeed(task, res)
	got, err := e.Operator.Compensate(ctx, "", id)
	if err != nil || got.State != agentledger.StateCompensating || got.Compensation != "operator" {
		t.Fatalf("compensate: %v %+v", err, got)
	}
	if _, err := e.Operator.Compensate(ctx, "", id); !errors.Is(err, agentledger.ErrConflict) || !strings.Contains(err.Error(), "already") {
		t.Fatalf("second compensate: %v", err)
	}
	undo := e.claim()
	if res, err = e.phase.Work(ctx, undo); err != nil {
		t.Fatal(err)
	}
	e.succeed(undo, res)
	if r := e.performed("refund"); len(r) != 1 || e.get(id).State != agentledger.StateCompensated {
		t.Fatalf("refunds %v, state %s", r, e.get(id).State)
	}
	// The operator's compensate is a state change the rule hears, as the
	// failure's and the cancel's are; its event carries the attempt it
	// followed.
	var events string
	e.DB.QueryRow(ctx, `SELECT string_agg(event || ':' || attempt, ',' ORDER BY id) FROM outbox WHERE task_id = $1`, id).Scan(&events)
	if events != "succeeded:1,compensating:1,compensated:1" {
		t.Fatalf("notified on %q, want succeeded:1,compensating:1,compensated:1", events)
	}
}

// A compensation declared for a pure effect is refused before anything is
// performed.
func TestCompensationOfPureEffectRefused(t *testing.T) {
	t.Parallel()
	http, err := tools.NewHTTPRequest(tools.HTTPConfig{AllowedHosts: []string{"example.test"}})
	if err != nil {
		t.Fatal(err)
	}
	e := newSagaEnv(t, http)
	e.submit(`{"steps":[
		{"tool":"post","args":{"charge":42}},
		{"tool":"http_request","args":{"method":"GET","url":"http://example.test/x"},"compensate":{"tool":"post","args":{"undo":1}}}
	]}`)
	task := e.claim()
	_, err = e.phase.Work(context.Background(), task)
	var perm *agentledger.PermanentError
	if !errors.As(err, &perm) || !strings.Contains(err.Error(), "pure effect") || len(e.tool.seen) != 0 {
		t.Fatalf("want a permanent refusal before step 0: %v (%d performed)", err, len(e.tool.seen))
	}
}

// A compensation that fails for good parks the task; once the operator
// fixed the cause, a replay continues the compensation, not the forward
// path: the failed compensation is tried again under its key, the one
// already done is not done again.
func TestFailedCompensationParksAndReplayContinues(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	e := newSagaEnv(t)
	if _, err := outbox.NewRules(e.DB).Put(ctx, outbox.Rule{Name: "undo", Events: []string{"needs_attention", "compensating", "compensated"},
		Channel: "ops"}, false); err != nil {
		t.Fatal(err)
	}
	id := e.submit(sagaPayload)
	task := e.claim()
	_, err := e.phase.Work(ctx, task)
	e.fail(task, err)
	e.tool.fail = func(n int) error {
		e.tool.mu.Lock()
		refund := strings.Contains(string(e.tool.seen[n-1]), "refund")
		e.tool.mu.Unlock()
		if refund {
			return agentledger.Permanent(errors.New("card closed"))
		}
		return nil
	}
	undo := e.claim()
	_, err = e.phase.Work(ctx, undo)
	if st := e.fail(undo, err); st != agentledger.StateNeedsAttention {
		t.Fatalf("failed compensation: %s (%v)", st, err)
	}
	e.tool.fail = nil
	// A re-run now would start a new generation and leave the charge's
	// refund undone, out of the journal: refused.
	if _, err := e.Operator.Rerun(ctx, "", id); !errors.Is(err, agentledger.ErrConflict) || !strings.Contains(err.Error(), "half undone") {
		t.Fatalf("re-run of a parked compensation: %v, want a conflict", err)
	}
	// The refund's failure is recorded; once the card works again, the
	// operator replays the task: the failed refund is tried again.
	if got, err := e.Operator.Replay(ctx, "", id); err != nil || got.Task.State != agentledger.StateCompensating {
		t.Fatalf("replay of a parked compensation: %v %+v", err, got)
	}
	again := e.claim()
	if again.Compensation == "" {
		t.Fatal("the replay ran the forward path")
	}
	res, err := e.phase.Work(ctx, again)
	if err != nil {
		t.Fatal(err)
	}
	e.succeed(again, res)
	if r := e.performed("refund"); len(e.performed("release")) != 1 || len(r) != 2 || e.get(id).State != agentledger.StateCompensated {
		t.Fatalf("release performed %d times (want once), refund %d (want the refused one and the one after reopening), state %s",
			len(e.performed("release")), len(r), e.get(id).State)
	}
	// The replay's return to the compensation is heard as the failure's
	// entry into it was.
	var events string
	e.DB.QueryRow(ctx, `SELECT string_agg(event, ',' ORDER BY id) FROM outbox WHERE task_id = $1`, id).Scan(&events)
	if events != "compensating,needs_attention,compensating,compensated" {
		t.Fatalf("notified on %q, want compensating,needs_attention,compensating,compensated", events)
	}
}

// A forward effect of unknown outcome (its worker died after the call,
// before recording it) parks the compensation instead of guessing; once
// the operator resolves it as done, a replay undoes it.
func TestUnknownForwardEffectParksCompensation(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	e := newSagaEnv(t)
	id := e.submit(`{"steps":[{"tool":"post","args":{"charge":42},"compensate":{"tool":"post","args":{"refund":"${self.body.id}"}}}]}`)
	e.tool.after = func(args json.RawMessage) error {
		if strings.Contains(string(args), "charge") {
			return errors.New("worker killed after the charge, before its record")
		}
		return nil
	}
	task := e.claim()
	_, err := e.phase.Work(ctx, task)
	if st := e.fail(task, err); st != agentledger.StateRetrying {
		t.Fatalf("after the crash: %s", st)
	}
	e.tool.after = nil
	if got, err := e.Operator.Cancel(ctx, "", id); err != nil || got.State != agentledger.StateCompensating {
		t.Fatalf("cancel: %v %+v", err, got)
	}
	undo := e.claim()
	_, err = e.phase.Work(ctx, undo)
	if !errors.Is(err, agentledger.ErrNeedsAttention) || !strings.Contains(err.Error(), "unknown outcome") {
		t.Fatalf("compensation of an unknown effect: %v", err)
	}
	if err := e.Claims.NeedsAttention(ctx, claims.LeaseOf(undo), err.Error()); err != nil {
		t.Fatal(err)
	}
	if got := e.get(id); got.State != agentledger.StateNeedsAttention || len(e.performed("refund")) != 0 {
		t.Fatalf("parked: %s, %d refunds", got.State, len(e.performed("refund")))
	}
	key := ledger.EffectKey(undo.Tenant, id, undo.Generation, "tool/0", "test.post")
	if err := e.Ledger.Resolve(ctx, undo.Tenant, "test.post", key, ledger.Resolution{Done: true,
		Result: &ledger.Result{Status: 201, Body: json.RawMessage(`{"id":"eff_1"}`)}, Note: "the charge is on the statement"}); err != nil {
		t.Fatal(err)
	}
	if got, err := e.Operator.Replay(ctx, "", id); err != nil || got.Task.State != agentledger.StateCompensating {
		t.Fatalf("replay: %v %+v", err, got)
	}
	e.undoToTheEnd(ctx)
	if r := e.performed("refund"); len(r) != 1 || r[0] != `{"refund":"eff_1"}` || e.get(id).State != agentledger.StateCompensated {
		t.Fatalf("refunds %v, state %s", r, e.get(id).State)
	}
}

// An operator who undid an effect by hand after its compensation failed
// for good resolves that compensation as done; a replay then finishes the
// phase without performing it.
func TestFailedCompensationResolvedByHand(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	e := newSagaEnv(t)
	id := e.submit(`{"steps":[{"tool":"post","args":{"charge":42},"compensate":{"tool":"post","args":{"refund":"${self.body.id}"}}},
		{"tool":"ship","args":{}}]}`)
	task := e.claim()
	_, err := e.phase.Work(ctx, task)
	e.fail(task, err)
	e.tool.fail = func(n int) error {
		if n == 2 {
			return agentledger.Permanent(errors.New("card closed"))
		}
		return nil
	}
	undo := e.claim()
	_, err = e.phase.Work(ctx, undo)
	if st := e.fail(undo, err); st != agentledger.StateNeedsAttention {
		t.Fatalf("failed compensation: %s", st)
	}
	key := ledger.EffectKey(undo.Tenant, id, undo.Generation, "compensate/tool/0", "test.post")
	if err := e.Ledger.Resolve(ctx, undo.Tenant, "test.post", key, ledger.Resolution{Done: true, Note: "refunded by hand"}); err != nil {
		t.Fatal(err)
	}
	if _, err := e.Operator.Replay(ctx, "", id); err != nil {
		t.Fatal(err)
	}
	e.undoToTheEnd(ctx)
	if n := len(e.performed("refund")); n != 1 || e.get(id).State != agentledger.StateCompensated {
		t.Fatalf("refund performed %d times (want only the refused one), state %s", n, e.get(id).State)
	}
	// The result says the undo was the operator's, not the refusal.
	if got := string(e.get(id).Result); got != `{"compensations": [{"note": "refunded by hand", "tool": "post", "undoes": "tool/0", "replayed": true}]}` {
		t.Fatalf("result %s", got)
	}
}

// Submit-time checks of compensations: a later step's result, an unknown
// tool (the check's own error) and a GET's compensation are refused.
func TestCheckRefusesBadCompensations(t *testing.T) {
	known := func(tool string, _ json.RawMessage) error {
		if tool != "http_request" {
			return fmt.Errorf("unknown tool %q", tool)
		}
		return nil
	}
	for payload, want := range map[string]string{
		`{"steps":[{"tool":"http_request","args":{"method":"POST","url":"http://a/x"},"compensate":{"tool":"http_request","args":{"id":"${steps.1.body.id}"}}},{"tool":"http_request"}]}`: `step 0's compensation: ${steps.1.body.id} refers to step 1, which does not run before it`,
		`{"steps":[{"tool":"http_request","args":{"method":"POST","url":"http://a/x"},"compensate":{"tool":"refund"}}]}`:                                                                  `step 0: compensation: unknown tool "refund"`,
		`{"steps":[{"tool":"http_request","args":{"method":"get","url":"http://a/x"},"compensate":{"tool":"http_request"}}]}`:                                                             `step 0: declares a compensation, but a GET changes nothing`,
		`{"steps":[{"tool":"http_request","args":{"method":"POST","url":"http://a/x"},"compensate":{"tool":"http_request","args":{"method":"GET","url":"http://a/x"}}}]}`:                 `step 0: compensation: http_request changes nothing, so it undoes nothing`,
		`{"steps":[{"tool":"http_request","args":{"id":"${self.body.id}"}}]}`:                                                                                                             `step 0: ${self…} may be used only in a compensation`,
		`{"steps":[{"tool":"http_request","compensate":{"tool":"http_request","args":{"x":"${self.nope}"}}}]}`:                                                                            `${self.nope} must name status, body[.path] or external_ref`,
		// The same written with JSON escapes: checked as the undo would read them.
		`{"steps":[{"tool":"http_request","compensate":{"tool":"http_request","args":{"x":"\u0024{self.nope}"}}}]}`: `${self.nope} must name status, body[.path] or external_ref`,
		`{"steps":[{"tool":"http_request","args":{"id":"\u0024{self.body.id}"}}]}`:                                  `step 0: ${self…} may be used only in a compensation`,
	} {
		err := steps.Check(json.RawMessage(payload), known)
		if !errors.Is(err, agentledger.ErrInvalid) || !strings.Contains(err.Error(), want) {
			t.Errorf("%s:\n got %v\nwant …%s…", payload, err, want)
		}
	}
}

// A compensation whose arguments do not render from the undone effect's
// result ("${self.body.nope}") can never be built: the phase parks at once,
// the journal shows the compensation failed, and the operator's resolve of
// that step as done (undone by hand) lets the replay finish the task
// compensated, nothing sent.
func TestUnbuiltCompensationResolvedByHand(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	e := newSagaEnv(t)
	id, undo, err := e.unbuildable(ctx)
	var perm *agentledger.PermanentError
	if !errors.As(err, &perm) || !strings.Contains(err.Error(), "cannot be sent") {
		t.Fatalf("unbuilt compensation: %v, want a permanent error", err)
	}
	if st := e.fail(undo, err); st != agentledger.StateNeedsAttention {
		t.Fatalf("unbuilt compensation: %s, want needs_attention at once", st)
	}
	d, err := e.Operator.Show(ctx, "", id)
	if err != nil {
		t.Fatal(err)
	}
	var row *operator.Effect
	for i := range d.Journal {
		if d.Journal[i].Step == "compensate/tool/0" {
			row = &d.Journal[i]
		}
	}
	if row == nil || row.State != ledger.StateFailed || !strings.Contains(row.Error, `no "nope"`) {
		t.Fatalf("journal row of the unbuilt compensation: %+v", row)
	}
	// A stale attempt records nothing: the fence is the lease.
	if outcome, err := e.Ledger.Unbuilt(ctx, tools.AttemptOf(undo), "compensate/tool/9", "post", "stale"); err != nil || outcome != ledger.UnbuiltStale {
		t.Fatalf("an ended attempt's unbuilt record: outcome %d, %v; want stale", outcome, err)
	}
	if d, _ := e.Operator.Show(ctx, "", id); len(d.Journal) != 3 {
		t.Fatalf("a stale attempt's unbuilt row was recorded: %d journal rows, want 3", len(d.Journal))
	}
	// "Retry" is not a resolution of a failed compensation, and the
	// refusal does not promise a replay that would send it: this one
	// never renders.
	_, err = e.Operator.Resolve(ctx, "", id, "compensate/tool/0", operator.Resolution{Note: "try again"})
	if !errors.Is(err, agentledger.ErrInvalid) || !strings.Contains(err.Error(), "if its cause can be fixed") ||
		!strings.Contains(err.Error(), "otherwise make sure the effect was not undone already, undo it by hand") {
		t.Fatalf("retry of a failed compensation: %v", err)
	}
	if _, err := e.Operator.Resolve(ctx, "", id, "compensate/tool/0", operator.Resolution{Done: true, Note: "refunded by hand"}); err != nil {
		t.Fatal(err)
	}
	// A second resolution (another operator's) is told it is settled.
	_, err = e.Operator.Resolve(ctx, "", id, "compensate/tool/0", operator.Resolution{Done: true, Note: "me too"})
	if !errors.Is(err, agentledger.ErrConflict) || !strings.Contains(err.Error(), "settled already (completed; note: refunded by hand)") {
		t.Fatalf("second resolution: %v", err)
	}
	e.undoToTheEnd(ctx)
	if n := len(e.performed("refund")); n != 0 || e.get(id).State != agentledger.StateCompensated {
		t.Fatalf("refund performed %d times, state %s; want none sent, compensated", n, e.get(id).State)
	}
}

// peek is a pure tool: it changes nothing.
type peek struct{}

func (peek) Name() string                { return "peek" }
func (peek) Description() string         { return "reads" }
func (peek) Parameters() json.RawMessage { return json.RawMessage(`{"type":"object"}`) }
func (peek) Effect(c tools.Call) (ledger.Effect, error) {
	return ledger.Effect{Operation: "test.peek", Class: ledger.Pure, Request: c.Args,
		Perform: func(context.Context, ledger.Call) (ledger.Result, error) { return ledger.Result{Status: 200}, nil }}, nil
}

// A compensation that is a pure call would undo nothing: it is refused
// before it runs, recorded failed, and the task parks instead of ending
// compensated with its charge in place; Check refuses it at submit.
func TestPureCompensationRefused(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	e := newSagaEnv(t, peek{})
	payload := `{"steps":[{"tool":"post","args":{"charge":42},"compensate":{"tool":"peek"}},{"tool":"ship","args":{}}]}`
	pure := func(tool string) bool { return tool == "peek" }
	if err := steps.CheckWith(json.RawMessage(payload), func(string, json.RawMessage) error { return nil }, pure); err == nil ||
		!strings.Contains(err.Error(), "compensation: peek changes nothing, so it undoes nothing") {
		t.Fatalf("Check: %v", err)
	}
	id := e.submit(payload)
	task := e.claim()
	_, err := e.phase.Work(ctx, task)
	e.fail(task, err)
	undo := e.claim()
	_, err = e.phase.Work(ctx, undo)
	if err == nil || !strings.Contains(err.Error(), "is a pure effect (it changes nothing), so it undoes nothing") {
		t.Fatalf("pure compensation: %v", err)
	}
	if st := e.fail(undo, err); st != agentledger.StateNeedsAttention {
		t.Fatalf("pure compensation: %s, want needs_attention", st)
	}
	if _, err := e.Operator.Resolve(ctx, "", id, "compensate/tool/0", operator.Resolution{Done: true, Note: "refunded by hand"}); err != nil {
		t.Fatal(err)
	}
	e.undoToTheEnd(ctx)
	if e.get(id).State != agentledger.StateCompensated {
		t.Fatalf("state %s, want compensated", e.get(id).State)
	}
}
