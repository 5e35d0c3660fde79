package main

import (
	"errors"
	"os/exec"
	"strings"
	"testing"

	"github.com/spf13/pflag"

	"github.com/agentledger/agentledger/daemon"
)

// A mistyped flag gets the flags probably meant and the way to help; it is
// a usage error (exit 2) and nothing starts.
func TestMistypedFlagSuggestsOne(t *testing.T) {
	t.Parallel()
	for args, want := range map[string]string{
		"--dmeo":     "agentd: unknown flag: --dmeo\n\nDid you mean this?\n\t--demo\n\nRun 'agentd --help' for usage.\n",
		"--graec=1s": "agentd: unknown flag: --graec\n\nDid you mean this?\n\t--grace\n\nRun 'agentd --help' for usage.\n",
		"--zzzzzz":   "agentd: unknown flag: --zzzzzz\n\nRun 'agentd --help' for usage.\n",
	} {
		out, err := agentd(t, nil, args).CombinedOutput()
		var exit *exec.ExitError
		if !errors.As(err, &exit) || exit.ExitCode() != 2 || string(out) != want {
			t.Errorf("agentd %s: %v, output:\n%s\nwant exit 2 and:\n%s", args, err, out, want)
		}
	}
}

// agentd's retention flags default to the daemon package's windows: an
// embedder who leaves them zero gets what agentd does.
func TestRetentionDefaultsAreTheDaemons(t *testing.T) {
	fs := pflag.NewFlagSet("agentd", pflag.ContinueOnError)
	register(fs, func(string) string { return "" })
	c, err := parseFlags(fs)
	if err != nil {
		t.Fatal(err)
	}
	if got := c.Maintenance.Retain; got != daemon.DefaultRetention {
		t.Fatalf("agentd's retention defaults %+v, the daemon's %+v", got, daemon.DefaultRetention)
	}
}

// --help shows a URL's default taken from the environment without its
// password: DATABASE_URL often holds one.
func TestHelpHidesAURLsPassword(t *testing.T) {
	t.Parallel()
	out, err := agentd(t, []string{"DATABASE_URL=postgres://agentledger:Pw-s3cr3t-XYZ@127.0.0.1:7621/agentledger",
		"AGENTLEDGER_LLM_BASE_URL=https://user:llm-s3cr3t@llm.internal/v1"}, "--help").CombinedOutput()
	if err != nil {
		t.Fatalf("agentd --help: %v\n%s", err, out)
	}
	for _, secret := range []string{"Pw-s3cr3t-XYZ", "llm-s3cr3t"} {
		if strings.Contains(string(out), secret) {
			t.Errorf("--help shows %s:\n%s", secret, out)
		}
	}
	if !strings.Contains(string(out), `(default "postgres://agentledger:xxxxx@127.0.0.1:7621/agentledger")`) {
		t.Errorf("--help lacks the database URL's default, its password hidden:\n%s", out)
	}
}
