package tui

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/charmbracelet/x/exp/golden"

	"github.com/agentledger/agentledger"
	"github.com/agentledger/agentledger/notify"
	"github.com/agentledger/agentledger/notify/outbox"
	"github.com/agentledger/agentledger/operator"
)

// failed is a failed notification of task id for the fake store.
func failed(id, event int64, gen int32, rule, step, channel string, failures int32, why string, plan notify.Plan) operator.PlannedNotification {
	return operator.PlannedNotification{TaskID: id, Plan: plan, Notification: operator.Notification{ID: event, Generation: gen,
		Event: "dead", Rule: rule, Step: step, Channel: channel, State: outbox.StateFailed, Failures: failures, LastError: why}}
}

func called(s *fakeStore, call string) bool { return slices.Contains(s.callLog(), call) }

// N shows a task's failed notifications, each with its failure and what
// delivering it again sends; n changes nothing, y redelivers; a task
// without failed notifications says so, from the table and the task view.
func TestRedeliverNotifications(t *testing.T) {
	t.Parallel()
	store := newFakeStore(3, epoch)
	store.failed = map[int64][]operator.PlannedNotification{3: {
		failed(3, 7, 1, "ops", "", "ops", 1, "slack: invalid_auth", notify.Plan{Action: notify.SendPost, LookFirst: true}),
		failed(3, 8, 1, "ops", "", "ops", 2, "slack: invalid_auth", notify.Plan{Action: notify.SendUpdate}),
		failed(3, 9, 2, "", "tool/2", "billing", 3, "slack: channel_not_found\nfor good", notify.Plan{Action: notify.SendUpdate, Ref: "C42:1700.01"}),
		failed(3, 10, 2, "audit", "", "audit", 1, "slack: not_in_channel", notify.Plan{Action: notify.SendPost}),
	}}
	store.reopened = 3
	d := newDriver(t, store, Options{}, 100, 30)

	d.keys("N") // task 3, the newest
	for _, want := range []string{
		"Send the failed notifications of task 3 again?",
		"Task 3 has 4 failed notifications",
		"ID   GEN EVENT           RULE/STEP      CHANNEL    SENDS",
		"7    1   dead            ops            ops        look up first, then post",
		"          failed 1 time: slack: invalid_auth",
		"8    1   dead            ops            ops        update the message posted ju…",
		"9    2   dead            tool/2         billing    update C42:1700.01",
		"          failed 3 times: slack: channel_not_found for good",
		"10   2   dead            audit          audit      post",
		"one message per (task generation, rule)",
	} {
		wantStatus(t, d, want)
	}
	checkFrame(t, d.view(), 100, 30)
	d.keys("n")
	if d.app().dialog != nil || called(store, "redeliver 3") {
		t.Fatalf("n: dialog %v, calls %v", d.app().dialog != nil, store.callLog())
	}
	d.keys("N", "y")
	wantStatus(t, d, "task 3: 4 notifications sent again (3 ledger effects reopened)")
	if !called(store, "redeliver 3") {
		t.Errorf("y did not redeliver: %v", store.callLog())
	}

	d.keys("N") // nothing failed now
	wantStatus(t, d, "task 3 has no failed notification")
	if d.app().dialog != nil {
		t.Errorf("a dialog for no failed notification:\n%s", d.view())
	}

	// The task view: task 2.
	store.mu.Lock()
	store.failed[2] = []operator.PlannedNotification{failed(2, 4, 1, "ops", "", "ops", 1, "slack: invalid_auth", notify.Plan{Action: notify.SendPost})}
	store.mu.Unlock()
	d.keys("down", "enter", "N")
	wantStatus(t, d, "Task 2 has 1 failed notification,")
	d.keys("y")
	wantStatus(t, d, "task 2: 1 notification sent again (3 ledger effects reopened)")
	d.keys("N")
	wantStatus(t, d, "task 2 has no failed notification")
}

