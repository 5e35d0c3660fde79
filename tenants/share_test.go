package tenants_test

import (
	"context"
	"errors"
	"testing"

	"github.com/agentledger/agentledger"
	"github.com/agentledger/agentledger/internal/test/testdb"
	"github.com/agentledger/agentledger/tenants"
)

func ptr(n int) *int { return &n }

// Shares are stored, replaced, listed and removed; bad ones are refused
// naming the field, and an operator's share of an unknown tenant is not
// found; none of them changes what is stored.
func TestShares(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s := tenants.NewStore(testdb.New(t))
	if _, err := s.CreateTenant(ctx, "acme"); err != nil {
		t.Fatal(err)
	}
	op := func(tenant string, w int, max *int) tenants.Share {
		return tenants.Share{Tenant: tenant, Weight: w, MaxRunning: max, Source: tenants.SourceOperator}
	}
	got, err := s.PutShare(ctx, op("acme", 3, ptr(20)))
	if err != nil || got.Weight != 3 || got.MaxRunning == nil || *got.MaxRunning != 20 || got.UpdatedAt.IsZero() {
		t.Fatalf("PutShare = %+v, %v", got, err)
	}
	if got, err = s.PutShare(ctx, op("acme", 2, nil)); err != nil || got.Weight != 2 || got.MaxRunning != nil {
		t.Fatalf("PutShare again = %+v, %v, want weight 2 and no cap", got, err)
	}
	if _, err := s.PutShare(ctx, op(agentledger.OperatorTenant, 5, nil)); err != nil {
		t.Fatalf("the operator's tenant: %v", err)
	}
	cfg := tenants.Share{Tenant: "later", Weight: 1, MaxRunning: ptr(1), Source: tenants.SourceConfig}
	if _, err := s.PutShare(ctx, cfg); err != nil {
		t.Fatalf("a configured share of a tenant to come: %v", err)
	}

	for _, c := range []struct {
		share tenants.Share
		field string
	}{
		{op("acme", 0, nil), "weight"},
		{op("acme", -1, nil), "weight"},
		{op("acme", tenants.MaxWeight+1, nil), "weight"},
		{op("acme", 1, ptr(0)), "max_running"},
		{op("acme", 1, ptr(-3)), "max_running"},
		{op("has space", 1, nil), "tenant"},
		{tenants.Share{Tenant: "acme", Weight: 1, Source: "cli"}, "source"},
	} {
		_, err := s.PutShare(ctx, c.share)
		var ie *agentledger.InvalidError
		if !errors.As(err, &ie) || ie.Field != c.field {
			t.Errorf("PutShare(%+v) = %v, want an invalid %s", c.share, err, c.field)
		}
	}
	if _, err := s.PutShare(ctx, op("nosuch", 2, nil)); !errors.Is(err, agentledger.ErrNotFound) {
		t.Errorf("an unknown tenant: %v, want ErrNotFound", err)
	}

	list, err := s.Shares(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(list) != 3 || list[0].Tenant != "acme" || list[0].Weight != 2 || list[1].Tenant != agentledger.OperatorTenant ||
		list[2].Tenant != "later" || list[2].Source != tenants.SourceConfig {
		t.Fatalf("Shares = %+v", list)
	}
	if _, err := s.DeleteShare(ctx, "acme"); err != nil {
		t.Fatal(err)
	}
	if _, err := s.DeleteShare(ctx, "acme"); !errors.Is(err, agentledger.ErrNotFound) {
		t.Errorf("DeleteShare twice: %v, want ErrNotFound", err)
	}
	if list, _ = s.Shares(ctx); len(list) != 2 {
		t.Errorf("after DeleteShare: %+v", list)
	}
}
