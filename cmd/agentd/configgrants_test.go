package main

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// A [grant.*] table's kinds: left out, the default's every kind (as
// before all_kinds); ["all"], every kind; [], none; names, those only.
// "all" among other kinds is refused, naming the file and the grant.
func TestConfigFileGrantKinds(t *testing.T) {
	t.Parallel()
	p := filepath.Join(t.TempDir(), "grants.toml")
	text := "[grant.a]\ntools = [\"http_request\"]\n[grant.b]\nkinds = [\"all\"]\n[grant.c]\nkinds = []\n[grant.d]\nkinds = [\"echo\", \"steps\"]\n"
	if err := os.WriteFile(p, []byte(text), 0o600); err != nil {
		t.Fatal(err)
	}
	_, gs, err := serversAndGrants(p)
	if err != nil {
		t.Fatal(err)
	}
	for tenant, want := range map[string]struct {
		every bool
		kinds []string
	}{"a": {true, nil}, "b": {true, nil}, "c": {false, nil}, "d": {false, []string{"echo", "steps"}}} {
		g := gs[tenant]
		if g == nil || g.AllKinds != want.every || !slices.Equal(g.Kinds, want.kinds) {
			t.Errorf("grant.%s: %+v, want every kind %v, kinds %v", tenant, g, want.every, want.kinds)
		}
	}
	if err := os.WriteFile(p, []byte("[grant.a]\nkinds = [\"all\", \"echo\"]\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, _, err := serversAndGrants(p); err == nil || !strings.Contains(err.Error(), `grant.a: kinds: "all" (every kind) stands alone`) {
		t.Errorf("all with a kind: %v", err)
	}
	if err := os.WriteFile(p, []byte("[grant.a]\nall_kinds = true\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, _, err := serversAndGrants(p); err == nil || !strings.Contains(err.Error(), `unknown setting "grant.a.all_kinds" of a grant (all, kinds, tools, hosts, channels, models, max_tokens, priority_floor, decide, approve)`) {
		t.Errorf("all_kinds in the file: %v, want it unknown (kinds = [\"all\"] says it)", err)
	}
}
