package slack_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agentledger/agentledger/internal/slackfake"
	"github.com/agentledger/agentledger/notify/slack"
)

// fleet is a scripted slack.FleetPacer: answer gives the n-th answer
// (from 0) for target; every Take is recorded with the number of posts and
// updates Slack had received when it was asked.
type fleet struct {
	fake   *slackfake.Server
	answer func(target string, n int) (time.Duration, error)

	mu    sync.Mutex
	asked map[string]int
	takes []string // "<target> after <posts+updates>"
}

func (f *fleet) Take(_ context.Context, target string) (time.Duration, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.asked == nil {
		f.asked = map[string]int{}
	}
	n := f.asked[target]
	f.asked[target]++
	sent := f.fake.Calls("chat.postMessage") + f.fake.Calls("chat.update")
	f.takes = append(f.takes, fmt.Sprintf("%s after %d", target, sent))
	if f.answer == nil {
		return 0, nil
	}
	return f.answer(target, n)
}

func (f *fleet) log() string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return strings.Join(f.takes, "; ")
}

// newFleetSlack is newSlack with f as the fleet's pacer.
func newFleetSlack(t *testing.T, answer func(string, int) (time.Duration, error)) (*slack.Sink, *slackfake.Server, *fleet, fmt.Stringer) {
	t.Helper()
	f := &fleet{answer: answer}
	s, fake, logs := newSlack(t, func(c *slack.Config) { c.Fleet = f })
	f.fake = fake
	return s, fake, f, logs
}

// A post to a channel named by name is booked on the channel's ID (the
// name resolved first, so every daemon paces one target) and then on the
// workspace, before it is sent; an update likewise.
func TestFleetBooksChannelThenWorkspace(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s, fake, f, _ := newFleetSlack(t, nil)
	ref, err := s.Post(ctx, key1, ops)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Update(ctx, ref, ops); err != nil {
		t.Fatal(err)
	}
	id := fake.Messages("ops")[0].Channel
	want := fmt.Sprintf("slack-channel:%[1]s after 0; slack-workspace after 0; slack-channel:%[1]s after 1; slack-workspace after 1", id)
	if got := f.log(); got != want {
		t.Fatalf("takes:\n got %s\nwant %s", got, want)
	}
	if n := fake.Calls("conversations.list"); n != 1 {
		t.Fatalf("conversations.list called %d times, want once (to resolve the name)", n)
	}
}

// A channel that must wait is asked again after the wait; a full
// workspace makes the call give up its channel booking and start over
// from the channel, so that the call goes right after both bookings.
func TestFleetWaits(t *testing.T) {
	t.Parallel()
	s, fake, f, _ := newFleetSlack(t, func(target string, n int) (time.Duration, error) {
		if n == 0 {
			return 20 * time.Millisecond, nil // each target refuses once
		}
		return 0, nil
	})
	if _, err := s.Post(context.Background(), key1, ops); err != nil {
		t.Fatal(err)
	}
	id := fake.Messages("ops")[0].Channel
	want := fmt.Sprintf("slack-channel:%[1]s after 0; slack-channel:%[1]s after 0; slack-workspace after 0; "+
		"slack-channel:%[1]s after 0; slack-workspace after 0", id)
	if got := f.log(); got != want {
		t.Fatalf("takes:\n got %s\nwant %s", got, want)
	}
	if n := fake.Calls("chat.postMessage"); n != 1 {
		t.Fatalf("%d posts, want 1", n)
	}
}

// When the fleet's limits cannot be read the call waits and asks again
// (fail closed): nothing is posted unpaced, the log says why without the
// token, and a caller that gives up posts nothing.
func TestFleetUnreadableFailsClosed(t *testing.T) {
	t.Parallel()
	down := errors.New("database down (token " + slackToken + ")")
	s, fake, f, logs := newFleetSlack(t, func(target string, n int) (time.Duration, error) {
		if n == 0 && strings.HasPrefix(target, "slack-channel:") {
			return 0, down
		}
		return 0, nil
	})
	if _, err := s.Post(context.Background(), key1, ops); err != nil {
		t.Fatal(err)
	}
	id := fake.Messages("ops")[0].Channel
	want := fmt.Sprintf("slack-channel:%[1]s after 0; slack-channel:%[1]s after 0; slack-workspace after 0", id)
	if got := f.log(); got != want {
		t.Fatalf("takes:\n got %s\nwant %s", got, want)
	}
	l := logs.String()
	if !strings.Contains(l, "the fleet's limit cannot be read") || !strings.Contains(l, "database down") || strings.Contains(l, slackToken) {
		t.Fatalf("log:\n%s", l)
	}

	s, fake, _, _ = newFleetSlack(t, func(string, int) (time.Duration, error) { return 0, down })
	ctx, cancel := context.WithCancel(context.Background())
	errc := make(chan error, 1)
	go func() { _, err := s.Post(ctx, key1, ops); errc <- err }()
	cancel()
	if err := <-errc; !errors.Is(err, context.Canceled) {
		t.Fatalf("post under an unreadable limit, cancelled: %v", err)
	}
	if n := fake.Calls("chat.postMessage"); n != 0 {
		t.Fatalf("%d posts under an unreadable limit", n)
	}
}
