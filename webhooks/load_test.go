package webhooks_test

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentledger/agentledger"
	"github.com/agentledger/agentledger/webhooks"
)

func writeFile(t *testing.T, dir, name, content string) string {
	t.Helper()
	p := filepath.Join(dir, name)
	if err := os.WriteFile(p, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

// Not parallel: it sets an environment variable.
func TestLoadSources(t *testing.T) {
	dir := t.TempDir()
	t.Setenv("WEBHOOKS_TEST_GH_SECRET", ghSecret)
	writeFile(t, dir, "slack.secret", "\n"+slackSecret+"\n")
	path := writeFile(t, dir, "sources.json", `[
  {"name": "gh", "type": "github", "secret_env": "WEBHOOKS_TEST_GH_SECRET",
   "tenant": "acme", "queue": "hooks", "kind": "github_event", "priority": 7, "max_attempts": 3},
  {"name": "slack", "type": "slack", "secret_file": "slack.secret", "kind": "slack_event"},
  {"name": "ci", "type": "hmac", "secret": "`+ciSecret+`", "header": "X-Signature",
   "delivery_header": "X-Delivery", "event_header": "X-Event", "kind": "ci_event", "payload": "body"}
]`)
	got, err := webhooks.LoadSources(path)
	if err != nil {
		t.Fatal(err)
	}
	want := testSources()
	for i := range want {
		if err := want[i].Validate(); err != nil {
			t.Fatal(err)
		}
	}
	if len(got) != len(want) {
		t.Fatalf("%d sources, want %d", len(got), len(want))
	}
	for i := range want {
		if got[i] != want[i] { // compares the secrets too
			t.Errorf("source %d: %v, want %v", i, got[i], want[i])
		}
	}

	// The loaded sources serve deliveries.
	e := newEnv(t, got, nil)
	if a := e.github(ghSecret, "l1", "push", pushBody); a.status != 202 {
		t.Fatalf("%d %s", a.status, a.raw)
	}

	t.Setenv("WEBHOOKS_TEST_EMPTY", "")
	for _, tc := range []struct {
		file string
		want string
	}{
		{`[{"name":"gh","type":"github","kind":"k"}]`, `source 0 ("gh"): secret: is required`},
		{`[{"name":"gh","type":"github","kind":"k","secret":"` + ghSecret + `","secret_env":"X"}]`, `source 0 ("gh"): secret: set only one`},
		{`[{"name":"gh","type":"github","kind":"k","secret_env":"WEBHOOKS_TEST_UNSET_VAR"}]`, `source 0 ("gh"): secret_env: $WEBHOOKS_TEST_UNSET_VAR is not set`},
		{`[{"name":"gh","type":"github","kind":"k","secret_env":"WEBHOOKS_TEST_EMPTY"}]`, `secret_env: $WEBHOOKS_TEST_EMPTY is empty`},
		{`[{"name":"gh","type":"github","kind":"k","secret_file":"missing.secret"}]`, `source 0 ("gh"): secret_file: reading ` + filepath.Join(dir, "missing.secret")},
		{`[{"name":"ok","type":"slack","kind":"k","secret":"a"},{"name":"gh","type":"gitlab","kind":"k","secret":"` + ghSecret + `"}]`, `source 1 ("gh"): type: "gitlab"`},
		{`[{"name":"Bad Name","type":"github","kind":"k","secret":"` + ghSecret + `"}]`, `source 0: name:`},
		{`[{"name":"gh","type":"hmac","kind":"k","secret":"` + ghSecret + `","header":"X-S"}]`, `source 0 ("gh"): delivery_header: is required`},
		{`[{"name":"gh","type":"github","kind":"k","secret":"a"},{"name":"gh","type":"github","kind":"k","secret":"b"}]`, `source 1 ("gh"): name: "gh" is used by another source`},
		{`[{"name":"gh","type":"github","kind":"k","secret":"` + ghSecret + `","secrt":"x"}]`, `source 0 ("gh"): invalid input: json: unknown field "secrt" (a source has name, type, secret`},
		{`[{"name":"ok","type":"slack","kind":"k","secret":"a"},{"name":"gh","type":"github","secret":"` + ghSecret + `","task":{"kind":"k"}}]`,
			`source 1 ("gh"): invalid input: json: unknown field "task" (a source has name, type, secret, secret_env or secret_file, header, delivery_header, event_header, timestamp_header, and the task it queues as tenant, queue, kind`},
		{`[{"name":"gh","type":"github","kind":"k","secret":` + ghSecret + `}]`, `malformed JSON at line 1, column`},
		{`[{"name":"gh","type":"github","kind":"k","secret":1234}]`, `source 0 ("gh"): invalid input: secret: a JSON number where string belongs`},
		{`[{"name":"gh","type":"github","kind":"k","secret":"` + ghSecret + `"}`, `the file ends before`},
		{`[] []`, `trailing data`},
	} {
		p := writeFile(t, dir, "bad.json", tc.file)
		_, err := webhooks.LoadSources(p)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: error %v, want %q", tc.file, err, tc.want)
			continue
		}
		if !errors.Is(err, agentledger.ErrInvalid) {
			t.Errorf("%v does not match ErrInvalid", err)
		}
		if !strings.Contains(err.Error(), p) {
			t.Errorf("%v does not name the file", err)
		}
		if strings.Contains(err.Error(), ghSecret) || strings.Contains(err.Error(), "'"+ghSecret[:1]+"'") {
			t.Errorf("%v shows the secret", err)
		}
	}
	if _, err := webhooks.LoadSources(filepath.Join(dir, "none.json")); err == nil {
		t.Error("a missing file loaded")
	}
}
