package outbox_test

import (
	"context"
	"errors"
	"testing"

	"github.com/agentledger/agentledger"
	"github.com/agentledger/agentledger/notify/outbox"
)

// Failed events are listed and requeued by task or all at once, oldest
// first: pending, due, their failures forgotten, claimed again in order.
// Other events are not touched; bad filters change nothing.
func TestRequeueFailed(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	a := e.retryTask(2)
	b := e.retryTask(1)
	ok := e.retryTask(1)
	for _, c := range e.claim("d", 10) {
		if c.TaskID == ok.ID {
			if err := e.box.Delivered(ctx, c, ""); err != nil {
				t.Fatal(err)
			}
			continue
		}
		if err := e.box.Failed(ctx, c, "slack: invalid_auth"); err != nil {
			t.Fatal(err)
		}
	}
	// a's second event was held behind its first; it is failed by the
	// next delivery (the ledger serves the first's failure again).
	for _, c := range e.claim("d", 10) {
		if err := e.box.Failed(ctx, c, "slack: invalid_auth"); err != nil {
			t.Fatal(err)
		}
	}

	for _, bad := range []outbox.FailedFilter{{}, {TaskID: a.ID, All: true}, {TaskID: -1}, {All: true, Limit: 5000}} {
		if _, err := e.box.FailedEvents(ctx, bad); !errors.Is(err, agentledger.ErrInvalid) {
			t.Errorf("%+v: %v, want invalid", bad, err)
		}
		if _, err := e.box.Requeue(ctx, bad); !errors.Is(err, agentledger.ErrInvalid) {
			t.Errorf("requeue %+v: %v, want invalid", bad, err)
		}
	}
	all, err := e.box.FailedEvents(ctx, outbox.FailedFilter{All: true})
	if err != nil || len(all) != 3 || all[0].TaskID != a.ID || all[1].TaskID != a.ID || all[2].TaskID != b.ID {
		t.Fatalf("failed events: %+v %v", all, err)
	}
	if got, err := e.box.FailedEvents(ctx, outbox.FailedFilter{All: true, Tenant: "other"}); err != nil || len(got) != 0 {
		t.Fatalf("another tenant's: %+v %v", got, err)
	}

	got, err := e.box.Requeue(ctx, outbox.FailedFilter{TaskID: a.ID})
	if err != nil || len(got) != 2 || got[0].ID != all[0].ID || got[1].ID != all[1].ID {
		t.Fatalf("requeue task a: %+v %v", got, err)
	}
	for _, ev := range e.events(a.ID) {
		if ev.State != outbox.StatePending || ev.Failures != 0 || ev.LastError != "" {
			t.Errorf("after requeue: %+v", ev)
		}
	}
	if again, err := e.box.Requeue(ctx, outbox.FailedFilter{TaskID: a.ID}); err != nil || len(again) != 0 {
		t.Fatalf("requeue again: %+v %v", again, err)
	}
	// Claimed again in order: a's first, then (once it is settled) its
	// second.
	claimed := e.claim("d2", 10)
	if len(claimed) != 1 || claimed[0].ID != all[0].ID {
		t.Fatalf("claimed %+v, want a's first event", claimed)
	}
	if n := len(e.events(ok.ID)); n != 1 || e.events(ok.ID)[0].State != outbox.StateDelivered {
		t.Fatalf("the delivered event was touched: %+v", e.events(ok.ID))
	}
	rest, err := e.box.Requeue(ctx, outbox.FailedFilter{All: true})
	if err != nil || len(rest) != 1 || rest[0].TaskID != b.ID {
		t.Fatalf("requeue all: %+v %v", rest, err)
	}
}

func (e *env) events(taskID int64) []outbox.Event {
	e.T.Helper()
	es, err := e.box.ForTask(context.Background(), "", taskID)
	if err != nil {
		e.T.Fatal(err)
	}
	return es
}
