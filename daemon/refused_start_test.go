package daemon_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/agentledger/agentledger"
	"github.com/agentledger/agentledger/daemon"
	"github.com/agentledger/agentledger/flow"
	"github.com/agentledger/agentledger/grants"
	"github.com/agentledger/agentledger/internal/test/testdb"
	"github.com/agentledger/agentledger/ledger"
	"github.com/agentledger/agentledger/saga"
	"github.com/agentledger/agentledger/tenants"
	"github.com/agentledger/agentledger/tools"
)

// A daemon that refuses to start, whatever setting it refuses, has stored
// none of its configuration's grants, limits and tenant shares (issue 30,
// U5): a mistake in one part of the file never half-applies the rest. And
// the address it bound is free again for the next try.
func TestRefusedStartStoresNothing(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	write := func(name, text string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(text), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	shortToken := write("metrics-token", "short-token\n")
	missing := filepath.Join(dir, "no-such-file")
	notJSON := write("headers.json", "not json")
	busy, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { busy.Close() }) // after the parallel subtests
	goodLimit := flow.Limit{Target: "mcp:shop", Rate: flow.Rate{N: 5, Per: time.Minute}}
	goodShare := tenants.Share{Tenant: "acme", Weight: 3}
	for _, tc := range []struct {
		name string
		set  func(*daemon.Config)
		want string
	}{
		{"metrics token too short", func(c *daemon.Config) { c.API.MetricsTokenFile = shortToken }, "the token must be at least 16 characters"},
		{"trusted proxy", func(c *daemon.Config) { c.API.TrustedProxies = []string{"10.0.0.0/33"} }, "--trusted-proxies"},
		{"hooks file", func(c *daemon.Config) { c.API.HooksFile = missing }, "no-such-file"},
		{"MCP env file", func(c *daemon.Config) {
			c.MCPServers = []daemon.MCPServer{{Name: "shop", Command: []string{"shop-mcp"}, EnvFiles: map[string]string{"SHOP_TOKEN": missing}}}
		}, "MCP server shop: the env file of SHOP_TOKEN"},
		{"MCP class", func(c *daemon.Config) {
			c.MCPServers = []daemon.MCPServer{{Name: "shop", Command: []string{"shop-mcp"}, Classes: map[string]ledger.Class{"refund": "bogus"}}}
		}, `MCP server shop: class of refund: "bogus": an MCP call is pure, keyed or unsafe`},
		{"MCP server name with /", func(c *daemon.Config) {
			c.MCPServers = []daemon.MCPServer{{Name: "a/b", Command: []string{"shop-mcp"}}}
		}, `MCP server name "a/b" must be 1-64 letters, digits, _ or -`},
		{"MCP server name with a space", func(c *daemon.Config) { c.MCPServers = []daemon.MCPServer{{Name: "a b", URL: "https://a.example/mcp"}} },
			`MCP server name "a b" must be`},
		{"MCP server name with __", func(c *daemon.Config) { c.MCPServers = []daemon.MCPServer{{Name: "a__b", Command: []string{"x"}}} },
			`MCP server name "a__b" must be 1-64 letters, digits, _ or -, without "__" and not ending in _`},
		{"MCP server name with a control character", func(c *daemon.Config) { c.MCPServers = []daemon.MCPServer{{Name: "a\x01b", Command: []string{"x"}}} },
			`MCP server name "a\x01b" must be`},
		{"MCP server name not ASCII", func(c *daemon.Config) { c.MCPServers = []daemon.MCPServer{{Name: "café", Command: []string{"x"}}} },
			`MCP server name "café" must be`},
		{"MCP server twice", func(c *daemon.Config) {
			c.MCPServers = []daemon.MCPServer{{Name: "shop", Command: []string{"a"}}, {Name: "shop", Command: []string{"b"}}}
		}, "MCP server shop is configured twice"},
		{"Slack token file", func(c *daemon.Config) { c.Notify.SlackTokenFile, c.Notify.NoDispatch = missing, false }, "reading the token file"},
		{"host headers file", func(c *daemon.Config) { c.HTTPTools.HostHeadersFile = notJSON }, "HTTPTools.HostHeadersFile (agentd --http-host-headers-file)"},
		{"Azure api-version", func(c *daemon.Config) {
			c.Model.BaseURL, c.Model.AzureAPIVersion = "https://example-resource.openai.azure.com", "latest"
		}, `model endpoint, Model.AzureAPIVersion (agentd --llm-azure-api-version): azure api-version "latest" is not a date`},
		{"worker lease", func(c *daemon.Config) { c.Worker.Lease = 500 * time.Millisecond }, "shorter than 1s"},
		{"listen address in use", func(c *daemon.Config) { c.API.Listen = busy.Addr().String() }, "address already in use"},
		{"a later limit", func(c *daemon.Config) {
			c.Policy.Limits = append(c.Policy.Limits, flow.Limit{Target: "smtp:x", Rate: flow.Rate{N: 1, Per: time.Second}})
		}, `limit of "smtp:x"`},
		{"a tenant share", func(c *daemon.Config) {
			c.Policy.TenantShares = append(c.Policy.TenantShares, tenants.Share{Tenant: "globex", Weight: 0})
		}, `share of tenant "globex": weight`},
		{"a grant", func(c *daemon.Config) { c.Policy.Grants["globex"] = &grants.Grant{PriorityFloor: 101} }, `grant of tenant "globex"`},
		{"a tool's gate on timeout", func(c *daemon.Config) {
			c.Policy.ToolApprovals = map[string]*tools.Approval{"refund": {OnTimeout: "bogus"}}
		}, `Policy.ToolApprovals["refund"] (agentd --approve-tools): OnTimeout "bogus" must be deny or approve`},
		{"a nil gate", func(c *daemon.Config) {
			c.Policy.ToolApprovals = map[string]*tools.Approval{"refund": {}, "shop/charge": nil}
		}, `Policy.ToolApprovals["shop/charge"] (agentd --approve-tools): nil, which would leave the tool ungated`},
		{"a gate's negative timeout", func(c *daemon.Config) {
			c.Policy.ToolApprovals = map[string]*tools.Approval{"refund": {Timeout: -time.Second}}
		}, `Policy.ToolApprovals["refund"] (agentd --approve-tools): Timeout -1s must be positive and at most 720h0m0s`},
		{"a gate's long timeout", func(c *daemon.Config) {
			c.Policy.ToolApprovals = map[string]*tools.Approval{"refund": {Timeout: tools.MaxApprovalTimeout + time.Second}}
		}, `Timeout 720h0m1s must be positive and at most 720h0m0s`},
		{"a gate of no tool", func(c *daemon.Config) {
			c.Policy.ToolApprovals = map[string]*tools.Approval{"re fund": {}}
		}, `Policy.ToolApprovals["re fund"] (agentd --approve-tools): tool name "re fund" must be`},
		{"the policy's approver", func(c *daemon.Config) {
			c.Policy.Approval = &tools.Approval{Approvers: []string{"bob"}}
		}, `Policy.Approval (agentd --approvers and --approval-timeout): approver "bob" is not a Slack user or group id`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			url := testdb.URL(t)
			// A free address, bound by the daemon before it refuses.
			probe, err := net.Listen("tcp", "127.0.0.1:0")
			if err != nil {
				t.Fatal(err)
			}
			addr := probe.Addr().String()
			probe.Close()
			cfg := daemon.Config{
				Database:    daemon.Database{URL: url},
				API:         daemon.API{Listen: addr},
				Maintenance: daemon.Maintenance{NoCron: true, NoJanitor: true},
				Notify:      daemon.Notifications{NoDispatch: true},
				Policy: daemon.Policy{
					Grants:       map[string]*grants.Grant{"acme": {Kinds: []string{"echo"}}},
					Limits:       []flow.Limit{goodLimit},
					TenantShares: []tenants.Share{goodShare},
				},
				Logger: quiet(),
				Stdout: io.Discard,
			}
			tc.set(&cfg)
			d := daemon.New(cfg)
			runCtx, cancel := context.WithCancel(ctx)
			defer cancel()
			ran := make(chan error, 1)
			go func() { ran <- d.Run(runCtx) }()
			select {
			case err = <-ran:
			case <-d.Ready():
				cancel()
				t.Fatalf("the daemon started (Run then returned %v), want it refused for %q", <-ran, tc.want)
			}
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("Run = %v, want an error containing %q", err, tc.want)
			}
			db := testdb.Open(t, url)
			if g, ok, err := grants.NewStore(db).Get(ctx, "acme"); err != nil || ok {
				t.Errorf("the configuration's grant was stored: %+v, %v", g, err)
			}
			if l, err := flow.NewStore(db).Get(ctx, goodLimit.Target); !errors.Is(err, agentledger.ErrNotFound) {
				t.Errorf("the configuration's limit was stored: %+v, %v", l, err)
			}
			if s, err := tenants.NewStore(db).Shares(ctx); err != nil || len(s) > 0 {
				t.Errorf("the configuration's share was stored: %+v, %v", s, err)
			}
			if cfg.API.Listen == addr {
				ln, err := net.Listen("tcp", addr)
				if err != nil {
					t.Fatalf("the refused daemon still holds its address: %v", err)
				}
				ln.Close()
			}
		})
	}
}

