package flow_test

import (
	"context"
	"testing"
	"time"

	"github.com/agentledger/agentledger/flow"
	"github.com/agentledger/agentledger/internal/test/testdb"
)

// Usage lists the targets booked, each with the limit in force and how
// long until its next call passes.
func TestUsage(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := testdb.New(t)
	s, l := flow.NewStore(db), flow.NewLimiter(db, nil)
	putLimit(t, s, "slack-channel:*", "1/min", 2)
	putLimit(t, s, "mcp:shop", "1/min", 1)
	take := func(target string) {
		t.Helper()
		if wait, err := l.Take(ctx, target); err != nil || wait != 0 {
			t.Fatalf("take %s: %v %v", target, wait, err)
		}
	}
	take("slack-channel:C1")
	take("slack-channel:C1") // the burst is spent: the next waits a minute
	take("slack-channel:C2")
	take("mcp:shop")

	uses, err := s.Usage(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(uses) != 3 {
		t.Fatalf("usage: %+v", uses)
	}
	shop, c1, c2 := uses[0], uses[1], uses[2]
	if c1.Target != "slack-channel:C1" || c1.Limit != "slack-channel:*" || c1.Wait < 50*time.Second || c1.Wait > time.Minute {
		t.Errorf("C1: %+v", c1)
	}
	if c2.Target != "slack-channel:C2" || c2.Limit != "slack-channel:*" || c2.Wait != 0 {
		t.Errorf("C2: %+v", c2)
	}
	if shop.Target != "mcp:shop" || shop.Limit != "mcp:shop" || shop.Wait < 50*time.Second || shop.Wait > time.Minute {
		t.Errorf("shop: %+v", shop)
	}

	// A target whose limit was removed is unpaced: no limit, no wait.
	if err := s.Delete(ctx, "slack-channel:*"); err != nil {
		t.Fatal(err)
	}
	uses, err = s.Usage(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if c1 := uses[1]; c1.Limit != "" || c1.Wait != 0 {
		t.Errorf("C1 without a limit: %+v", c1)
	}

	// A target whose limit now sets a concurrency alone is still under it:
	// no wait of a rate, but its limit named.
	if _, err := s.Put(ctx, flow.Limit{Target: "mcp:shop", Concurrency: 2}); err != nil {
		t.Fatal(err)
	}
	uses, err = s.Usage(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if shop := uses[0]; shop.Target != "mcp:shop" || shop.Limit != "mcp:shop" || shop.Wait != 0 || shop.Cap != 2 {
		t.Errorf("shop under a concurrency alone: %+v", shop)
	}
}

// A target limited by its concurrency shows the calls holding its slots,
// and how many it has: at the cap the next call waits, whatever its rate
// says.
func TestUsageCountsCallsInFlight(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := testdb.New(t)
	s, l := flow.NewStore(db), flow.NewLimiter(db, nil)
	if _, err := s.Put(ctx, flow.Limit{Target: "mcp:shop", Concurrency: 2}); err != nil {
		t.Fatal(err)
	}
	var passes []*flow.Pass
	for range 2 {
		p, err := l.Admit(ctx, "mcp:shop", time.Minute)
		if err != nil {
			t.Fatal(err)
		}
		passes = append(passes, p)
	}
	uses, err := s.Usage(ctx)
	if err != nil || len(uses) != 1 || uses[0].Target != "mcp:shop" || uses[0].InFlight != 2 || uses[0].Cap != 2 {
		t.Fatalf("two calls in flight under a cap of 2: %+v %v", uses, err)
	}
	passes[0].Succeeded()
	uses, err = s.Usage(ctx)
	if err != nil || len(uses) != 1 || uses[0].InFlight != 1 {
		t.Fatalf("one call ended: %+v %v", uses, err)
	}
	passes[1].Succeeded()
}
