package flow_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/agentledger/agentledger"
	"github.com/agentledger/agentledger/flow"
	"github.com/agentledger/agentledger/internal/test/testdb"
)

func TestStore(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s := flow.NewStore(testdb.New(t))

	got, err := s.Put(ctx, flow.Limit{Target: "http:https://Billing.internal:8080", Rate: flow.Rate{N: 60, Per: time.Minute}})
	if err != nil {
		t.Fatal(err)
	}
	if got.Target != "http:https://billing.internal:8080" || got.Burst != 1 || got.Source != flow.SourceOperator || got.UpdatedAt.IsZero() {
		t.Errorf("put: %+v", got)
	}
	if _, err := s.Put(ctx, flow.Limit{Target: "slack-channel:*", Rate: flow.Rate{N: 1, Per: time.Second}, Burst: 3, Source: flow.SourceConfig}); err != nil {
		t.Fatal(err)
	}
	// Replacing keeps one row.
	if _, err := s.Put(ctx, flow.Limit{Target: "http:https://billing.internal:8080", Rate: flow.Rate{N: 2, Per: time.Second}}); err != nil {
		t.Fatal(err)
	}
	ls, err := s.List(ctx)
	if err != nil || len(ls) != 2 {
		t.Fatalf("list: %v %v", ls, err)
	}
	if ls[0].Target != "http:https://billing.internal:8080" || ls[0].Rate.String() != "2/s" ||
		ls[1].Target != "slack-channel:*" || ls[1].Burst != 3 || ls[1].Source != flow.SourceConfig {
		t.Errorf("list: %+v", ls)
	}
	if l, err := s.Get(ctx, "slack-channel:*"); err != nil || l.Rate.String() != "1/s" {
		t.Errorf("get: %+v %v", l, err)
	}

	// Bad input names its field and changes nothing.
	for _, c := range []struct {
		l     flow.Limit
		field string
	}{
		{flow.Limit{Target: "smtp:x", Rate: flow.Rate{N: 1, Per: time.Second}}, "target"},
		{flow.Limit{Target: "mcp:shop", Rate: flow.Rate{N: 0, Per: time.Second}}, "rate"},
		{flow.Limit{Target: "mcp:shop", Rate: flow.Rate{N: -3, Per: time.Minute}}, "rate"},
		{flow.Limit{Target: "mcp:shop", Rate: flow.Rate{N: 1}}, "rate"},
		{flow.Limit{Target: "mcp:shop", Rate: flow.Rate{N: 1, Per: time.Second}, Burst: -1}, "burst"},
		{flow.Limit{Target: "mcp:shop"}, "rate"},
		{flow.Limit{Target: "mcp:shop", Burst: 3, Concurrency: 2}, "burst"},
		{flow.Limit{Target: "mcp:shop", Concurrency: -1}, "concurrency"},
		{flow.Limit{Target: "mcp:shop", Tokens: flow.Rate{N: 1000, Per: time.Minute}}, "tokens"},
		{flow.Limit{Target: "model:api.example.com", Tokens: flow.Rate{N: -1, Per: time.Minute}}, "tokens"},
		{flow.Limit{Target: "mcp:shop", Breaker: &flow.Breaker{Failures: 0, Window: time.Second, Cooldown: time.Second}}, "breaker"},
		{flow.Limit{Target: "mcp:shop", Breaker: &flow.Breaker{Failures: 3, Cooldown: time.Second}}, "breaker"},
		{flow.Limit{Target: "slack-channel:C1", Breaker: &flow.Breaker{Failures: 3, Window: time.Second, Cooldown: time.Second}}, "breaker"},
		{flow.Limit{Target: "slack-workspace", Concurrency: 2}, "concurrency"},
		// A channel by its name: the sink paces by ID, so it would never apply.
		{flow.Limit{Target: "slack-channel:#ops", Rate: flow.Rate{N: 1, Per: time.Minute}}, "target"},
		{flow.Limit{Target: "slack-channel:ops", Rate: flow.Rate{N: 1, Per: time.Minute}}, "target"},
		{flow.Limit{Target: "slack-channel:c0123abcd", Rate: flow.Rate{N: 1, Per: time.Minute}}, "target"},
	} {
		_, err := s.Put(ctx, c.l)
		var ie *agentledger.InvalidError
		if !errors.As(err, &ie) || ie.Field != c.field {
			t.Errorf("put %+v: %v, want an error naming %s", c.l, err, c.field)
		}
	}
	if ls, _ := s.List(ctx); len(ls) != 2 {
		t.Errorf("bad input stored something: %+v", ls)
	}

	if err := s.Delete(ctx, "slack-channel:*"); err != nil {
		t.Fatal(err)
	}
	if err := s.Delete(ctx, "slack-channel:*"); !errors.Is(err, agentledger.ErrNotFound) {
		t.Errorf("delete of an unknown limit: %v", err)
	}
	if _, err := s.Get(ctx, "mcp:shop"); !errors.Is(err, agentledger.ErrNotFound) {
		t.Errorf("get of an unknown limit: %v", err)
	}
}

