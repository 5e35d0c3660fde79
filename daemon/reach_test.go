package daemon_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/agentledger/agentledger/daemon"
	"github.com/agentledger/agentledger/grants"
	"github.com/agentledger/agentledger/internal/test/testdaemon"
	"github.com/agentledger/agentledger/internal/test/testdb"
	"github.com/agentledger/agentledger/tenants"
)

// The API refuses a steps task whose literal URL the daemon's HTTP tools
// would refuse when it runs, saying why, and queues nothing; a URL they
// allow passes that check.
func TestDoorRefusesWhatTheAllowListRefuses(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	url := testdb.URL(t)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	d := daemon.New(daemon.Config{
		Database:    daemon.Database{URL: url},
		API:         daemon.API{Listener: ln},
		Worker:      daemon.Worker{PollInterval: 50 * time.Millisecond},
		Maintenance: daemon.Maintenance{NoCron: true, NoJanitor: true},
		HTTPTools:   daemon.HTTPTools{AllowedHosts: []string{"127.0.0.1:18449"}}, // bare: https
		Logger:      quiet(),
		Stdout:      io.Discard,
	})
	testdaemon.Run(t, d)
	db := testdb.Open(t, url)
	ts := tenants.NewStore(db)
	if _, err := ts.CreateTenant(ctx, "acme"); err != nil {
		t.Fatal(err)
	}
	_, token, err := ts.CreateToken(ctx, "acme", "test", 0)
	if err != nil {
		t.Fatal(err)
	}
	// The grant allows what the daemon's list refuses: the list's own
	// refusal is what is tested (a grant's comes first, as the last request shows).
	if err := grants.NewStore(db).Put(ctx, "acme", &grants.Grant{AllKinds: true, Tools: []string{"http_request"},
		Hosts: []grants.Host{{URL: "http://127.0.0.1:18449"}, {URL: "https://127.0.0.1:18449"}, {URL: "https://example.com"}}}); err != nil {
		t.Fatal(err)
	}
	post := func(key, target string) (int, map[string]any) {
		t.Helper()
		body := `{"kind":"steps","payload":{"steps":[{"tool":"http_request","args":{"method":"POST","url":"` + target + `"}}]}}`
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
	status, p := post("plain", "http://127.0.0.1:18449/orders")
	detail, _ := p["detail"].(string)
	if status != 422 || p["field"] != "payload" ||
		!strings.Contains(detail, "step 0: http_request: http://127.0.0.1:18449 is not allowed: AGENTLEDGER_HTTP_ALLOWED_HOSTS lists 127.0.0.1:18449 for https only") {
		t.Errorf("http to an https-only entry: %d %v, want 422 saying it is listed for https only", status, p)
	}
	if status, p := post("elsewhere", "https://example.com/orders"); status != 422 || !strings.Contains(p["detail"].(string), "the daemon's AGENTLEDGER_HTTP_ALLOWED_HOSTS does not list it") {
		t.Errorf("a host not listed: %d %v, want 422", status, p)
	}
	var n int
	if err := db.QueryRow(ctx, `SELECT count(*) FROM tasks`).Scan(&n); err != nil || n != 0 {
		t.Fatalf("%d tasks queued (%v), want none", n, err)
	}
	if status, p := post("listed", "https://127.0.0.1:18449/orders"); status != 201 && status != 202 {
		t.Errorf("a listed origin: %d %v, want it queued", status, p)
	}
	// A host outside the tenant's grant is refused as such (403), before
	// the daemon's own list, which is the operator's business, is named.
	if status, p := post("ungranted", "https://elsewhere.example.org/orders"); status != 403 ||
		!strings.Contains(fmt.Sprint(p["detail"]), "no grant for host https://elsewhere.example.org:443") ||
		strings.Contains(fmt.Sprint(p["detail"]), "AGENTLEDGER_HTTP_ALLOWED_HOSTS") {
		t.Errorf("a host outside the grant and the list: %d %v, want 403 naming the grant only", status, p)
	}
}
