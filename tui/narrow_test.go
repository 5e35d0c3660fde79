package tui

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/charmbracelet/x/exp/golden"
	"github.com/charmbracelet/x/exp/teatest"

	"github.com/agentledger/agentledger"
	"github.com/agentledger/agentledger/claims"
	"github.com/agentledger/agentledger/internal/test/testenv"
	"github.com/agentledger/agentledger/ledger"
	"github.com/agentledger/agentledger/tools"
)

// The console at 80×24, the smallest terminal it is meant for, and wide.
// Each screen is a golden file; the assertions name what the reviewer of
// a golden would look for: what a narrow screen used to lose.

// screenLines is the final screen's lines.
func screenLines(t *testing.T, tm *teatest.TestModel) (string, []string) {
	t.Helper()
	v := finish(t, tm)
	return v, strings.Split(v, "\n")
}

// wantOnScreen fails unless v holds every text.
func wantOnScreen(t *testing.T, v string, texts ...string) {
	t.Helper()
	for _, s := range texts {
		if !strings.Contains(v, s) {
			t.Errorf("the screen lacks %q:\n%s", s, v)
		}
	}
}

// At 80 columns the task list keeps the error readable (TENANT and QUEUE
// give way first) and the short help keeps ? and q.
func TestConsoleNarrowTasks(t *testing.T) {
	tm := startConsoleSized(t, seedDB(t), Options{}, 80, 24)
	waitFor(t, tm, "needs_attention", "page 1 · 4 tasks", noLiveWorkers, seededCounts)
	v, lines := screenLines(t, tm)
	checkFrame(t, v, 80, 24)
	wantOnScreen(t, v, "ID STATE           KIND  TRY  UPDATED DETAIL",
		"tool/2 notify.post: slack: ratelimited", "effect 1378b35c05ec at tool/0: effect")
	if help := lines[len(lines)-1]; !strings.HasSuffix(help, "? help • q quit") {
		t.Errorf("the help line lost ? or q: %q", help)
	}
	golden.RequireEqual(t, []byte(v))
}

// At 80×24 the full help wraps its columns: the last (w, L, ?, q) shows.
func TestConsoleNarrowHelp(t *testing.T) {
	tm := startConsoleSized(t, seedDB(t), Options{}, 80, 24)
	waitFor(t, tm, "page 1 · 4 tasks", noLiveWorkers, seededCounts)
	press(tm, "?")
	waitFor(t, tm, "L limits")
	v, _ := screenLines(t, tm)
	checkFrame(t, v, 80, 24)
	wantOnScreen(t, v, "w workers", "L limits", "? help", "q quit", "X cancel all", "u compensate (undo)")
	golden.RequireEqual(t, []byte(v))
}

// A refusal longer than the screen wraps rather than lose its reason.
func TestConsoleNarrowStatus(t *testing.T) {
	tm := startConsoleSized(t, seedDB(t), Options{StatusFor: -1}, 80, 24)
	waitFor(t, tm, "page 1 · 4 tasks", noLiveWorkers, seededCounts)
	press(tm, "down", "r") // task 3, queued
	waitFor(t, tm, "can be replayed")
	v, _ := screenLines(t, tm)
	checkFrame(t, v, 80, 24)
	wantOnScreen(t, v, "task 3 is queued: only a task no worker holds (succeeded, dead, cancelled or", "needs_attention) can be replayed")
	golden.RequireEqual(t, []byte(v))
}

// At 80 columns the attempts keep OUTCOME whole and ERROR readable:
// STARTED gives way first (ENDED stays).
func TestConsoleNarrowAttempts(t *testing.T) {
	tm := startConsoleSized(t, compensatedDB(t), Options{}, 80, 24)
	waitFor(t, tm, "compensated", "page 1 · 1 task", noLiveWorkers)
	press(tm, "enter", "tab")
	waitFor(t, tm, "[Attempts (2)]")
	v, _ := screenLines(t, tm)
	checkFrame(t, v, 80, 24)
	wantOnScreen(t, v, "GEN ATTEMPT WORKER   TOKEN ENDED    OUTCOME      ERROR", "compensating step 2 (http_request) failed", "compensated  -")
	golden.RequireEqual(t, []byte(v))
}

