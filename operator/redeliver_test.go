package operator_test

import (
	"context"
	"errors"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/agentledger/agentledger"
	"github.com/agentledger/agentledger/agentledgertest/slackfake"
	"github.com/agentledger/agentledger/claims"
	"github.com/agentledger/agentledger/internal/test/testenv"
	"github.com/agentledger/agentledger/notify"
	"github.com/agentledger/agentledger/notify/outbox"
	"github.com/agentledger/agentledger/notify/slack"
	"github.com/agentledger/agentledger/operator"
)

const (
	goodToken = "xoxb-1111-g00dt0k3n"
	badToken  = "xoxb-2222-wr0ngt0k3n"
)

// slackWorld is a database with rule "ops" and a fake Slack with channel
// "ops" accepting goodToken.
type slackWorld struct {
	*testenv.Env
	t    *testing.T
	fake *slackfake.Server
	box  *outbox.Store
}

func newSlackWorld(t *testing.T) *slackWorld {
	w := &slackWorld{Env: testenv.New(t), t: t, fake: slackfake.New(t, goodToken)}
	w.fake.AddChannel("ops")
	w.box = outbox.NewStore(w.DB) // on the real clock: retries come due
	if _, err := outbox.NewRules(w.DB).Put(context.Background(), outbox.Rule{Name: "ops", Channel: "ops", Events: outbox.Events}, false); err != nil {
		t.Fatal(err)
	}
	return w
}

// setChannel points rule "ops" at channel ch.
func (w *slackWorld) setChannel(ch string) {
	w.t.Helper()
	if _, err := outbox.NewRules(w.DB).Put(context.Background(), outbox.Rule{Name: "ops", Channel: ch, Events: outbox.Events}, true); err != nil {
		w.t.Fatal(err)
	}
}

// deliver runs a dispatcher with a new Slack sink on token: passes
// rounds of due events, or until none is due when passes is 0.
func (w *slackWorld) deliver(token string, passes int) {
	w.t.Helper()
	sink, err := slack.New(slack.Config{Token: token, APIURL: w.fake.APIURL(), HTTPClient: w.fake.Client(),
		PerChannelInterval: -1, WorkspaceRate: -1})
	if err != nil {
		w.t.Fatal(err)
	}
	d, err := outbox.NewDispatcher(w.box, notify.NewDeliverer(w.Ledger, sink), outbox.Config{Owner: "d",
		Backoff: agentledger.Backoff{Base: time.Millisecond, Max: time.Millisecond}})
	if err != nil {
		w.t.Fatal(err)
	}
	for i := 0; passes == 0 || i < passes; i++ {
		n, err := d.RunOnce(context.Background())
		if err != nil {
			w.t.Fatal(err)
		}
		if n == 0 && passes == 0 {
			return
		}
		time.Sleep(2 * time.Millisecond) // past the retries' backoff
	}
}

// task runs a task through outcomes ("retry", "succeed").
func (w *slackWorld) task(outcomes ...string) *agentledger.Task {
	w.t.Helper()
	ctx := context.Background()
	task := w.Enqueue(claims.EnqueueParams{MaxAttempts: 5})
	for _, o := range outcomes {
		got := w.Claim("worker")
		l := agentledger.Lease{TaskID: got.ID, Token: got.LeaseToken}
		var err error
		if o == "retry" {
			_, err = w.Claims.Fail(ctx, claims.Failure{Lease: l, Error: "downstream said 503"})
		} else {
			err = w.Claims.Succeed(ctx, l, []byte(`{}`))
		}
		if err != nil {
			w.t.Fatal(err)
		}
	}
	return task
}

// messages are the messages about task id in channel ops.
func (w *slackWorld) messages(id int64) []slackfake.Message {
	var out []slackfake.Message
	for _, m := range w.fake.Messages("ops") {
		if strings.Contains(m.Text, "Task "+strconv.FormatInt(id, 10)+" ") {
			out = append(out, m)
		}
	}
	return out
}

