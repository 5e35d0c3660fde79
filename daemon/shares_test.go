package daemon

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"strings"
	"testing"

	"github.com/agentledger/agentledger/internal/test/testdb"
	"github.com/agentledger/agentledger/tenants"
)

// agentd stores its [[tenant_share]] tables when it starts, replacing
// the shares it stored before but not an operator's, and leaving the
// other tenants' shares.
func TestStoreShares(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := testdb.New(t)
	store := tenants.NewStore(db)
	var logged bytes.Buffer
	log := slog.New(slog.NewTextHandler(&logged, nil))
	for _, n := range []string{"acme", "globex"} {
		if _, err := store.CreateTenant(ctx, n); err != nil {
			t.Fatal(err)
		}
		if _, err := store.PutShare(ctx, tenants.Share{Tenant: n, Weight: 7, Source: tenants.SourceOperator}); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := store.PutShare(ctx, tenants.Share{Tenant: "initech", Weight: 5, Source: tenants.SourceConfig}); err != nil {
		t.Fatal(err)
	}
	twenty := 20
	if err := storeShares(ctx, db, []tenants.Share{{Tenant: "acme", Weight: 3, MaxRunning: &twenty}, {Tenant: "soon", Weight: 2},
		{Tenant: "initech", Weight: 6}}, log); err != nil {
		t.Fatal(err)
	}
	got, err := store.Shares(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 4 || got[0].Tenant != "acme" || got[0].Weight != 7 || got[0].MaxRunning != nil || got[0].Source != tenants.SourceOperator ||
		got[1].Tenant != "globex" || got[1].Weight != 7 || got[1].Source != tenants.SourceOperator ||
		got[2].Tenant != "initech" || got[2].Weight != 6 || got[2].Source != tenants.SourceConfig ||
		got[3].Tenant != "soon" || got[3].Source != tenants.SourceConfig {
		t.Fatalf("shares %+v", got)
	}
	// A share of a tenant not known yet (no row, no grant) is stored, and
	// said: a typo would go unseen otherwise.
	if l := logged.String(); !strings.Contains(l, "shares a tenant not known yet") || !strings.Contains(l, "tenant=soon") ||
		strings.Count(l, "not known yet") != 2 { // soon and initech
		t.Fatalf("log:\n%s", l)
	}
	var ce *ConfigError
	if err := storeShares(ctx, db, []tenants.Share{{Tenant: "acme", Weight: 0}}, log); !errors.As(err, &ce) {
		t.Fatalf("a bad share: %v, want a ConfigError", err)
	}
}
