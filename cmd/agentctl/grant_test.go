package main

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/agentledger/agentledger/grants"
	"github.com/agentledger/agentledger/internal/test/testdb"
	"github.com/agentledger/agentledger/registry"
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

// A grant that names a kind or a tool no live worker has is stored, with
// a warning naming what they have: --kind ecko would otherwise replace
// every kind with one nobody serves, silently.
func TestGrantWarnsOfNamesNoWorkerHas(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	url := testdb.URL(t)
	db := testdb.Open(t, url)
	if err := registry.New(db).Register(ctx, registry.Registration{ID: "w1", Host: "h", PID: 1, Queues: []string{"default"},
		Kinds: []string{"echo", "steps"}, Tools: map[string]json.RawMessage{"http_request": nil, "notify": nil}}); err != nil {
		t.Fatal(err)
	}
	if code, out, errOut := agentctlAt(url, "tenant", "add", "acme"); code != 0 {
		t.Fatalf("tenant add: exit %d\n%s%s", code, out, errOut)
	}
	code, out, errOut := agentctlAt(url, "tenant", "grant", "acme", "--kind", "ecko,steps", "--tool", "notfy,notify,shop/*")
	if code != 0 || !strings.Contains(out, "kinds:") {
		t.Fatalf("grant: exit %d\n%s%s", code, out, errOut)
	}
	want := "agentctl: note: tenant acme had every kind; now only ecko, steps (a kind named replaces every kind: " +
		"agentctl tenant grant acme --all-kinds gives them back)\n" +
		"agentctl: warning: no live worker serves kind ecko (they serve echo, steps)\n" +
		"agentctl: warning: no live worker has tool notfy (they have http_request, notify)\n"
	if errOut != want {
		t.Fatalf("warnings:\n%s\nwant\n%s", errOut, want)
	}
}