// A wrong token fails every notification; once it is fixed, redelivery
// sends them again under the same keys: one message per (task, rule), the
// one that had landed before the failure adopted rather than posted again.
// A preview changes nothing; bad input is refused.
func TestRedeliverAfterTheTokenIsFixed(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	w := newSlackWorld(t)
	svc := operator.New(w.DB)

	// Task b's post lands but its answer is lost; before it is looked up
	// the token is revoked (the look-up fails), as are task a's posts.
	b := w.task("succeed")
	w.fake.DropAfterApply("chat.postMessage")
	w.deliver(goodToken, 1)
	a := w.task("retry", "succeed")
	w.deliver(badToken, 0)
	for _, id := range []int64{a.ID, b.ID} {
		for _, e := range mustEvents(t, w.box, id) {
			if e.State != outbox.StateFailed || !strings.Contains(e.LastError, "invalid_auth") {
				t.Fatalf("task %d event %d: %s %q, want failed with invalid_auth", id, e.ID, e.State, e.LastError)
			}
		}
	}

	for _, bad := range []operator.RedeliverParams{{}, {TaskID: a.ID, All: true}, {All: true, Limit: 100_000}} {
		if _, err := svc.PreviewRedelivery(ctx, bad); !errors.Is(err, agentledger.ErrInvalid) {
			t.Errorf("preview %+v: %v, want invalid", bad, err)
		}
		if _, err := svc.Redeliver(ctx, bad); !errors.Is(err, agentledger.ErrInvalid) {
			t.Errorf("redeliver %+v: %v, want invalid", bad, err)
		}
	}
	if _, err := svc.PreviewRedelivery(ctx, operator.RedeliverParams{TaskID: 999}); !errors.Is(err, agentledger.ErrNotFound) {
		t.Errorf("unknown task: %v", err)
	}
	if _, err := svc.Redeliver(ctx, operator.RedeliverParams{TaskID: a.ID, Tenant: "other"}); !errors.Is(err, agentledger.ErrNotFound) {
		t.Errorf("another tenant's task: %v", err)
	}

	p, err := svc.PreviewRedelivery(ctx, operator.RedeliverParams{All: true})
	if err != nil || len(p.Notifications) != 3 || p.Reopened != 0 {
		t.Fatalf("preview: %+v %v", p, err)
	}
	want := []struct {
		task   int64
		action string
		look   bool
	}{{b.ID, notify.SendPost, true}, {a.ID, notify.SendPost, true}, {a.ID, notify.SendUpdate, false}}
	for i, n := range p.Notifications {
		if n.TaskID != want[i].task || n.Plan.Action != want[i].action || n.Plan.LookFirst != want[i].look ||
			n.State != outbox.StateFailed || !strings.Contains(n.LastError, "invalid_auth") {
			t.Errorf("preview %d: %+v, want task %d to %s (look first: %v)", i, n, want[i].task, want[i].action, want[i].look)
		}
	}
	if es := mustEvents(t, w.box, a.ID); es[0].State != outbox.StateFailed {
		t.Fatal("the preview changed an event")
	}

	r, err := svc.Redeliver(ctx, operator.RedeliverParams{All: true})
	if err != nil || len(r.Notifications) != 3 || r.Reopened != 1 || r.Notifications[0].State != outbox.StateFailed {
		t.Fatalf("redeliver: %+v %v", r, err)
	}
	w.deliver(goodToken, 0)
	for _, id := range []int64{a.ID, b.ID} {
		if msgs := w.messages(id); len(msgs) != 1 || !strings.Contains(msgs[0].Text, "succeeded") {
			t.Errorf("task %d: %d messages %+v, want one, ending on success", id, len(msgs), msgs)
		}
		for _, e := range mustEvents(t, w.box, id) {
			if e.State != outbox.StateDelivered {
				t.Errorf("task %d event %d is %s", id, e.ID, e.State)
			}
		}
	}
	if again, err := svc.Redeliver(ctx, operator.RedeliverParams{TaskID: a.ID}); err != nil || len(again.Notifications) != 0 {
		t.Fatalf("nothing left to redeliver: %+v %v", again, err)
	}
}

func mustEvents(t *testing.T, box *outbox.Store, id int64) []outbox.Event {
	t.Helper()
	es, err := box.ForTask(context.Background(), "", id)
	if err != nil || len(es) == 0 {
		t.Fatalf("events of task %d: %v %v", id, es, err)
	}
	return es
}

