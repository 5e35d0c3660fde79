package tui

import (
	"context"
	"strings"
	"testing"
	"time"

	tea "github.com/charmbracelet/bubbletea"
	"github.com/charmbracelet/x/exp/golden"

	"github.com/agentledger/agentledger/claims"
	"github.com/agentledger/agentledger/internal/test/testenv"
	"github.com/agentledger/agentledger/operator"
	"github.com/agentledger/agentledger/tenants"
)

// sharesOf is a fake store's shares: acme held at its cap, zed over a
// cap lowered below what it runs, gamma weighted from the config file,
// and the operator's tenant with the defaults; by name, as the store
// lists them.
func sharesOf() []operator.Share {
	n := func(i int) *int { return &i }
	src := func(s string) *string { return &s }
	at := func(d time.Duration) *time.Time { t := epoch.Add(-d); return &t }
	return []operator.Share{
		{Tenant: "acme", Weight: 3, MaxRunning: n(2), Running: 2, Source: src(tenants.SourceOperator), UpdatedAt: at(2 * time.Minute)},
		{Tenant: "default", Weight: 1},
		{Tenant: "gamma", Weight: 5, Running: 4, Source: src(tenants.SourceConfig), UpdatedAt: at(26 * time.Hour)},
		{Tenant: "zed", Weight: 1, MaxRunning: n(1), Running: 3, Source: src(tenants.SourceOperator), UpdatedAt: at(time.Hour)},
	}
}

// The tenants held at their cap come first, each saying how many tasks
// must end; the totals count the shares stored, the caps and the held.
func TestSharesView(t *testing.T) {
	t.Parallel()
	store := newFakeStore(1, epoch)
	store.shares = sharesOf()
	d := newDriver(t, store, Options{}, 110, 20)
	d.keys("S")
	v := d.view()
	checkFrame(t, v, 110, 20)
	for _, want := range []string{
		"agentledger › shares",
		"4 tenants · 3 with a share stored · 2 capped · 2 at the cap",
		"TENANT   WEIGHT  CAP  RUNNING  SOURCE    UPDATED  STATUS",
		"acme     3       2    2        operator  2m ago   at its cap: none until one ends",
		"zed      1       1    3        operator  1h ago   over its cap by 2: none until 3 end",
		"default  1       -    0        -         -",
		"gamma    5       -    4        config    26h ago",
		sharesLegend[0], sharesLegend[1],
	} {
		if !strings.Contains(v, want) {
			t.Errorf("the view lacks %q:\n%s", want, v)
		}
	}
	if strings.Index(v, "zed ") > strings.Index(v, "default ") {
		t.Errorf("the tenants at their cap are not first:\n%s", v)
	}

	// Narrow, each status goes on a line of its own under its tenant,
	// whole, rather than be cut at the edge.
	d.send(tea.WindowSizeMsg{Width: 60, Height: 20})
	v = d.view()
	checkFrame(t, v, 60, 20)
	for _, want := range []string{"TENANT   WEIGHT  CAP  RUNNING  SOURCE    UPDATED", "zed      1       1    3        operator  1h ago",
		"  └ over its cap by 2: none until 3 end"} {
		if !strings.Contains(v, want) {
			t.Errorf("at 60 columns, the view lacks %q:\n%s", want, v)
		}
	}
	// A tenant's name too long for the status beside it at 80 columns:
	// the name whole, UPDATED and SOURCE gone, the status under it.
	store.shares[0].Tenant = "northwind-enterprise-logistics-emea-production"
	d.send(tea.WindowSizeMsg{Width: 80, Height: 20})
	d.keys("esc", "S")
	v = d.view()
	checkFrame(t, v, 80, 20)
	for _, want := range []string{"northwind-enterprise-logistics-emea-production  3       2    2", "  └ at its cap: none until one ends"} {
		if !strings.Contains(v, want) {
			t.Errorf("with a long tenant name, the view lacks %q:\n%s", want, v)
		}
	}

	d.keys("esc")
	if d.app().view != viewTasks {
		t.Error("esc did not go back to the tasks")
	}
}

// Shares stored, and tasks leased up to a cap and past a lowered one, in
// the database show in the view, through a console in a terminal.
func TestConsoleShares(t *testing.T) {
	s := seedDB(t)
	ctx := context.Background()
	st := tenants.NewStore(s.DB)
	for _, name := range []string{"acme", "beta", "gamma"} {
		if _, err := st.CreateTenant(ctx, name); err != nil {
			t.Fatal(err)
		}
	}
	put := func(tenant string, weight int, maxRunning *int, source string) {
		t.Helper()
		if _, err := st.PutShare(ctx, tenants.Share{Tenant: tenant, Weight: weight, MaxRunning: maxRunning, Source: source}); err != nil {
			t.Fatal(err)
		}
	}
	run := func(tenant string, n int) {
		t.Helper()
		for range n {
			if _, err := s.Claims.Enqueue(ctx, claims.EnqueueParams{Tenant: tenant, Queue: "tight", Kind: "echo"}); err != nil {
				t.Fatal(err)
			}
		}
		got, err := s.Claims.Claim(ctx, claims.ClaimParams{Queue: "tight", Worker: "worker-c", Limit: n, Lease: testenv.Lease})
		if err != nil || len(got) != n {
			t.Fatalf("claimed %d of %s's %d tasks: %v", len(got), tenant, n, err)
		}
	}
	two, one := 2, 1
	put("acme", 3, &two, tenants.SourceOperator)
	run("acme", 2)
	run("beta", 3)
	put("beta", 1, &one, tenants.SourceOperator) // lowered below what runs
	put("gamma", 5, nil, tenants.SourceConfig)
	if _, err := s.DB.Exec(ctx, `UPDATE tenant_shares SET updated_at = $1::timestamptz - interval '2 minutes'`, epoch); err != nil {
		t.Fatal(err)
	}
	tm := startConsoleSized(t, s, Options{}, 80, 24)
	waitFor(t, tm, "page 1 · 9 tasks")
	press(tm, "S")
	waitFor(t, tm, "4 tenants · 3 with a share stored · 2 capped", "over its cap by 2")
	golden.RequireEqual(t, []byte(finish(t, tm)))
}
