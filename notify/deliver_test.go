package notify_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agentledger/agentledger/agentledgertest/slackfake"
	"github.com/agentledger/agentledger/claims"
	"github.com/agentledger/agentledger/ledger"
	"github.com/agentledger/agentledger/notify"
	"github.com/agentledger/agentledger/notify/outbox"
	"github.com/agentledger/agentledger/operator"
)

// A task that fails twice and then succeeds has one message, posted at the
// first failure and updated in place to show success.
func TestRetriesThenSuccessIsOneMessage(t *testing.T) {
	w := newWorld(t)
	task := w.run("retry", "retry", "succeed")
	if es := w.events(task.ID); len(es) != 3 {
		t.Fatalf("%d outbox events, want 3 (retrying, retrying, succeeded)", len(es))
	}
	w.drain(w.dispatcher("d1", w.sink(slackToken)))

	msgs := w.messagesFor("ops", task.ID)
	if len(msgs) != 1 {
		t.Fatalf("%d messages, want 1: %+v", len(msgs), msgs)
	}
	if m := msgs[0]; m.Updates != 2 || !strings.Contains(m.Text, "succeeded") || m.Metadata == nil {
		t.Errorf("message = %d updates, text %q, metadata %v; want 2 updates, success, the key in metadata", m.Updates, m.Text, m.Metadata)
	}
	if n := w.fake.Calls("chat.postMessage"); n != 1 {
		t.Errorf("%d chat.postMessage calls, want 1", n)
	}
	for _, e := range w.events(task.ID) {
		if e.State != outbox.StateDelivered {
			t.Errorf("event %d (%s) is %s", e.ID, e.Event, e.State)
		}
	}
	// The journal shows the post and the two updates.
	var ops []string
	for _, e := range w.Journal(task) {
		ops = append(ops, e.Operation+"@"+e.StepPath[:min(len(e.StepPath), len("notify/ops"))]+":"+string(e.State))
	}
	want := "notify.post@notify/ops:completed notify.update@notify/ops:completed notify.update@notify/ops:completed"
	if got := strings.Join(ops, " "); got != want {
		t.Errorf("journal = %s\nwant      %s", got, want)
	}
}

// A rule whose channel changes while its task runs goes on editing the
// task's message where it was posted, and the later events' rows name
// that channel, not the rule's new one: show and the console say where
// the message is.
func TestARuleMovedKeepsItsMessageWhereItWas(t *testing.T) {
	w := newWorld(t)
	w.fake.AddChannel("alerts")
	task := w.Enqueue(claims.EnqueueParams{MaxAttempts: 5})
	w.finish(w.claimTask(task.ID), "retry")
	w.drain(w.dispatcher("d1", w.sink(slackToken)))
	w.rule(outbox.Rule{Name: "ops", Channel: "alerts", Events: outbox.Events})
	w.finish(w.claimTask(task.ID), "succeed")
	w.drain(w.dispatcher("d1", w.sink(slackToken)))

	if msgs, moved := w.messagesFor("ops", task.ID), w.messagesFor("alerts", task.ID); len(msgs) != 1 || msgs[0].Updates != 1 || len(moved) != 0 {
		t.Fatalf("messages in ops %+v, in alerts %+v; want the one in ops, updated once", msgs, moved)
	}
	var got []string
	for _, e := range w.events(task.ID) {
		got = append(got, e.Event+"@"+e.Channel+":"+string(e.State))
	}
	if s := strings.Join(got, " "); s != "retrying@ops:delivered succeeded@ops:delivered" {
		t.Fatalf("events %s, want both delivered in ops", s)
	}
}