// The task view's short help offers the actions the task's state allows,
// within 100 columns.
func TestTaskHelpFits(t *testing.T) {
	t.Parallel()
	store := newFakeStore(7, epoch) // 5 is dead, 7 needs attention
	store.tasks = append(store.tasks, &agentledger.Task{ID: 8, Tenant: "acme", Queue: "default", Kind: "steps",
		State: agentledger.StateCompensated, Compensation: "failed", UpdatedAt: epoch},
		&agentledger.Task{ID: 9, Tenant: "acme", Queue: "default", Kind: "steps", State: agentledger.StateQueued, UpdatedAt: epoch})
	d := newDriver(t, store, Options{}, 100, 30)
	for _, tc := range []struct {
		keys      []string
		want, not []string
	}{
		{[]string{"enter"}, []string{"c cancel"}, []string{"r replay", "R re-run", "t retry", "u undo"}}, // 9, queued
		{[]string{"esc", "down", "enter"}, []string{"R re-run"}, []string{"r replay", "c cancel", "t retry", "u undo"}},
		// 7 and 5 recorded no effect that declared a compensation: no undo.
		{[]string{"esc", "down", "enter"}, []string{"r replay", "R re-run", "c cancel"}, []string{"t retry", "u undo"}},         // 7
		{[]string{"esc", "down", "down", "enter"}, []string{"r replay", "R re-run", "t retry"}, []string{"c cancel", "u undo"}}, // 5
	} {
		d.keys(tc.keys...)
		lines := strings.Split(d.view(), "\n")
		help := lines[len(lines)-1]
		for _, k := range append([]string{"tab tabs", "esc back", "? help"}, tc.want...) {
			if !strings.Contains(help, k) {
				t.Errorf("%s: the help line lacks %q: %q", lines[0], k, help)
			}
		}
		for _, k := range tc.not {
			if strings.Contains(help, k) {
				t.Errorf("%s: the help line offers %q: %q", lines[0], k, help)
			}
		}
	}
}

// failingSink refuses every post for good, as Slack does a revoked token.
type failingSink struct{}

func (failingSink) Post(context.Context, string, notify.Message) (string, error) {
	return "", agentledger.Permanent(errors.New("slack: invalid_auth"))
}

func (failingSink) Update(context.Context, string, notify.Message) error {
	return agentledger.Permanent(errors.New("slack: invalid_auth"))
}

func (failingSink) Find(context.Context, string, notify.Message, time.Time) (string, bool, error) {
	return "", false, agentledger.Permanent(errors.New("slack: invalid_auth"))
}

