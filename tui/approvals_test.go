package tui

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/agentledger/agentledger"
	"github.com/agentledger/agentledger/approvals"
)

// fakeApprovals is a fake store of three tasks, 2 and 3 each waiting for
// a request (1 and 2), oldest first.
func fakeApprovals() *fakeStore {
	s := newFakeStore(3, epoch)
	for i, id := range []int64{2, 3} {
		s.tasks[id-1].State = agentledger.StateWaiting // as a gate leaves it
		s.requests = append(s.requests, approvals.Request{ID: int64(i + 1), TaskID: id, Generation: 1, Step: "tool/0",
			Tenant: "acme", Tool: "http_request", Class: "keyed", State: approvals.Pending, OnTimeout: "deny",
			Call:        json.RawMessage(`{"method":"POST","url":"https://pay.example/charges","body":{"order":` + string(rune('7'+i)) + `}}`),
			RequestedAt: epoch.Add(-time.Duration(10-i) * time.Minute), ExpiresAt: epoch.Add(time.Hour)})
	}
	return s
}

func title(d *driver) string { return strings.SplitN(d.view(), "\n", 2)[0] }

// The title counts the pending requests in every view, and stops once
// none is.
func TestTitleCountsPendingApprovals(t *testing.T) {
	t.Parallel()
	store := fakeApprovals()
	d := newDriver(t, store, Options{}, 80, 24)
	if got := title(d); got != "agentledger › tasks · no live workers · 2 approvals pending" {
		t.Errorf("title %q", got)
	}
	d.keys("enter")
	if got := title(d); got != "agentledger › task 3 · no live workers · 2 approvals pending" {
		t.Errorf("title %q", got)
	}
	store.mu.Lock()
	for i := range store.requests {
		store.requests[i].State = approvals.Withdrawn
	}
	store.mu.Unlock()
	d.send(tickMsg{})
	if got := title(d); got != "agentledger › task 3 · no live workers" {
		t.Errorf("with nothing pending, title %q", got)
	}
}

// Neither enter in the list, nor on the request's page, nor in the
// preview approves: only y after the preview does, once.
func TestEnterNeverApproves(t *testing.T) {
	t.Parallel()
	store := fakeApprovals()
	d := newDriver(t, store, Options{}, 80, 24)
	d.keys("a")
	v := d.view()
	checkFrame(t, v, 80, 24)
	for _, want := range []string{"2 approvals pending, the longest waiting first", "1  2    tool/0 10m", "2  3    tool/0 9m",
		"   http_request POST https://pay.example/charges"} {
		if !strings.Contains(v, want) {
			t.Errorf("approvals view lacks %q:\n%s", want, v)
		}
	}
	d.keys("enter")
	if v := d.view(); !strings.Contains(v, "Approval 1  pending  task 2") || !strings.Contains(v, `"order": 7`) {
		t.Errorf("enter did not open request 1:\n%s", v)
	}
	d.keys("enter", "y")
	if d.app().dialog == nil || !strings.Contains(d.view(), "Approve request 1?") {
		t.Fatalf("y opened no preview:\n%s", d.view())
	}
	d.keys("enter")
	if d.app().dialog == nil || !strings.Contains(d.view(), "press y to confirm") {
		t.Fatalf("enter closed the preview:\n%s", d.view())
	}
	if slices.ContainsFunc(store.callLog(), func(c string) bool { return strings.HasPrefix(c, "decide") }) {
		t.Fatalf("enter decided: %v", store.callLog())
	}
	d.keys("y")
	if n := countPrefix(store.callLog(), "decide"); n != 1 || !called(store, `decide 1 approve=true reason=""`) {
		t.Fatalf("y decided %d times: %v", n, store.callLog())
	}
	if v := d.view(); !strings.Contains(v, "approval 1 approved: task 2 performs tool/0 once") || !strings.Contains(v, "Decided         approved by op via console") {
		t.Errorf("after the approval:\n%s", v)
	}
	if got := title(d); got != "agentledger › approval 1 · no live workers · 1 approval pending" {
		t.Errorf("title %q", got)
	}
	// The page of a decided request offers no decision, and y on it says
	// what happened rather than opening a preview.
	d.keys("y")
	if d.app().dialog != nil || !strings.Contains(d.view(), "approval 1 was decided first — approved by op via console") {
		t.Errorf("y on a decided request:\n%s", d.view())
	}
	d.keys("esc")
	if v := d.view(); !strings.Contains(v, "1 approval pending") || strings.Contains(v, "1  2    tool/0") {
		t.Errorf("esc did not go back to the list without request 1:\n%s", v)
	}
	d.keys("esc")
	if d.app().view != viewTasks {
		t.Error("esc did not go back to the tasks")
	}
}