// A notification whose channel refused it goes, once its rule names
// another channel, to that one: nothing of its message stands in the old
// channel. One whose post may have landed (its answer lost) stays where it
// is, and is looked up there rather than posted in the new channel too.
func TestRedeliverMovesARefusedPostToTheRulesChannel(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	w := newSlackWorld(t)
	svc := operator.New(w.DB)
	w.fake.AddChannel("old")
	about := func(ch string, id int64) int {
		n := 0
		for _, m := range w.fake.Messages(ch) {
			if strings.Contains(m.Text, "Task "+strconv.FormatInt(id, 10)+" ") {
				n++
			}
		}
		return n
	}

	// Task b's post lands in "old" but its answer is lost, and the look-up
	// after it fails: its outcome is unknown.
	w.setChannel("old")
	b := w.task("succeed")
	w.fake.DropAfterApply("chat.postMessage")
	w.deliver(goodToken, 1)
	w.deliver(badToken, 0)
	// Task a's rule names a channel that does not exist: refused.
	w.setChannel("opz")
	a := w.task("succeed")
	w.deliver(goodToken, 0)
	for _, id := range []int64{a.ID, b.ID} {
		if es := mustEvents(t, w.box, id); es[0].State != outbox.StateFailed {
			t.Fatalf("task %d: %+v, want its event failed", id, es[0])
		}
	}
	w.setChannel("ops")

	p, err := svc.PreviewRedelivery(ctx, operator.RedeliverParams{All: true})
	if err != nil || len(p.Notifications) != 2 {
		t.Fatalf("preview: %+v %v", p, err)
	}
	for _, n := range p.Notifications {
		switch {
		case n.TaskID == b.ID && (n.Channel != "old" || n.Plan.MovedFrom != "" || !n.Plan.LookFirst):
			t.Errorf("task b, its post of unknown outcome: %+v, want it looked up in old", n)
		case n.TaskID == a.ID && (n.Channel != "ops" || n.Plan.MovedFrom != "opz" || n.Plan.Action != notify.SendPost ||
			!strings.Contains(n.Plan.String(), "the post failed in opz")):
			t.Errorf("task a, its post refused: %+v (%s), want it moved from opz to ops", n, n.Plan)
		}
	}
	if es := mustEvents(t, w.box, a.ID); es[0].Channel != "opz" {
		t.Fatal("the preview moved an event")
	}

	r, err := svc.Redeliver(ctx, operator.RedeliverParams{All: true})
	if err != nil || len(r.Notifications) != 2 || r.Reopened != 1 { // b's post is pending: nothing to reopen
		t.Fatalf("redeliver: %+v %v", r, err)
	}
	w.deliver(goodToken, 0)
	if got := [...]int{about("ops", a.ID), about("opz", a.ID), about("old", b.ID), about("ops", b.ID)}; got != [...]int{1, 0, 1, 0} {
		t.Fatalf("messages: a in ops %d, opz %d; b in old %d, ops %d; want a once in ops and b once in old", got[0], got[1], got[2], got[3])
	}
	for _, id := range []int64{a.ID, b.ID} {
		for _, e := range mustEvents(t, w.box, id) {
			if e.State != outbox.StateDelivered {
				t.Errorf("task %d event %d is %s", id, e.ID, e.State)
			}
		}
	}
	if es := mustEvents(t, w.box, a.ID); es[0].Channel != "ops" {
		t.Errorf("task a's event names %s, want ops", es[0].Channel)
	}
}

// A message with an event still to be delivered is not moved: that event
// may be posting it in the old channel as the redelivery commits.
func TestRedeliverMovesNoMessageStillBeingDelivered(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	w := newSlackWorld(t)
	svc := operator.New(w.DB)
	w.setChannel("opz")
	a := w.task("retry")
	w.deliver(goodToken, 0) // refused: opz does not exist
	w.Advance(time.Hour)
	got := w.Claim("worker")
	if err := w.Claims.Succeed(ctx, agentledger.Lease{TaskID: got.ID, Token: got.LeaseToken}, []byte(`{}`)); err != nil {
		t.Fatal(err)
	}
	w.setChannel("ops")
	es := mustEvents(t, w.box, a.ID)
	if len(es) != 2 || es[0].State != outbox.StateFailed || es[1].State != outbox.StatePending {
		t.Fatalf("events: %+v, want the refused one and one still to deliver", es)
	}
	p, err := svc.PreviewRedelivery(ctx, operator.RedeliverParams{TaskID: a.ID})
	if err != nil || len(p.Notifications) != 1 || p.Notifications[0].Plan.MovedFrom != "" || p.Notifications[0].Channel != "opz" {
		t.Fatalf("preview: %+v %v, want the refused event kept in opz", p, err)
	}
	r, err := svc.Redeliver(ctx, operator.RedeliverParams{TaskID: a.ID})
	if err != nil || len(r.Notifications) != 1 || r.Notifications[0].Plan.MovedFrom != "" {
		t.Fatalf("redeliver: %+v %v", r, err)
	}
	if es := mustEvents(t, w.box, a.ID); es[0].Channel != "opz" {
		t.Fatalf("the refused event was moved to %s", es[0].Channel)
	}
}