// A rule that asks only for retries edits its message when the task later
// succeeds, with no post: the message does not go on saying "retrying".
// A task it never posted for writes it nothing; and an update whose
// message was never posted (the post given up) sends nothing.
func TestAMessageFollowsItsTaskPastTheRulesEvents(t *testing.T) {
	w := newWorld(t)
	w.fake.AddChannel("alerts")
	if err := w.rules.Remove(context.Background(), "ops"); err != nil {
		t.Fatal(err)
	}
	w.rule(outbox.Rule{Name: "early", Channel: "alerts", Events: []string{"retrying"}})

	task := w.run("retry", "retry", "succeed")
	quiet := w.run("succeed")
	var got []string
	for _, e := range w.events(task.ID) {
		p, err := e.Decode()
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, fmt.Sprintf("%s:%s:%v", e.Rule, e.Event, p.UpdateOnly))
	}
	if s := strings.Join(got, " "); s != "early:retrying:false early:retrying:false early:succeeded:true" {
		t.Fatalf("events %s, want two retries and the success as an update only", s)
	}
	if es := w.events(quiet.ID); len(es) != 0 {
		t.Fatalf("a task that never retried wrote %d events, want none", len(es))
	}
	w.drain(w.dispatcher("d1", w.sink(slackToken)))
	msgs := w.messagesFor("alerts", task.ID)
	if len(msgs) != 1 || msgs[0].Updates != 2 || !strings.Contains(msgs[0].Text, "succeeded") {
		t.Fatalf("messages %+v, want one, updated twice, saying the task succeeded", msgs)
	}
	if n := w.fake.Calls("chat.postMessage"); n != 1 {
		t.Errorf("%d posts, want 1", n)
	}
	d, err := operator.New(w.DB).Show(context.Background(), "", task.ID)
	if err != nil {
		t.Fatal(err)
	}
	if ns := d.Notifications; len(ns) != 3 || ns[1].UpdateOnly || !ns[2].UpdateOnly {
		t.Errorf("show's notifications %+v, want the success's alone marked update only", ns)
	}

	// The post of a second task is refused for good; its success then has
	// no message to edit and is given up too, so that a redelivery sends
	// both in order: the post, then the edit to success.
	w.fake.FailNext("chat.postMessage", "channel_not_found")
	lost := w.run("retry")
	w.drain(w.dispatcher("d1", w.sink(slackToken)))
	w.finish(w.claimTask(lost.ID), "succeed")
	w.drain(w.dispatcher("d1", w.sink(slackToken)))
	states := func() string {
		var out []string
		for _, e := range w.events(lost.ID) {
			out = append(out, e.Event+":"+string(e.State))
		}
		return strings.Join(out, " ")
	}
	if s := states(); s != "retrying:failed succeeded:failed" {
		t.Fatalf("events %s, want the retry's post and the success's edit both given up", s)
	}
	if msgs := w.messagesFor("alerts", lost.ID); len(msgs) != 0 {
		t.Errorf("messages %+v of the task whose post was refused, want none", msgs)
	}
	op := operator.New(w.DB)
	op.PinClock(w.Now)
	if _, err := op.Redeliver(context.Background(), operator.RedeliverParams{TaskID: lost.ID}); err != nil {
		t.Fatal(err)
	}
	w.drain(w.dispatcher("d1", w.sink(slackToken)))
	if s := states(); s != "retrying:delivered succeeded:delivered" {
		t.Fatalf("events after the redelivery %s, want both delivered", s)
	}
	if msgs := w.messagesFor("alerts", lost.ID); len(msgs) != 1 || msgs[0].Updates != 1 || !strings.Contains(msgs[0].Text, "succeeded") {
		t.Fatalf("messages %+v after the redelivery, want one, edited to say the task succeeded", msgs)
	}
}