func countPrefix(calls []string, prefix string) int {
	n := 0
	for _, c := range calls {
		if strings.HasPrefix(c, prefix) {
			n++
		}
	}
	return n
}

// In the approval's preview no key but y confirms, r included: it opens
// the optional reason, and there enter confirms only with a reason typed.
func TestApprovalConfirmsOnlyWithY(t *testing.T) {
	t.Parallel()
	store := fakeApprovals()
	d := newDriver(t, store, Options{}, 80, 24)
	d.keys("a", "y")
	if v := d.view(); !strings.Contains(v, "y approve · r add a reason · n/esc close") {
		t.Fatalf("the preview's hint:\n%s", v)
	}
	for _, k := range []string{"enter", "Y", " ", "tab", "a", "d", "down", "1"} {
		d.keys(k)
		if d.app().dialog == nil || countPrefix(store.callLog(), "decide") != 0 {
			t.Fatalf("%q closed the preview or decided: %v\n%s", k, store.callLog(), d.view())
		}
	}
	d.keys("r")
	if v := d.view(); !strings.Contains(v, "reason:") || !strings.Contains(v, "enter approve with this reason · esc back") {
		t.Fatalf("r opened no reason:\n%s", v)
	}
	d.keys("enter") // nothing typed
	if v := d.view(); d.app().dialog == nil || !strings.Contains(v, "the reason is empty") {
		t.Fatalf("enter with no reason:\n%s", v)
	}
	d.typeText("y") // a letter of the reason, not a confirmation
	if d.app().dialog == nil || countPrefix(store.callLog(), "decide") != 0 {
		t.Fatalf("y in the reason decided: %v", store.callLog())
	}
	d.typeText("es, checked")
	d.keys("esc") // back to the preview, the reason kept
	if v := d.view(); d.app().dialog == nil || !strings.Contains(v, "reason: yes, checked") ||
		!strings.Contains(v, "y approve with this reason · r edit it · n/esc close") {
		t.Fatalf("esc lost the reason or the preview:\n%s", v)
	}
	d.keys("enter")
	if countPrefix(store.callLog(), "decide") != 0 {
		t.Fatalf("enter decided: %v", store.callLog())
	}
	d.keys("y")
	if !called(store, `decide 1 approve=true reason="yes, checked"`) || countPrefix(store.callLog(), "decide") != 1 {
		t.Fatalf("calls %v", store.callLog())
	}
}

// Cancelling an approval drops the reason typed, and says so.
func TestApprovalCancelledSaysTheReasonIsDropped(t *testing.T) {
	t.Parallel()
	store := fakeApprovals()
	d := newDriver(t, store, Options{}, 100, 24)
	d.keys("a", "y", "n")
	if v := d.view(); d.app().dialog != nil || strings.Contains(v, "not recorded") {
		t.Fatalf("n with no reason:\n%s", v)
	}
	d.keys("y", "r")
	d.typeText("checked")
	d.keys("esc", "esc")
	if v := d.view(); d.app().dialog != nil || !strings.Contains(v, "approval 1 not decided: it still waits, and the reason you typed was not recorded") {
		t.Fatalf("esc, esc with a reason:\n%s", v)
	}
	if n := countPrefix(store.callLog(), "decide"); n != 0 {
		t.Fatalf("decided %d times: %v", n, store.callLog())
	}
}

// A denial asks for a reason, refuses none, and records the one given.
func TestDenyNeedsAReason(t *testing.T) {
	t.Parallel()
	store := fakeApprovals()
	d := newDriver(t, store, Options{}, 80, 24)
	d.keys("a", "down", "d")
	if !strings.Contains(d.view(), "Deny request 2?") {
		t.Fatalf("d opened no denial:\n%s", d.view())
	}
	d.keys("enter")
	if !strings.Contains(d.view(), "a reason is required") || countPrefix(store.callLog(), "decide") != 0 {
		t.Fatalf("an empty reason was taken:\n%s", d.view())
	}
	d.typeText("  no ticket  ")
	d.keys("enter")
	if !called(store, `decide 2 approve=false reason="no ticket"`) {
		t.Fatalf("calls %v", store.callLog())
	}
	if v := d.view(); !strings.Contains(v, "approval 2 denied: task 3 does not perform tool/0") {
		t.Errorf("after the denial:\n%s", v)
	}
}

