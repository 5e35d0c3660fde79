package main

import (
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/agentledger/agentledger/flow"
)

// A breaker's last error reads as current only while it describes the
// breaker: open, half-open, or a failure counted within the window. Once
// the breaker closed, or the window let the failure go, the error is kept
// but labelled as past, and the cell stays within its width.
func TestBreakerListLabelsAPastError(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 1, 2, 12, 10, 0, 0, time.UTC)
	at := func(d time.Duration) *time.Time { t := now.Add(d); return &t }
	limits := []flow.Limit{{Target: "mcp:*", Breaker: &flow.Breaker{Failures: 3, Window: time.Minute, Cooldown: 30 * time.Second}}}
	long := strings.Repeat("x", 200)
	states := []flow.BreakerState{
		{Target: "mcp:open", State: flow.Open, Failures: 3, OpenUntil: at(time.Minute), Opens: 1, LastError: "503 Service Unavailable", ChangedAt: now.Add(-time.Second)},
		{Target: "mcp:probing", State: flow.HalfOpen, Failures: 3, Opens: 1, LastError: "timeout", ChangedAt: now.Add(-time.Second)},
		{Target: "mcp:counting", State: flow.Closed, Failures: 1, WindowStart: at(-10 * time.Second), LastError: "connection refused", ChangedAt: now.Add(-10 * time.Second)},
		{Target: "mcp:reclosed", State: flow.Closed, Opens: 2, LastError: "503 Service Unavailable", ChangedAt: now.Add(-5*time.Minute - 29*time.Second)},
		{Target: "mcp:lapsed", State: flow.Closed, Failures: 2, WindowStart: at(-3 * time.Minute), LastError: "no answer within 30s", ChangedAt: now.Add(-2 * time.Minute)},
		{Target: "mcp:long", State: flow.Closed, Opens: 1, LastError: long, ChangedAt: now.Add(-48 * time.Hour)},
		{Target: "mcp:quiet", State: flow.Closed},
	}
	want := map[string]struct {
		past bool
		cell string
	}{
		"mcp:open":     {false, "503 Service Unavailable"},
		"mcp:probing":  {false, "timeout"},
		"mcp:counting": {false, "connection refused"},
		"mcp:reclosed": {true, "before it closed at 12:04:31 UTC: 503 Service Unavailable"},
		"mcp:lapsed":   {true, "at 12:08:00 UTC, no longer counted: no answer within 30s"},
		"mcp:long":     {true, "before it closed at 2025-12-31 12:10:00 UTC: " + strings.Repeat("x", 80-45-1) + "…"},
		"mcp:quiet":    {false, "-"},
	}
	rows := breakerRows(limits, states, now)
	seen := 0
	for _, r := range rows {
		w, ok := want[r.Target]
		if !ok {
			continue
		}
		seen++
		cell := lastErrorCell(r, now)
		if r.LastErrorPast != w.past || cell != w.cell {
			t.Errorf("%s (%s, %d failures): past %v, cell %q; want past %v, %q", r.Target, r.State, r.Failures, r.LastErrorPast, cell, w.past, w.cell)
		}
		if n := utf8.RuneCountInString(cell); n > maxErrorCell {
			t.Errorf("%s: the cell is %d characters, more than %d", r.Target, n, maxErrorCell)
		}
		if r.Target == "mcp:reclosed" && r.LastError != "503 Service Unavailable" {
			t.Errorf("%s: last_error is %q: the error itself is kept", r.Target, r.LastError)
		}
	}
	if seen != len(want) {
		t.Errorf("listed %d of the %d breakers: %+v", seen, len(want), rows)
	}
}