// A rule's events of a task not finished outlive the outbox's retention:
// a task that retried, then waited past it, still has its message edited
// when it succeeds.
func TestAMessageFollowsItsTaskPastTheOutboxRetention(t *testing.T) {
	w := newWorld(t)
	ctx := context.Background()
	if err := w.rules.Remove(ctx, "ops"); err != nil {
		t.Fatal(err)
	}
	w.rule(outbox.Rule{Name: "early", Channel: "ops", Events: []string{"retrying"}})
	done := w.run("retry", "succeed") // finished: its events go
	task := w.run("retry")
	w.drain(w.dispatcher("d1", w.sink(slackToken)))
	if _, err := w.DB.Exec(ctx, `UPDATE outbox SET updated_at = now() - interval '8 days'`); err != nil {
		t.Fatal(err)
	}
	if n, err := w.box.DeleteSettled(ctx, 7*24*time.Hour, 100); err != nil || n != 2 {
		t.Fatalf("deleted %d events (%v), want the finished task's two", n, err)
	}
	if es := w.events(done.ID); len(es) != 0 {
		t.Fatalf("the finished task kept %d events", len(es))
	}
	w.finish(w.claimTask(task.ID), "succeed")
	w.drain(w.dispatcher("d1", w.sink(slackToken)))
	if msgs := w.messagesFor("ops", task.ID); len(msgs) != 1 || msgs[0].Updates != 1 || !strings.Contains(msgs[0].Text, "succeeded") {
		t.Fatalf("messages %+v, want the retry's, edited to say the task succeeded", msgs)
	}
}

// Each rule has its own message; tasks no rule matches write no events.
func TestRulesMatch(t *testing.T) {
	w := newWorld(t)
	w.fake.AddChannel("billing")
	w.rule(outbox.Rule{Name: "billing-dead", Channel: "billing", Queue: "billing", Events: []string{"dead"}})
	w.rule(outbox.Rule{Name: "off", Channel: "billing", Events: outbox.Events, Disabled: true})

	ok := w.run("succeed") // default queue: rule ops only
	if es := w.events(ok.ID); len(es) != 1 || es[0].Rule != "ops" {
		t.Fatalf("events of a succeeded default-queue task = %+v, want one of rule ops", es)
	}
	b := w.Enqueue(claims.EnqueueParams{Queue: "billing", MaxAttempts: 5})
	got, err := w.Claims.Claim(context.Background(), claims.ClaimParams{Queue: "billing", Worker: "w", Limit: 1, Lease: time.Minute})
	if err != nil || len(got) != 1 {
		t.Fatal(got, err)
	}
	w.finish(got[0], "dead")
	var rules []string
	for _, e := range w.events(b.ID) {
		rules = append(rules, e.Rule+":"+e.Event)
	}
	if s := strings.Join(rules, " "); s != "billing-dead:dead ops:dead" {
		t.Fatalf("events of a dead billing task = %s, want billing-dead:dead ops:dead", s)
	}
	w.drain(w.dispatcher("d1", w.sink(slackToken)))
	if n, m := len(w.messagesFor("ops", b.ID)), len(w.messagesFor("billing", b.ID)); n != 1 || m != 1 {
		t.Fatalf("messages in ops, billing = %d, %d; want 1, 1", n, m)
	}
}

// crashSink posts through the real sink and then reports the answer lost,
// as a daemon killed right after Slack accepted the post would.
type crashSink struct {
	notify.Sink
	posted chan struct{}
}

var errCrash = errors.New("the daemon died here")

func (c *crashSink) Post(ctx context.Context, key string, m notify.Message) (string, error) {
	if _, err := c.Sink.Post(ctx, key, m); err != nil {
		return "", err
	}
	close(c.posted)
	return "", errCrash
}