// A decision made elsewhere while the preview is open wins: the console's
// says what happened and changes nothing.
func TestDecisionThatLostSaysWhatHappened(t *testing.T) {
	t.Parallel()
	store := fakeApprovals()
	d := newDriver(t, store, Options{}, 100, 24)
	d.keys("a", "y")
	at := epoch.Add(-time.Minute)
	store.mu.Lock()
	store.requests[0].State, store.requests[0].DecidedAt = approvals.Denied, &at
	store.requests[0].DecidedBy, store.requests[0].DecidedVia, store.requests[0].DecisionReason = "U1", "slack", "wrong amount"
	store.mu.Unlock()
	d.keys("y")
	v := d.view()
	for _, want := range []string{"approval 1 was decided first — denied by U1 via slack at 2026-01-02 03:03:05 UTC: wrong amount;",
		"yours changed nothing"} {
		if !strings.Contains(v, want) {
			t.Errorf("lacks %q:\n%s", want, v)
		}
	}
	if r := store.requests[0]; r.State != approvals.Denied || r.DecidedBy != "U1" {
		t.Errorf("request 1 changed: %+v", r)
	}
}

// The task view shows its waiting request and offers y and d for it;
// without a pending request, y and d do nothing.
func TestTaskViewDecidesItsRequest(t *testing.T) {
	t.Parallel()
	store := fakeApprovals()
	d := newDriver(t, store, Options{}, 80, 24)
	d.keys("down", "enter") // task 2
	v := d.view()
	for _, want := range []string{"Approval          1 of step tool/0, pending since 2026-01-02 02:54:05 (10m ago)",
		"may decide: any approver in Slack, or an operator", "y approve • d deny"} {
		if !strings.Contains(v, want) {
			t.Errorf("task view lacks %q:\n%s", want, v)
		}
	}
	d.keys("d")
	if !strings.Contains(d.view(), "Deny request 1?") {
		t.Fatalf("d opened no denial:\n%s", d.view())
	}
	d.keys("esc", "c")
	if !strings.Contains(d.view(), "Its approval request 1 is withdrawn") {
		t.Errorf("the cancel does not say it withdraws the request:\n%s", d.view())
	}
	d.keys("n")
	d.keys("esc", "esc", "down", "enter") // task 1: no request
	if strings.Contains(d.view(), "y approve") {
		t.Errorf("task 1 offers a decision:\n%s", d.view())
	}
	d.keys("y", "d")
	if d.app().dialog != nil {
		t.Errorf("y or d opened a dialog on task 1:\n%s", d.view())
	}
}

// An empty list says where requests come from, within the width.
func TestNoApprovalPending(t *testing.T) {
	t.Parallel()
	d := newDriver(t, newFakeStore(1, epoch), Options{}, 80, 24)
	d.keys("a")
	v := d.view()
	checkFrame(t, v, 80, 24)
	if !strings.Contains(v, "no approval pending") || !strings.Contains(v, "A gated effect asks here") {
		t.Errorf("empty approvals view:\n%s", v)
	}
	if strings.Contains(title(d), "pending") {
		t.Errorf("title %q", title(d))
	}
}

// The cursor's request stays on screen, two lines to a request at 80
// columns; the list keeps the cursor on its request across a refresh.
func TestApprovalsScroll(t *testing.T) {
	t.Parallel()
	store := newFakeStore(30, epoch)
	for i := 1; i <= 30; i++ {
		store.requests = append(store.requests, approvals.Request{ID: int64(i), TaskID: int64(i), Generation: 1, Step: "tool/0",
			Tool: "http_request", Class: "keyed", State: approvals.Pending, Call: json.RawMessage(`{"method":"POST","url":"https://pay.example/c"}`),
			RequestedAt: epoch.Add(-time.Duration(60-i) * time.Minute), ExpiresAt: epoch.Add(time.Hour)})
	}
	d := newDriver(t, store, Options{}, 80, 24)
	d.keys("a", "G")
	v := d.view()
	checkFrame(t, v, 80, 24)
	if !strings.Contains(v, "30 30   tool/0 30m") || strings.Contains(v, "\n1  1    tool/0") {
		t.Errorf("G did not scroll to the last request:\n%s", v)
	}
	store.mu.Lock()
	store.requests = store.requests[1:] // request 1 decided elsewhere
	store.mu.Unlock()
	d.send(tickMsg{})
	d.keys("enter")
	if !strings.Contains(d.view(), "Approval 30  pending") {
		t.Errorf("after a refresh the cursor left request 30:\n%s", d.view())
	}
}

