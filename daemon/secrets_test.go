package daemon_test

import (
	"bytes"
	"fmt"
	"log/slog"
	"strings"
	"testing"

	"github.com/agentledger/agentledger/daemon"
)

// A Config printed or logged whole shows neither the model's API key nor
// the Slack token, whatever the verb or handler, and still shows the
// settings beside them.
func TestConfigHidesSecrets(t *testing.T) {
	const key, token, password = "sk-do-not-print", "xoxb-do-not-print", "pw-do-not-print"
	cfg := daemon.Config{
		Model:  daemon.Model{BaseURL: "http://proxy:" + password + "@model.test/v1", APIKey: key, Name: "small"},
		Notify: daemon.Notifications{SlackToken: token, SlackAPIURL: "http://slack.test/api"},
	}
	var outs []string
	for _, verb := range []string{"%v", "%+v", "%#v", "%s", "%q", "%x"} {
		outs = append(outs, fmt.Sprintf(verb, cfg), fmt.Sprintf(verb, cfg.Model), fmt.Sprintf(verb, cfg.Notify))
	}
	for _, h := range []func(*bytes.Buffer) slog.Handler{
		func(b *bytes.Buffer) slog.Handler { return slog.NewTextHandler(b, nil) },
		func(b *bytes.Buffer) slog.Handler { return slog.NewJSONHandler(b, nil) },
	} {
		var b bytes.Buffer
		slog.New(h(&b)).Info("config", "cfg", cfg, "model", cfg.Model, "notify", cfg.Notify)
		outs = append(outs, b.String())
	}
	for _, out := range outs {
		if strings.Contains(out, key) || strings.Contains(out, token) || strings.Contains(out, password) {
			t.Errorf("a secret is shown: %s", out)
		}
	}
	for _, want := range []string{`Name:"small"`, `BaseURL:"http://proxy:xxxxx@model.test/v1"`, "APIKey:(set)", "SlackToken:(set)", `SlackAPIURL:"http://slack.test/api"`} {
		if s := fmt.Sprintf("%+v", cfg); !strings.Contains(s, want) {
			t.Errorf("%%+v of the config lacks %s: %s", want, s)
		}
	}
}
