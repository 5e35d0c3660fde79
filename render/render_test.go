package render

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/agentledger/agentledger"
	"github.com/agentledger/agentledger/operator"
)

func TestShortAndRelative(t *testing.T) {
	for d, want := range map[time.Duration]string{
		0: "0s", 1499 * time.Millisecond: "1s", 59 * time.Second: "59s", 90 * time.Second: "1m",
		3 * time.Hour: "3h", 47 * time.Hour: "47h", 48 * time.Hour: "2d", 10 * 24 * time.Hour: "10d",
	} {
		if got := Short(d); got != want {
			t.Errorf("Short(%v) = %q, want %q", d, got, want)
		}
	}
	now := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	for _, tc := range []struct {
		at   time.Time
		want string
	}{{now.Add(5 * time.Minute), "in 5m"}, {now.Add(-3 * time.Second), "3s ago"}, {now, "0s ago"},
		// Ahead, not rounded down a unit: a 2h timer a moment after it began.
		{now.Add(2*time.Hour - time.Second), "in 1h59m"}, {now.Add(2 * time.Hour), "in 2h"},
		{now.Add(7*24*time.Hour - time.Second), "in 6d23h"}, {now.Add(-(2*time.Hour - time.Second)), "1h ago"}} {
		if got := Relative(tc.at, now); got != tc.want {
			t.Errorf("Relative(%v) = %q, want %q", tc.at.Sub(now), got, tc.want)
		}
	}
	if got := Expiry(time.Time{}, now); got != "-" {
		t.Errorf("Expiry(zero) = %q, want -", got)
	}
}

// TestOutcome pins a journal row's RESULT as agentctl (results cut to 60)
// and the console (uncut) print it.
func TestOutcome(t *testing.T) {
	long := json.RawMessage(`{"text": "` + strings.Repeat("x", 80) + `"}`)
	for _, tc := range []struct {
		name string
		e    operator.Effect
		max  int
		want string
	}{
		{"nothing", operator.Effect{}, 60, "-"},
		{"error on one line", operator.Effect{Error: "boom\nat\tline 2", Status: 500}, 60, "boom at line 2"},
		{"parts", operator.Effect{Status: 200, ExternalRef: "C1/1.2", Result: json.RawMessage(`{ "ok": true }`), Note: "resolved"},
			60, `200 ref C1/1.2 {"ok":true} note: resolved`},
		{"cut", operator.Effect{Result: long}, 60, `{"text":"` + strings.Repeat("x", 50) + "…"},
		{"uncut", operator.Effect{Result: long}, 0, `{"text":"` + strings.Repeat("x", 80) + `"}`},
		{"not JSON", operator.Effect{Result: json.RawMessage("a\nb")}, 60, "a b"},
	} {
		if got := Outcome(tc.e, tc.max); got != tc.want {
			t.Errorf("%s: Outcome = %q, want %q", tc.name, got, tc.want)
		}
	}
	undo := operator.Effect{Step: "compensate/step 0", Status: 204}
	if got, want := Summary(undo, 60), "undoes step 0: 204"; got != want {
		t.Errorf("Summary of a compensation = %q, want %q", got, want)
	}
	if got, want := Summary(operator.Effect{Step: "step 0", Status: 204}, 60), "204"; got != want {
		t.Errorf("Summary = %q, want %q", got, want)
	}
}

func TestLeaseOf(t *testing.T) {
	now := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	soon, past := now.Add(20*time.Second), now.Add(-3*time.Second)
	for _, tc := range []struct {
		name string
		t    agentledger.Task
		want Lease
	}{
		{"never held", agentledger.Task{State: agentledger.StateQueued}, Lease{None: "none"}},
		{"held before", agentledger.Task{State: agentledger.StateSucceeded, LeaseToken: 7}, Lease{None: "none (last fencing token 7)"}},
		{"held", agentledger.Task{State: agentledger.StateRunning, LeaseOwner: "w1", LeaseToken: 8, LeaseExpiresAt: &soon},
			Lease{Owner: "w1", Token: 8, Expiry: "expires in 20s"}},
		{"expired", agentledger.Task{State: agentledger.StateRunning, LeaseOwner: "w1", LeaseToken: 8, LeaseExpiresAt: &past},
			Lease{Owner: "w1", Token: 8, Expiry: "expired 3s ago", Expired: true}},
	} {
		if got := LeaseOf(&tc.t, now); got != tc.want {
			t.Errorf("%s: LeaseOf = %+v, want %+v", tc.name, got, tc.want)
		}
	}
}

