package chaos

import (
	"context"
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/agentledger/agentledger/agentledgertest/slackfake"
	"github.com/agentledger/agentledger/claims"
	"github.com/agentledger/agentledger/notify/outbox"
)

// Three daemons deliver 30 notifications to three Slack channels, posted
// by a rule and by the notify tool: the fake Slack sees at most one post
// or update per channel in any one-second window (arrival times), and
// every message once. CHAOS_SLACK_CHANNELS (1–3) and
// CHAOS_SLACK_PER_CHANNEL size it: issue 16's run is 1 channel and 300
// messages (about six minutes at the default pace of 50 a minute).
func TestSlackFleetPacing(t *testing.T) {
	skipShort(t)
	t.Parallel() // mostly waits on Slack's pace
	perChannel := envInt(t, "CHAOS_SLACK_PER_CHANNEL", 10)
	channels := envInt(t, "CHAOS_SLACK_CHANNELS", 3)
	if channels < 1 || channels > 3 || perChannel < 1 {
		t.Fatalf("CHAOS_SLACK_CHANNELS=%d must be 1..3 and CHAOS_SLACK_PER_CHANNEL=%d at least 1", channels, perChannel)
	}
	w := newWorld(t)
	fake := slackfake.New(t, slackToken)
	names := []string{"pace-a", "pace-b", "pace-c"}[:channels]
	for _, n := range names {
		fake.AddChannel(n)
	}
	ctx := context.Background()
	// The rule posts each echo task's success to pace-a; steps tasks post
	// with the notify tool to pace-b and pace-c.
	_, err := outbox.NewRules(w.db).Put(ctx, outbox.Rule{Name: "echoes", Kind: "echo", Channel: names[0],
		Events: []string{"succeeded"}}, false)
	must(t, err)
	store := claims.New(w.db)
	for i := range perChannel {
		_, err := store.Enqueue(ctx, claims.EnqueueParams{Kind: "echo", Payload: json.RawMessage(sprintf(`{"n":%d}`, i))})
		must(t, err)
		for _, ch := range names[1:] {
			steps := sprintf(`{"steps":[{"tool":"notify","args":{"channel":%q,"text":"%s %d"}}]}`, ch, ch, i)
			_, err := store.Enqueue(ctx, claims.EnqueueParams{Kind: "steps", Payload: json.RawMessage(steps)})
			must(t, err)
		}
	}

	var daemons []*daemon
	for i := range 3 {
		name := sprintf("d%d", i+1)
		d := &daemon{name: name, bin: w.agentd, log: filepath.Join(w.dir, name+".log"),
			// Each daemon paces a channel to one a second on its own, and
			// the workspace not at all: only the fleet's limit — agentd's
			// default for every channel, 50 a minute, stored by the first
			// daemon — keeps the three at one a second per channel
			// between them.
			args: []string{"--listen", "", "--poll-interval", "100ms", "--dispatch-concurrency", "8",
				"--slack-workspace-rate", "1000"},
			env: []string{"DATABASE_URL=" + w.url, "AGENTLEDGER_STATE_DIR=" + filepath.Join(w.dir, "state-"+name),
				"AGENTLEDGER_SLACK_TOKEN=" + slackToken, "AGENTLEDGER_SLACK_API_URL=" + fake.APIURL()},
		}
		must(t, d.start())
		daemons = append(daemons, d)
	}
	defer stopAll(t, daemons)

	// At 50 a minute per channel, with a minute to spare.
	limit := time.Duration(perChannel)*1200*time.Millisecond + 90*time.Second
	waitFor(t, "every notification delivered", limit, func() (bool, string) {
		var open, pending, failed int
		err := w.db.QueryRow(ctx, `SELECT
			(SELECT count(*) FROM tasks WHERE state <> 'succeeded'),
			(SELECT count(*) FROM outbox WHERE state = 'pending'),
			(SELECT count(*) FROM outbox WHERE state = 'failed')`).Scan(&open, &pending, &failed)
		if err != nil {
			return false, err.Error()
		}
		if failed > 0 {
			t.Fatalf("%d notifications failed", failed)
		}
		return open == 0 && pending == 0, sprintf("%d tasks unfinished, %d notifications pending", open, pending)
	})
	for _, d := range daemons {
		d.stop()
	}

	// Every message once: the rule's one per echo task, the tool's one
	// per steps task.
	for _, ch := range names {
		seen := map[string]int{}
		for _, m := range fake.Messages(ch) {
			seen[m.Text]++
		}
		dup := false
		for _, n := range seen {
			dup = dup || n != 1
		}
		if len(seen) != perChannel || dup {
			t.Errorf("%s holds %d distinct messages, want %d, each once: %v", ch, len(seen), perChannel, seen)
		}
	}
	for _, ch := range names[1:] {
		for i := range perChannel {
			text := sprintf("%s %d", ch, i)
			if n := countText(fake.Messages(ch), text); n != 1 {
				t.Errorf("%s: %q arrived %d times, want once", ch, text, n)
			}
		}
	}

	busiest := fake.MaxPerWindow(time.Second)
	for _, ch := range names {
		id := fake.Messages(ch)[0].Channel
		t.Logf("%s: most posts and updates in one second: %d; arrivals %s", ch, busiest[id], gaps(fake.Arrivals(ch)))
	}
	for ch, n := range busiest {
		if n > 1 {
			t.Errorf("channel %s: %d posts or updates within one second, want at most 1", ch, n)
		}
	}
}

func countText(msgs []slackfake.Message, text string) int {
	n := 0
	for _, m := range msgs {
		if m.Text == text {
			n++
		}
	}
	return n
}

// gaps shows the times between arrivals, for the log.
func gaps(at []time.Time) string {
	var b strings.Builder
	for i := 1; i < len(at); i++ {
		b.WriteString(at[i].Sub(at[i-1]).Round(time.Millisecond).String() + " ")
	}
	return b.String()
}