// A change of the limits is announced on Channel in its transaction: set,
// a default stored, and removed; a default not stored announces nothing.
// Every part of a limit is optional but one, and stored as given.
func TestStorePartsOfALimit(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s := flow.NewStore(testdb.New(t))
	want := []flow.Limit{
		{Target: "http:https://billing.internal:8080", Concurrency: 5,
			Breaker: &flow.Breaker{Failures: 5, Window: time.Minute, Cooldown: 20 * time.Second}},
		{Target: "model:api.example.com", Rate: flow.Rate{N: 60, Per: time.Minute}, Burst: 1,
			Tokens: flow.Rate{N: 90_000, Per: time.Minute}},
	}
	for _, l := range want {
		if _, err := s.Put(ctx, l); err != nil {
			t.Fatal(err)
		}
	}
	got, err := s.List(ctx)
	if err != nil || len(got) != 2 {
		t.Fatalf("list: %+v %v", got, err)
	}
	for i := range want {
		g, w := got[i], want[i]
		if g.Target != w.Target || g.Rate != w.Rate || g.Burst != w.Burst || g.Concurrency != w.Concurrency ||
			g.Tokens != w.Tokens || (g.Breaker == nil) != (w.Breaker == nil) || (g.Breaker != nil && *g.Breaker != *w.Breaker) {
			t.Errorf("stored %+v, read back %+v", w, g)
		}
	}
}

func TestChangesAreAnnounced(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := testdb.New(t)
	conn, err := db.Acquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Release()
	if _, err := conn.Exec(ctx, "LISTEN "+flow.Channel); err != nil {
		t.Fatal(err)
	}
	next := func() string {
		wctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		defer cancel()
		n, err := conn.Conn().WaitForNotification(wctx)
		if err != nil {
			t.Fatalf("no notification: %v", err)
		}
		return n.Payload
	}
	s := flow.NewStore(db)
	if _, err := s.Put(ctx, flow.Limit{Target: "mcp:shop", Rate: flow.Rate{N: 5, Per: time.Second}, Burst: 1}); err != nil {
		t.Fatal(err)
	}
	if got := next(); got != "mcp:shop" {
		t.Fatalf("after Put: %q", got)
	}
	if stored, err := s.PutDefault(ctx, flow.Limit{Target: "mcp:shop", Rate: flow.Rate{N: 1, Per: time.Second}, Burst: 1}); err != nil || stored {
		t.Fatalf("a default over a set limit: stored %v, %v", stored, err)
	}
	if stored, err := s.PutDefault(ctx, flow.Limit{Target: "mcp:*", Rate: flow.Rate{N: 1, Per: time.Second}, Burst: 1}); err != nil || !stored {
		t.Fatalf("a default: stored %v, %v", stored, err)
	}
	if got := next(); got != "mcp:*" { // the refused default announced nothing
		t.Fatalf("after PutDefault: %q", got)
	}
	if err := s.Delete(ctx, "mcp:shop"); err != nil {
		t.Fatal(err)
	}
	if got := next(); got != "mcp:shop" {
		t.Fatalf("after Delete: %q", got)
	}
	if err := s.Delete(ctx, "mcp:shop"); !errors.Is(err, agentledger.ErrNotFound) {
		t.Fatalf("deleting again: %v", err)
	}
}