func TestTaskWords(t *testing.T) {
	task := &agentledger.Task{State: agentledger.StateQueued, Attempt: 2, MaxAttempts: 5, WaitReason: "tenant share"}
	if got := AttemptOf(task) + " | " + Tries(task) + " | " + Waiting(task); got != "2 of 5 | 2/5 | tenant share" {
		t.Errorf("task words = %q", got)
	}
	if task.State = agentledger.StateRetrying; Waiting(task) != "tenant share" {
		t.Errorf("Waiting of a retrying task = %q: it waits too", Waiting(task))
	}
	if task.State = agentledger.StateSucceeded; Waiting(task) != "" {
		t.Errorf("Waiting of a finished task = %q, want none", Waiting(task))
	}
	if got := AttemptOutcome(agentledger.Attempt{Outcome: "failed"}); got != "in progress" {
		t.Errorf("AttemptOutcome of an open attempt = %q", got)
	}
	ended := time.Now()
	if got := AttemptOutcome(agentledger.Attempt{Outcome: "failed", EndedAt: &ended}); got != "failed" {
		t.Errorf("AttemptOutcome = %q", got)
	}
	if got := NotificationSource(operator.Notification{Step: "step 1"}); got != "step 1" {
		t.Errorf("NotificationSource = %q", got)
	}
	if got := Plural(1, "task") + ", " + Plural(int64(3), "task") + ", " + Plural(0, "lease"); got != "1 task, 3 tasks, 0 leases" {
		t.Errorf("Plural = %q", got)
	}
	if got := ShortKey("3f9a1c0b77e2d4") + " " + ShortKey("abc"); got != "3f9a1c0b77e2 abc" {
		t.Errorf("ShortKey = %q", got)
	}
	if got := PrettyJSON(json.RawMessage(`{"a":1}`), "  "); got != "  {\n    \"a\": 1\n  }" {
		t.Errorf("PrettyJSON = %q", got)
	}
}

// An object's scalars come before its lists and objects, at every level;
// the document is the same.
func TestPrettyJSONScalarsFirst(t *testing.T) {
	in := `{"url":"https://pay.example/charges","body":{"items":[{"sku":"s0","qty":1},{"sku":"s1","qty":2}],"amount":250000,"order":1004,"<a>":true},"method":"POST"}`
	want := `{
  "url": "https://pay.example/charges",
  "method": "POST",
  "body": {
    "amount": 250000,
    "order": 1004,
    "<a>": true,
    "items": [
      {
        "sku": "s0",
        "qty": 1
      },
      {
        "sku": "s1",
        "qty": 2
      }
    ]
  }
}`
	if got := PrettyJSONScalarsFirst([]byte(in), ""); got != want {
		t.Errorf("got\n%s\nwant\n%s", got, want)
	}
	for _, raw := range []string{`[1,{"b":[],"a":1}]`, `"x"`, `7`, `not json`} {
		got := PrettyJSONScalarsFirst([]byte(raw), "")
		var a, b any
		if json.Unmarshal([]byte(raw), &a) == nil && (json.Unmarshal([]byte(got), &b) != nil || !reflect.DeepEqual(a, b)) {
			t.Errorf("%s became %s", raw, got)
		}
	}
}

// A notification says what asked for it: its rule, marked when the rule
// does not ask for its state and it only edits the rule's message; or the
// notify tool's step.
func TestNotificationSource(t *testing.T) {
	for _, c := range []struct {
		n    operator.Notification
		want string
	}{
		{operator.Notification{Rule: "ops"}, "ops"},
		{operator.Notification{Rule: "early", UpdateOnly: true}, "early (edit only)"},
		{operator.Notification{Step: "tool/2"}, "tool/2"},
	} {
		if got := NotificationSource(c.n); got != c.want {
			t.Errorf("%+v: %q, want %q", c.n, got, c.want)
		}
	}
}
