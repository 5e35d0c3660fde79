package webhooks_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/agentledger/agentledger"
	"github.com/agentledger/agentledger/claims"
	"github.com/agentledger/agentledger/daemon"
	"github.com/agentledger/agentledger/internal/test/testdaemon"
	"github.com/agentledger/agentledger/internal/test/testdb"
	"github.com/agentledger/agentledger/waits"
	"github.com/agentledger/agentledger/webhooks"
)

const paySecret = "pay-secret-bm90IGEgc2VjcmV0"

// paySource is a payment provider's callbacks as signals of acme's.
func paySource() webhooks.Source {
	return webhooks.Source{Name: "pay", Type: webhooks.TypeHMAC, Secret: paySecret, Header: "X-Signature",
		DeliveryHeader: "X-Delivery", Tenant: "acme", Signal: &webhooks.SignalMap{NameFrom: "/type",
			KeyFrom: "/data/object/metadata/order_id", PayloadFrom: "/data/object", Retention: time.Hour}}
}

func payment(typ, orderID string) string {
	return fmt.Sprintf(`{"type":%q,"data":{"object":{"amount":1500,"metadata":{"order_id":%s}}}}`, typ, orderID)
}

func (e *env) pay(delivery, body string) answer {
	e.t.Helper()
	return e.post("pay", strings.NewReader(body), "X-Signature", mac(paySecret, body), "X-Delivery", delivery)
}

func (e *env) signals() int {
	e.t.Helper()
	var n int
	if err := e.db.QueryRow(context.Background(), "SELECT count(*) FROM signals").Scan(&n); err != nil {
		e.t.Fatal(err)
	}
	return n
}

// A signal source's delivery wakes the task waiting for the signal its
// body names, with the part of the body the source picks as the wait's
// result; the same delivery again, or its body under another id, is the
// same signal; a body that names no signal is refused and stores nothing.
func TestSignalSource(t *testing.T) {
	t.Parallel()
	e := newEnv(t, []webhooks.Source{paySource()}, nil)
	ctx := context.Background()
	r, err := claims.New(e.db).Enqueue(ctx, claims.EnqueueParams{Tenant: "acme", Kind: "steps"})
	if err != nil {
		t.Fatal(err)
	}
	ws := waits.NewStore(e.db)
	w, err := ws.Await(ctx, waits.Wait{TaskID: r.Task.ID, Generation: 1, Step: "wait_for_signal/0", Tenant: "acme",
		Kind: waits.KindSignal, Signal: "payment.settled", Key: "order-7"}, nil, time.Hour)
	if err != nil {
		t.Fatal(err)
	}

	body := payment("payment.settled", `"order-7"`)
	a := e.pay("evt_1", body)
	if a.status != http.StatusAccepted || a.json["state"] != "consumed" || a.taskID() != r.Task.ID {
		t.Fatalf("the delivery: %d %s, want 202 consumed by task %d", a.status, a.raw, r.Task.ID)
	}
	got, err := ws.Get(ctx, "acme", w.ID)
	if err != nil || got.State != waits.Done || !jsonEqual(t, got.Result, []byte(`{"amount":1500,"metadata":{"order_id":"order-7"}}`)) {
		t.Fatalf("the wait: %+v %v, want done with data.object", got, err)
	}
	sig, err := ws.SignalByKey(ctx, "acme", "hook:pay:evt_1")
	if err != nil || sig.SentBy != "webhook:pay" {
		t.Fatalf("the signal: %+v %v, want sent by webhook:pay under the delivery's key", sig, err)
	}
	for _, id := range []string{"evt_1", "evt_1_again"} {
		b := e.pay(id, body)
		if b.status != http.StatusOK || b.json["duplicate"] != true || b.json["signal_id"] != a.json["signal_id"] {
			t.Errorf("%s: %d %s, want the duplicate of signal %v", id, b.status, b.raw, a.json["signal_id"])
		}
	}
	e.wantProblem(e.pay("evt_1", payment("payment.settled", `"order-8"`)), http.StatusConflict, string(agentledger.CodeDeliveryConflict))

	// Nobody waits for order 9 (an integer key): kept.
	k := e.pay("evt_2", payment("payment.failed", `9`))
	if k.status != http.StatusAccepted || k.json["state"] != "pending" || k.json["task_id"] != nil {
		t.Fatalf("a signal nobody waits for: %d %s, want 202 pending", k.status, k.raw)
	}
	if kept, err := ws.SignalByKey(ctx, "acme", "hook:pay:evt_2"); err != nil || kept.Name != "payment.failed" || kept.Key != "9" ||
		kept.ExpiresAt.Sub(kept.SentAt).Round(time.Second) != time.Hour {
		t.Errorf("the kept signal: %+v %v, want payment.failed key 9 for an hour", kept, err)
	}

	// An integer past 64 bits is still its digits.
	big := e.pay("evt_3", payment("payment.failed", `123456789012345678901234567890`))
	if kept, err := ws.SignalByKey(ctx, "acme", "hook:pay:evt_3"); big.status != http.StatusAccepted || err != nil ||
		kept.Key != "123456789012345678901234567890" {
		t.Errorf("a key of 30 digits: %d %s, signal %+v %v", big.status, big.raw, kept, err)
	}

	for _, c := range []struct{ delivery, body, detail string }{
		{"bad_0", payment("payment.settled", `7.0`), "not an integer"},
		{"bad_1", `{"type":"payment.settled","data":{"object":{}}}`, "nothing at /data/object/metadata"},
		{"bad_2", payment("payment.settled", `{"id":7}`), "not a string or a number"},
		{"bad_3", payment("payment.settled", `7.5`), "not an integer"},
		{"bad_4", payment("payment settled", `"order-7"`), "name"},
		{"bad_5", payment("payment.settled", `""`), "key"},
		{"bad_6", `[1,2]`, "nothing at /type"},
		{"bad_7", `{"type":"payment.settled","type":"x","data":{"object":{"metadata":{"order_id":"order-7"}}}}`, `duplicate object key "type"`},
	} {
		a := e.pay(c.delivery, c.body)
		e.wantProblem(a, http.StatusUnprocessableEntity, string(agentledger.CodeInvalid))
		if d, _ := a.json["detail"].(string); !strings.Contains(d, c.detail) {
			t.Errorf("%s: %q, want it to say %q", c.delivery, d, c.detail)
		}
	}
	if inbox, _ := e.counts(); inbox != 3 || e.signals() != 3 {
		t.Errorf("%d inbox rows and %d signals, want 3 and 3: a refused delivery stores nothing", inbox, e.signals())
	}
}

