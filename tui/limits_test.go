package tui

import (
	"context"
	"strings"
	"testing"
	"time"

	tea "github.com/charmbracelet/bubbletea"

	"github.com/agentledger/agentledger/flow"
)

func TestLimitsView(t *testing.T) {
	t.Parallel()
	store := newFakeStore(1, epoch)
	brk := &flow.Breaker{Failures: 5, Window: time.Minute, Cooldown: 30 * time.Second}
	store.limits = []flow.Limit{
		{Target: "http:*", Breaker: &flow.Breaker{Failures: 3, Window: 5 * time.Minute, Cooldown: 90 * time.Second}, Source: flow.SourceConfig},
		{Target: "mcp:crm", Concurrency: 2, Source: flow.SourceOperator},
		{Target: "mcp:shop", Rate: flow.Rate{N: 2, Per: time.Second}, Burst: 4, Concurrency: 5, Breaker: brk, Source: flow.SourceOperator},
		{Target: "model:api.openai.com", Tokens: flow.Rate{N: 90000, Per: time.Minute}, Breaker: brk, Source: flow.SourceOperator},
		{Target: "slack-channel:*", Rate: flow.Rate{N: 50, Per: time.Minute}, Burst: 1, Source: flow.SourceDefault},
	}
	at := func(d time.Duration) *time.Time { t := epoch.Add(d); return &t }
	store.breakers = []flow.BreakerState{
		{Target: "http:https://billing.internal:8080", State: flow.HalfOpen, Failures: 3, OpenUntil: at(-time.Second), LastError: "503 Service Unavailable"},
		{Target: "mcp:crm", State: flow.Open, Manual: true, LastError: "opened by an operator"},
		{Target: "mcp:shop", State: flow.Open, Failures: 5, OpenUntil: at(30 * time.Second), LastError: "no answer within 30s"},
		{Target: "mcp:wiki", State: flow.Open, Manual: true, OpenUntil: at(10 * time.Minute), LastError: "opened by an operator"},
		{Target: "model:api.openai.com", State: flow.Closed, Failures: 1},
	}
	store.usage = []flow.Use{
		{Target: "mcp:shop", Limit: "mcp:shop"},
		{Target: "slack-channel:C1", Limit: "slack-channel:*", Wait: 1150 * time.Millisecond},
		{Target: "slack-channel:C2", Limit: "slack-channel:*", Wait: 90 * time.Second},
		{Target: "slack-channel:C3"},
		{Target: "http:http://inventory.internal.example:8080", Limit: "http:*"},
	}
	d := newDriver(t, store, Options{}, 110, 30)
	d.keys("L")
	v := d.view()
	checkFrame(t, v, 110, 30)
	for _, want := range []string{
		"agentledger › limits",
		"5 limits · 5 targets booked in the last hour · 4 breakers not closed",
		"TARGET                STATE                RATE    BURST  CONCURRENCY  TOKENS     BREAKER        SOURCE",
		"http:*                1 open               -       -      -            -          3 in 5m, 90s   config",
		"mcp:crm               opened by operator   -       -      2            -          -              operator",
		"mcp:shop              open until 03:04:35  2/s     4      5            -          5 in 60s, 30s  operator",
		"model:api.openai.com  closed               -       -      -            90000/min  5 in 60s, 30s  operator",
		"slack-channel:*       -                    50/min  1      -            -          -              default",
		"TRIPPED BREAKER                     STATE                              LAST ERROR",
		"http:https://billing.internal:8080  half-open                          503 Service Unavailable",
		"mcp:wiki                            opened by operator until 03:14:05  opened by an operator",
		"BOOKED LATELY                                UNDER LIMIT      NEXT CALL",
		"mcp:shop                                     mcp:shop         breaker open until 03:04:35", // its rate's slot is free; the breaker holds it
		"slack-channel:C1                             slack-channel:*  next slot in 1.2s",
		"slack-channel:C2                             slack-channel:*  next slot in 1m30s",
		"slack-channel:C3                             -                free",
		"http:http://inventory.internal.example:8080  http:*           free",
		limitsLegend,
	} {
		if !strings.Contains(v, want) {
			t.Errorf("limits view lacks %q:\n%s", want, v)
		}
	}
	if strings.Contains(v, "rate limits only") {
		t.Errorf("the view still says it shows rate limits only:\n%s", v)
	}

	// The refresh tick reads them again.
	store.mu.Lock()
	store.usage[1].Wait = 0
	// Closed again, the breaker keeps its last error as stored: the view
	// does not show it as a current problem.
	store.breakers[2] = flow.BreakerState{Target: "mcp:shop", State: flow.Closed, Opens: 1, LastError: "no answer within 30s"}
	store.mu.Unlock()
	d.send(tickMsg{})
	v = d.view()
	if !strings.Contains(v, "slack-channel:C1                             slack-channel:*  free") {
		t.Errorf("after a tick, C1 is not free:\n%s", v)
	}
	if !strings.Contains(v, "mcp:shop              closed              2/s") || !strings.Contains(v, "3 breakers not closed") {
		t.Errorf("after a tick, mcp:shop's breaker is not closed:\n%s", v)
	}
	if strings.Contains(v, "no answer within 30s") {
		t.Errorf("after a tick, the closed breaker's old error is shown:\n%s", v)
	}

	// A narrow terminal keeps the targets whole (agentctl limit rm takes
	// them) and the states: the least needed columns go, the rest is cut
	// at the edge.
	d.send(tea.WindowSizeMsg{Width: 60, Height: 30})
	v = d.view()
	checkFrame(t, v, 60, 30)
	for _, want := range []string{
		"TARGET                STATE               RATE    BREAKER",
		"model:api.openai.com  closed              -       5 in 60s,…",
		"mcp:crm               opened by operator  -       -",
		"http:http://inventory.internal.example:8080  http:*        …",
		"  └ last error: opened by an operator", // mcp:crm's own breaker, open
	} {
		if !strings.Contains(v, want) {
			t.Errorf("at 60 columns, the view lacks %q:\n%s", want, v)
		}
	}

	d.keys("esc")
	if d.app().view != viewTasks {
		t.Error("esc did not go back to the tasks")
	}
}

