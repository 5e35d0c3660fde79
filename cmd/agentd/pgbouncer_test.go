package main

import (
	"strings"
	"testing"
)

// --pgbouncer and --pgbouncer-prepared imply poll-only and no-migrate, from
// the flag, the environment or the config file alike: the two settings'
// own defaults must not set them back. --pgbouncer-prepared implies
// --pgbouncer.
func TestPgBouncerImpliesPollOnlyAndNoMigrate(t *testing.T) {
	t.Parallel()
	url := "postgres://agent@pgbouncer:6432/agentledger"
	for name, c := range map[string]struct {
		args     []string
		env      map[string]string
		prepared bool
	}{
		"flag":          {args: []string{"--pgbouncer", "--database-url", url}},
		"env":           {env: map[string]string{"AGENTLEDGER_PGBOUNCER": "true", "DATABASE_URL": url}},
		"file":          {args: []string{"--config", writeFile(t, t.TempDir(), "agentd.toml", "pgbouncer = true\ndatabase_url = \""+url+"\"\n")}},
		"prepared flag": {args: []string{"--pgbouncer-prepared", "--database-url", url}, prepared: true},
		"prepared env":  {env: map[string]string{"AGENTLEDGER_PGBOUNCER_PREPARED": "true", "DATABASE_URL": url}, prepared: true},
		"prepared file": {args: []string{"--config", writeFile(t, t.TempDir(), "agentd.toml", "pgbouncer-prepared = true\ndatabase_url = \""+url+"\"\n")},
			prepared: true},
	} {
		getenv := func(k string) string { return c.env[k] }
		cmd := newRootCmd(getenv, nil)
		if err := cmd.ParseFlags(c.args); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		cfg, err := parse(cmd.Flags(), getenv)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if !cfg.Database.PgBouncer || !cfg.Worker.PollOnly || !cfg.Database.NoMigrate || cfg.Database.PgBouncerPrepared != c.prepared {
			t.Errorf("%s: pgbouncer %v, prepared %v, poll-only %v, no-migrate %v; want all four but prepared %v", name,
				cfg.Database.PgBouncer, cfg.Database.PgBouncerPrepared, cfg.Worker.PollOnly, cfg.Database.NoMigrate, c.prepared)
		}
	}
}

// Either flag without a URL is refused, naming the flag that was set.
func TestPgBouncerWantsAURL(t *testing.T) {
	t.Parallel()
	for _, flag := range []string{"--pgbouncer", "--pgbouncer-prepared"} {
		getenv := func(string) string { return "" }
		cmd := newRootCmd(getenv, nil)
		if err := cmd.ParseFlags([]string{flag}); err != nil {
			t.Fatalf("%s: %v", flag, err)
		}
		_, err := parse(cmd.Flags(), getenv)
		if err == nil || !strings.Contains(err.Error(), flag+": set DATABASE_URL to the PgBouncer's address") {
			t.Errorf("%s without a URL: %v, want a refusal naming it", flag, err)
		}
	}
}
