package slack

import (
	"context"
	"testing"
	"time"

	"github.com/agentledger/agentledger/agentledgertest/slackfake"
	"github.com/agentledger/agentledger/notify"
)

func TestPacerTake(t *testing.T) {
	t.Parallel()
	t0 := time.Now()
	ms := func(n int) time.Time { return t0.Add(time.Duration(n) * time.Millisecond) }
	p := newPacer(time.Second, 10, 2) // 1s per channel; 10/s over all after 2 at once
	for i, c := range []struct {
		ch   string
		at   time.Time
		wait time.Duration
	}{
		{"a", ms(0), 0},                      // burst
		{"b", ms(0), 0},                      // burst
		{"c", ms(0), 100 * time.Millisecond}, // workspace rate
		{"c", ms(100), 0},
		{"a", ms(150), 850 * time.Millisecond}, // a's interval
		{"d", ms(200), 0},                      // a's wait holds up no one
		{"a", ms(1000), 0},
		{"a", ms(1500), 500 * time.Millisecond},
	} {
		if got := p.take(c.ch, c.at); got != c.wait {
			t.Fatalf("take %d (%s at %s): wait %s, want %s", i, c.ch, c.at.Sub(t0), got, c.wait)
		}
	}
	p.rekey("a", "C1")
	if got := p.take("C1", ms(1500)); got != 500*time.Millisecond {
		t.Fatalf("rekeyed: wait %s", got)
	}
	if got := p.take("a", ms(1500)); got != 0 {
		t.Fatalf("old key still paced: wait %s", got)
	}

	off := newPacer(0, 0, 0)
	for range 3 {
		if got := off.take("a", t0); got != 0 {
			t.Fatalf("unpaced: wait %s", got)
		}
	}
}

// A post that waits for a channel named by name keeps its pace when the
// name's ID is learnt meanwhile: it does not go beside a post addressed
// by the ID that the first post taught.
func TestPacerNameLearntWhileWaiting(t *testing.T) {
	t.Parallel()
	s, fake, _ := newSlackInternal(t)
	done := make(chan error, 3)
	post := func(key string) {
		_, err := s.Post(context.Background(), key, notify.Message{Channel: "ops", Text: key})
		done <- err
	}
	go post("al1-first")
	go post("al1-second") // one of the two waits for "ops"
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	go post("al1-third") // addressed by the ID now known
	for range 2 {
		if err := <-done; err != nil {
			t.Fatal(err)
		}
	}
	id, _ := s.knownID("ops")
	if most := fake.MaxPerWindow(150 * time.Millisecond)[id]; most != 1 {
		t.Fatalf("%d posts within 150ms at an interval of 200ms: %v", most, fake.Arrivals(id))
	}
}

// newSlackInternal is a sink on a fake Slack with channel "ops", paced
// 200ms per channel and not per workspace.
func newSlackInternal(t *testing.T) (*Sink, *slackfake.Server, string) {
	t.Helper()
	fake := slackfake.New(t, "xoxb-internal-test")
	id := fake.AddChannel("ops")
	s, err := New(Config{Token: "xoxb-internal-test", APIURL: fake.APIURL(), HTTPClient: fake.Client(),
		PerChannelInterval: 200 * time.Millisecond, WorkspaceRate: -1})
	if err != nil {
		t.Fatal(err)
	}
	return s, fake, id
}