func TestLimitsViewEmpty(t *testing.T) {
	t.Parallel()
	d := newDriver(t, newFakeStore(1, epoch), Options{}, 100, 20)
	d.keys("L")
	v := d.view()
	for _, want := range []string{"0 limits · 0 targets booked in the last hour", "no limits: every target unpaced"} {
		if !strings.Contains(v, want) {
			t.Errorf("empty limits view lacks %q:\n%s", want, v)
		}
	}
	if strings.Contains(v, "BOOKED LATELY") || strings.Contains(v, "TRIPPED") || strings.Contains(v, "not closed") {
		t.Errorf("nothing was booked, yet:\n%s", v)
	}
	// A breaker tripped with no limit: "unpaced" is not the whole story.
	store := newFakeStore(1, epoch)
	store.breakers = []flow.BreakerState{{Target: "mcp:crm", State: flow.Open, Manual: true, LastError: "opened by an operator"}}
	d = newDriver(t, store, Options{}, 100, 20)
	d.keys("L")
	if v := d.view(); !strings.Contains(v, "no limits: no target is paced, but the breakers below hold their targets' calls") ||
		!strings.Contains(v, "TRIPPED BREAKER") {
		t.Errorf("no limits beside a tripped breaker:\n%s", v)
	}
}

// The full help of the tasks names the keys of the fleet's views.
func TestFleetViewKeysInTheHelp(t *testing.T) {
	t.Parallel()
	d := newDriver(t, newFakeStore(1, epoch), Options{}, 120, 30)
	d.keys("?")
	v := d.view()
	for _, want := range []string{"L limits", "S shares", "w workers"} {
		if !strings.Contains(v, want) {
			t.Errorf("the full help lacks %q:\n%s", want, v)
		}
	}
}

// A limit put, a call booked and breakers opened in the database show in
// the view, through a console in a terminal.
func TestConsoleLimitsFromTheDatabase(t *testing.T) {
	s := seedDB(t)
	ctx := context.Background()
	if _, err := s.Flow.Put(ctx, flow.Limit{Target: "slack-channel:*", Rate: flow.Rate{N: 1, Per: time.Minute}}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Flow.Put(ctx, flow.Limit{Target: "mcp:shop", Concurrency: 5,
		Breaker: &flow.Breaker{Failures: 5, Window: time.Minute, Cooldown: 30 * time.Second}}); err != nil {
		t.Fatal(err)
	}
	if wait, err := flow.NewLimiter(s.DB, nil).Take(ctx, "slack-channel:ops"); err != nil || wait != 0 {
		t.Fatalf("take: %v %v", wait, err)
	}
	if _, err := s.Flow.OpenBreaker(ctx, "mcp:shop", 10*time.Minute); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Flow.OpenBreaker(ctx, "http:https://billing.internal", 0); err != nil {
		t.Fatal(err)
	}
	tm := startConsoleWith(t, s, Options{Now: time.Now})
	waitFor(t, tm, "page 1 · 4 tasks")
	press(tm, "L")
	waitFor(t, tm, "2 limits · 1 target booked in the last hour · 2 breakers not closed",
		"slack-channel:*", "1/min", "operator", "slack-channel:ops", "next slot in ",
		"mcp:shop", "opened by operator until ", "5 in 60s", // the breaker's cool-down is cut at 100 columns
		"TRIPPED BREAKER", "http:https://billing.internal:443", "opened by an operator")
	finish(t, tm)
}

// At 80 columns the columns that give way are the empty ones first: a
// concurrency cap stays in view while no limit sets a burst.
func TestLimitsViewDropsEmptyColumnsFirst(t *testing.T) {
	t.Parallel()
	store := newFakeStore(1, epoch)
	store.limits = []flow.Limit{
		{Target: "http:https://billing.internal:8080", Concurrency: 4, Breaker: &flow.Breaker{Failures: 3, Window: 5 * time.Minute, Cooldown: 90 * time.Second}, Source: flow.SourceOperator},
		{Target: "mcp:crm", Concurrency: 2, Source: flow.SourceOperator},
	}
	d := newDriver(t, store, Options{}, 80, 24)
	d.keys("L")
	v := d.view()
	checkFrame(t, v, 80, 24)
	if !strings.Contains(v, "CONCURRENCY") || strings.Contains(v, "BURST") {
		t.Fatalf("want CONCURRENCY kept and the empty BURST gone at 80 columns:\n%s", v)
	}
}
