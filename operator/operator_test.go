package operator_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/agentledger/agentledger"
	"github.com/agentledger/agentledger/claims"
	"github.com/agentledger/agentledger/internal/test/testenv"
	"github.com/agentledger/agentledger/ledger"
	"github.com/agentledger/agentledger/operator"
	"github.com/agentledger/agentledger/tools"
)

// A task with one completed keyed effect, finished: show, preview and
// replay agree on what a replay does, and a running task refuses both.
func TestShowPreviewReplay(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	e := testenv.New(t)
	svc := operator.New(e.DB)
	task := e.Enqueue(claims.EnqueueParams{Tenant: "acme"})
	running := e.Claim("w")
	if _, err := e.Ledger.Do(ctx, tools.AttemptOf(running), ledger.Effect{Operation: "http.post", StepPath: "tool/0",
		Class: ledger.Keyed, Request: []byte(`{}`),
		Perform: func(context.Context, ledger.Call) (ledger.Result, error) { return ledger.Result{Status: 200}, nil },
	}); err != nil {
		t.Fatal(err)
	}
	if _, err := svc.Preview(ctx, "", task.ID); !errors.Is(err, agentledger.ErrConflict) {
		t.Fatalf("preview of a running task: %v, want a conflict", err)
	}
	if err := e.Claims.Succeed(ctx, claims.LeaseOf(running), []byte(`{"charged":1}`)); err != nil {
		t.Fatal(err)
	}

	d, err := svc.Show(ctx, "acme", task.ID)
	if err != nil || len(d.Journal) != 1 || len(d.Attempts) != 1 || d.Task.State != agentledger.StateSucceeded {
		t.Fatalf("show: %+v %v", d, err)
	}
	if _, err := svc.Show(ctx, "other", task.ID); !errors.Is(err, agentledger.ErrNotFound) {
		t.Fatalf("another tenant's show: %v, want not found", err)
	}
	p, err := svc.Preview(ctx, "", task.ID)
	if err != nil || len(p.Effects) != 1 || p.Effects[0].Plan != ledger.PlanServed {
		t.Fatalf("preview: %+v %v", p, err)
	}
	r, err := svc.Replay(ctx, "acme", task.ID)
	if err != nil || r.Task.State != agentledger.StateQueued || len(r.Effects) != 1 || r.Effects[0].Plan != ledger.PlanServed {
		t.Fatalf("replay: %+v %v", r, err)
	}
	// The replay runs the task forward again: the last success's result
	// goes, so a replay that ends dead shows its error alone.
	if r.Task.Result != nil {
		t.Fatalf("replayed task kept its result %s", r.Task.Result)
	}
	e.Advance(time.Minute) // past the replay's run_at, set by svc's own clock
	again := e.Claim("w")
	if _, err := e.Claims.Fail(ctx, claims.Failure{Lease: claims.LeaseOf(again), Error: "grant revoked", Final: true}); err != nil {
		t.Fatal(err)
	}
	if d, err := svc.Show(ctx, "acme", task.ID); err != nil || d.Task.State != agentledger.StateDead || d.Task.Result != nil {
		t.Fatalf("a replay that ended dead: %+v %v", d.Task, err)
	}
}

// Resolve checks its input before it reads anything, and names the step
// that has no unknown effect.
func TestResolveRefusesBadInput(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	e := testenv.New(t)
	svc := operator.New(e.DB)
	task := e.Enqueue(claims.EnqueueParams{})
	if _, err := svc.Resolve(ctx, "", task.ID, "", operator.Resolution{Note: "x"}); !errors.Is(err, agentledger.ErrInvalid) {
		t.Errorf("no step: %v", err)
	}
	if _, err := svc.Resolve(ctx, "", task.ID, "tool/0", operator.Resolution{}); !errors.Is(err, agentledger.ErrInvalid) {
		t.Errorf("no note: %v", err)
	}
	_, err := svc.Resolve(ctx, "", task.ID, "tool/0", operator.Resolution{Done: true, Note: "checked"})
	var none *operator.NoUnknownEffectError
	if !errors.As(err, &none) || !errors.Is(err, agentledger.ErrNotFound) || none.Step != "tool/0" {
		t.Errorf("no unknown effect: %v", err)
	}
	if _, err := svc.Resolve(ctx, "", 999_999, "tool/0", operator.Resolution{Note: "x"}); !errors.Is(err, agentledger.ErrNotFound) ||
		err.Error() != "task 999999 not found" {
		t.Errorf("unknown task: %v", err)
	}
}

// The refusal of a step with nothing to resolve names the steps that
// have something: effects of unknown outcome, and compensations that
// failed for good (resolved as done); "nor at any other" only when none.
func TestNoUnknownEffectErrorNamesResolvableSteps(t *testing.T) {
	const head = `task 7 has no effect of unknown outcome at step "compensate/tool/9"`
	for _, c := range []struct {
		unknown, failed []string
		want            string
	}{
		{nil, nil, head + ", nor at any other"},
		{[]string{"tool/1"}, nil, head + "; its unknown effect is at tool/1"},
		{[]string{"tool/1", "tool/2"}, nil, head + "; its unknown effects are at tool/1, tool/2"},
		{nil, []string{"compensate/tool/0"}, head + "; its compensation at compensate/tool/0 failed for good and can be resolved as done"},
		{[]string{"compensate/tool/2"}, []string{"compensate/tool/0", "compensate/tool/1"}, head +
			"; its unknown effect is at compensate/tool/2; its compensations at compensate/tool/0, compensate/tool/1 failed for good and can be resolved as done"},
	} {
		err := &operator.NoUnknownEffectError{TaskID: 7, Step: "compensate/tool/9", Unknown: c.unknown, FailedCompensations: c.failed}
		if got := err.Error(); got != c.want {
			t.Errorf("unknown %v, failed %v:\n got %s\nwant %s", c.unknown, c.failed, got, c.want)
		}
	}
}