// decision says who decided, from where, when and why, for each way a
// request ends.
func TestDecisionText(t *testing.T) {
	t.Parallel()
	at := epoch
	stamp := func(t time.Time) string { return t.Format(stampLayout) }
	for _, c := range []struct {
		r    approvals.Request
		want string
	}{
		{approvals.Request{State: approvals.Pending}, "not yet"},
		{approvals.Request{State: approvals.Approved, DecidedAt: &at, DecidedBy: "U1", DecidedVia: "slack"},
			"approved by U1 via slack at 2026-01-02 03:04:05"},
		{approvals.Request{State: approvals.Denied, DecidedAt: &at, DecidedBy: "alice", DecidedVia: "console", DecisionReason: "no\nticket"},
			"denied by alice via console at 2026-01-02 03:04:05: no ticket"},
		{approvals.Request{State: approvals.Expired, DecidedAt: &at, DecidedBy: "timeout", DecidedVia: "timeout",
			DecisionReason: "no decision by 2026-01-02 03:04:05 UTC"},
			"expired by its timeout at 2026-01-02 03:04:05: no decision by 2026-01-02 03:04:05 UTC"},
		{approvals.Request{State: approvals.Approved, DecidedAt: &at, DecidedBy: "timeout", DecidedVia: "timeout",
			DecisionReason: "no decision by 2026-01-02 03:04:05 UTC, which approves"},
			"approved by its timeout at 2026-01-02 03:04:05: no decision by 2026-01-02 03:04:05 UTC, which approves"},
		{approvals.Request{State: approvals.Withdrawn, DecidedAt: &at, DecidedBy: "operator", DecidedVia: "cancel",
			DecisionReason: "its task was cancelled"},
			"withdrawn at 2026-01-02 03:04:05: its task was cancelled"},
	} {
		if got := decision(c.r, stamp); got != c.want {
			t.Errorf("%s: %q, want %q", c.r.State, got, c.want)
		}
	}
}

// A decision that lost to an expiry or a withdrawal says the request
// ended first: nobody decided it.
func TestDecisionLostToAnExpirySaysItEndedFirst(t *testing.T) {
	t.Parallel()
	at := epoch
	expired := approvals.Request{ID: 3, State: approvals.Expired, DecidedAt: &at, DecidedBy: "timeout", DecidedVia: "timeout"}
	if got := decidedAlready(expired); !strings.HasPrefix(got, "approval 3 ended first — expired by its timeout") {
		t.Errorf("lost to an expiry: %q", got)
	}
	denied := approvals.Request{ID: 4, State: approvals.Denied, DecidedAt: &at, DecidedBy: "bob", DecidedVia: "api"}
	if got := decidedAlready(denied); !strings.HasPrefix(got, "approval 4 was decided first — denied by bob") {
		t.Errorf("lost to a denial: %q", got)
	}
}

// A request's arguments are wrapped to the width, never cut: an approver
// approves what the page shows, at 80 columns as at 160.
func TestRequestArgumentsWrapWhole(t *testing.T) {
	t.Parallel()
	store := fakeApprovals()
	note := "a very long note that goes on and on and on to test whether the request page shows every word of it to the approver"
	store.requests[0].Call = json.RawMessage(`{"method":"POST","url":"https://pay.example/charges","body":{"order":7,"note":"` + note + `"}}`)
	d := newDriver(t, store, Options{}, 80, 40)
	d.keys("a", "enter")
	v := d.view()
	checkFrame(t, v, 80, 40)
	for _, w := range strings.Fields(note) {
		if !strings.Contains(v, w) {
			t.Errorf("the request page at 80 columns lacks %q of the note:\n%s", w, v)
		}
	}
	if !strings.Contains(v, "approver") {
		t.Errorf("the note's last word is cut:\n%s", v)
	}
}
