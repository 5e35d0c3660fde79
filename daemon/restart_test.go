package daemon_test

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/agentledger/agentledger/daemon"
	"github.com/agentledger/agentledger/flow"
	"github.com/agentledger/agentledger/grants"
	"github.com/agentledger/agentledger/internal/test/logbuf"
	"github.com/agentledger/agentledger/internal/test/testdb"
	"github.com/agentledger/agentledger/tenants"
)

// logLines returns the JSON records logged in b whose message contains msg.
func logLines(t *testing.T, b *logbuf.Buffer, msg string) []map[string]any {
	t.Helper()
	var out []map[string]any
	for line := range strings.SplitSeq(b.String(), "\n") {
		if line == "" {
			continue
		}
		var rec map[string]any
		if err := json.Unmarshal([]byte(line), &rec); err != nil {
			t.Fatalf("log line %q: %v", line, err)
		}
		if m, _ := rec["msg"].(string); strings.Contains(m, msg) {
			out = append(out, rec)
		}
	}
	return out
}

// startOnce runs a daemon with cfg until it is ready, then stops it: what
// it stores at start is then stored.
func startOnce(t *testing.T, cfg daemon.Config) *logbuf.Buffer {
	t.Helper()
	logs := &logbuf.Buffer{}
	cfg.Logger = slog.New(slog.NewJSONHandler(logs, nil))
	cfg.Stdout, cfg.Maintenance.NoCron, cfg.Maintenance.NoJanitor, cfg.Notify.NoDispatch = io.Discard, true, true, true
	d := daemon.New(cfg)
	ctx, cancel := context.WithCancel(context.Background())
	stopped := make(chan error, 1)
	go func() { stopped <- d.Run(ctx) }()
	select {
	case <-d.Ready():
	case err := <-stopped:
		cancel()
		t.Fatalf("the daemon stopped before it was ready: %v", err)
	case <-time.After(time.Minute):
		t.Fatal("the daemon was not ready within a minute")
	}
	cancel()
	if err := <-stopped; err != nil {
		t.Fatalf("daemon Run: %v", err)
	}
	return logs
}

