package main

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// Secrets the configuration may hold, distinctive enough that finding one
// in an error means it was echoed.
const (
	fuzzDBPassword = "pw-4f1c9e2b7d"
	fuzzLLMKey     = "sk-7a3e5d9c1b"
	fuzzSlackToken = "xoxb-2c8f6a4e0d"
)

// configSeeds are config files of the package's tests, good and bad.
var configSeeds = []string{
	"lease = \"45s\"\nconcurrency = 9\nqueues = [\"a\", \"b\"]\npoll_only = true\ngrace = \"3s\"\n" +
		"[[mcp_server]]\nname = \"shop\"\ncommand = [\"shop-mcp\", \"--stdio\"]\nclasses = { refund = \"keyed\" }\n" +
		"[[mcp_server]]\nname = \"crm\"\nurl = \"https://crm.example/mcp\"\nheaders_file = \"/etc/crm.json\"\n" +
		"[grant.acme]\ntools = [\"http_request\"]\nhosts = [{ url = \"https://api.example.com\", secret_headers = true }]\nmax_tokens = 500\n" +
		"[[limit]]\ntarget = \"slack-channel:*\"\nrate = \"1/s\"\n[[limit]]\ntarget = \"http:https://Billing.internal:8080\"\nrate = \"60/min\"\nburst = 5\n" +
		"[[compensation]]\ntool = \"shop/charge\"\nundo = \"shop/refund\"\nargs = { charge = \"${self.body.id}\" }\n" +
		"[[tenant_share]]\ntenant = \"acme\"\nweight = 3\nmax_running = 20\n",
	"lease = \"soon\"\n", "leese = \"1s\"\n", "slack_token = \"x\"\n", "lease = \n", "lease = 1.5\n",
	"database_url = { password = \"x\" }\n", "database_url = 1.5\n", "pgbouncer = true\n", "config = \"other.toml\"\n",
	"[[mcp_server]]\nname = \"a\"\ncmd = [\"x\"]\n", "[grant.acme]\ntool = [\"x\"]\n",
	"[grant.acme]\nhosts = [{ url = \"ftp://x\" }]\n", "[grant.\"a b\"]\nall = true\n",
	"[[limit]]\ntarget = \"mcp:a\"\nrate = \"1/s\"\nburts = 2\n", "[[limit]]\ntarget = \"mcp:a\"\nrate = \"5\"\n",
	"[[limit]]\ntarget = \"mcp:a\"\nconcurrency = 5\nbreaker_failures = 5\nbreaker_window = \"2m\"\nbreaker_cooldown = \"45s\"\n",
	"[[limit]]\ntarget = \"model:x\"\ntokens = \"0/min\"\n", "[[limit]]\ntarget = \"smtp:x\"\nrate = \"1/s\"\n",
	"[[limit]]\ntarget = \"mcp:a\"\nbreaker_failures = 2\nbreaker_window = 60\n",
	"[[compensation]]\ntool = \"c\"\nundo = \"r\"\nargs = { x = \"${self.nope}\" }\n", "[[compensation]]\ntool = \"charge\"\n",
	"[[mcp_server]]\nname = \"a\"\ncommand = [\"x\"]\nclasses = { t = \"sometimes\" }\n",
	"[[tenant_share]]\ntenant = \"acme\"\nweight = 0\n", "[[tenant_share]]\ntenant = \"x\"\n[[tenant_share]]\ntenant = \"x\"\n",
	"mcp_server = 1\n", "limit = \"x\"\n", "[grant]\nacme = 1\n", "\xff\xfe", "a.b.c = 1\n",
}

// dbURLSeeds are values of database_url; PW stands for the password.
var dbURLSeeds = []string{
	`"postgres://agent:PW@db.example/agentledger"`, `{ url = "postgres://agent:PW@db" }`, `["postgres://agent:PW@db"]`,
	`[1, "PW"]`, `"postgres://agent:PW@db`, `'PW'`, `"""PW"""`, `PW`, "\"PW\"\nlease = \"soon\"", "\"PW\"\npgbouncer = \"maybe\"",
}

// FuzzConfigFile loads any bytes as agentd's config file, with secrets in
// the environment and a database URL holding a password: on the file's
// first line, followed by the fuzzed text (which can neither change nor
// continue that line); or as the fuzzed value of database_url, where PW
// stands for the password. It never panics; a refusal is a usage error
// naming the file and what is wrong; no error echoes a secret.
func FuzzConfigFile(f *testing.F) {
	for _, s := range configSeeds {
		f.Add(false, []byte(s))
	}
	for _, s := range dbURLSeeds {
		f.Add(true, []byte(s))
	}
	env := map[string]string{"AGENTLEDGER_LLM_API_KEY": fuzzLLMKey, "AGENTLEDGER_SLACK_TOKEN": fuzzSlackToken}
	getenv := func(k string) string { return env[k] }
	path := filepath.Join(f.TempDir(), "agentd.toml") // one fuzz worker calls one at a time
	f.Fuzz(func(t *testing.T, asURL bool, text []byte) {
		file := append([]byte("database_url = \"postgres://agent:"+fuzzDBPassword+"@db.example/agentledger\"\n"), text...)
		if asURL {
			file = append([]byte("database_url = "), bytes.ReplaceAll(text, []byte("PW"), []byte(fuzzDBPassword))...)
		}
		if err := os.WriteFile(path, file, 0o600); err != nil {
			t.Fatal(err)
		}
		cmd := newRootCmd(getenv, nil)
		if err := cmd.ParseFlags([]string{"--config", path}); err != nil {
			t.Fatal(err)
		}
		_, err := parse(cmd.Flags(), getenv)
		if err == nil {
			return
		}
		var ue *usageError
		msg := err.Error()
		switch {
		case !errors.As(err, &ue):
			t.Fatalf("%q: %v (%T), want a usage error", text, err, err)
		case !strings.Contains(msg, path):
			t.Fatalf("%q: %q does not name the file", text, msg)
		case strings.TrimSpace(strings.ReplaceAll(msg, path, "")) == "" || strings.HasSuffix(msg, ": "):
			t.Fatalf("%q: %q does not say what is wrong", text, msg)
		}
		for _, secret := range []string{fuzzDBPassword, fuzzLLMKey, fuzzSlackToken} {
			if strings.Contains(msg, secret) {
				t.Fatalf("%q: the error %q echoes a secret", text, msg)
			}
		}
	})
}
