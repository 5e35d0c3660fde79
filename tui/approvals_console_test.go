package tui

import (
	"context"
	"strings"
	"testing"

	"github.com/charmbracelet/x/exp/golden"

	"github.com/agentledger/agentledger"
	"github.com/agentledger/agentledger/approvals"
)

// The approvals view over a database with two tasks waiting for a
// decision (seedApprovals), at 80×24 and at a wide size.

func TestConsoleApprovals(t *testing.T) {
	tm := startConsoleSized(t, seedApprovals(t), Options{}, 80, 24)
	waitFor(t, tm, "· 2 approvals pending", "page 1 · 6 tasks", noLiveWorkers)
	press(tm, "a")
	waitFor(t, tm, "2 approvals pending, the longest waiting first", "http_request POST http://127.0.0.1:7450/demo/charges")
	golden.RequireEqual(t, []byte(finish(t, tm)))
}

func TestConsoleWideApprovals(t *testing.T) {
	tm := startConsoleSized(t, seedApprovals(t), Options{}, 120, 20)
	waitFor(t, tm, "· 2 approvals pending", "page 1 · 6 tasks", noLiveWorkers)
	press(tm, "a")
	waitFor(t, tm, "APPROVERS", "U123,S456", "refund at tool/1/call_7")
	golden.RequireEqual(t, []byte(finish(t, tm)))
}

// enter opens a request: the call as it would be performed, the model's
// reason, who may decide.
func TestConsoleApprovalRequest(t *testing.T) {
	tm := startConsoleSized(t, seedApprovals(t), Options{}, 80, 24)
	waitFor(t, tm, "· 2 approvals pending", "page 1 · 6 tasks", noLiveWorkers)
	press(tm, "a")
	waitFor(t, tm, "2 approvals pending, the longest waiting first")
	press(tm, "down", "enter")
	waitFor(t, tm, "› approval 2", `"currency": "EUR"`, "charged twice")
	golden.RequireEqual(t, []byte(finish(t, tm)))
}

// y previews the call; enter alone does not approve; y does, once.
func TestConsoleApprovePreview(t *testing.T) {
	s := seedApprovals(t)
	tm := startConsoleSized(t, s, Options{}, 80, 24)
	waitFor(t, tm, "· 2 approvals pending", "page 1 · 6 tasks", noLiveWorkers)
	press(tm, "a")
	waitFor(t, tm, "2 approvals pending, the longest waiting first")
	press(tm, "y")
	waitFor(t, tm, "Approve request 1?", `"order": 77`)
	press(tm, "enter")
	waitFor(t, tm, "press y to confirm")
	golden.RequireEqual(t, []byte(finish(t, tm)))
	if r, err := s.Approvals.Get(context.Background(), "", 1); err != nil || r.State != approvals.Pending {
		t.Fatalf("enter decided request 1: %+v, %v", r, err)
	}
}

// y in the preview approves: the request is the console's, by the OS
// user, the count drops, and the waiting task is due at once.
func TestConsoleApproveConfirmed(t *testing.T) {
	s := seedApprovals(t)
	s.extend(t)
	tm := startConsoleSized(t, s, Options{}, 80, 24)
	waitFor(t, tm, "· 2 approvals pending", "page 1 · 6 tasks")
	press(tm, "a")
	waitFor(t, tm, "2 approvals pending, the longest waiting first")
	press(tm, "y")
	waitFor(t, tm, "Approve request 1?")
	press(tm, "y")
	waitFor(t, tm, "approval 1 approved: task 5 performs tool/0 once", "1 approval pending,")
	finish(t, tm)
	r, err := s.Approvals.Get(context.Background(), "", 1)
	if err != nil {
		t.Fatal(err)
	}
	if r.State != approvals.Approved || r.DecidedBy != "alice" || r.DecidedVia != "console" || r.DecisionReason != "" {
		t.Errorf("request 1 is %s by %q via %q: %q", r.State, r.DecidedBy, r.DecidedVia, r.DecisionReason)
	}
	task, err := s.Claims.Get(context.Background(), "", 5)
	if err != nil {
		t.Fatal(err)
	}
	// The decision woke the task: no longer waiting, due at once.
	if task.State != agentledger.StateQueued || !task.RunAt.Before(r.ExpiresAt) {
		t.Errorf("task 5 after the approval: %s, due %s (request expires %s)", task.State, task.RunAt, r.ExpiresAt)
	}
}