// A sources file maps a source to signals; a mapping that cannot work is
// refused, naming the source and the field.
func TestLoadSignalSources(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	path := writeFile(t, dir, "sources.json", `[
  {"name": "pay", "type": "hmac", "secret": "`+paySecret+`", "header": "X-Signature", "delivery_header": "X-Delivery",
   "tenant": "acme", "signal": {"name_from": "/type", "key_from": "/data/object/metadata/order_id",
   "payload_from": "/data/object", "retention": "1h"}}
]`)
	got, err := webhooks.LoadSources(path)
	if err != nil {
		t.Fatal(err)
	}
	want := paySource()
	if len(got) != 1 || got[0].Signal == nil || *got[0].Signal != *want.Signal || got[0].Tenant != "acme" || got[0].Kind != "" {
		t.Fatalf("loaded %v, want %v", got, want)
	}
	for _, c := range []struct{ entry, field string }{
		{`"signal": {"name": "a", "name_from": "/type", "key_from": "/k"}`, "signal.name"},
		{`"signal": {"key_from": "/k"}`, "signal.name"},
		{`"signal": {"name": "has space", "key_from": "/k"}`, "signal.name"},
		{`"signal": {"name": "n"}`, "signal.key_from"},
		{`"signal": {"name": "n", "key_from": "k"}`, "signal.key_from"},
		{`"signal": {"name": "n", "key_from": "/k~2"}`, "signal.key_from"},
		{`"signal": {"name": "n", "key_from": "/k", "payload_from": "data"}`, "signal.payload_from"},
		{`"signal": {"name": "n", "key_from": "/k", "retention": "forever"}`, "signal.retention"},
		{`"signal": {"name": "n", "key_from": "/k", "retention": "9000h"}`, "signal.retention"},
		{`"kind": "pay_event", "signal": {"name": "n", "key_from": "/k"}`, "kind"},
		{`"payload": "body", "signal": {"name": "n", "key_from": "/k"}`, "payload"},
		{`"tenant": "a b", "signal": {"name": "n", "key_from": "/k"}`, "tenant"},
	} {
		p := writeFile(t, dir, "bad.json", `[{"name": "pay", "type": "hmac", "secret": "s", "header": "X-S", "delivery_header": "X-D", `+c.entry+`}]`)
		_, err := webhooks.LoadSources(p)
		var ie *agentledger.InvalidError
		if !errors.As(err, &ie) || ie.Field != c.field || !strings.Contains(err.Error(), `source 0 ("pay")`) {
			t.Errorf("%s: %v, want invalid naming source 0 and %s", c.entry, err, c.field)
		}
	}
}

