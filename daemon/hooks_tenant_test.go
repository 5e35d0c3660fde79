package daemon_test

import (
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentledger/agentledger/daemon"
	"github.com/agentledger/agentledger/internal/test/logbuf"
	"github.com/agentledger/agentledger/internal/test/testdaemon"
	"github.com/agentledger/agentledger/internal/test/testdb"
)

// A webhook source naming a tenant with neither a tenant row nor a grant
// (a typo: acmee) is warned of at start; the operator's own tenant is not.
func TestHookSourceOfAnUnknownTenantIsWarnedOf(t *testing.T) {
	t.Parallel()
	hooks := filepath.Join(t.TempDir(), "hooks.json")
	if err := os.WriteFile(hooks, []byte(`[
  {"name": "pay", "type": "hmac", "secret": "s3cr3t-s3cr3t-s3cr3t", "header": "X-Signature", "delivery_header": "X-Delivery",
   "tenant": "acmee", "signal": {"name": "payment.settled", "key_from": "/order"}},
  {"name": "ci", "type": "hmac", "secret": "s3cr3t-s3cr3t-s3cr3t", "header": "X-Signature", "delivery_header": "X-Delivery",
   "kind": "echo"}
]`), 0o600); err != nil {
		t.Fatal(err)
	}
	var logs logbuf.Buffer
	d := daemon.New(daemon.Config{
		Database:    daemon.Database{URL: testdb.URL(t)},
		API:         daemon.API{Listen: "127.0.0.1:0", HooksFile: hooks},
		Maintenance: daemon.Maintenance{NoCron: true, NoJanitor: true},
		Logger:      slog.New(slog.NewTextHandler(&logs, nil)),
		Stdout:      io.Discard,
	})
	testdaemon.Run(t, d)
	out := logs.String()
	if !strings.Contains(out, "webhook source names a tenant not known yet") || !strings.Contains(out, "source=pay tenant=acmee") {
		t.Fatalf("no warning of tenant acmee:\n%s", out)
	}
	if strings.Count(out, "tenant not known yet") != 1 {
		t.Errorf("warned of more than acmee:\n%s", out)
	}
}
