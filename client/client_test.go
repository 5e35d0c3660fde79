package client_test

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"net"
	"strings"
	"testing"

	"github.com/agentledger/agentledger"
	"github.com/agentledger/agentledger/client"
	"github.com/agentledger/agentledger/daemon"
	"github.com/agentledger/agentledger/internal/test/testdaemon"
	"github.com/agentledger/agentledger/internal/test/testdb"
	"github.com/agentledger/agentledger/tenants"
)

type refund struct {
	Order  int64 `json:"order"`
	Amount int64 `json:"amount"`
}

func (r *refund) Validate() error {
	if r.Amount <= 0 {
		return agentledger.Invalid("amount", "must be positive")
	}
	return nil
}

// daemonWithAPI runs a daemon serving the typed kind refund and returns
// its address and a token of tenant acme.
func daemonWithAPI(t *testing.T) (url, addr, token string) {
	t.Helper()
	ctx := context.Background()
	url = testdb.URL(t)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	d := daemon.New(daemon.Config{
		Database:    daemon.Database{URL: url},
		API:         daemon.API{Listener: ln},
		Maintenance: daemon.Maintenance{NoCron: true, NoJanitor: true},
		Stdout:      io.Discard,
		Logger:      slog.New(slog.NewTextHandler(io.Discard, nil)),
	})
	if err := d.RegisterKind("refund", daemon.Kind(func(_ context.Context, _ *agentledger.Task, r refund) (refund, error) {
		return r, nil
	})); err != nil {
		t.Fatal(err)
	}
	testdaemon.Run(t, d)
	ts := tenants.NewStore(testdb.Open(t, url))
	if _, err = ts.CreateTenant(ctx, "acme"); err != nil {
		t.Fatal(err)
	}
	if _, token, err = ts.CreateToken(ctx, "acme", "test", 0); err != nil {
		t.Fatal(err)
	}
	return url, ln.Addr().String(), token
}

func TestSubmitOverHTTP(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	_, addr, token := daemonWithAPI(t)
	c := client.HTTP("http://"+addr, token, nil)

	first, err := client.Submit(ctx, c, "refund", refund{Order: 7, Amount: 10}, client.Options{Key: "refund-7"})
	if err != nil || first.Tenant != "acme" || first.Kind != "refund" || first.SubmissionKey != "refund-7" ||
		(first.Result != nil && first.State != agentledger.StateSucceeded) {
		t.Fatalf("submit: %+v %v (as Database returns it: its key, no result yet)", first, err)
	}
	again, err := client.Submit(ctx, c, "refund", refund{Order: 7, Amount: 10}, client.Options{Key: "refund-7"})
	if err != nil || again.ID != first.ID {
		t.Fatalf("the same submission again: %+v %v, want task %d", again, err, first.ID)
	}
	_, err = client.Submit(ctx, c, "refund", refund{Order: 7, Amount: 99}, client.Options{Key: "refund-7"})
	if agentledger.KindOf(err).Code != agentledger.CodeIdempotencyKeyReused {
		t.Errorf("the key with another request: %v, want idempotency_key_reused", err)
	}
	_, err = client.Submit(ctx, c, "refund", refund{Order: 8}, client.Options{})
	var ie *agentledger.InvalidError
	if !errors.As(err, &ie) || ie.Field != "payload.amount" || !errors.Is(err, agentledger.ErrInvalid) {
		t.Errorf("an invalid payload: %v, want an invalid input naming payload.amount", err)
	}
	_, err = client.HTTP("http://"+addr, "alt_nope", nil).Submit(ctx, client.Request{Kind: "refund"})
	if agentledger.KindOf(err).Code != agentledger.CodeUnauthorized {
		t.Errorf("a bad token: %v, want unauthorized", err)
	}
	// A kind no worker serves: the advice is the Go option, not the
	// request's JSON field.
	_, err = c.Submit(ctx, client.Request{Kind: "refnud"})
	if !errors.Is(err, agentledger.ErrInvalid) || !strings.Contains(err.Error(), "set client.Options.AllowUnserved") ||
		strings.Contains(err.Error(), "allow_unserved") {
		t.Errorf("an unserved kind: %v", err)
	}
}

func TestSubmitOverTheDatabase(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	c := client.Database(testdb.New(t), "acme")
	first, err := client.Submit(ctx, c, "refund", refund{Order: 7, Amount: 10}, client.Options{Key: "refund-7", Queue: "billing"})
	if err != nil || first.Queue != "billing" || first.Tenant != "acme" {
		t.Fatalf("submit: %+v %v", first, err)
	}
	again, err := client.Submit(ctx, c, "refund", refund{Order: 7, Amount: 10}, client.Options{Key: "refund-7", Queue: "billing"})
	if err != nil || again.ID != first.ID {
		t.Fatalf("the same submission again: %+v %v, want task %d", again, err, first.ID)
	}
	if _, err := client.Submit(ctx, c, "refund", refund{Order: 7, Amount: 99}, client.Options{Key: "refund-7", Queue: "billing"}); !errors.Is(err, agentledger.ErrKeyReuse) {
		t.Errorf("the key with another request: %v, want ErrKeyReuse", err)
	}
	if _, err := c.Submit(ctx, client.Request{Kind: "refund", Options: client.Options{Priority: 500}}); !errors.Is(err, agentledger.ErrInvalid) {
		t.Errorf("priority 500: %v, want invalid", err)
	}
}
