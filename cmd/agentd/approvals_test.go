package main

import (
	"bytes"
	"errors"
	"strings"
	"testing"
)

// The approvals settings: a channel by default, a bad one refused naming
// its source, and the signing secret from the environment or a file, not
// both (and never echoed).
func TestApprovalsSettings(t *testing.T) {
	t.Parallel()
	getenv := func(string) string { return "" }
	cmd := newRootCmd(getenv, nil)
	if err := cmd.ParseFlags(nil); err != nil {
		t.Fatal(err)
	}
	cfg, err := parse(cmd.Flags(), getenv)
	if err != nil {
		t.Fatal(err)
	}
	if a := cfg.Notify.Approvals; a.Channel != "approvals" || a.SigningSecret != "" || a.SigningSecretFile != "" {
		t.Fatalf("default approvals settings: %v", a)
	}
	const secret = "0ne-s1gn1ng-s3cr3t"
	for _, tc := range []struct {
		args []string
		env  map[string]string
		want string
	}{
		{[]string{"--approvals-channel", "two words"}, nil, `--approvals-channel: "two words" must be a Slack channel name or ID`},
		{nil, map[string]string{"AGENTLEDGER_APPROVALS_CHANNEL": strings.Repeat("c", 81)}, `AGENTLEDGER_APPROVALS_CHANNEL: "ccc`},
		{[]string{"--slack-signing-secret-file", "/nonexistent/secret"}, map[string]string{"AGENTLEDGER_SLACK_SIGNING_SECRET": secret},
			"both AGENTLEDGER_SLACK_SIGNING_SECRET and --slack-signing-secret-file are set"},
	} {
		cmd := newRootCmd(func(k string) string { return tc.env[k] }, nil)
		cmd.SetArgs(tc.args)
		cmd.SetOut(&bytes.Buffer{})
		cmd.SetErr(&bytes.Buffer{})
		err := cmd.Execute()
		var u *usageError
		if err == nil || !strings.Contains(err.Error(), tc.want) || strings.Contains(err.Error(), secret) {
			t.Errorf("%v %v: error %v, want it to contain %q", tc.args, tc.env, err, tc.want)
		} else if !errors.As(err, &u) {
			t.Errorf("%v: %v is not a usage error (exit 2)", tc.args, err)
		}
	}
}
