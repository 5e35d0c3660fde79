package main

import (
	"errors"
	"strings"
	"testing"
)

// --trusted-proxies comes from the flag, the environment or the config
// file (trusted_proxies, a list); a bad entry is a usage error naming
// where it came from and the entry.
func TestTrustedProxiesSetting(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	write := func(name, text string) string { return writeFile(t, dir, name, text) }
	good := write("good.toml", "trusted_proxies = [\"10.0.0.0/8\", \"::1\"]\n")
	bad := write("bad.toml", "trusted_proxies = [\"10.0.0.0/8\", \"10.0.0.0/33\"]\n")
	for _, tc := range []struct {
		args []string
		env  map[string]string
		want string // the list, or the error
	}{
		{nil, nil, ""},
		{[]string{"--trusted-proxies", "10.0.0.0/8, 127.0.0.1"}, nil, "10.0.0.0/8|127.0.0.1"},
		{nil, map[string]string{"AGENTLEDGER_TRUSTED_PROXIES": "192.168.0.0/16"}, "192.168.0.0/16"},
		{[]string{"--config", good}, nil, "10.0.0.0/8|::1"},
		{[]string{"--trusted-proxies", "10.0.0.0/8,proxy.internal"}, nil, `error: --trusted-proxies: trusted proxy "proxy.internal" is not an IP address or CIDR prefix`},
		{nil, map[string]string{"AGENTLEDGER_TRUSTED_PROXIES": "10.0.0.0/33"}, `error: AGENTLEDGER_TRUSTED_PROXIES: trusted proxy "10.0.0.0/33" is not`},
		{[]string{"--config", bad}, nil, `error: ` + bad + `: trusted_proxies: trusted proxy "10.0.0.0/33" is not`},
	} {
		getenv := func(k string) string { return tc.env[k] }
		cmd := newRootCmd(getenv, nil)
		if err := cmd.ParseFlags(tc.args); err != nil {
			t.Fatal(err)
		}
		cfg, err := parse(cmd.Flags(), getenv)
		var ue *usageError
		switch {
		case strings.HasPrefix(tc.want, "error: "):
			if want := strings.TrimPrefix(tc.want, "error: "); !errors.As(err, &ue) || !strings.Contains(err.Error(), want) {
				t.Errorf("%v %v: %v, want a usage error containing %q", tc.args, tc.env, err, want)
			}
		case err != nil:
			t.Errorf("%v %v: %v", tc.args, tc.env, err)
		case strings.Join(cfg.API.TrustedProxies, "|") != tc.want:
			t.Errorf("%v %v: trusted proxies %q, want %q", tc.args, tc.env, cfg.API.TrustedProxies, tc.want)
		}
	}
}
