package slack_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agentledger/agentledger/agentledgertest/slackfake"
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

// spacer is a fleet's pacer in memory: calls to a channel at least spacing
// apart, the workspace unlimited.
type spacer struct {
	spacing time.Duration
	mu      sync.Mutex
	next    map[string]time.Time
	granted int // channel calls let through
}

func (p *spacer) Take(_ context.Context, target string) (time.Duration, error) {
	if target == slack.WorkspaceTarget {
		return 0, nil
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	now := time.Now()
	if next := p.next[target]; now.Before(next) {
		return next.Sub(now), nil
	}
	p.next[target] = now.Add(p.spacing)
	p.granted++
	return 0, nil
}

// Three sinks (three daemons) posting to one channel at once, paced by
// one fleet, each post booked once, reach Slack no two within half the
// fleet's spacing: the other half covers the way from booking to arrival,
// which took 77 ms on a loaded CI machine (a post late by that and the
// next one on time arrived 187 ms apart). Unpaced, all would arrive
// within a few milliseconds.
func TestFleetSpacesArrivalsAcrossSinks(t *testing.T) {
	t.Parallel()
	const spacing, window, posts = 250 * time.Millisecond, 125 * time.Millisecond, 4
	fake := slackfake.New(t, slackToken)
	id := fake.AddChannel("ops")
	pacer := &spacer{spacing: spacing, next: map[string]time.Time{}}
	var wg sync.WaitGroup
	errs := make(chan error, 3*posts)
	for d := range 3 {
		s, err := slack.New(slack.Config{Token: slackToken, APIURL: fake.APIURL(), HTTPClient: fake.Client(),
			PerChannelInterval: -1, WorkspaceRate: -1, Fleet: pacer})
		if err != nil {
			t.Fatal(err)
		}
		for i := range posts {
			wg.Add(1)
			go func() {
				defer wg.Done()
				_, err := s.Post(context.Background(), fmt.Sprintf("%s-%d-%d", key1, d, i), ops)
				errs <- err
			}()
		}
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	if n := len(fake.Messages(id)); n != 3*posts {
		t.Fatalf("%d messages, want %d", n, 3*posts)
	}
	if pacer.granted != 3*posts {
		t.Fatalf("the fleet let %d posts through, want each of %d booked once", pacer.granted, 3*posts)
	}
	if most := fake.MaxPerWindow(window)[id]; most != 1 {
		t.Fatalf("%d posts arrived within %s (fleet spacing %s), want 1: %v", most, window, spacing, fake.Arrivals(id))
	}
}