// A restart never undoes an operator's change: agentd's config file seeds
// grants, limits and tenant shares, and a change of the file takes effect
// at the next start where the config set them; but where an operator
// (agentctl) set one since, it stands, and the daemon logs how the file
// differs. A breaker opened by hand stays open across the restart.
func TestRestartKeepsTheOperatorsChanges(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	url := testdb.URL(t)
	db := testdb.Open(t, url)
	ts := tenants.NewStore(db)
	if _, err := ts.CreateTenant(ctx, "acme"); err != nil {
		t.Fatal(err)
	}
	const api, billing = "http:https://api.example.com:443", "http:https://billing.example.com:443"
	five := 5
	cfg := daemon.Config{
		Database: daemon.Database{URL: url},
		Policy: daemon.Policy{
			Grants: map[string]*grants.Grant{
				"acme":    {Kinds: []string{"steps"}, Tools: []string{"http_request", "notify"}},
				"globex":  {AllKinds: true, Tools: []string{"http_request"}},
				"initech": {AllKinds: true, Tools: []string{"http_request", "notify"}},
				"hooli":   {AllKinds: true, Tools: []string{"notify"}},
			},
			Limits: []flow.Limit{
				{Target: api, Rate: flow.Rate{N: 10, Per: time.Second}, Burst: 1},
				{Target: billing, Concurrency: 4},
			},
			TenantShares: []tenants.Share{{Tenant: "acme", Weight: 3}, {Tenant: "globex", Weight: 2, MaxRunning: &five}},
		},
	}
	startOnce(t, cfg)

	// The operator, as agentctl does: an emergency revoke, a slower rate,
	// a heavier weight, and a breaker opened until closed.
	gs := grants.NewStore(db)
	if _, err := gs.Update(ctx, "acme", func(g *grants.Grant) {
		g.Tools = slices.DeleteFunc(g.Tools, func(s string) bool { return s == "notify" })
	}); err != nil {
		t.Fatal(err)
	}
	fs := flow.NewStore(db)
	if _, err := fs.Put(ctx, flow.Limit{Target: api, Rate: flow.Rate{N: 2, Per: time.Second}, Burst: 1, Source: flow.SourceOperator}); err != nil {
		t.Fatal(err)
	}
	if _, err := ts.PutShare(ctx, tenants.Share{Tenant: "acme", Weight: 7, Source: tenants.SourceOperator}); err != nil {
		t.Fatal(err)
	}
	if _, err := fs.OpenBreaker(ctx, billing, 0); err != nil {
		t.Fatal(err)
	}
	// Grants as stored before 00029 recorded who set them: initech's
	// differs from the file (a revoke made before the upgrade, maybe),
	// hooli's is the file's.
	if _, err := db.Exec(ctx, `UPDATE tenant_grants SET set_by = NULL,
		grant_doc = CASE tenant WHEN 'initech' THEN '{"tools": ["http_request"]}'::jsonb ELSE '{"tools": ["notify"]}' END
		WHERE tenant IN ('initech', 'hooli')`); err != nil {
		t.Fatal(err)
	}

	// The file changes what the config set (globex, billing), and a daemon
	// with it (or with the old file) starts again.
	cfg.Policy.Grants["globex"] = &grants.Grant{AllKinds: true, Tools: []string{"http_request", "notify"}}
	cfg.Policy.Limits[1].Concurrency = 8
	cfg.Policy.TenantShares[1].Weight = 4
	logs := startOnce(t, cfg)

	acme, err := gs.Record(ctx, "acme")
	if err != nil || acme.SetBy != grants.SetByOperator || !slices.Equal(acme.Grant.Tools, []string{"http_request"}) {
		t.Errorf("acme's grant after the restart: %+v %v, want the operator's revoke in force", acme, err)
	}
	globex, err := gs.Record(ctx, "globex")
	if err != nil || globex.SetBy != grants.SetByConfig || !slices.Equal(globex.Grant.Tools, []string{"http_request", "notify"}) {
		t.Errorf("globex's grant after the restart: %+v %v, want the file's change in force", globex, err)
	}
	initech, err := gs.Record(ctx, "initech")
	if err != nil || initech.SetBy != grants.SetByUnknown || !slices.Equal(initech.Grant.Tools, []string{"http_request"}) {
		t.Errorf("initech's grant after the restart: %+v %v, want the one of unknown origin kept", initech, err)
	}
	hooli, err := gs.Record(ctx, "hooli")
	if err != nil || hooli.SetBy != grants.SetByConfig || !slices.Equal(hooli.Grant.Tools, []string{"notify"}) {
		t.Errorf("hooli's grant after the restart: %+v %v, want the same grant, the configuration's now", hooli, err)
	}
	if l, err := fs.Get(ctx, api); err != nil || l.Source != flow.SourceOperator || l.Rate.N != 2 {
		t.Errorf("the limit of %s: %+v %v, want the operator's 2/s", api, l, err)
	}
	if l, err := fs.Get(ctx, billing); err != nil || l.Source != flow.SourceConfig || l.Concurrency != 8 {
		t.Errorf("the limit of %s: %+v %v, want the file's 8 in flight", billing, l, err)
	}
	shares, err := ts.Shares(ctx)
	if err != nil || len(shares) != 2 || shares[0].Weight != 7 || shares[0].Source != tenants.SourceOperator ||
		shares[1].Weight != 4 || shares[1].Source != tenants.SourceConfig {
		t.Errorf("shares after the restart: %+v %v, want acme's 7 (operator), globex's 4 (file)", shares, err)
	}
	if bs, _, err := fs.Breakers(ctx); err != nil || len(bs) != 1 || bs[0].State != flow.Open || !bs[0].Manual {
		t.Errorf("breakers after the restart: %+v %v, want %s open by hand", bs, err, billing)
	}

	// What differs is logged, once a thing, naming it and the difference:
	// a warning where the file's is not in force, a line where it replaced
	// another file's.
	for _, c := range []struct{ msg, key, name, field, want, level string }{
		{"grant differs from the one an operator set", "tenant", "acme", "differs", "tools: config [http_request notify], in force [http_request]", "WARN"},
		{"grant differs from one stored before", "tenant", "initech", "differs", "tools: config [http_request notify], in force [http_request]", "WARN"},
		{"limit differs", "target", api, "in_force", "rate 2/s burst 1", "WARN"},
		{"tenant share differs", "tenant", "acme", "in_force", "weight 7, no max_running", "WARN"},
		{"grant replaced a different one", "tenant", "globex", "differs", "tools: config [http_request notify], in force [http_request]", "INFO"},
		{"limit replaced a different one", "target", billing, "was", "concurrency 4", "INFO"},
		{"tenant share replaced a different one", "tenant", "globex", "was", "weight 2, max_running 5", "INFO"},
	} {
		recs := logLines(t, logs, c.msg)
		if len(recs) != 1 || recs[0][c.key] != c.name || recs[0][c.field] != c.want || recs[0]["level"] != c.level {
			t.Errorf("log %q: %v, want one %s for %s with %s %q", c.msg, recs, c.level, c.name, c.field, c.want)
		}
	}
	if recs := logLines(t, logs, "initech --reset hands it to the configuration"); len(recs) != 1 {
		t.Errorf("initech's warning says how to hand the grant to the file: %v", recs)
	}
	if recs := logLines(t, logs, "grants stored from the configuration"); len(recs) != 1 || !strings.Contains(toJSON(recs[0]["tenants"]), `["globex","hooli"]`) {
		t.Errorf("grants stored: %v, want globex and hooli only", recs)
	}
}

func toJSON(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}