// The dispatcher dies after Slack accepted the post and before anything
// was recorded: after its lease expires, another dispatcher finds the post
// in the channel history, adopts it, and later events update it.
func TestCrashAfterPostIsReconciled(t *testing.T) {
	w := newWorld(t)
	task := w.Enqueue(claims.EnqueueParams{MaxAttempts: 5})
	w.finish(w.claimTask(task.ID), "retry")

	ctx := context.Background()
	claimed, err := w.box.Claim(ctx, "doomed", 10, lease)
	if err != nil || len(claimed) != 1 {
		t.Fatalf("claim: %v %v", claimed, err)
	}
	crash := &crashSink{Sink: w.sink(slackToken), posted: make(chan struct{})}
	_, err = notify.NewDeliverer(w.Ledger, crash).Deliver(ctx, claimed[0])
	if !errors.Is(err, errCrash) {
		t.Fatalf("deliver = %v, want the crash", err)
	}
	<-crash.posted
	// Nothing settled the event: it is pending and leased; the ledger's
	// post is pending too.
	if j := w.Journal(task); len(j) != 1 || j[0].State != ledger.StatePending {
		t.Fatalf("journal after the crash = %+v, want one pending post", j)
	}

	d := w.dispatcher("restarted", w.sink(slackToken))
	if n, err := d.RunOnce(ctx); err != nil || n != 0 {
		t.Fatalf("while the dead claim's lease holds: claimed %d, %v; want none", n, err)
	}
	w.Advance(2 * lease)
	w.drain(d)
	w.finish(w.claimTask(task.ID), "succeed")
	w.drain(d)

	msgs := w.messagesFor("ops", task.ID)
	if len(msgs) != 1 || msgs[0].Updates != 1 || !strings.Contains(msgs[0].Text, "succeeded") {
		t.Fatalf("messages = %+v, want one, updated once to success", msgs)
	}
	if n := w.fake.Calls("chat.postMessage"); n != 1 {
		t.Errorf("%d posts, want 1", n)
	}
	if n := w.fake.Calls("conversations.history"); n == 0 {
		t.Error("the unknown post was not looked up in the history")
	}
	j := w.Journal(task)
	if j[0].State != ledger.StateCompleted || j[0].Performed != 1 || j[0].Result.ExternalRef == "" || j[0].OwnerToken == claimed[0].Token {
		t.Errorf("post = %+v, want completed by the restarted dispatcher's adoption, performed once (the crashed delivery's), with its ref", j[0])
	}
}