// failNotifications delivers every notification event of s to a sink
// that refuses them for good: the events of tasks 1, 2 and 4 fail.
func failNotifications(t *testing.T, s *seeded) {
	t.Helper()
	ctx := context.Background()
	box := *s.Outbox // past the events of the seed's pinned clock
	box.Now = func() time.Time { return time.Now().Add(time.Hour) }
	d, err := outbox.NewDispatcher(&box, notify.NewDeliverer(s.Ledger, failingSink{}), outbox.Config{Owner: "test", Concurrency: 1})
	if err != nil {
		t.Fatal(err)
	}
	for {
		n, err := d.RunOnce(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if n == 0 {
			break
		}
	}
	for _, id := range []int64{1, 2, 4} {
		for _, e := range events(t, s, id) {
			if e.State != outbox.StateFailed {
				t.Fatalf("task %d event %d is %s, want failed", id, e.ID, e.State)
			}
		}
	}
}

func events(t *testing.T, s *seeded, id int64) []outbox.Event {
	t.Helper()
	es, err := s.Outbox.ForTask(context.Background(), "", id)
	if err != nil {
		t.Fatal(err)
	}
	return es
}

// Against the database: the preview lists task 2's failed notification
// and changes nothing; confirmed, its event is pending again (due now,
// its failures forgotten) and its failed post reopened, while the other
// tasks' stay failed.
func TestRedeliverFromTheDatabase(t *testing.T) {
	t.Parallel()
	s := seedDB(t)
	failNotifications(t, s)
	d := newDriver(t, s, Options{}, 100, 30)
	d.keys("down", "down", "N") // task 2
	wantStatus(t, d, "Send the failed notifications of task 2 again?")
	wantStatus(t, d, "dead            ops            ops        look up first, then post")
	wantStatus(t, d, "failed 1 time: effect ")
	wantStatus(t, d, "invalid_auth")
	d.keys("n")
	if e := events(t, s, 2); len(e) != 1 || e[0].State != outbox.StateFailed {
		t.Fatalf("after the preview: %+v", e)
	}
	d.keys("N", "y")
	wantStatus(t, d, "task 2: 1 notification sent again (1 ledger effect reopened)")
	if e := events(t, s, 2); len(e) != 1 || e[0].State != outbox.StatePending || e[0].Failures != 0 {
		t.Errorf("task 2's event after the redelivery: %+v", e)
	}
	for _, id := range []int64{1, 4} {
		if e := events(t, s, id); len(e) != 1 || e[0].State != outbox.StateFailed {
			t.Errorf("task %d's event: %+v", id, e)
		}
	}
	d.keys("N")
	wantStatus(t, d, "task 2 has no failed notification")
	d.keys("down", "enter", "N") // task 1, from the task view
	wantStatus(t, d, "Send the failed notifications of task 1 again?")
}

// The dialog as the operator sees it.
func TestConsoleRedeliveryPreview(t *testing.T) {
	s := seedDB(t)
	failNotifications(t, s)
	tm := startConsole(t, s)
	waitFor(t, tm, "page 1 · 4 tasks", noLiveWorkers)
	press(tm, "down", "down", "N")
	waitFor(t, tm, "Send the failed notifications of task 2 again?", "one message per")
	golden.RequireEqual(t, []byte(finish(t, tm)))
}

// At 80 columns the notifications tab keeps why a delivery failed
// readable: GEN, FAIL and RULE/STEP give way first.
func TestNarrowNotificationsShowTheError(t *testing.T) {
	t.Parallel()
	store := newFakeStore(3, epoch)
	why := "slack: channel_not_found (C0123456789)"
	store.failed = map[int64][]operator.PlannedNotification{3: {
		failed(3, 7, 1, "billing-dead-letters", "", "C0123456789", 3, why, notify.Plan{Action: notify.SendPost}),
	}}
	d := newDriver(t, store, Options{}, 80, 24)
	d.keys("enter", "tab", "tab", "tab")
	v := d.view()
	checkFrame(t, v, 80, 24)
	if !strings.Contains(v, "[Notifications (1)]") {
		t.Fatalf("not on the notifications tab:\n%s", v)
	}
	for _, w := range strings.Fields(why) { // wrapped under its column
		if !strings.Contains(v, w) {
			t.Errorf("the notifications tab at 80 columns lacks %q of the error:\n%s", w, v)
		}
	}
}

// With no error to show, nothing gives way for one: GEN and FAIL stay at
// 80 columns.
func TestNarrowNotificationsWithoutErrorsKeepTheirColumns(t *testing.T) {
	t.Parallel()
	store := newFakeStore(3, epoch)
	store.failed = map[int64][]operator.PlannedNotification{3: {
		failed(3, 7, 1, "billing-dead-letters", "", "C0123456789", 0, "", notify.Plan{Action: notify.SendPost}),
	}}
	d := newDriver(t, store, Options{}, 80, 24)
	d.keys("enter", "tab", "tab", "tab")
	if v := d.view(); !strings.Contains(v, "ID GEN EVENT RULE/STEP") || !strings.Contains(v, " FAIL ") {
		t.Errorf("the notifications tab at 80 columns, no error shown, lost columns:\n%s", v)
	}
}
