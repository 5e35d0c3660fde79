package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/agentledger/agentledger"
	"github.com/agentledger/agentledger/claims"
	"github.com/agentledger/agentledger/internal/test/testenv"
	"github.com/agentledger/agentledger/ledger"
	"github.com/agentledger/agentledger/tools"
)

// agentctlAt runs agentctl against the env's database.
func agentctlAt(url string, args ...string) (int, string, string) {
	var stdout, stderr bytes.Buffer
	code := run(context.Background(), append([]string{"--database-url", url}, args...), strings.NewReader(""), &stdout, &stderr)
	return code, stdout.String(), stderr.String()
}

// The operator's way out of needs_attention: the replay preview names the
// unknown effect, resolve --retry settles it and queues the task, and the
// next attempt performs the effect once more; rerun needs --yes.
func TestReplayResolveRerun(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	e := testenv.New(t)
	url := e.DB.Config().ConnString()

	task := e.Enqueue(claims.EnqueueParams{})
	a := e.Claim("a")
	performed := 0
	wire := ledger.Effect{Operation: "unsafe_http", StepPath: "tool/0", Class: ledger.Unsafe, Request: []byte(`{"wire":1}`),
		Perform: func(context.Context, ledger.Call) (ledger.Result, error) {
			performed++
			if performed == 1 {
				e.ExpireAndReclaim("b") // the attempt dies after sending
			}
			return ledger.Result{Status: 200}, nil
		}}
	if _, err := e.Ledger.Do(ctx, tools.AttemptOf(a), wire); !errors.Is(err, agentledger.ErrLeaseLost) {
		t.Fatal(err)
	}
	b, _ := e.Claims.Get(ctx, "", task.ID)
	_, cause := e.Ledger.Do(ctx, tools.AttemptOf(b), wire)
	if !errors.Is(cause, ledger.ErrNeedsAttention) {
		t.Fatal(cause)
	}
	if err := e.Claims.NeedsAttention(ctx, claims.LeaseOf(b), "step 0 (unsafe_http): "+cause.Error()); err != nil {
		t.Fatal(err)
	}
	id := fmt.Sprint(task.ID)

	// The list names the step to resolve before the cut.
	code, out, errOut := agentctlAt(url, "list")
	if code != 0 || !strings.Contains(out, " at tool/0: step 0 (unsafe_http): effect outcome u") {
		t.Fatalf("list: exit %d\n%s%s", code, out, errOut)
	}

	// A re-run would send the wire again under a new key: refused,
	// naming the step to settle.
	if code, _, errOut = agentctlAt(url, "rerun", id, "--yes"); code != 1 ||
		!strings.Contains(errOut, "task "+id+" has effects whose outcome is not known, at tool/0") ||
		!strings.Contains(errOut, "agentctl resolve "+id+" --step tool/0") || !strings.Contains(errOut, "--despite-unknown") {
		t.Fatalf("rerun with an unknown effect: exit %d %s", code, errOut)
	}

	// A replay would stop at it again: refused, its preview too, naming
	// the resolve that replays it.
	for _, args := range [][]string{{"replay", id, "--dry-run"}, {"replay", id}} {
		code, out, errOut = agentctlAt(url, args...)
		if code != 1 || out != "" || !strings.Contains(errOut, "task "+id+" has an effect of unknown outcome at tool/0: a replay would stop there again; "+
			"settle it first with agentctl resolve "+id+" --step tool/0 (--done | --retry) --note TEXT, which replays it") {
			t.Fatalf("%v: exit %d\n%s%s", args, code, out, errOut)
		}
	}
	if code, _, errOut = agentctlAt(url, "resolve", id, "--step", "tool/0", "--retry"); code != 2 || !strings.Contains(errOut, "--note is required") {
		t.Fatalf("resolve without note: exit %d %s", code, errOut)
	}
	if code, _, errOut = agentctlAt(url, "resolve", id, "--step", "tool/9", "--done", "--note", "x"); code != 1 ||
		!strings.Contains(errOut, `no effect of unknown outcome at step "tool/9"; its unknown effect is at tool/0`) {
		t.Fatalf("resolve of a step without an unknown effect: exit %d %s", code, errOut)
	}
	// The task's one unknown effect is the default step.
	code, out, errOut = agentctlAt(url, "resolve", id, "--retry", "--note", "bank has no such wire")
	if code != 0 || !strings.Contains(out, "effect tool/0 of task "+id+" allowed one more performance; the task went back to queued") {
		t.Fatalf("resolve: exit %d\n%s%s", code, out, errOut)
	}
	c := e.Claim("c")
	if _, err := e.Ledger.Do(ctx, tools.AttemptOf(c), wire); err != nil || performed != 2 {
		t.Fatalf("after resolution: %v, performed %d", err, performed)
	}
	if err := e.Claims.Succeed(ctx, claims.LeaseOf(c), nil); err != nil {
		t.Fatal(err)
	}
	if code, _, errOut = agentctlAt(url, "resolve", id, "--done", "--note", "x"); code != 1 ||
		!strings.Contains(errOut, "task "+id+" has no effect of unknown outcome\n") {
		t.Fatalf("resolve with no unknown effect left: exit %d %s", code, errOut)
	}

	if code, _, errOut = agentctlAt(url, "rerun", id); code != 2 || !strings.Contains(errOut, "re-run with --yes") {
		t.Fatalf("rerun without --yes: exit %d %s", code, errOut)
	}
	code, out, _ = agentctlAt(url, "rerun", id, "--yes") // settled: re-run without --despite-unknown
	if code != 0 || !strings.Contains(out, "queued as a new intent (generation 2)") {
		t.Fatalf("rerun: exit %d %s", code, out)
	}
	if code, _, errOut = agentctlAt(url, "replay", id); code != 1 || !strings.Contains(errOut, "is queued") {
		t.Fatalf("replay of a queued task: exit %d %s", code, errOut)
	}
}