// A retry allowed to an effect of a task undoing its effects performs
// nothing: the effect is taken as not performed, with nothing to undo.
func TestResolvedSaysWhatTheResolutionDid(t *testing.T) {
	for _, c := range []struct {
		task agentledger.Task
		done bool
		want string
	}{
		{agentledger.Task{}, true, "marked done"},
		{agentledger.Task{}, false, "allowed one more performance"},
		{agentledger.Task{Compensation: "failed"}, false, "taken as not performed: the compensation has nothing to undo for it"},
		{agentledger.Task{Compensation: "failed"}, true, "marked done"},
	} {
		if got := operator.Resolved(&c.task, c.done); got != c.want {
			t.Errorf("Resolved(compensation %q, done %v) = %q, want %q", c.task.Compensation, c.done, got, c.want)
		}
	}
}

// A task parked at an effect of unknown outcome is not replayed: the
// replay would stop at the same effect, an attempt spent for nothing.
// Resolved, it runs on (Resolve replays it).
func TestReplayRefusesAnUnknownEffect(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	e := testenv.New(t)
	svc := operator.New(e.DB)
	task := e.Enqueue(claims.EnqueueParams{Tenant: "acme"})
	running := e.Claim("w")
	if _, err := e.Ledger.Do(ctx, tools.AttemptOf(running), ledger.Effect{Operation: "http.post", StepPath: "tool/0",
		Class: ledger.Unsafe, Request: []byte(`{}`),
		Perform: func(context.Context, ledger.Call) (ledger.Result, error) { return ledger.Result{Status: 200}, nil },
	}); err != nil {
		t.Fatal(err)
	}
	if _, err := e.DB.Exec(ctx, `UPDATE ledger SET state = 'unknown', completed_at = NULL WHERE task_id = $1`, task.ID); err != nil {
		t.Fatal(err)
	}
	if err := e.Claims.NeedsAttention(ctx, claims.LeaseOf(running), "effect outcome unknown"); err != nil {
		t.Fatal(err)
	}
	want := fmt.Sprintf("task %d has an effect of unknown outcome at tool/0: a replay would stop there again; settle it first "+
		"with agentctl resolve %d --step tool/0 (--done | --retry) --note TEXT, which replays it", task.ID, task.ID)
	_, err := svc.Replay(ctx, "acme", task.ID)
	if !errors.Is(err, agentledger.ErrConflict) || err.Error() != want {
		t.Fatalf("replay of a parked task: %v\nwant a conflict: %s", err, want)
	}
	// Its preview does not offer what the replay refuses.
	if _, err := svc.Preview(ctx, "acme", task.ID); !errors.Is(err, agentledger.ErrConflict) || err.Error() != want {
		t.Fatalf("preview of a parked task: %v\nwant a conflict: %s", err, want)
	}
	if d, _ := svc.Show(ctx, "", task.ID); d.Task.State != agentledger.StateNeedsAttention || len(d.Attempts) != 1 {
		t.Fatalf("refused, yet the task is %s with %d attempts", d.Task.State, len(d.Attempts))
	}
	out, err := svc.ResolveTask(ctx, "", task.ID, "tool/0", operator.Resolution{Done: true, Note: "checked the target"})
	if err != nil || !out.Requeued || out.Task.State != agentledger.StateQueued {
		t.Fatalf("resolved: %+v %v, want the task requeued", out, err)
	}
	if d, _ := svc.Show(ctx, "", task.ID); d.Task.State != agentledger.StateQueued {
		t.Fatalf("resolved: %s, want queued", d.Task.State)
	}
}

// A dead steps task whose call failed for good is not retried: the
// failure is recorded, and the retry would end there the same way. A
// kind that may go on past a failed call (a Go kind, an agent) is.
func TestRetryRefusesAServedFailure(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	e := testenv.New(t)
	svc := operator.New(e.DB)
	for _, kind := range []string{"steps", "order"} {
		task := e.Enqueue(claims.EnqueueParams{Kind: kind, Payload: []byte(`{"steps":[{"tool":"http_request","args":{}}]}`)})
		running := e.Claim("w")
		_, err := e.Ledger.Do(ctx, tools.AttemptOf(running), ledger.Effect{Operation: "http.post", StepPath: "tool/0",
			Class: ledger.Keyed, Request: []byte(`{}`),
			Perform: func(context.Context, ledger.Call) (ledger.Result, error) {
				return ledger.Result{Status: 400}, agentledger.Permanent(errors.New("400 Bad Request"))
			}})
		if err == nil {
			t.Fatal("a refused call recorded no failure")
		}
		if _, err := e.Claims.Fail(ctx, claims.Failure{Lease: claims.LeaseOf(running), Error: err.Error(), Final: true}); err != nil {
			t.Fatal(err)
		}
		_, err = svc.Retry(ctx, "", task.ID)
		var served *operator.ServedFailureError
		switch {
		case kind == "steps" && (!errors.As(err, &served) || !errors.Is(err, agentledger.ErrConflict) || served.Step != "tool/0"):
			t.Errorf("retry of a steps task dead at a failed call: %v, want a ServedFailureError at tool/0", err)
		case kind != "steps" && err != nil:
			t.Errorf("retry of a %s task: %v", kind, err)
		}
	}
}
