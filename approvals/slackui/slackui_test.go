package slackui_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agentledger/agentledger"
	"github.com/agentledger/agentledger/approvals"
	"github.com/agentledger/agentledger/approvals/slackui"
	"github.com/agentledger/agentledger/ledger"
	"github.com/agentledger/agentledger/notify"
	"github.com/agentledger/agentledger/notify/console"
	"github.com/agentledger/agentledger/notify/outbox"
	"github.com/agentledger/agentledger/operator"
)

// A request told of many times, some at once, is posted once, with its
// call laid out and two buttons; a click of a listed approver decides
// it, and the message is edited in place: the decision shown, the
// buttons gone.
func TestPostedOnceThenEditedAfterTheClick(t *testing.T) {
	t.Parallel()
	w := newWorld(t, "U1", "U2")
	ctx := context.Background()
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			if err := slackui.Tell(ctx, w.db, w.req, "approvals"); err != nil {
				t.Error(err)
			}
		})
	}
	wg.Wait()
	if err := slackui.Tell(ctx, w.db, w.req, "approvals"); err != nil {
		t.Fatal(err)
	}
	if evs, err := outbox.NewStore(w.db).ForTask(ctx, "", w.req.TaskID); err != nil || len(evs) != 1 ||
		evs[0].Event != slackui.EventAsk || evs[0].Rule != slackui.Rule(w.req.ID) || evs[0].Channel != "approvals" {
		t.Fatalf("the outbox after 9 tellings: %+v, %v", evs, err)
	}
	w.dispatch()
	msgs := w.messages()
	if len(msgs) != 1 {
		t.Fatalf("%d messages posted, want 1\n%s", len(msgs), w.logs)
	}
	blocks := string(msgs[0].Blocks)
	for _, want := range []string{`"type":"actions"`, `"action_id":"approve"`, `"action_id":"deny"`,
		fmt.Sprintf(`"value":"%d"`, w.req.ID), "POST https://pay.example/refunds", `\"amount\": 4200`, "U1, U2", "denied unless decided by"} {
		if !strings.Contains(blocks, want) {
			t.Errorf("the post lacks %s:\n%s", want, blocks)
		}
	}

	if code := w.send(w.click("U2", slackui.ActionApprove, w.req.ID), signingSecret, time.Now()); code != 200 {
		t.Fatalf("click: %d", code)
	}
	r := w.get()
	if r.State != approvals.Approved || r.DecidedBy != "U2" || r.DecidedVia != "slack" {
		t.Fatalf("after the click: %+v", r)
	}
	if got := w.reply.all(); len(got) != 1 || !strings.Contains(got[0], "You approved") {
		t.Errorf("the decider's answer: %q", got)
	}
	w.dispatch()
	msgs = w.messages()
	if len(msgs) != 1 || msgs[0].Updates != 1 {
		t.Fatalf("after the decision: %d messages (want 1, updated once): %+v", len(msgs), msgs)
	}
	blocks = string(msgs[0].Blocks)
	if strings.Contains(blocks, `"type":"actions"`) || !strings.Contains(blocks, "approved by U2 (slack) at ") {
		t.Errorf("the edited message:\n%s", blocks)
	}
	// The click wrote its edit: following decisions made elsewhere finds
	// nothing more to do, and nothing is edited twice.
	if n, err := slackui.Follow(ctx, w.db, slackui.FollowWindow); err != nil || n != 0 {
		t.Errorf("follow after a Slack decision: %d, %v", n, err)
	}
	if err := slackui.Tell(ctx, w.db, w.req, "approvals"); err != nil {
		t.Fatal(err)
	}
	w.dispatch()
	if msgs := w.messages(); len(msgs) != 1 || msgs[0].Updates != 1 {
		t.Errorf("after more telling: %+v", msgs)
	}
	if evs, err := outbox.NewStore(w.db).ForTask(ctx, "", w.req.TaskID); err != nil || len(evs) != 2 || evs[1].Event != slackui.EventDecided {
		t.Errorf("the outbox after the decision: %+v, %v", evs, err)
	}
}

