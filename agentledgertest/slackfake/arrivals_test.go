package slackfake_test

import (
	"context"
	"testing"
	"time"

	"github.com/slack-go/slack"

	"github.com/agentledger/agentledger/agentledgertest/slackfake"
)

// Posts and updates are recorded per channel ID however the channel was
// addressed, faults and errors included; other methods are not.
func TestArrivals(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s := slackfake.New(t, token)
	ops, dev := s.AddChannel("ops"), s.AddChannel("dev")
	c := client(s, token)
	_, ts, err := c.PostMessageContext(ctx, "#ops", slack.MsgOptionText("one", false))
	if err != nil {
		t.Fatal(err)
	}
	if _, _, _, err := c.UpdateMessageContext(ctx, ops, ts, slack.MsgOptionText("two", false)); err != nil {
		t.Fatal(err)
	}
	s.Inject("chat.postMessage", slackfake.Fault{Status: 429, RetryAfter: 1})
	if _, _, err := c.PostMessageContext(ctx, dev, slack.MsgOptionText("three", false)); err == nil {
		t.Fatal("the injected 429 did not answer")
	}
	if _, _, err := c.PostMessageContext(ctx, "nowhere", slack.MsgOptionText("four", false)); err == nil {
		t.Fatal("a post to an unknown channel succeeded")
	}
	if _, err := c.AuthTestContext(ctx); err != nil {
		t.Fatal(err)
	}
	a := s.Arrivals("ops")
	if len(a) != 2 || a[1].Before(a[0]) || len(s.Arrivals(dev)) != 1 || len(s.Arrivals("nowhere")) != 1 {
		t.Fatalf("arrivals: ops %v, dev %v, nowhere %v", a, s.Arrivals(dev), s.Arrivals("nowhere"))
	}
	got := s.MaxPerWindow(time.Hour)
	if len(got) != 3 || got[ops] != 2 || got[dev] != 1 || got["nowhere"] != 1 {
		t.Fatalf("MaxPerWindow: %v", got)
	}
}

func TestMaxInWindow(t *testing.T) {
	t.Parallel()
	t0 := time.Now()
	at := func(ms ...int) []time.Time {
		out := make([]time.Time, len(ms))
		for i, m := range ms {
			out[i] = t0.Add(time.Duration(m) * time.Millisecond)
		}
		return out
	}
	for _, c := range []struct {
		ms   []int
		want int
	}{
		{nil, 0},
		{[]int{0}, 1},
		{[]int{0, 1000, 2000}, 1},    // exactly a window apart: half open
		{[]int{0, 999, 2000}, 2},     // a millisecond short
		{[]int{0, 1100, 1900}, 2},    // the window need not start at a call
		{[]int{0, 500, 600, 700}, 4}, // a burst
		{[]int{0, 600, 1200, 1800, 2400}, 2},
	} {
		if got := slackfake.MaxInWindow(at(c.ms...), time.Second); got != c.want {
			t.Errorf("MaxInWindow(%v) = %d, want %d", c.ms, got, c.want)
		}
	}
}