// r in the preview opens an optional reason; enter with none typed does
// not approve.
func TestConsoleApproveAsksAReason(t *testing.T) {
	s := seedApprovals(t)
	s.extend(t)
	tm := startConsoleSized(t, s, Options{}, 80, 24)
	waitFor(t, tm, "· 2 approvals pending", "page 1 · 6 tasks", noLiveWorkers)
	press(tm, "a")
	waitFor(t, tm, "2 approvals pending, the longest waiting first")
	press(tm, "y")
	waitFor(t, tm, "Approve request 1?", "y approve · r add a reason · n/esc close")
	press(tm, "r")
	waitFor(t, tm, "reason:", "enter approve with this reason")
	press(tm, "enter")
	waitFor(t, tm, "the reason is empty")
	tm.Type("order 77 confirmed by phone")
	waitFor(t, tm, "order 77 confirmed by phone")
	golden.RequireEqual(t, []byte(finish(t, tm)))
	if r, _ := s.Approvals.Get(context.Background(), "", 1); r.State != approvals.Pending {
		t.Fatalf("an empty reason decided request 1: %s", r.State)
	}
}

// The approval records the reason as typed; the request's page and its
// task's page show it.
func TestConsoleApprovedWithAReason(t *testing.T) {
	const reason = "order 77 confirmed by phone"
	s := seedApprovals(t)
	s.extend(t)
	tm := startConsoleSized(t, s, Options{}, 80, 24)
	waitFor(t, tm, "· 2 approvals pending", "page 1 · 6 tasks")
	press(tm, "a")
	waitFor(t, tm, "2 approvals pending, the longest waiting first")
	press(tm, "enter")
	waitFor(t, tm, "› approval 1", `"order": 77`)
	press(tm, "y")
	waitFor(t, tm, "Approve request 1?")
	press(tm, "r")
	waitFor(t, tm, "enter approve with this reason")
	tm.Type(reason)
	waitFor(t, tm, reason)
	press(tm, "enter")
	waitFor(t, tm, "approval 1 approved: task 5 performs tool/0 once", "approved by alice via console")
	r, err := s.Approvals.Get(context.Background(), "", 1)
	if err != nil {
		t.Fatal(err)
	}
	if r.State != approvals.Approved || r.DecidedBy != "alice" || r.DecidedVia != "console" || r.DecisionReason != reason {
		t.Fatalf("request 1: %s by %q via %q: %q", r.State, r.DecidedBy, r.DecidedVia, r.DecisionReason)
	}
	s.pinDecisions(t)
	press(tm, "esc", "esc", "down", "enter")
	waitFor(t, tm, "Task 5  queued", "approved by alice via console at 2026-01-02 03:03:05")
	// The reason may wrap: look for its words in order.
	if v := strings.Join(strings.Fields(finish(t, tm)), " "); !strings.Contains(v, "via console at 2026-01-02 03:03:05 (1m ago): "+reason) {
		t.Errorf("the task view lacks the approval's reason:\n%s", v)
	}
}

