package main

import "testing"

// --pgbouncer implies poll-only and no-migrate, from the flag, the
// environment or the config file alike: the two settings' own defaults
// must not set them back.
func TestPgBouncerImpliesPollOnlyAndNoMigrate(t *testing.T) {
	t.Parallel()
	url := "postgres://agent@pgbouncer:6432/agentledger"
	for name, c := range map[string]struct {
		args []string
		env  map[string]string
	}{
		"flag": {args: []string{"--pgbouncer", "--database-url", url}},
		"env":  {env: map[string]string{"AGENTLEDGER_PGBOUNCER": "true", "DATABASE_URL": url}},
		"file": {args: []string{"--config", writeFile(t, t.TempDir(), "agentd.toml", "pgbouncer = true\ndatabase_url = \""+url+"\"\n")}},
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
		if !cfg.Database.PgBouncer || !cfg.Worker.PollOnly || !cfg.Database.NoMigrate {
			t.Errorf("%s: pgbouncer %v, poll-only %v, no-migrate %v; want all three", name,
				cfg.Database.PgBouncer, cfg.Worker.PollOnly, cfg.Database.NoMigrate)
		}
	}
}
