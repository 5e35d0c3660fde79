package daemon_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	neturl "net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agentledger/agentledger"
	"github.com/agentledger/agentledger/claims"
	"github.com/agentledger/agentledger/daemon"
	"github.com/agentledger/agentledger/grants"
	"github.com/agentledger/agentledger/internal/test/testdaemon"
	"github.com/agentledger/agentledger/internal/test/testdb"
	"github.com/agentledger/agentledger/operator"
)

// backend is one downstream two tenants share; it records, per request,
// the secret header it received.
type backend struct {
	mu      sync.Mutex
	secrets []string // the X-Api-Key of each request, "" when absent
}

func (b *backend) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	b.mu.Lock()
	b.secrets = append(b.secrets, r.Header.Get("X-Api-Key"))
	b.mu.Unlock()
	w.Header().Set("Content-Type", "application/json")
	fmt.Fprintf(w, `{"seen_key":%q}`, r.Header.Get("X-Api-Key"))
}

func (b *backend) calls() []string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return append([]string(nil), b.secrets...)
}

// Two tenants, one backend behind the operator's secret header: only the
// tenant granted the host with its secrets gets the header through; the
// one granted nothing performs nothing and records nothing; and a grant
// revoked between the run and a replay makes the replay refuse the effect,
// naming the missing grant, and perform nothing — although the ledger holds
// its result.
func TestGrantsDecideWhatEachTenantReaches(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	be := &backend{}
	srv := httptest.NewServer(be)
	defer srv.Close()
	origin := srv.URL // http://127.0.0.1:port
	headers := filepath.Join(t.TempDir(), "headers.json")
	if err := os.WriteFile(headers, []byte(fmt.Sprintf(`{%q: {"X-Api-Key": "operator-secret"}}`, origin)), 0o600); err != nil {
		t.Fatal(err)
	}
	url := testdb.URL(t)
	db := testdb.Open(t, url)
	d := daemon.New(daemon.Config{
		Database:    daemon.Database{URL: url},
		Worker:      daemon.Worker{PollInterval: 50 * time.Millisecond},
		Maintenance: daemon.Maintenance{NoCron: true, NoJanitor: true},
		Notify:      daemon.Notifications{NoDispatch: true},
		HTTPTools:   daemon.HTTPTools{AllowedHosts: []string{origin}, HostHeadersFile: headers},
		Logger:      quiet(),
		Stdout:      io.Discard,
	})
	testdaemon.Run(t, d)

	g := grants.NewStore(db)
	if err := g.Put(ctx, "acme", &grants.Grant{Tools: []string{"http_request"},
		Hosts: []grants.Host{{URL: origin, SecretHeaders: true}}}); err != nil {
		t.Fatal(err)
	}
	if err := g.Put(ctx, "globex", &grants.Grant{Tools: []string{"http_request"}, Hosts: []grants.Host{{URL: origin}}}); err != nil {
		t.Fatal(err)
	}
	s := claims.New(db)
	run := func(tenant string) *agentledger.Task {
		t.Helper()
		r, err := s.Enqueue(ctx, claims.EnqueueParams{Tenant: tenant, Kind: "steps", Payload: json.RawMessage(
			`{"steps":[{"tool":"http_request","args":{"method":"GET","url":"` + origin + `/orders"}}]}`)})
		if err != nil {
			t.Fatal(err)
		}
		return testdaemon.WaitFinished(t, s, r.Task.ID)
	}
	acme, globex, initech := run("acme"), run("globex"), run("initech")
	// (What the backend echoes of a secret is redacted in the result.)
	if acme.State != agentledger.StateSucceeded || strings.Contains(string(acme.Result), `operator-secret`) {
		t.Errorf("acme (granted the host with its secrets): %s %s %s", acme.State, acme.Result, acme.LastError)
	}
	if globex.State != agentledger.StateSucceeded || !strings.Contains(string(globex.Result), `"seen_key": ""`) {
		t.Errorf("globex (granted the host, not the secrets): %s %s %s", globex.State, globex.Result, globex.LastError)
	}
	if initech.State != agentledger.StateDead || !strings.Contains(initech.LastError, `tenant "initech" has no grant for tool "http_request"`) {
		t.Errorf("initech (no grant): %s %q", initech.State, initech.LastError)
	}
	if got := be.calls(); len(got) != 2 || got[0] != "operator-secret" || got[1] != "" {
		t.Errorf("the backend saw keys %q, want [operator-secret, \"\"] (acme's, globex's)", got)
	}
	var rows int
	if err := db.QueryRow(ctx, `SELECT count(*) FROM ledger WHERE tenant = 'initech'`).Scan(&rows); err != nil || rows != 0 {
		t.Errorf("initech's refused call left %d ledger rows (%v)", rows, err)
	}

	// The operator takes the host back; a replay of acme's task refuses
	// the effect the ledger holds, and calls nothing.
	if _, err := g.Update(ctx, "acme", func(gr *grants.Grant) { gr.Hosts = nil }); err != nil {
		t.Fatal(err)
	}
	// The daemon learns of the revoke through its LISTEN session, a moment
	// after the commit; a claim its poll makes meanwhile may still see the
	// old grant ("in seconds", not at once). A new task of acme's refused
	// for the host shows the revoke has reached it (one that ran before
	// it did reached the backend: counted below from there).
	for i := 0; ; i++ {
		if probe := run("acme"); strings.Contains(probe.LastError, "no grant for host") {
			break
		} else if i == 100 {
			t.Fatalf("the revoke never reached the daemon: %s %q", probe.State, probe.LastError)
		}
	}
	before := len(be.calls())
	if _, err := operator.New(db).Replay(ctx, "acme", acme.ID); err != nil {
		t.Fatal(err)
	}
	replayed := testdaemon.WaitFinished(t, s, acme.ID)
	if replayed.State != agentledger.StateDead || !strings.Contains(replayed.LastError, `tenant "acme" has no grant for host `+strings.ToLower(grants.Origin(mustURL(t, origin)))) {
		t.Errorf("replay after the revoke: %s %q", replayed.State, replayed.LastError)
	}
	if got := be.calls(); len(got) != before {
		t.Errorf("the replay reached the backend: %d calls, %d before it", len(got), before)
	}
}

func mustURL(t *testing.T, raw string) *neturl.URL {
	t.Helper()
	u, err := neturl.Parse(raw)
	if err != nil {
		t.Fatal(err)
	}
	return u
}