// Two dispatchers — two daemons, each with its own Slack client — drain the
// same outbox at once: one message per task, each ending on success.
func TestTwoDispatchersOneMessage(t *testing.T) {
	w := newWorld(t)
	const tasks = 25
	var ids []int64
	for range tasks {
		t := w.Enqueue(claims.EnqueueParams{MaxAttempts: 5})
		ids = append(ids, t.ID)
	}
	// Each round claims every task at once, so their events interleave.
	for _, o := range []string{"retry", "retry", "succeed"} {
		got, err := w.Claims.Claim(context.Background(), claims.ClaimParams{
			Queue: claims.DefaultQueue, Worker: "worker", Limit: tasks, Lease: time.Minute})
		if err != nil || len(got) != tasks {
			t.Fatalf("claimed %d, %v", len(got), err)
		}
		for _, task := range got {
			w.finish(task, o)
		}
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

	for _, id := range ids {
		msgs := w.messagesFor("ops", id)
		if len(msgs) != 1 || msgs[0].Updates != 2 || !strings.Contains(msgs[0].Text, "succeeded") {
			t.Fatalf("task %d: messages %+v, want one, updated twice, ending on success", id, msgs)
		}
	}
	if n := w.fake.Calls("chat.postMessage"); n != tasks {
		t.Errorf("%d posts, want %d", n, tasks)
	}
	var owners int
	if err := w.DB.QueryRow(ctx, `SELECT count(DISTINCT owner_token) FROM ledger WHERE operation = 'notify.post'`).Scan(&owners); err != nil || owners < 2 {
		t.Logf("posts made by %d distinct claims (%v)", owners, err)
	}
}

// pending counts undelivered events.
func (w *world) pending() int {
	var n int
	if err := w.DB.QueryRow(context.Background(), `SELECT count(*) FROM outbox WHERE state = 'pending'`).Scan(&n); err != nil {
		w.t.Fatal(err)
	}
	return n
}

// waitFor polls cond until it holds, failing after a generous bound.
func waitFor(t *testing.T, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatal("condition not reached in 60s")
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// A 429 with Retry-After: 2 is waited out: the post lands after the wait,
// once, and the event counts no failure.
func TestRateLimitedPostWaits(t *testing.T) {
	w := newWorld(t)
	task := w.run("succeed")
	w.fake.RateLimit("chat.postMessage", 2)
	start := time.Now()
	w.drain(w.dispatcher("d1", w.sink(slackToken)))
	if waited := time.Since(start); waited < 2*time.Second {
		t.Errorf("delivered %s after the 429, before its Retry-After of 2s", waited)
	}
	if msgs := w.messagesFor("ops", task.ID); len(msgs) != 1 {
		t.Fatalf("%d messages, want 1", len(msgs))
	}
	e := w.events(task.ID)[0]
	if e.State != outbox.StateDelivered || e.Failures != 0 || e.LastError != "" {
		t.Errorf("event = %s, %d failures, %q; want delivered with no failure", e.State, e.Failures, e.LastError)
	}
	if n := w.fake.Calls("chat.postMessage"); n != 2 {
		t.Errorf("%d chat.postMessage calls, want 2 (the 429, then the post)", n)
	}
}

// A channel that does not exist fails the post effect with Slack's error,
// once: the event is given up, later events do not call Slack again, and
// the task is untouched.
func TestChannelNotFoundFailsTheEffect(t *testing.T) {
	w := newWorld(t)
	w.rule(outbox.Rule{Name: "ops", Channel: "nowhere", Events: outbox.Events})
	task := w.run("retry", "succeed")
	w.drain(w.dispatcher("d1", w.sink(slackToken)))

	es := w.events(task.ID)
	for _, e := range es {
		if e.State != outbox.StateFailed || !strings.Contains(e.LastError, "channel_not_found") {
			t.Errorf("event %d = %s %q, want failed with channel_not_found", e.ID, e.State, e.LastError)
		}
		if e.Failures != 1 {
			t.Errorf("event %d failed %d times, want once (no retry storm)", e.ID, e.Failures)
		}
	}
	j := w.Journal(task)
	if len(j) != 1 || j[0].State != ledger.StateFailed || !strings.Contains(j[0].Error, "channel_not_found") {
		t.Fatalf("journal = %+v, want one failed post naming channel_not_found", j)
	}
	if n := w.fake.Calls("chat.postMessage") + w.fake.Calls("conversations.list"); n > 2 {
		t.Errorf("%d Slack calls for two events, want at most 2 (the second is served the failure)", n)
	}
	got, err := w.Claims.Get(context.Background(), "", task.ID)
	if err != nil || got.State != "succeeded" {
		t.Errorf("task = %v, %v; want succeeded", got, err)
	}
}

// A replay (same generation) updates the task's message; a re-run as a new
// intent posts a new one.
func TestReplayUpdatesRerunPosts(t *testing.T) {
	w := newWorld(t)
	d := w.dispatcher("d1", w.sink(slackToken))
	task := w.run("succeed")
	w.drain(d)

	ctx := context.Background()
	if _, err := w.Operator.Replay(ctx, "", task.ID); err != nil {
		t.Fatal(err)
	}
	w.finish(w.claimTask(task.ID), "succeed")
	w.drain(d)
	if msgs := w.messagesFor("ops", task.ID); len(msgs) != 1 || msgs[0].Updates != 1 {
		t.Fatalf("after a replay: %+v, want the one message, updated", msgs)
	}

	if _, err := w.Operator.Rerun(ctx, "", task.ID); err != nil {
		t.Fatal(err)
	}
	w.finish(w.claimTask(task.ID), "succeed")
	w.drain(d)
	msgs := w.messagesFor("ops", task.ID)
	if len(msgs) != 2 || !strings.Contains(msgs[1].Text, "(run 2)") {
		t.Fatalf("after a re-run: %+v, want a second message for run 2", msgs)
	}
	if n := w.fake.Calls("chat.postMessage"); n != 2 {
		t.Errorf("%d posts, want 2", n)
	}
}

// A message Slack can no longer update is replaced by a new post, through
// the ledger, and later events update the new one.
func TestGoneMessageIsReposted(t *testing.T) {
	w := newWorld(t)
	d := w.dispatcher("d1", w.sink(slackToken))
	task := w.Enqueue(claims.EnqueueParams{MaxAttempts: 5})
	w.finish(w.claimTask(task.ID), "retry")
	w.drain(d)
	w.fake.FailNext("chat.update", "message_not_found")
	w.finish(w.claimTask(task.ID), "retry")
	w.drain(d)
	w.finish(w.claimTask(task.ID), "succeed")
	w.drain(d)

	msgs := w.messagesFor("ops", task.ID)
	if len(msgs) != 2 || msgs[0].Updates != 0 || msgs[1].Updates != 1 || !strings.Contains(msgs[1].Text, "succeeded") {
		t.Fatalf("messages = %+v, want the lost one and its replacement, updated to success", msgs)
	}
}

// A delivery that reposted a gone message and then lost its claim before
// marking the event delivered is delivered again as done: the repost is
// this very event's, not a message to update, whose update under the
// event's key would be asked with another ref (a key reused, the event
// given up although delivered).
func TestARepostDeliveredAgainIsDone(t *testing.T) {
	w := newWorld(t)
	ctx := context.Background()
	task := w.Enqueue(claims.EnqueueParams{MaxAttempts: 5})
	w.finish(w.claimTask(task.ID), "retry")
	w.drain(w.dispatcher("d1", w.sink(slackToken)))
	w.fake.FailNext("chat.update", "message_not_found")
	w.finish(w.claimTask(task.ID), "retry")
	claimed, err := w.box.Claim(ctx, "doomed", 10, lease)
	if err != nil || len(claimed) != 1 {
		t.Fatalf("claimed %d events, %v", len(claimed), err)
	}
	d := notify.NewDeliverer(w.Ledger, w.sink(slackToken))
	for i := range 2 { // the second as after the claim was lost, before the mark
		if _, err := d.Deliver(ctx, claimed[0]); err != nil {
			t.Fatalf("delivery %d: %v", i+1, err)
		}
	}
	if n := w.fake.Calls("chat.postMessage"); n != 2 {
		t.Errorf("%d posts, want 2: the first and its replacement", n)
	}
}

// The token never shows in logs, event errors or the ledger of a failing
// run, even when Slack echoes it back.
func TestTokenNeverShows(t *testing.T) {
	w := newWorld(t)
	task := w.run("retry", "succeed")
	w.fake.Inject("chat.postMessage", slackfake.Fault{Error: "invalid_auth", EchoAuth: true})
	w.drain(w.dispatcher("d1", w.sink(slackToken)))
	w.Advance(time.Minute) // past the retry's backoff
	bad := w.sink("xoxb-9999-wrong-t0k3n")
	w.drain(w.dispatcher("d2", bad))

	es := w.events(task.ID)
	if es[0].State != outbox.StateFailed || !strings.Contains(es[0].LastError, "invalid_auth") {
		t.Fatalf("event = %s %q, want failed with invalid_auth", es[0].State, es[0].LastError)
	}
	var rows string
	if err := w.DB.QueryRow(context.Background(), `SELECT string_agg(o::text, E'\n') FROM outbox o`).Scan(&rows); err != nil {
		t.Fatal(err)
	}
	for what, text := range map[string]string{"logs": w.logs.String(), "outbox": rows, "ledger": w.LedgerText()} {
		for _, tok := range []string{slackToken, "xoxb-9999-wrong-t0k3n"} {
			if strings.Contains(text, tok) {
				t.Errorf("the token shows in the %s:\n%s", what, text)
			}
		}
	}
	if !strings.Contains(w.logs.String(), "invalid_auth") {
		t.Error("the logs do not say why delivery failed")
	}
}