// The same signed click delivered twice at once and then again decides
// once; the others are told what happened, and nothing changes.
func TestTheSameClickTwiceAndConcurrently(t *testing.T) {
	t.Parallel()
	w := newWorld(t, "U1")
	body := w.click("U1", slackui.ActionDeny, w.req.ID)
	now := time.Now()
	var wg sync.WaitGroup
	for range 2 {
		wg.Go(func() {
			if code := w.send(body, signingSecret, now); code != 200 {
				t.Errorf("click: %d", code)
			}
		})
	}
	wg.Wait()
	first := w.get()
	if code := w.send(body, signingSecret, now); code != 200 {
		t.Fatalf("replayed click: %d", code)
	}
	r := w.get()
	if r.State != approvals.Denied || r.DecidedBy != "U1" || *r.DecidedAt != *first.DecidedAt {
		t.Fatalf("after the clicks: %+v", r)
	}
	if w.outcome("decided") != 1 || w.outcome("already") != 2 {
		t.Errorf("outcomes: %v", w.outcomes)
	}
	already := 0
	for _, s := range w.reply.all() {
		if strings.Contains(s, "was already denied by U1 (slack)") && strings.Contains(s, "changed nothing") {
			already++
		}
	}
	if already != 2 {
		t.Errorf("answers: %q", w.reply.all())
	}
}