// A reason typed, then esc: the preview keeps it, and y approves with it.
func TestConsoleApproveKeepsTheReason(t *testing.T) {
	s := seedApprovals(t)
	s.extend(t)
	tm := startConsoleSized(t, s, Options{}, 80, 24)
	waitFor(t, tm, "· 2 approvals pending", "page 1 · 6 tasks")
	press(tm, "a")
	waitFor(t, tm, "2 approvals pending, the longest waiting first")
	press(tm, "y")
	waitFor(t, tm, "Approve request 1?")
	press(tm, "r")
	waitFor(t, tm, "enter approve with this reason")
	tm.Type("checked")
	waitFor(t, tm, "reason: checked")
	press(tm, "esc")
	waitFor(t, tm, "y approve with this reason · r edit it · n/esc close")
	press(tm, "y")
	waitFor(t, tm, "approval 1 approved: task 5 performs tool/0 once")
	finish(t, tm)
	if r, _ := s.Approvals.Get(context.Background(), "", 1); r.State != approvals.Approved || r.DecisionReason != "checked" {
		t.Errorf("request 1: %s: %q", r.State, r.DecisionReason)
	}
}

// d asks for a reason, required; the denial records it.
func TestConsoleDenyAsksAReason(t *testing.T) {
	s := seedApprovals(t)
	s.extend(t)
	tm := startConsoleSized(t, s, Options{}, 80, 24)
	waitFor(t, tm, "· 2 approvals pending", "page 1 · 6 tasks", noLiveWorkers)
	press(tm, "a")
	waitFor(t, tm, "2 approvals pending, the longest waiting first")
	press(tm, "down", "d")
	waitFor(t, tm, "Deny request 2?", "reason:")
	press(tm, "enter")
	waitFor(t, tm, "a reason is required")
	tm.Type("refunded by hand already")
	waitFor(t, tm, "refunded by hand already")
	golden.RequireEqual(t, []byte(finish(t, tm)))
	if r, _ := s.Approvals.Get(context.Background(), "", 2); r.State != approvals.Pending {
		t.Fatalf("an empty reason decided request 2: %s", r.State)
	}
}

func TestConsoleDenied(t *testing.T) {
	s := seedApprovals(t)
	s.extend(t)
	tm := startConsoleSized(t, s, Options{}, 80, 24)
	waitFor(t, tm, "· 2 approvals pending", "page 1 · 6 tasks")
	press(tm, "a")
	waitFor(t, tm, "2 approvals pending, the longest waiting first")
	press(tm, "down", "d")
	waitFor(t, tm, "Deny request 2?")
	tm.Type("refunded by hand already")
	press(tm, "enter")
	waitFor(t, tm, "approval 2 denied: task 6 does not perform tool/1/call_7")
	finish(t, tm)
	r, err := s.Approvals.Get(context.Background(), "", 2)
	if err != nil {
		t.Fatal(err)
	}
	if r.State != approvals.Denied || r.DecidedBy != "alice" || r.DecidedVia != "console" || r.DecisionReason != "refunded by hand already" {
		t.Errorf("request 2: %s by %q via %q: %q", r.State, r.DecidedBy, r.DecidedVia, r.DecisionReason)
	}
}

// A decision that loses says what already happened and changes nothing:
// an approver in Slack decides while the console's preview is open.
func TestConsoleApprovalLost(t *testing.T) {
	s := seedApprovals(t)
	s.extend(t)
	tm := startConsoleSized(t, s, Options{}, 80, 24)
	waitFor(t, tm, "· 2 approvals pending", "page 1 · 6 tasks", noLiveWorkers)
	press(tm, "a")
	waitFor(t, tm, "2 approvals pending, the longest waiting first")
	press(tm, "down", "enter")
	waitFor(t, tm, "› approval 2", "charged twice")
	press(tm, "y")
	waitFor(t, tm, "Approve request 2?")
	if _, won, err := s.Approvals.Decide(context.Background(), approvals.Decision{ID: 2, By: "bob", Via: "api", Reason: "not without a ticket"}); err != nil || !won {
		t.Fatalf("the denial: won %v, %v", won, err)
	}
	s.pinDecisions(t)
	press(tm, "y")
	// The title's count is reloaded apart from the request: waited for
	// too, or the screen may be taken before it comes.
	waitFor(t, tm, "approval 2 was decided first — denied by bob via api at 2026-01-02 03:03:05", "yours changed nothing",
		"Decided         denied by bob via api at 2026-01-02 03:03:05", "· 1 approval pending")
	golden.RequireEqual(t, []byte(finish(t, tm)))
	r, err := s.Approvals.Get(context.Background(), "", 2)
	if err != nil {
		t.Fatal(err)
	}
	if r.State != approvals.Denied || r.DecidedBy != "bob" {
		t.Errorf("the console's approval changed request 2: %s by %s", r.State, r.DecidedBy)
	}
}

