package main

import (
	"context"
	"strings"
	"testing"

	"github.com/agentledger/agentledger/grants"
	"github.com/agentledger/agentledger/internal/test/testdb"
)

// A tenant not created yet whose grant a daemon's config file stored is
// known: its grant can be shown and revoked (only a name with neither a
// tenant nor a grant is refused as a typo).
func TestGrantOfATenantToCome(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	url := testdb.URL(t)
	s := grants.NewStore(testdb.Open(t, url))
	if _, err := s.Seed(ctx, "soon", &grants.Grant{AllKinds: true, Tools: []string{"http_request", "notify"}}); err != nil {
		t.Fatal(err)
	}
	if code, out, errOut := agentctlAt(url, "tenant", "show", "soon"); code != 0 || !strings.Contains(out, "tools:    http_request, notify") {
		t.Fatalf("show: exit %d\n%s%s", code, out, errOut)
	}
	if code, out, errOut := agentctlAt(url, "tenant", "revoke", "soon", "--tool", "notify"); code != 0 || !strings.Contains(out, "tools:    http_request\n") {
		t.Fatalf("revoke: exit %d\n%s%s", code, out, errOut)
	}
	if code, out, errOut := agentctlAt(url, "tenant", "show", "son"); code != 1 || !strings.Contains(errOut, `tenant "son" not found`) {
		t.Fatalf("show of a typo: exit %d\n%s%s", code, out, errOut)
	}
}