// A task cancelled with an effect of unknown outcome: resolved "retry"
// (it did not happen), the re-run is allowed; --despite-unknown re-runs
// one that is not settled.
func TestRerunAfterSettling(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	e := testenv.New(t)
	url := e.DB.Config().ConnString()
	park := func() string {
		task := e.Enqueue(claims.EnqueueParams{})
		a := e.Claim("a")
		wire := ledger.Effect{Operation: "unsafe_http", StepPath: "tool/0", Class: ledger.Unsafe, Request: []byte(`{"wire":1}`),
			Perform: func(context.Context, ledger.Call) (ledger.Result, error) {
				return ledger.Result{}, errors.New("connection reset")
			}}
		_, cause := e.Ledger.Do(ctx, tools.AttemptOf(a), wire)
		if !errors.Is(cause, ledger.ErrNeedsAttention) {
			t.Fatal(cause)
		}
		if err := e.Claims.NeedsAttention(ctx, claims.LeaseOf(a), cause.Error()); err != nil {
			t.Fatal(err)
		}
		id := fmt.Sprint(task.ID)
		if code, _, errOut := agentctlAt(url, "cancel", id); code != 0 {
			t.Fatalf("cancel: exit %d %s", code, errOut)
		}
		return id
	}
	id := park()
	if code, _, errOut := agentctlAt(url, "rerun", id, "--yes"); code != 1 || !strings.Contains(errOut, "at tool/0") {
		t.Fatalf("rerun of a cancelled task with an unknown effect: exit %d %s", code, errOut)
	}
	if code, _, errOut := agentctlAt(url, "resolve", id, "--retry", "--note", "the bank has no such wire"); code != 0 {
		t.Fatalf("resolve: exit %d %s", code, errOut)
	}
	if code, out, errOut := agentctlAt(url, "rerun", id, "--yes"); code != 0 || !strings.Contains(out, "generation 2") {
		t.Fatalf("rerun once settled: exit %d %s%s", code, out, errOut)
	}

	other := park()
	if code, out, errOut := agentctlAt(url, "rerun", other, "--yes", "--despite-unknown"); code != 0 || !strings.Contains(out, "generation 2") {
		t.Fatalf("rerun --despite-unknown: exit %d %s%s", code, out, errOut)
	}
}

// replay --dry-run shows an effect the tenant's grant no longer allows as
// refused, naming the missing grant; granted again, it is served.
func TestReplayPreviewShowsRefusedGrant(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	e := testenv.New(t)
	url := e.DB.Config().ConnString()
	task := e.Enqueue(claims.EnqueueParams{Tenant: "acme", Kind: "steps", Payload: []byte(
		`{"steps":[{"tool":"http_request","args":{"method":"POST","url":"https://api.example.com/charges"}}]}`)})
	a := e.Claim("a")
	post := ledger.Effect{Operation: "http_request", StepPath: "tool/0", Class: ledger.Keyed, Request: []byte(`{"post":1}`),
		Perform: func(context.Context, ledger.Call) (ledger.Result, error) { return ledger.Result{Status: 201}, nil }}
	if _, err := e.Ledger.Do(ctx, tools.AttemptOf(a), post); err != nil {
		t.Fatal(err)
	}
	if err := e.Claims.Succeed(ctx, claims.LeaseOf(a), nil); err != nil {
		t.Fatal(err)
	}
	id := fmt.Sprint(task.ID)
	code, out, errOut := agentctlAt(url, "replay", id, "--dry-run")
	if code != 0 || !strings.Contains(out, "refused: not granted") ||
		!strings.Contains(out, `tool/0: tenant "acme" has no grant for tool "http_request"`) {
		t.Fatalf("replay --dry-run without a grant: exit %d\n%s%s", code, out, errOut)
	}
	if code, out, errOut = agentctlAt(url, "tenant", "add", "acme"); code != 0 {
		t.Fatalf("tenant add: exit %d\n%s%s", code, out, errOut)
	}
	if code, out, errOut = agentctlAt(url, "tenant", "grant", "acme", "--tool", "http_request"); code != 0 {
		t.Fatalf("grant: exit %d\n%s%s", code, out, errOut)
	}
	// The host comes from the step's literal arguments.
	code, out, errOut = agentctlAt(url, "replay", id, "--dry-run")
	if code != 0 || !strings.Contains(out, `has no grant for host https://api.example.com:443 (agentctl tenant grant acme --host https://api.example.com:443)`) {
		t.Fatalf("replay --dry-run without the host: exit %d\n%s%s", code, out, errOut)
	}
	if code, out, errOut = agentctlAt(url, "tenant", "grant", "acme", "--host", "https://api.example.com"); code != 0 {
		t.Fatalf("grant: exit %d\n%s%s", code, out, errOut)
	}
	code, out, errOut = agentctlAt(url, "replay", id, "--dry-run")
	if code != 0 || strings.Contains(out, "refused") || !strings.Contains(out, "served from ledger") {
		t.Fatalf("replay --dry-run with the grant: exit %d\n%s%s", code, out, errOut)
	}
}
