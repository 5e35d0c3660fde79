package tui

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/agentledger/agentledger/flow"
)

func TestLimitsView(t *testing.T) {
	t.Parallel()
	store := newFakeStore(1, epoch)
	store.limits = []flow.Limit{
		{Target: "mcp:shop", Rate: flow.Rate{N: 2, Per: time.Second}, Burst: 4, Source: flow.SourceOperator},
		{Target: "slack-channel:*", Rate: flow.Rate{N: 50, Per: time.Minute}, Burst: 1, Source: flow.SourceDefault},
	}
	store.usage = []flow.Use{
		{Target: "mcp:shop", Limit: "mcp:shop"},
		{Target: "slack-channel:C1", Limit: "slack-channel:*", Wait: 1150 * time.Millisecond},
		{Target: "slack-channel:C2", Limit: "slack-channel:*", Wait: 90 * time.Second},
		{Target: "slack-channel:C3"},
	}
	d := newDriver(t, store, Options{}, 100, 24)
	d.keys("L")
	v := d.view()
	checkFrame(t, v, 100, 24)
	for _, want := range []string{
		"agentledger › limits",
		"2 limits · 4 targets booked in the last hour",
		"TARGET                                       RATE       BURST  SOURCE",
		"mcp:shop                                     2/s        4      operator",
		"slack-channel:*                              50/min     1      default",
		"BOOKED LATELY                                UNDER LIMIT                NEXT CALL",
		"mcp:shop                                     mcp:shop                   free",
		"slack-channel:C1                             slack-channel:*            next slot in 1.2s",
		"slack-channel:C2                             slack-channel:*            next slot in 1m30s",
		"slack-channel:C3                             -                          free",
		limitsFooter,
	} {
		if !strings.Contains(v, want) {
			t.Errorf("limits view lacks %q:\n%s", want, v)
		}
	}

	// The refresh tick reads them again.
	store.mu.Lock()
	store.usage[1].Wait = 0
	store.mu.Unlock()
	d.send(tickMsg{})
	if v := d.view(); !strings.Contains(v, "slack-channel:C1                             slack-channel:*            free") {
		t.Errorf("after a tick, C1 is not free:\n%s", v)
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
	for _, want := range []string{"0 limits · 0 targets booked in the last hour", "no limits: every target unpaced", limitsFooter} {
		if !strings.Contains(v, want) {
			t.Errorf("empty limits view lacks %q:\n%s", want, v)
		}
	}
	if strings.Contains(v, "BOOKED LATELY") {
		t.Errorf("nothing was booked, yet:\n%s", v)
	}
}

// The full help of the tasks names the key.
func TestLimitsKeyInTheHelp(t *testing.T) {
	t.Parallel()
	d := newDriver(t, newFakeStore(1, epoch), Options{}, 120, 30)
	d.keys("?")
	if v := d.view(); !strings.Contains(v, "L limits") {
		t.Errorf("the full help lacks the limits key:\n%s", v)
	}
}

// A limit put and a call booked in the database show in the view, through
// a console in a terminal.
func TestConsoleLimitsFromTheDatabase(t *testing.T) {
	s := seedDB(t)
	ctx := context.Background()
	if _, err := s.Flow.Put(ctx, flow.Limit{Target: "slack-channel:*", Rate: flow.Rate{N: 1, Per: time.Minute}}); err != nil {
		t.Fatal(err)
	}
	if wait, err := flow.NewLimiter(s.DB, nil).Take(ctx, "slack-channel:ops"); err != nil || wait != 0 {
		t.Fatalf("take: %v %v", wait, err)
	}
	tm := startConsoleWith(t, s, Options{Now: time.Now})
	waitFor(t, tm, "page 1 · 4 tasks")
	press(tm, "L")
	waitFor(t, tm, "1 limit · 1 target booked in the last hour", "slack-channel:*", "1/min", "operator",
		"slack-channel:ops", "next slot in ")
	finish(t, tm)
}
