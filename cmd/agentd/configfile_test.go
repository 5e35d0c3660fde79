package main

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/agentledger/agentledger/flow"
)

// A [[limit]] table takes any of a rate, a concurrency cap, a token rate
// and a breaker, at least one; a bad one names the file, the table's
// index, its target and the key at fault.
func TestConfigFileLimitParts(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	write := func(name, text string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(text), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	parseFile := func(path string) ([]flow.Limit, error) {
		cmd := newRootCmd(func(string) string { return "" }, nil)
		if err := cmd.ParseFlags([]string{"--config", path}); err != nil {
			t.Fatal(err)
		}
		cfg, err := parse(cmd.Flags(), func(string) string { return "" })
		if err != nil {
			return nil, err
		}
		return cfg.Limits, nil
	}
	good := write("good.toml", `
[[limit]]
target = "mcp:shop"
concurrency = 5
breaker_failures = 5
breaker_window = "2m"
breaker_cooldown = "45s"

[[limit]]
target = "model:API.openai.com"
rate = "60/min"
tokens = "90000/min"

[[limit]]
target = "http:*"
breaker_failures = 3
`)
	ls, err := parseFile(good)
	if err != nil {
		t.Fatal(err)
	}
	want := []flow.Limit{
		{Target: "mcp:shop", Concurrency: 5, Breaker: &flow.Breaker{Failures: 5, Window: 2 * time.Minute, Cooldown: 45 * time.Second}},
		{Target: "model:api.openai.com", Rate: flow.Rate{N: 60, Per: time.Minute}, Burst: 1, Tokens: flow.Rate{N: 90000, Per: time.Minute}},
		// The window and the cool-down default to 60s and 30s.
		{Target: "http:*", Breaker: &flow.Breaker{Failures: 3, Window: time.Minute, Cooldown: 30 * time.Second}},
	}
	if len(ls) != len(want) {
		t.Fatalf("limits %+v, want %+v", ls, want)
	}
	for i, w := range want {
		g := ls[i]
		if g.Target != w.Target || g.Rate != w.Rate || g.Burst != w.Burst || g.Concurrency != w.Concurrency ||
			g.Tokens != w.Tokens || g.Source != flow.SourceConfig || (g.Breaker == nil) != (w.Breaker == nil) ||
			(g.Breaker != nil && *g.Breaker != *w.Breaker) {
			t.Errorf("limit[%d] %+v (breaker %+v), want %+v (breaker %+v)", i, g, g.Breaker, w, w.Breaker)
		}
	}

	table := func(body string) string { return "[[limit]]\ntarget = \"mcp:a\"\n" + body }
	for name, c := range map[string]struct{ text, want string }{
		"none.toml":       {table(""), `limit[0] (target "mcp:a"): a limit needs at least one of rate, concurrency, tokens, breaker_failures`},
		"burst.toml":      {table("burst = 2\nconcurrency = 1\n"), `limit[0] (target "mcp:a"): burst: a burst needs a rate`},
		"conc0.toml":      {table("concurrency = 0\n"), `limit[0] (target "mcp:a"): concurrency: 0 must be 1..100000 calls in flight`},
		"concneg.toml":    {table("concurrency = -2\n"), `limit[0] (target "mcp:a"): concurrency: -2 must be 1..100000 calls in flight`},
		"tokenskind.toml": {table("tokens = \"100/min\"\n"), `limit[0] (target "mcp:a"): tokens: a token rate is for model endpoints (model:HOST), not mcp:a`},
		"tokensunit.toml": {"[[limit]]\ntarget = \"model:x\"\ntokens = \"100\"\n", `limit[0] (target "model:x"): tokens: "100" has no unit`},
		"tokenszero.toml": {"[[limit]]\ntarget = \"model:x\"\ntokens = \"0/min\"\n", `limit[0] (target "model:x"): tokens: 0/min must allow at least one call`},
		"failures.toml":   {table("breaker_failures = 0\n"), `limit[0] (target "mcp:a"): breaker_failures: 0 must be 1..1000000 failed calls`},
		"window.toml":     {table("breaker_failures = 2\nbreaker_window = \"soon\"\n"), `limit[0] (target "mcp:a"): breaker_window: "soon" is not a duration such as "60s" or "5m"`},
		"windowneg.toml":  {table("breaker_failures = 2\nbreaker_window = \"-1s\"\n"), `limit[0] (target "mcp:a"): breaker_window: -1s must be 1ms..24h0m0s`},
		"cooldown.toml":   {table("breaker_failures = 2\nbreaker_cooldown = \"48h\"\n"), `limit[0] (target "mcp:a"): breaker_cooldown: 48h must be 1ms..24h0m0s`},
		"alone.toml":      {table("breaker_window = \"60s\"\n"), `limit[0] (target "mcp:a"): breaker_failures: a breaker needs breaker_failures`},
		"alone2.toml":     {table("rate = \"1/s\"\nbreaker_cooldown = \"60s\"\n"), `limit[0] (target "mcp:a"): breaker_cooldown: a breaker needs breaker_failures`},
		"slack.toml":      {"[[limit]]\ntarget = \"slack-channel:*\"\nbreaker_failures = 2\n", `limit[0] (target "slack-channel:*"): breaker_failures: Slack targets take a rate only`},
		"second.toml":     {table("concurrency = 1\n") + "[[limit]]\ntarget = \"http:https://x.example\"\nconcurrency = 1\nbreaker_failures = 0\n", `limit[1] (target "http:https://x.example"): breaker_failures: 0 must be`},
		"key.toml":        {table("breaker_failure = 2\n"), `unknown setting "limit.breaker_failure" of a limit (target, rate, burst, concurrency, tokens, breaker_failures, breaker_window, breaker_cooldown)`},
		"type.toml":       {table("breaker_failures = 2\nbreaker_window = 60\n"), `breaker_window`},
	} {
		path := write(name, c.text)
		_, err := parseFile(path)
		var ue *usageError
		if !errors.As(err, &ue) || !strings.Contains(err.Error(), "config file "+path+": ") || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v, want a usage error naming the file and containing %q", name, err, c.want)
		}
	}
}

// A setting given as a table is refused without echoing the table (found
// by FuzzConfigFile): it could hold a password, as a database URL's.
func TestConfigFileTableValueNotEchoed(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "agentd.toml")
	if err := os.WriteFile(path, []byte(`database_url = { url = "postgres://agent:s3cret@db" }`+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	cmd := newRootCmd(func(string) string { return "" }, nil)
	if err := cmd.ParseFlags([]string{"--config", path}); err != nil {
		t.Fatal(err)
	}
	_, err := parse(cmd.Flags(), func(string) string { return "" })
	var ue *usageError
	if !errors.As(err, &ue) || strings.Contains(err.Error(), "s3cret") ||
		!strings.Contains(err.Error(), "config file "+path+": database_url: a table is not a value; use a string") {
		t.Fatalf("%v, want a usage error naming the setting, without its value", err)
	}
}
