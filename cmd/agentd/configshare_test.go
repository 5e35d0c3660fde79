package main

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentledger/agentledger/tenants"
)

// [[tenant_share]] tables become the daemon's TenantShares, source config;
// a bad one names the file, the table and the field, and nothing starts.
func TestConfigFileTenantShares(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	write := func(name, text string) string { return writeFile(t, dir, name, text) }
	parseFile := func(path string) (int, error) {
		cmd := newRootCmd(func(string) string { return "" }, nil)
		if err := cmd.ParseFlags([]string{"--config", path}); err != nil {
			t.Fatal(err)
		}
		cfg, err := parse(cmd.Flags(), func(string) string { return "" })
		if err != nil {
			return 0, err
		}
		s := cfg.Policy.TenantShares
		if len(s) != 2 || s[0].Tenant != "acme" || s[0].Weight != 3 || s[0].MaxRunning == nil || *s[0].MaxRunning != 20 ||
			s[0].Source != tenants.SourceConfig || s[1].Tenant != "default" || s[1].Weight != 1 || s[1].MaxRunning != nil {
			t.Fatalf("tenant shares %+v", s)
		}
		return len(s), nil
	}
	good := write("good.toml", "[[tenant_share]]\ntenant = \"acme\"\nweight = 3\nmax_running = 20\n"+
		"[[tenant_share]]\ntenant = \"default\"\n")
	if _, err := parseFile(good); err != nil {
		t.Fatal(err)
	}
	for file, want := range map[string]string{
		write("weight.toml", "[[tenant_share]]\ntenant = \"acme\"\nweight = 0\n"):                                                                   `tenant_share[0] (tenant "acme"): weight: 0 must be between 1 and 10000`,
		write("cap.toml", "[[tenant_share]]\ntenant = \"acme\"\nmax_running = -1\n"):                                                                `tenant_share[0] (tenant "acme"): max_running: -1 must be at least 1`,
		write("big.toml", "[[tenant_share]]\ntenant = \"newco\"\nmax_running = 3\n[[tenant_share]]\ntenant = \"zeta\"\nmax_running = 3000000000\n"): `tenant_share[1] (tenant "zeta"): max_running: 3000000000 must be at most 2147483647`,
		write("name.toml", "[[tenant_share]]\ntenant = \"a b\"\n"):                                                                                  `tenant_share[0] (tenant "a b"): tenant: "a b" must be`,
		write("key.toml", "[[tenant_share]]\ntenant = \"acme\"\nmax_runing = 2\n"):                                                                  `unknown setting "tenant_share.max_runing"`,
		write("twice.toml", "[[tenant_share]]\ntenant = \"x\"\n[[tenant_share]]\ntenant = \"x\"\n"):                                                 `tenant_share[1] (tenant "x"): tenant: x has another [[tenant_share]] table`,
	} {
		_, err := parseFile(file)
		if err == nil || !strings.Contains(err.Error(), want) || !strings.Contains(err.Error(), filepath.Base(file)) {
			t.Errorf("%s: %v, want %q", filepath.Base(file), err, want)
		}
	}
}