// Narrower still the attempts drop their TOKEN column, and the legend no
// longer explains it: it says the rows' order alone.
func TestConsoleAttemptsWithoutTokens(t *testing.T) {
	tm := startConsoleSized(t, compensatedDB(t), Options{}, 64, 24)
	waitFor(t, tm, "compensated", noLiveWorkers)
	press(tm, "enter", "tab")
	waitFor(t, tm, "[Attempts (2)]")
	v, _ := screenLines(t, tm)
	flat := strings.Join(strings.Fields(v), " ")
	if strings.Contains(flat, "TOKEN") {
		t.Fatalf("at 64 columns the attempts still show or explain TOKEN:\n%s", v)
	}
	wantOnScreen(t, flat, "Rows are in the order of their fencing tokens", "GEN ATTEMPT WORKER ENDED OUTCOME ERROR")
}

// The overview of a compensated task says why, and at which step, though
// its last error was cleared.
func TestConsoleCompensatedOverview(t *testing.T) {
	tm := startConsoleSized(t, compensatedDB(t), Options{}, 80, 24)
	waitFor(t, tm, "compensated", "page 1 · 1 task", noLiveWorkers)
	press(tm, "enter")
	waitFor(t, tm, "[Overview]", "Compensation")
	v, _ := screenLines(t, tm)
	checkFrame(t, v, 80, 24)
	wantOnScreen(t, v, "Last error        -", "Compensation      its forward path failed at tool/2 (http_request)",
		"Failed with       step 2 (http_request) failed: 422 no courier delivers order")
	golden.RequireEqual(t, []byte(v))
}

// On a wide screen the journal's steps are whole: compensate/tool/1 is
// what a resolve names.
func TestConsoleWideJournal(t *testing.T) {
	tm := startConsoleSized(t, compensatedDB(t), Options{}, 120, 30)
	waitFor(t, tm, "compensated", "page 1 · 1 task", noLiveWorkers)
	press(tm, "enter", "tab", "tab")
	waitFor(t, tm, "[Journal (5)]")
	v, _ := screenLines(t, tm)
	checkFrame(t, v, 120, 30)
	wantOnScreen(t, v, "  compensate/tool/1 http_request keyed", "  compensate/tool/0 http_request keyed")
	golden.RequireEqual(t, []byte(v))
}

// compensatedDB makes a database holding one saga that failed at its
// third step and undid the first two:
//
//	1  acme/default/steps  compensated: tool/0 and tool/1 completed and
//	                       declared compensations, tool/2 failed (422);
//	                       compensate/tool/1 and compensate/tool/0 completed
//
// Its tokens and instants are fixed, as seedDB's.
func compensatedDB(t *testing.T) *DBStore {
	t.Helper()
	ctx := context.Background()
	e := testenv.NewSmallIDs(t)
	raw := func(s string) json.RawMessage { return json.RawMessage(s) }
	undo := raw(`{"tool":"http_request","args":{"method":"POST","url":"https://billing.example/undo"}}`)
	do := func(a *agentledger.Task, step string, compensate json.RawMessage, body string, err error) error {
		_, derr := e.Ledger.Do(ctx, tools.AttemptOf(a), ledger.Effect{Operation: "http_request", StepPath: step, Class: ledger.Keyed,
			Request: raw(`{}`), Compensate: compensate, Perform: func(context.Context, ledger.Call) (ledger.Result, error) {
				if err != nil {
					return ledger.Result{}, err
				}
				return ledger.Result{Status: 201, Body: raw(body)}, nil
			}})
		return derr
	}
	e.Enqueue(claims.EnqueueParams{Tenant: "acme", Kind: "steps", Payload: raw(`{"steps":[]}`)})
	first := e.Claim("worker-a")
	for _, err := range []error{
		do(first, "tool/0", undo, `{"id":"ch_1"}`, nil),
		do(first, "tool/1", undo, `{"id":"rs_1"}`, nil),
	} {
		if err != nil {
			t.Fatal(err)
		}
	}
	refused := agentledger.Permanent(errors.New("422 no courier delivers order 1003"))
	if err := do(first, "tool/2", nil, "", refused); err == nil {
		t.Fatal("the shipment succeeded")
	}
	if _, err := e.Claims.Fail(ctx, claims.Failure{Lease: claims.LeaseOf(first),
		Error: "step 2 (http_request) failed: 422 no courier delivers order 1003", Final: true}); err != nil {
		t.Fatal(err)
	}
	second := e.Claim("worker-b")
	for _, step := range []string{"compensate/tool/1", "compensate/tool/0"} {
		if err := do(second, step, nil, `{"status":"undone"}`, nil); err != nil {
			t.Fatal(err)
		}
	}
	if err := e.Claims.Succeed(ctx, claims.LeaseOf(second), nil); err != nil {
		t.Fatal(err)
	}
	for _, q := range []string{
		recordSuccesses,
		`UPDATE task_attempts a SET lease_token = r.n
			FROM (SELECT task_id, lease_token, row_number() OVER (PARTITION BY task_id ORDER BY lease_token) AS n FROM task_attempts) r
			WHERE r.task_id = a.task_id AND r.lease_token = a.lease_token`,
		`UPDATE tasks SET lease_token = 2, created_at = $1::timestamptz - interval '10 minutes', run_at = $1::timestamptz - interval '10 minutes',
			updated_at = $1::timestamptz - interval '1 minute', finished_at = $1::timestamptz - interval '1 minute'`,
		`UPDATE task_attempts SET started_at = $1::timestamptz - interval '5 minutes' + lease_token * interval '10 seconds',
			ended_at = $1::timestamptz - interval '5 minutes' + lease_token * interval '10 seconds' + interval '2 seconds'`,
	} {
		var args []any
		if strings.Contains(q, "$1") {
			args = append(args, epoch)
		}
		if _, err := e.DB.Exec(ctx, q, args...); err != nil {
			t.Fatal(err)
		}
	}
	s := NewDBStore(e.DB)
	s.Operator.PinClock(func() time.Time { return epoch })
	return s
}

