package client_test

import (
	"context"
	"encoding/json"
	"errors"
	"testing"
	"time"

	"github.com/agentledger/agentledger"
	"github.com/agentledger/agentledger/claims"
	"github.com/agentledger/agentledger/client"
	"github.com/agentledger/agentledger/grants"
	"github.com/agentledger/agentledger/internal/test/testdaemon"
	"github.com/agentledger/agentledger/internal/test/testdb"
	"github.com/agentledger/agentledger/waits"
)

// A program sees its task wait for a signal and sends it, over HTTP; the
// task resumes with the payload. Over the database a signal nobody waits
// for is kept, and sent again is the same one.
func TestSignalsOverHTTPAndTheDatabase(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	url, addr, token := daemonWithAPI(t)
	db := testdb.Open(t, url)
	if err := grants.NewStore(db).Put(ctx, "acme", &grants.Grant{Kinds: []string{"steps"}, Tools: []string{waits.ToolSignal}}); err != nil {
		t.Fatal(err)
	}
	c := client.HTTP("http://"+addr, token, nil)
	task, err := c.Submit(ctx, client.Request{Kind: "steps",
		Payload: json.RawMessage(`{"steps":[{"tool":"wait_for_signal","args":{"signal":"payment.settled","key":"order-7","timeout":"1h"}}]}`)})
	if err != nil {
		t.Fatal(err)
	}
	var ws []waits.Wait
	for range 400 { // polling the daemon's work: nothing signals it
		if ws, err = c.Waits(ctx, client.WaitQuery{TaskID: task.ID}); err != nil || len(ws) > 0 {
			break
		}
		time.Sleep(25 * time.Millisecond)
	}
	if err != nil || len(ws) != 1 || ws[0].Kind != waits.KindSignal || ws[0].Key != "order-7" ||
		time.Until(ws[0].Deadline) < 50*time.Minute {
		t.Fatalf("the task's waits: %+v %v, want one for payment.settled order-7, an hour long", ws, err)
	}

	sig := client.Signal{Name: "payment.settled", Key: "order-7", Payload: json.RawMessage(`{"amount":1500}`), IdempotencyKey: "pay-7"}
	sent, err := c.Send(ctx, sig)
	if err != nil || sent.Duplicate || sent.Signal.State != "consumed" || sent.Signal.TaskID == nil || *sent.Signal.TaskID != task.ID {
		t.Fatalf("send: %+v %v, want it to wake task %d", sent, err, task.ID)
	}
	again, err := c.Send(ctx, sig)
	if err != nil || !again.Duplicate || again.Signal.ID != sent.Signal.ID {
		t.Fatalf("send again: %+v %v, want the duplicate of signal %d", again, err, sent.Signal.ID)
	}
	sig.Key = "order-8"
	if _, err := c.Send(ctx, sig); agentledger.KindOf(err).Code != agentledger.CodeIdempotencyKeyReused {
		t.Errorf("the key with another signal: %v, want idempotency_key_reused", err)
	}
	if _, err := c.Send(ctx, client.Signal{Name: "payment settled", Key: "order-7"}); !isInvalid(err, "name") {
		t.Errorf("a bad name over HTTP: %v, want invalid naming name", err)
	}
	done := testdaemon.WaitFinished(t, claims.New(db), task.ID)
	if done.State != agentledger.StateSucceeded {
		t.Fatalf("task %d %s: %s", done.ID, done.State, done.LastError)
	}

	local := client.Database(db, "acme")
	kept, err := local.Send(ctx, client.Signal{Name: "payment.settled", Key: "order-9", Retention: time.Hour})
	if err != nil || kept.Signal.State != "pending" || kept.Signal.SentBy != "operator" || kept.Signal.Tenant != "acme" {
		t.Fatalf("a signal nobody waits for: %+v %v, want pending, the operator's, acme's", kept, err)
	}
	if again, err := local.Send(ctx, client.Signal{Name: "payment.settled", Key: "order-9", Retention: time.Hour}); err != nil ||
		!again.Duplicate || again.Signal.ID != kept.Signal.ID {
		t.Errorf("the same signal again: %+v %v, want the duplicate of %d", again, err, kept.Signal.ID)
	}
	if _, err := local.Send(ctx, client.Signal{Name: "payment.settled", Key: "", Retention: time.Hour}); !isInvalid(err, "key") {
		t.Errorf("an empty key over the database: %v, want invalid naming key", err)
	}
	ws, err = local.Waits(ctx, client.WaitQuery{TaskID: task.ID, States: []string{waits.Done}})
	if err != nil || len(ws) != 1 || ws[0].SignalID == nil || *ws[0].SignalID != sent.Signal.ID {
		t.Errorf("the done wait over the database: %+v %v, want the one signal %d ended", ws, err, sent.Signal.ID)
	}
}

func isInvalid(err error, field string) bool {
	var ie *agentledger.InvalidError
	return errors.As(err, &ie) && ie.Field == field
}