// A mistake in the configuration that needs no database to be seen is
// refused before one is opened: no embedded cluster is created in a fresh
// state directory, and a database given by URL is not migrated. Services
// this daemon leaves to others (NoJanitor, NoDispatch) are no excuse: a
// mistake in their settings is a mistake still.
func TestRefusedBeforeTheDatabase(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	write := func(name, text string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(text), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	token := write("slack-token", "xoxb-1-2\n")
	missing := filepath.Join(dir, "no-such-file")
	// registered names, by case, a keyed tool registered besides the
	// configuration.
	registered := map[string]string{"a tool named as an MCP server's tools are": "shop__charge"}
	for _, tc := range []struct {
		name string
		set  func(*daemon.Config)
		want string
	}{
		{"a tool named as an MCP server's tools are", func(c *daemon.Config) { c.MCPServers = []daemon.MCPServer{{Name: "shop", Command: []string{"a"}}} },
			`tool "shop__charge": a model calls the tools of MCP server "shop" by names of that form`},
		{"concurrency", func(c *daemon.Config) { c.Worker.Concurrency = -1 }, "Worker.Concurrency (agentd --concurrency): -1 must be positive"},
		{"lease", func(c *daemon.Config) { c.Worker.Lease = -time.Second }, "Worker.Lease (agentd --lease): -1s is shorter than 1s"},
		{"heartbeat", func(c *daemon.Config) { c.Worker.Lease, c.Worker.Heartbeat = 30*time.Second, time.Minute },
			"Worker.Heartbeat (agentd --heartbeat): 1m0s must be positive and at most half the lease (30s)"},
		{"empty queue", func(c *daemon.Config) { c.Worker.Queues = []string{"default", ""} }, "Worker.Queues (agentd --queues): a queue name is empty"},
		{"bad queue", func(c *daemon.Config) { c.Worker.Queues = []string{"bad queue!"} }, `Worker.Queues (agentd --queues): queue "bad queue!" must be`},
		{"grace", func(c *daemon.Config) { c.Worker.Grace = -time.Second }, "Worker.Grace (agentd --grace): -1s must not be negative"},
		{"poll interval", func(c *daemon.Config) { c.Worker.PollInterval = -time.Second }, "Worker.PollInterval (agentd --poll-interval): -1s must be positive"},
		{"MCP server without command or url", func(c *daemon.Config) { c.MCPServers = []daemon.MCPServer{{Name: "shop"}} },
			"MCP server shop: give either a command or a url"},
		{"MCP server twice", func(c *daemon.Config) {
			c.MCPServers = []daemon.MCPServer{{Name: "shop", Command: []string{"a"}}, {Name: "shop", Command: []string{"b"}}}
		}, "MCP server shop is configured twice"},
		{"trusted proxy", func(c *daemon.Config) { c.API.TrustedProxies = []string{"10.0.0.0/33"} }, "API.TrustedProxies (agentd --trusted-proxies)"},
		{"metrics token file", func(c *daemon.Config) { c.API.MetricsTokenFile = missing }, "no-such-file"},
		{"hooks file", func(c *daemon.Config) { c.API.HooksFile = missing }, "no-such-file"},
		{"retention", func(c *daemon.Config) { c.Maintenance.Retain.Tasks = -time.Hour },
			"Maintenance.Retain.Tasks (agentd --retain-tasks) -1h0m0s: must not be negative"},
		{"retention, no janitor here", func(c *daemon.Config) { c.Maintenance.NoJanitor, c.Maintenance.Retain.Ledger = true, -time.Hour },
			"Maintenance.Retain.Ledger (agentd --retain-ledger) -1h0m0s: must not be negative"},
		{"janitor interval", func(c *daemon.Config) { c.Maintenance.JanitorInterval = -time.Minute },
			"Maintenance.JanitorInterval (agentd --janitor-interval) -1m0s: must not be negative"},
		{"Slack token and file", func(c *daemon.Config) { c.Notify.SlackToken, c.Notify.SlackTokenFile = "xoxb-1-2", token },
			"set Token or TokenFile, not both"},
		{"Slack token and file, no dispatch here", func(c *daemon.Config) {
			c.Notify.NoDispatch, c.Notify.SlackToken, c.Notify.SlackTokenFile = true, "xoxb-1-2", token
		}, "set Token or TokenFile, not both"},
		{"dispatch lease", func(c *daemon.Config) { c.Notify.DispatchLease = time.Millisecond }, "lease: 1ms is shorter than a second"},
		{"dispatch concurrency", func(c *daemon.Config) { c.Notify.DispatchConcurrency = -1 },
			"Notify.DispatchConcurrency (agentd --dispatch-concurrency) -1: must not be negative"},
		{"signing secret file", func(c *daemon.Config) { c.Notify.Approvals.SigningSecretFile = missing }, "--slack-signing-secret-file"},
		{"compensation", func(c *daemon.Config) {
			c.Policy.Compensations = map[string]saga.Compensation{"http_request": {Tool: "wait_timer"}}
		}, "the compensation of http_request calls wait_timer, which changes nothing"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			// Where the server could live, were the cluster created.
			state := filepath.Join(searchableDir(t), "state")
			url := testdb.Empty(t)
			for _, db := range []daemon.Database{{StateDir: state}, {URL: url}} {
				cfg := daemon.Config{Database: db, Logger: quiet(), Stdout: io.Discard}
				tc.set(&cfg)
				d := daemon.New(cfg)
				if name := registered[tc.name]; name != "" {
					tool, err := tools.Define(tools.Spec[struct{}]{Name: name, Class: ledger.Keyed,
						Perform: func(context.Context, ledger.Call, struct{}) (ledger.Result, error) { return ledger.Result{}, nil }})
					if err != nil {
						t.Fatal(err)
					}
					if err := d.RegisterTool(tool); err != nil {
						t.Fatal(err)
					}
				}
				ctx, cancel := context.WithCancel(context.Background())
				ran := make(chan error, 1)
				go func() { ran <- d.Run(ctx) }()
				var err error
				select {
				case err = <-ran:
				case <-d.Ready():
					cancel()
					err = fmt.Errorf("started (then %v)", <-ran)
				}
				cancel()
				var ce *daemon.ConfigError
				if !errors.As(err, &ce) || !strings.Contains(err.Error(), tc.want) {
					t.Errorf("%+v: Run = %v, want a *ConfigError containing %q", db, err, tc.want)
				}
			}
			if _, err := os.Stat(state); !errors.Is(err, os.ErrNotExist) {
				t.Errorf("the state directory was made (%v): a cluster created for a refused configuration", err)
			}
			var tables int
			if err := testdb.Open(t, url).QueryRow(context.Background(),
				`SELECT count(*) FROM pg_tables WHERE schemaname = 'public'`).Scan(&tables); err != nil || tables > 0 {
				t.Errorf("the database has %d tables (%v): migrated for a refused configuration", tables, err)
			}
		})
	}
}