// End to end: a daemon serves a signal source; a steps task waits for the
// payment of its order, holding no lease, and a signed delivery of the
// provider's callback resumes it with the body's object as the step's
// result; the same delivery twice is one signal.
func TestSignalDeliveryResumesItsTask(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	url := testdb.URL(t)
	dir := t.TempDir()
	hooks := writeFile(t, dir, "hooks.json", `[{"name": "pay", "type": "hmac", "secret": "`+paySecret+`",
		"header": "X-Signature", "delivery_header": "X-Delivery",
		"signal": {"name": "payment.settled", "key_from": "/data/object/metadata/order_id", "payload_from": "/data/object"}}]`)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	testdaemon.Run(t, daemon.New(daemon.Config{
		Database:    daemon.Database{URL: url},
		API:         daemon.API{Listener: ln, HooksFile: filepath.Clean(hooks)},
		Worker:      daemon.Worker{PollInterval: 50 * time.Millisecond},
		Maintenance: daemon.Maintenance{NoCron: true, NoJanitor: true},
		Stdout:      io.Discard,
		Logger:      slog.New(slog.DiscardHandler),
	}))
	db := testdb.Open(t, url)
	store := claims.New(db)
	r, err := store.Enqueue(ctx, claims.EnqueueParams{Kind: "steps", MaxAttempts: 1, Payload: json.RawMessage(
		`{"steps":[{"tool":"wait_for_signal","args":{"signal":"payment.settled","key":"order-7","timeout":"1h"}}]}`)})
	if err != nil {
		t.Fatal(err)
	}
	id := r.Task.ID
	var task *agentledger.Task
	for range 400 { // polling the daemon's work: nothing signals it
		if task, err = store.Get(ctx, "", id); err != nil || task.State == agentledger.StateWaiting {
			break
		}
		time.Sleep(25 * time.Millisecond)
	}
	if err != nil || task.State != agentledger.StateWaiting || task.Attempt != 0 {
		t.Fatalf("task %d: %+v %v, want it waiting, its attempt not spent", id, task, err)
	}

	e := &env{t: t, url: "http://" + ln.Addr().String(), db: db}
	body := payment("payment.intent.succeeded", `"order-7"`)
	a := e.pay("evt_91", body)
	if a.status != http.StatusAccepted || a.taskID() != id {
		t.Fatalf("the delivery: %d %s, want 202 waking task %d", a.status, a.raw, id)
	}
	if b := e.pay("evt_91", body); b.status != http.StatusOK || b.json["duplicate"] != true || b.json["signal_id"] != a.json["signal_id"] {
		t.Errorf("the redelivery: %d %s, want the duplicate", b.status, b.raw)
	}
	done := testdaemon.WaitFinished(t, store, id)
	var res struct {
		Steps []struct {
			Body json.RawMessage `json:"body"`
		} `json:"steps"`
	}
	if done.State != agentledger.StateSucceeded || json.Unmarshal(done.Result, &res) != nil || len(res.Steps) != 1 ||
		!jsonEqual(t, res.Steps[0].Body, []byte(`{"amount":1500,"metadata":{"order_id":"order-7"}}`)) {
		t.Fatalf("task %d %s (%s), result %s: want succeeded with the body's object as its step's result", id, done.State, done.LastError, done.Result)
	}
	if n := e.signals(); n != 1 {
		t.Errorf("%d signals, want 1", n)
	}
}
