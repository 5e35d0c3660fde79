package notify_test

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agentledger/agentledger/claims"
)

// The scenario of the reconciliation tests: a busy channel (5 messages a
// second from others over the last 10 minutes), 25 tasks with three events
// each (retrying, retrying, succeeded), the answers to the first 12 posts
// lost after Slack stored them, and two dispatchers draining the outbox.
const (
	busyMessages = 3000
	busySpan     = 10 * time.Minute
	skewTasks    = 25
	lostReplies  = 12
)

// lostRepliesRun plays the scenario on a Slack whose clock is skew off
// the daemon's and returns the world and the tasks' ids.
func lostRepliesRun(t *testing.T, skew time.Duration) (*world, []int64) {
	w := newWorld(t)
	w.fake.Skew(skew)
	w.fake.Backfill("ops", busyMessages, busySpan)
	var ids []int64
	for range skewTasks {
		ids = append(ids, w.Enqueue(claims.EnqueueParams{MaxAttempts: 5}).ID)
	}
	for _, o := range []string{"retry", "retry", "succeed"} {
		got, err := w.Claims.Claim(context.Background(), claims.ClaimParams{
			Queue: claims.DefaultQueue, Worker: "worker", Limit: skewTasks, Lease: time.Minute})
		if err != nil || len(got) != skewTasks {
			t.Fatalf("claimed %d, %v", len(got), err)
		}
		for _, task := range got {
			w.finish(task, o)
		}
	}
	w.box.Now = nil // retries come due on the real clock, with no one to advance the pinned one
	for range lostReplies {
		w.fake.DropAfterApply("chat.postMessage")
	}
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	for _, name := range []string{"a", "b"} {
		d := w.dispatcher(name, w.sink(slackToken))
		wg.Add(1)
		go func() {
			defer wg.Done()
			_ = d.Run(ctx)
		}()
	}
	waitFor(t, func() bool { return w.pending() == 0 })
	cancel()
	wg.Wait()
	return w, ids
}

// However far Slack's clock is from the daemon's, a lost answer is found
// in the history (the search is bounded by Slack's own clock, as its
// answers showed it): one message per (task, rule), and few history pages
// read for it.
func TestLostRepliesSkewedSlack(t *testing.T) {
	for _, skew := range []time.Duration{0, -150 * time.Second, 150 * time.Second} {
		t.Run(skew.String(), func(t *testing.T) {
			w, ids := lostRepliesRun(t, skew)
			for _, id := range ids {
				msgs := w.messagesFor("ops", id)
				if len(msgs) != 1 || msgs[0].Updates != 2 || !strings.Contains(msgs[0].Text, "succeeded") {
					var heads []string
					for _, m := range msgs {
						heads = append(heads, fmt.Sprintf("%q (%d updates)", strings.SplitN(m.Text, "\n", 2)[0], m.Updates))
					}
					t.Errorf("task %d: %d messages %v, want one, updated twice, ending on success", id, len(msgs), heads)
				}
			}
			posts, pages := w.fake.Calls("chat.postMessage"), w.fake.Calls("conversations.history")
			t.Logf("Slack %s off: %d posts, %d history pages read for %d lost answers", skew, posts, pages, lostReplies)
			if posts != skewTasks {
				t.Errorf("%d posts, want %d", posts, skewTasks)
			}
			// One page per lost answer: the window starts 30s before the
			// reservation in Slack's clock and a page holds 999 messages.
			// Reading from two minutes before it in the daemon's clock,
			// 200 a page, this read 48 pages with the clocks agreeing, 84
			// with Slack 150s ahead, and 12 (but posted 12 duplicates)
			// with Slack 150s behind.
			if pages > lostReplies {
				t.Errorf("%d history pages for %d lost answers, want at most one each", pages, lostReplies)
			}
		})
	}
}
