package daemon_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/agentledger/agentledger"
	"github.com/agentledger/agentledger/claims"
	"github.com/agentledger/agentledger/daemon"
	"github.com/agentledger/agentledger/internal/test/testdaemon"
	"github.com/agentledger/agentledger/internal/test/testdb"
	"github.com/agentledger/agentledger/registry"
	"github.com/agentledger/agentledger/tenants"
)

type refund struct {
	Order  int64  `json:"order"`
	Amount int64  `json:"amount"`
	Reason string `json:"reason"`
}

func (r *refund) Validate() error {
	if r.Amount <= 0 {
		return agentledger.Invalid("amount", "must be positive, not %d", r.Amount)
	}
	return nil
}

type refunded struct {
	Order  int64 `json:"order"`
	Amount int64 `json:"amount"`
}

// A typed kind: the API refuses a payload that does not fit its arguments
// with a 422 naming the field, runs one that does with the decoded
// arguments, and a payload that reached the queue some other way and does
// not decode fails the task for good, naming the field.
func TestTypedKind(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	d, url, ln := apiDaemon(t)
	got := make(chan refund, 1)
	if err := d.RegisterKind("refund", daemon.Kind(func(_ context.Context, _ *agentledger.Task, a refund) (refunded, error) {
		got <- a
		return refunded{Order: a.Order, Amount: a.Amount}, nil
	})); err != nil {
		t.Fatal(err)
	}
	testdaemon.Run(t, d)
	db := testdb.Open(t, url)
	post := submitter(t, db, ln)
	for _, c := range []struct{ body, field string }{
		{`{"kind":"refund","payload":{"order":7,"amount":"ten"}}`, "payload.amount"},
		{`{"kind":"refund","payload":{"order":7,"amount":10,"currency":"EUR"}}`, "payload.currency"},
		{`{"kind":"refund","payload":{"order":7,"amount":0}}`, "payload.amount"},
	} {
		if status, p := post("bad-"+c.field+c.body[40:44], c.body); status != 422 || p["field"] != c.field {
			t.Errorf("%s: %d %v, want 422 naming %s", c.body, status, p, c.field)
		}
	}
	// A kind another daemon serves and published: checked against its schema.
	other := daemon.Kind(func(context.Context, *agentledger.Task, refunded) (refunded, error) { return refunded{}, nil })
	if err := registry.New(db).PublishKinds(ctx, "elsewhere", map[string]json.RawMessage{"rebate": other.PayloadSchema()}); err != nil {
		t.Fatal(err)
	}
	if status, p := post("rebate-bad", `{"kind":"rebate","payload":{"order":"seven"}}`); status != 422 || p["field"] != "payload" {
		t.Errorf("a published kind's bad payload: %d %v, want 422", status, p)
	}
	status, p := post("good", `{"kind":"refund","payload":{"order":7,"amount":10,"reason":"damaged"}}`)
	if status != 201 {
		t.Fatalf("good payload: %d %v", status, p)
	}
	select {
	case a := <-got:
		if a != (refund{Order: 7, Amount: 10, Reason: "damaged"}) {
			t.Errorf("the handler got %+v", a)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("the typed kind did not run")
	}

	// The daemon published the payload's schema for agentctl and the other
	// daemons' APIs.
	if schema, ok, err := registry.New(db).KindSchema(ctx, "refund"); err != nil || !ok || !strings.Contains(string(schema), `"amount"`) {
		t.Errorf("published schema: %s %v %v", schema, ok, err)
	}

	// Straight into the queue, past the API: it fails when it runs.
	s := claims.New(db)
	r, err := s.Enqueue(ctx, claims.EnqueueParams{Kind: "refund", Payload: json.RawMessage(`{"order":"seven","amount":1}`)})
	if err != nil {
		t.Fatal(err)
	}
	task := testdaemon.WaitFinished(t, s, r.Task.ID)
	if task.State != agentledger.StateDead {
		t.Fatalf("the undecodable task is %s, want dead", task.State)
	}
	if !strings.Contains(task.LastError, "payload.order") || task.Attempt != 1 {
		t.Errorf("dead after attempt %d with %q, want one attempt naming payload.order", task.Attempt, task.LastError)
	}
}

// apiDaemon is a daemon on a fresh database, its API on a free port, its
// pool polling every 50ms, no cron or janitor; not yet run.
func apiDaemon(t *testing.T) (d *daemon.Daemon, url string, ln net.Listener) {
	t.Helper()
	url = testdb.URL(t)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	d = daemon.New(daemon.Config{
		Database:    daemon.Database{URL: url},
		API:         daemon.API{Listener: ln},
		Worker:      daemon.Worker{PollInterval: 50 * time.Millisecond},
		Maintenance: daemon.Maintenance{NoCron: true, NoJanitor: true},
		Logger:      quiet(),
		Stdout:      io.Discard,
	})
	return d, url, ln
}

// submitter is a tenant's POST /v1/tasks on the API at ln: its status and
// body.
func submitter(t *testing.T, db *pgxpool.Pool, ln net.Listener) func(key, body string) (int, map[string]any) {
	t.Helper()
	ts := tenants.NewStore(db)
	if _, err := ts.CreateTenant(context.Background(), "acme"); err != nil {
		t.Fatal(err)
	}
	_, token, err := ts.CreateToken(context.Background(), "acme", "test", 0)
	if err != nil {
		t.Fatal(err)
	}
	return func(key, body string) (int, map[string]any) {
		t.Helper()
		req, _ := http.NewRequest("POST", "http://"+ln.Addr().String()+"/v1/tasks", strings.NewReader(body))
		req.Header.Set("Authorization", "Bearer "+token)
		req.Header.Set("Idempotency-Key", key)
		req.Header.Set("Content-Type", "application/json")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var out map[string]any
		_ = json.NewDecoder(resp.Body).Decode(&out)
		return resp.StatusCode, out
	}
}

type order struct {
	ID     string `json:"id"`
	Amount int    `json:"amount"`
}

func (o *order) Validate() error {
	if o.Amount <= 0 {
		return agentledger.Invalid("amount", "must be positive, not %d", o.Amount)
	}
	return nil
}

// A kind whose payload type is a pointer validates as one of a value type
// does: at the door (a 422 naming the field) and when the task runs, and a
// null payload is an empty object there as it is for a value type, never a
// nil pointer for the handler.
func TestTypedKindPointerPayload(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	d, url, ln := apiDaemon(t)
	got := make(chan *order, 1)
	porder := daemon.Kind(func(_ context.Context, _ *agentledger.Task, o *order) (string, error) {
		got <- o
		return o.ID, nil
	})
	if err := d.RegisterKind("porder", porder); err != nil {
		t.Fatal(err)
	}
	for _, payload := range []string{`{"id":"h1","amount":0}`, `null`, ` null `, ``} {
		var ie *agentledger.InvalidError
		if err := porder.CheckPayload(json.RawMessage(payload)); !errors.As(err, &ie) || ie.Field != "payload.amount" {
			t.Errorf("CheckPayload(%q) = %v, want payload.amount refused", payload, err)
		}
	}
	testdaemon.Run(t, d)
	db := testdb.Open(t, url)
	post := submitter(t, db, ln)
	for i, body := range []string{`{"kind":"porder","payload":{"id":"h1","amount":0}}`, `{"kind":"porder","payload":null}`} {
		if status, p := post(fmt.Sprint("bad-", i), body); status != 422 || p["field"] != "payload.amount" {
			t.Errorf("%s: %d %v, want 422 naming payload.amount", body, status, p)
		}
	}
	// Straight into the queue, past the door: refused when it runs.
	s := claims.New(db)
	for _, payload := range []string{`{"id":"h1","amount":0}`, `null`} {
		r, err := s.Enqueue(ctx, claims.EnqueueParams{Kind: "porder", Payload: json.RawMessage(payload)})
		if err != nil {
			t.Fatal(err)
		}
		task := testdaemon.WaitFinished(t, s, r.Task.ID)
		if task.State != agentledger.StateDead || !strings.Contains(task.LastError, "payload.amount") {
			t.Errorf("payload %s: the task is %s with %q, want dead naming payload.amount", payload, task.State, task.LastError)
		}
	}
	select {
	case o := <-got:
		t.Fatalf("the handler ran with %+v", o)
	default:
	}
	if status, p := post("good", `{"kind":"porder","payload":{"id":"h2","amount":5}}`); status != 201 {
		t.Fatalf("good payload: %d %v", status, p)
	}
	select {
	case o := <-got:
		if o == nil || *o != (order{ID: "h2", Amount: 5}) {
			t.Errorf("the handler got %+v", o)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("the pointer kind did not run")
	}
}