// The task list at 100 columns: every column fits.
func TestConsoleTasks(t *testing.T) {
	tm := startConsole(t, seedDB(t))
	waitFor(t, tm, "needs_attention", "page 1 · 4 tasks", noLiveWorkers, seededCounts)
	v, _ := screenLines(t, tm)
	checkFrame(t, v, 100, 30)
	wantOnScreen(t, v, "ID STATE           TENANT QUEUE   KIND  TRY  UPDATED DETAIL")
	golden.RequireEqual(t, []byte(v))
}

// A task whose daemon died mid-run, needing a tool no live daemon has: at
// 80 columns its page says what it needs, and its lease whole, wrapped.
func TestConsoleStrandedTaskPage(t *testing.T) {
	ctx := context.Background()
	e := testenv.NewSmallIDs(t)
	e.Enqueue(claims.EnqueueParams{Tenant: "acme", Kind: "steps", Payload: json.RawMessage(`{"steps":[]}`),
		Needs: []string{"tool:open_ticket"}})
	e.Claim("worker-on-a-host-with-a-long-name-7f3a")
	if _, err := e.DB.Exec(ctx, `UPDATE tasks SET lease_expires_at = $1::timestamptz - interval '1 minute', updated_at = $1::timestamptz - interval '2 minutes'`,
		epoch); err != nil {
		t.Fatal(err)
	}
	tm := startConsoleSized(t, NewDBStore(e.DB), Options{}, 80, 24)
	waitFor(t, tm, "page 1 · 1 task")
	press(tm, "enter")
	waitFor(t, tm, "[Overview]")
	v, _ := screenLines(t, tm)
	checkFrame(t, v, 80, 24)
	flat := strings.Join(strings.Fields(v), " ")
	wantOnScreen(t, flat, "Needs tool open_ticket", "expired 1m ago, claimable by a worker that can run it")
}

// In a view of its own the full help fits the frame, esc closes it before
// it goes back, and the next esc goes back to the tasks.
func TestConsoleHelpClosesBeforeBack(t *testing.T) {
	tm := startConsoleSized(t, seedDB(t), Options{}, 80, 24)
	waitFor(t, tm, "page 1 · 4 tasks", noLiveWorkers, seededCounts)
	press(tm, "L", "?")
	waitFor(t, tm, "agentledger › limits", "scroll down")
	press(tm, "esc")
	var back bool // the first esc went back to the tasks
	teatest.WaitFor(t, tm.Output(), func(b []byte) bool {
		back = bytes.Contains(b, []byte("agentledger › tasks"))
		return bytes.Contains(b, []byte("? help"))
	}, teatest.WithDuration(15*time.Second), teatest.WithCheckInterval(20*time.Millisecond))
	if back {
		t.Fatal("esc went back to the tasks with the full help open, instead of closing it")
	}
	press(tm, "esc")
	waitFor(t, tm, "agentledger › tasks")
	v, _ := screenLines(t, tm)
	checkFrame(t, v, 80, 24)
	if strings.Contains(v, "X cancel all") {
		t.Fatalf("the full help is still open over the tasks:\n%s", v)
	}
}