// The task view shows the request its task waits for, and, once decided,
// who decided, when, from where and why.
func TestConsoleTaskWaitsForApproval(t *testing.T) {
	tm := startConsoleSized(t, seedApprovals(t), Options{}, 80, 24)
	waitFor(t, tm, "· 2 approvals pending", "page 1 · 6 tasks", noLiveWorkers)
	press(tm, "down", "enter")
	waitFor(t, tm, "Task 5  waiting", "may decide: any approver in Slack")
	golden.RequireEqual(t, []byte(finish(t, tm)))
}

// s cycles the state filter to the waiting tasks; X cancels them, and
// their requests are withdrawn.
func TestConsoleWaitingTasks(t *testing.T) {
	tm := startConsoleSized(t, seedApprovals(t), Options{}, 80, 24)
	waitFor(t, tm, "· 2 approvals pending", "page 1 · 6 tasks", noLiveWorkers)
	press(tm, "s", "s")
	waitFor(t, tm, "filter state=waiting (F clears) · sort id · page 1 · 2 tasks", "[wait 2]")
	golden.RequireEqual(t, []byte(finish(t, tm)))
}

func TestConsoleCancelWaitingTasks(t *testing.T) {
	s := seedApprovals(t)
	tm := startConsoleSized(t, s, Options{}, 80, 24)
	waitFor(t, tm, "· 2 approvals pending", "page 1 · 6 tasks")
	press(tm, "s", "s")
	waitFor(t, tm, "filter state=waiting (F clears) · sort id · page 1 · 2 tasks")
	press(tm, "X")
	waitFor(t, tm, "Cancel all 2 unfinished tasks?", "2 unfinished tasks match the filter state=waiting.")
	press(tm, "y")
	waitFor(t, tm, "cancelled 2 tasks")
	finish(t, tm)
	ctx := context.Background()
	for _, id := range []int64{5, 6} {
		task, err := s.Claims.Get(ctx, "", id)
		if err != nil {
			t.Fatal(err)
		}
		if task.State != agentledger.StateCancelled {
			t.Errorf("task %d is %s", id, task.State)
		}
		r, err := s.Approvals.Get(ctx, "", id-4)
		if err != nil {
			t.Fatal(err)
		}
		if r.State != approvals.Withdrawn {
			t.Errorf("request %d is %s", r.ID, r.State)
		}
	}
	if task, err := s.Claims.Get(ctx, "", 3); err != nil || task.State != agentledger.StateQueued {
		t.Errorf("task 3, queued, outside the filter: %v, %v", task, err)
	}
}

func TestConsoleTaskApprovalDecided(t *testing.T) {
	s := seedApprovals(t)
	s.extend(t)
	if _, won, err := s.Approvals.Decide(context.Background(), approvals.Decision{ID: 1, Approve: true, By: "U777", Via: "slack", Reason: "order 77 checked"}); err != nil || !won {
		t.Fatalf("the approval: won %v, %v", won, err)
	}
	s.pinDecisions(t)
	tm := startConsoleSized(t, s, Options{}, 100, 30)
	waitFor(t, tm, "· 1 approval pending", "page 1 · 6 tasks")
	press(tm, "down", "enter")
	waitFor(t, tm, "Task 5  queued", "approved by U777 via slack at 2026-01-02 03:03:05")
	v := finish(t, tm)
	if !strings.Contains(v, "order 77 checked") {
		t.Errorf("the task view lacks the decision's reason:\n%s", v)
	}
}
