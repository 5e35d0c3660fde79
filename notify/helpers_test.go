package notify_test

import (
	"context"
	"log/slog"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/agentledger/agentledger"
	"github.com/agentledger/agentledger/agentledgertest/slackfake"
	"github.com/agentledger/agentledger/claims"
	"github.com/agentledger/agentledger/internal/test/logbuf"
	"github.com/agentledger/agentledger/internal/test/testenv"
	"github.com/agentledger/agentledger/notify"
	"github.com/agentledger/agentledger/notify/outbox"
	"github.com/agentledger/agentledger/notify/slack"
)

// slackToken is the bot token of the tests; no output may show it.
const slackToken = "xoxb-1111-2222-n0t1f13rs3cr3t"

// lease is the dispatchers' claim lease.
const lease = time.Minute

// world is a database (clock pinned), one notification rule for channel
// "ops", and a fake Slack.
type world struct {
	*testenv.Env
	t     *testing.T
	rules *outbox.Rules
	box   *outbox.Store
	fake  *slackfake.Server
	logs  *logbuf.Buffer
}

func newWorld(t *testing.T) *world {
	t.Helper()
	w := &world{Env: testenv.New(t), t: t, logs: &logbuf.Buffer{}}
	w.rules = outbox.NewRules(w.DB)
	w.box = outbox.NewStore(w.DB)
	w.box.Now = w.Now
	w.fake = slackfake.New(t, slackToken)
	w.fake.AddChannel("ops")
	w.rule(outbox.Rule{Name: "ops", Channel: "ops", Events: outbox.Events})
	return w
}

func (w *world) rule(r outbox.Rule) {
	w.t.Helper()
	if _, err := w.rules.Put(context.Background(), r, true); err != nil {
		w.t.Fatal(err)
	}
}

// sink is a new Slack sink — a new process's, remembering nothing.
func (w *world) sink(token string) *slack.Sink {
	w.t.Helper()
	s, err := slack.New(slack.Config{
		Token: token, APIURL: w.fake.APIURL(), HTTPClient: w.fake.Client(),
		PerChannelInterval: -1, WorkspaceRate: -1, Logger: w.logger(),
	})
	if err != nil {
		w.t.Fatal(err)
	}
	return s
}

func (w *world) logger() *slog.Logger {
	return slog.New(slog.NewTextHandler(w.logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
}

// dispatcher is a dispatcher named name delivering to sink.
func (w *world) dispatcher(name string, sink notify.Sink) *outbox.Dispatcher {
	w.t.Helper()
	d, err := outbox.NewDispatcher(w.box, notify.NewDeliverer(w.Ledger, sink), outbox.Config{
		Owner: name, Lease: lease, Logger: w.logger(),
		Backoff: agentledger.Backoff{Base: time.Millisecond, Max: time.Millisecond},
	})
	if err != nil {
		w.t.Fatal(err)
	}
	return d
}

// drain runs d until no event is due.
func (w *world) drain(d *outbox.Dispatcher) {
	w.t.Helper()
	for range 100 {
		n, err := d.RunOnce(context.Background())
		if err != nil {
			w.t.Fatal(err)
		}
		if n == 0 {
			return
		}
	}
	w.t.Fatal("the outbox did not drain in 100 rounds")
}

// run takes a new task through outcomes: "retry", "succeed", "dead",
// "attention", one attempt each.
func (w *world) run(outcomes ...string) *agentledger.Task {
	w.t.Helper()
	t := w.Enqueue(claims.EnqueueParams{MaxAttempts: 5})
	for _, o := range outcomes {
		w.finish(w.claimTask(t.ID), o)
	}
	return t
}

// claimTask claims the task id (the only due one).
func (w *world) claimTask(id int64) *agentledger.Task {
	w.t.Helper()
	got := w.Claim("worker")
	if got.ID != id {
		w.t.Fatalf("claimed task %d, want %d", got.ID, id)
	}
	return got
}

func (w *world) finish(t *agentledger.Task, outcome string) {
	w.t.Helper()
	ctx := context.Background()
	l := agentledger.Lease{TaskID: t.ID, Token: t.LeaseToken}
	var err error
	switch outcome {
	case "retry":
		_, err = w.Claims.Fail(ctx, claims.Failure{Lease: l, Error: "downstream said 503"})
	case "dead":
		_, err = w.Claims.Fail(ctx, claims.Failure{Lease: l, Error: "bad input", Final: true})
	case "succeed":
		err = w.Claims.Succeed(ctx, l, []byte(`{"ok":true}`))
	case "attention":
		err = w.Claims.NeedsAttention(ctx, l, "an unsafe effect's outcome is unknown")
	default:
		w.t.Fatalf("unknown outcome %q", outcome)
	}
	if err != nil {
		w.t.Fatalf("%s task %d: %v", outcome, t.ID, err)
	}
}

// events are the outbox events of a task.
func (w *world) events(taskID int64) []outbox.Event {
	w.t.Helper()
	es, err := w.box.ForTask(context.Background(), "", taskID)
	if err != nil {
		w.t.Fatal(err)
	}
	return es
}

// messagesFor are the messages in channel ch whose footer or text names
// task id.
func (w *world) messagesFor(ch string, id int64) []slackfake.Message {
	var out []slackfake.Message
	for _, m := range w.fake.Messages(ch) {
		if strings.Contains(m.Text, "Task "+itoa(id)+" ") {
			out = append(out, m)
		}
	}
	return out
}

func itoa(n int64) string { return strconv.FormatInt(n, 10) }