// A forged signature and a stale timestamp are refused (401) and decide
// nothing; a stale timestamp is refused before the body is read.
func TestForgedAndStaleAreRefused(t *testing.T) {
	t.Parallel()
	w := newWorld(t, "U1")
	body := w.click("U1", slackui.ActionApprove, w.req.ID)
	if code := w.send(body, "not-the-secret", time.Now()); code != 401 {
		t.Errorf("forged: %d, want 401", code)
	}
	if code := w.sendReader(body, strings.NewReader(body+"&x=1"), signingSecret, time.Now()); code != 401 {
		t.Errorf("a body other than the signed one: %d, want 401", code)
	}
	read := w.read.Load()
	if code := w.send(body, signingSecret, time.Now().Add(-6*time.Minute)); code != 401 {
		t.Errorf("stale: %d, want 401", code)
	}
	if code := w.send(body, signingSecret, time.Now().Add(6*time.Minute)); code != 401 {
		t.Errorf("from the future: %d, want 401", code)
	}
	if n := w.read.Load() - read; n != 0 {
		t.Errorf("%d bytes of the bodies of stale clicks read", n)
	}
	if r := w.get(); r.State != approvals.Pending {
		t.Errorf("decided by a refused click: %+v", r)
	}
	// Answered as the API answers: a problem with a code.
	resp, err := http.Post(w.srv.URL+slackui.Path, "application/x-www-form-urlencoded", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	got, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 401 || resp.Header.Get("Content-Type") != "application/problem+json" ||
		!strings.Contains(string(got), `"code":"bad_signature"`) {
		t.Errorf("unsigned: %d %s %s", resp.StatusCode, resp.Header.Get("Content-Type"), got)
	}
	if len(w.outcomes) != 0 || len(w.reply.all()) != 0 {
		t.Errorf("a refused click was acted on: %v %q", w.outcomes, w.reply.all())
	}
	if !strings.Contains(w.logs.String(), "timestamp outside the 5-minute window") {
		t.Errorf("the stale click is not logged:\n%s", w.logs)
	}
}

// Someone not among the approvers is told so, the attempt is logged,
// and nothing is decided; a member of a listed user group may decide.
func TestOnlyListedApproversDecide(t *testing.T) {
	t.Parallel()
	w := newWorld(t, "U1", "S0OPS")
	w.h.Groups = func(_ context.Context, g string) ([]string, error) {
		if g != "S0OPS" {
			return nil, fmt.Errorf("no group %s", g)
		}
		return []string{"U7"}, nil
	}
	if code := w.send(w.click("U666", slackui.ActionApprove, w.req.ID), signingSecret, time.Now()); code != 200 {
		t.Fatalf("click: %d", code)
	}
	if r := w.get(); r.State != approvals.Pending {
		t.Fatalf("decided by someone not listed: %+v", r)
	}
	if got := w.reply.all(); len(got) != 1 || !strings.Contains(got[0], "You are not among the approvers") {
		t.Errorf("answer: %q", got)
	}
	if !strings.Contains(w.logs.String(), "not among the approvers") || !strings.Contains(w.logs.String(), "user=U666") {
		t.Errorf("the attempt is not logged:\n%s", w.logs)
	}
	if code := w.send(w.click("U7", slackui.ActionApprove, w.req.ID), signingSecret, time.Now()); code != 200 {
		t.Fatalf("click: %d", code)
	}
	if r := w.get(); r.State != approvals.Approved || r.DecidedBy != "U7" {
		t.Fatalf("a member of a listed group: %+v", r)
	}
}

// A hundred listed approvers clicking at once, half approving, half
// denying: one decision, the 99 others told it.
func TestHundredConcurrentClicks(t *testing.T) {
	t.Parallel()
	users := make([]string, 100)
	for i := range users {
		users[i] = fmt.Sprintf("U%03d", i)
	}
	w := newWorld(t, users...)
	now := time.Now()
	start := make(chan struct{})
	var wg sync.WaitGroup
	for i, u := range users {
		action := slackui.ActionApprove
		if i%2 == 1 {
			action = slackui.ActionDeny
		}
		body := w.click(u, action, w.req.ID)
		wg.Go(func() {
			<-start
			if code := w.send(body, signingSecret, now); code != 200 {
				t.Errorf("click: %d", code)
			}
		})
	}
	close(start)
	wg.Wait()
	r := w.get()
	if r.State == approvals.Pending || w.outcome("decided") != 1 || w.outcome("already") != 99 {
		t.Fatalf("request %+v; outcomes %v", r, w.outcomes)
	}
	want := fmt.Sprintf("was already %s by %s (slack)", r.State, r.DecidedBy)
	told := 0
	for _, s := range w.reply.all() {
		if strings.Contains(s, want) {
			told++
		}
	}
	if told != 99 {
		t.Errorf("%d of the 99 told %q", told, want)
	}
}

// A decision made elsewhere (the console) and a cancel (the request
// withdrawn) edit the posted message too, once; a click after it is
// told what happened.
func TestDecisionsElsewhereEditTheMessage(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	for _, how := range []string{"console", "cancel"} {
		t.Run(how, func(t *testing.T) {
			w := newWorld(t, "U1")
			if err := slackui.Tell(ctx, w.db, w.req, "approvals"); err != nil {
				t.Fatal(err)
			}
			w.dispatch()
			switch how {
			case "console":
				if _, won, err := approvals.NewStore(w.db).Decide(ctx, approvals.Decision{ID: w.req.ID, Approve: true, By: "alice", Via: "console", Reason: "checked"}); err != nil || !won {
					t.Fatal(won, err)
				}
			case "cancel":
				if _, err := operator.New(w.db).Cancel(ctx, "", w.req.TaskID); err != nil {
					t.Fatal(err)
				}
			}
			for range 2 {
				if _, err := slackui.Follow(ctx, w.db, slackui.FollowWindow); err != nil {
					t.Fatal(err)
				}
			}
			w.dispatch()
			msgs := w.messages()
			if len(msgs) != 1 || msgs[0].Updates != 1 {
				t.Fatalf("%d messages (want 1, updated once): %+v\n%s", len(msgs), msgs, w.logs)
			}
			want := map[string]string{"console": "approved by alice (console) at ", "cancel": "withdrawn by operator (cancel)"}[how]
			if b := string(msgs[0].Blocks); !strings.Contains(b, want) || strings.Contains(b, `"type":"actions"`) {
				t.Errorf("edited message lacks %q or keeps its buttons:\n%s", want, b)
			}
			if code := w.send(w.click("U1", slackui.ActionDeny, w.req.ID), signingSecret, time.Now()); code != 200 {
				t.Fatal(code)
			}
			if r := w.get(); r.DecidedBy == "U1" {
				t.Errorf("a click after the decision changed it: %+v", r)
			}
			if got := w.reply.all(); len(got) != 1 || !strings.Contains(got[0], "was already") {
				t.Errorf("answer: %q", got)
			}
		})
	}
}

// Without a Slack token the console sink prints the request as Slack
// would show it, buttons drawn, with when it times out and what that means.
func TestConsoleShowsTheRequest(t *testing.T) {
	t.Parallel()
	w := newWorld(t, "U1")
	ctx := context.Background()
	var out bytes.Buffer
	sink, err := console.New(&out, filepath.Join(t.TempDir(), "notifications.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	l := ledger.New(w.db)
	disp, err := outbox.NewDispatcher(outbox.NewStore(w.db), &slackui.Deliverer{Store: approvals.NewStore(w.db), Ledger: l, Sink: sink,
		Next: notify.NewDeliverer(l, sink)}, outbox.Config{Owner: "test"})
	if err != nil {
		t.Fatal(err)
	}
	if err := slackui.Tell(ctx, w.db, w.req, "approvals"); err != nil {
		t.Fatal(err)
	}
	if _, err := disp.RunOnce(ctx); err != nil {
		t.Fatal(err)
	}
	got := out.String()
	for _, want := range []string{fmt.Sprintf("Approval %d: http_request POST https://pay.example/refunds", w.req.ID), "[ Approve ]  [ Deny ]", `"amount": 4200`,
		"expires=", "denied unless decided by then"} {
		if !strings.Contains(got, want) {
			t.Errorf("the console lacks %q:\n%s", want, got)
		}
	}
	if testing.Verbose() {
		os.Stdout.WriteString(got)
	}
}

// Once the approved effect's outcome is final, the post is edited a last
// time to say what it did — after the decision's edit, even when the
// outcome is told before Follow saw the decision — and telling twice (a
// replay, a retried attempt) edits nothing more.
func TestTheOutcomeEditsTheMessageLast(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	w := newWorld(t, "U1")
	if err := slackui.Tell(ctx, w.db, w.req, "approvals"); err != nil {
		t.Fatal(err)
	}
	w.dispatch()
	r, won, err := approvals.NewStore(w.db).Decide(ctx, approvals.Decision{ID: w.req.ID, Approve: true, By: "alice", Via: "agentctl"})
	if err != nil || !won {
		t.Fatal(won, err)
	}
	done := slackui.Outcome(ledger.Result{Status: 201, ExternalRef: "re_77"}, nil, time.Now())
	for range 2 {
		if err := slackui.TellOutcome(ctx, w.db, r, done); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := slackui.Follow(ctx, w.db, slackui.FollowWindow); err != nil {
		t.Fatal(err)
	}
	w.dispatch()
	msgs := w.messages()
	if len(msgs) != 1 || msgs[0].Updates != 2 {
		t.Fatalf("%d messages (want 1, updated twice: the decision, the outcome): %+v", len(msgs), msgs)
	}
	b := string(msgs[0].Blocks)
	for _, want := range []string{"approved by alice (agentctl)", "performed at ", "HTTP 201, ref re_77"} {
		if !strings.Contains(b, want) {
			t.Errorf("the last edit lacks %q:\n%s", want, b)
		}
	}
	evs, err := outbox.NewStore(w.db).ForTask(ctx, "", w.req.TaskID)
	if err != nil || len(evs) != 3 || evs[1].Event != slackui.EventDecided || evs[2].Event != slackui.EventOutcome {
		t.Fatalf("events %+v, %v: want the post, the decision's edit, the outcome's edit", evs, err)
	}
}

// A gate that names its channel is asked there.
func TestAGateAsksInItsOwnChannel(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	w.fake.AddChannel("payments-approvals")
	if err := slackui.Tell(context.Background(), w.db, w.req, "payments-approvals"); err != nil {
		t.Fatal(err)
	}
	w.dispatch()
	if got, other := w.fake.Messages("payments-approvals"), w.messages(); len(got) != 1 || len(other) != 0 {
		t.Fatalf("%d messages in the gate's channel, %d in approvals; want 1 and 0", len(got), len(other))
	}
}

func TestOutcomeLines(t *testing.T) {
	t.Parallel()
	at := time.Date(2026, 12, 5, 3, 4, 6, 0, time.UTC)
	for _, c := range []struct {
		res  ledger.Result
		err  error
		want string
	}{
		{ledger.Result{Status: 201, ExternalRef: "re_1"}, nil, "performed at 2026-12-05 03:04:06 UTC: HTTP 201, ref re_1"},
		{ledger.Result{}, nil, "performed at 2026-12-05 03:04:06 UTC"},
		{ledger.Result{}, agentledger.Permanent(errors.New("HTTP 422: card declined")), "failed at 2026-12-05 03:04:06 UTC: HTTP 422: card declined"},
		{ledger.Result{}, fmt.Errorf("timeout: %w", agentledger.ErrNeedsAttention), "outcome unknown at 2026-12-05 03:04:06 UTC, an operator resolves it"},
	} {
		if got := slackui.Outcome(c.res, c.err, at); !strings.HasPrefix(got, c.want) {
			t.Errorf("Outcome(%+v, %v) = %q, want %q…", c.res, c.err, got, c.want)
		}
	}
}
