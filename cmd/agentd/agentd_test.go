package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/agentledger/agentledger"
	"github.com/agentledger/agentledger/claims"
	"github.com/agentledger/agentledger/flow"
	"github.com/agentledger/agentledger/internal/test/testdb"
)

// runAsAgentd makes the test binary act as agentd when re-executed.
const runAsAgentd = "AGENTD_TEST_RUN_MAIN"

func TestMain(m *testing.M) {
	if os.Getenv(runAsAgentd) != "" {
		main()
		os.Exit(0)
	}
	testdb.Main(m)
}

func agentd(t *testing.T, env []string, args ...string) *exec.Cmd {
	cmd := exec.Command(os.Args[0], args...)
	// Keep the daemon's files (notifications) out of the user's state dir,
	// and its HTTP server off the default port (tests run in parallel).
	cmd.Env = append(append(os.Environ(), runAsAgentd+"=1", "AGENTLEDGER_STATE_DIR="+t.TempDir(),
		"AGENTLEDGER_LISTEN=127.0.0.1:0"), env...)
	return cmd
}

func TestConfigErrorsNameTheirSource(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		args []string
		env  map[string]string
		want string
	}{
		{[]string{"--lease", "3x"}, nil, `--lease: "3x" is not a positive duration`},
		{[]string{"--grace=-1s"}, nil, `--grace: "-1s" is not a positive duration`},
		{nil, map[string]string{"AGENTLEDGER_CONCURRENCY": "many"}, `AGENTLEDGER_CONCURRENCY: "many" is not a positive integer`},
		{[]string{"--poll-only=maybe"}, nil, `--poll-only: "maybe" is not true or false`},
		{[]string{"--log-format", "xml"}, nil, `--log-format: "xml" is not text or json`},
		{[]string{"--log-level", "loud"}, nil, `--log-level: "loud" is not debug`},
		{[]string{"--llm-base-url", "https://r.openai.azure.com", "--llm-azure-api-version", "latest"}, nil,
			`--llm-azure-api-version: azure api-version "latest" is not a date like 2024-10-21`},
		{[]string{"--llm-base-url", "localhost:8080/v1"}, nil, `--llm-base-url: base URL "localhost:8080/v1" is not an http(s) URL like https://api.openai.com/v1`},
		{nil, map[string]string{"AGENTLEDGER_LLM_AZURE_API_VERSION": "2024-10-21"}, `AGENTLEDGER_LLM_AZURE_API_VERSION: an azure api-version needs the base URL`},
		{[]string{"--llm-base-url", "https://r.openai.azure.com/openai", "--llm-azure-api-version", "2024-10-21"}, nil,
			`give the resource's endpoint without /openai`},
		{[]string{"--llm-base-url", "https://r.openai.azure.com", "--llm-azure-api-version", "2024-10-21", "--llm-model", "a/b"}, nil,
			`model "a/b" cannot name an Azure deployment`},
		{[]string{"--http-timeouts", "https://slow.internal:2m"}, nil,
			`--http-timeouts: "https://slow.internal:2m" must be origin=duration, as in https://reports.internal=2m`},
		{nil, map[string]string{"AGENTLEDGER_HTTP_TIMEOUTS": "slow.internal=soon"}, `AGENTLEDGER_HTTP_TIMEOUTS: "slow.internal=soon" must be origin=duration`},
		{[]string{"--http-allowed-hosts", "api.example,ftp://x y"}, nil, `--http-allowed-hosts: host "ftp://x y" must be written host[:port]`},
		{nil, map[string]string{"AGENTLEDGER_UNSAFE_HTTP_ALLOWED_HOSTS": "http://"}, `AGENTLEDGER_UNSAFE_HTTP_ALLOWED_HOSTS: `},
		{[]string{"--approvers", "U012AB,bob"}, nil, `--approvers: approver "bob" is not a Slack user or group id`},
		{[]string{"--approval-timeout", "721h"}, nil, `--approval-timeout: 721h0m0s is longer than 720h0m0s`},
		{[]string{"extra"}, nil, `unexpected argument "extra"`},
		{[]string{"--no-such-flag"}, nil, `unknown flag: --no-such-flag`},
	} {
		cmd := newRootCmd(func(k string) string { return tc.env[k] }, nil)
		cmd.SetArgs(tc.args)
		cmd.SetOut(&bytes.Buffer{})
		cmd.SetErr(&bytes.Buffer{})
		err := cmd.Execute()
		var u *usageError
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%v %v: error %v, want it to contain %q", tc.args, tc.env, err, tc.want)
		} else if !errors.As(err, &u) {
			t.Errorf("%v: %v is not a usage error (exit 2)", tc.args, err)
		}
	}
}

func TestConfigDefaultsAndEnvironment(t *testing.T) {
	t.Parallel()
	getenv := func(k string) string {
		return map[string]string{"AGENTLEDGER_LEASE": "1m", "AGENTLEDGER_QUEUES": "a, b",
			"AGENTLEDGER_HTTP_TIMEOUTS": "https://reports.internal=2m, 127.0.0.1:8443=5s"}[k]
	}
	cmd := newRootCmd(getenv, nil)
	if err := cmd.ParseFlags([]string{"--poll-only", "--concurrency", "7"}); err != nil {
		t.Fatal(err)
	}
	cfg, err := parse(cmd.Flags(), getenv)
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Worker.Lease != time.Minute || !cfg.Worker.PollOnly || cfg.Worker.Concurrency != 7 || cfg.Worker.BatchSize != 100 ||
		strings.Join(cfg.Worker.Queues, "|") != "a|b" || cfg.Worker.Grace != 10*time.Second || cfg.Database.NoMigrate ||
		cfg.HTTPTools.Timeout != 30*time.Second || cfg.HTTPTools.Timeouts["https://reports.internal"] != 2*time.Minute ||
		cfg.HTTPTools.Timeouts["127.0.0.1:8443"] != 5*time.Second {
		t.Fatalf("config %+v", cfg)
	}
}

// The daemon as a user runs it: it migrates an empty database, works tasks,
// and on SIGTERM releases the lease of a task that outlives the grace period.
func TestDaemonEndToEnd(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	url := testdb.Empty(t)
	cmd := agentd(t, []string{"DATABASE_URL=" + url}, "--grace", "300ms", "--worker-id", "e2e", "--lease", "5s")
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	out := make(chan string, 100)
	go func() {
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			out <- sc.Text()
		}
	}()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer cmd.Process.Kill() //nolint:errcheck // a no-op once it has exited
	logs := lines(stderr)
	waitLog(t, logs, "worker started")

	s := claims.New(testdb.Open(t, url))
	echo, err := s.Enqueue(ctx, claims.EnqueueParams{Kind: "echo", Payload: json.RawMessage(`{"x":1}`)})
	if err != nil {
		t.Fatal(err)
	}
	sleep, err := s.Enqueue(ctx, claims.EnqueueParams{Kind: "sleep", Payload: json.RawMessage(`{"ms":600000}`)})
	if err != nil {
		t.Fatal(err)
	}
	// A steps task: a child task (local effect) and a notification (console
	// sink), each through the ledger.
	stepsTask, err := s.Enqueue(ctx, claims.EnqueueParams{Kind: "steps", Payload: json.RawMessage(`{"steps":[
		{"tool":"create_task","args":{"kind":"echo","payload":{"from":"parent"}}},
		{"tool":"notify","args":{"channel":"ops","text":"child ${steps.0.body.task_id} created"}}]}`)})
	if err != nil {
		t.Fatal(err)
	}
	waitTask(t, s, echo.Task.ID, agentledger.StateSucceeded)
	waitTask(t, s, sleep.Task.ID, agentledger.StateRunning)
	waitTask(t, s, stepsTask.Task.ID, agentledger.StateSucceeded)
	// No model endpoint is configured: agent tasks fail with one clear error.
	agentTask, err := s.Enqueue(ctx, claims.EnqueueParams{Kind: "agent", Payload: json.RawMessage(`{"prompt":"hi"}`)})
	if err != nil {
		t.Fatal(err)
	}
	waitTask(t, s, agentTask.Task.ID, agentledger.StateDead)
	if got, _ := s.Get(ctx, "", agentTask.Task.ID); !strings.Contains(got.LastError, "agent tasks need a model endpoint: set AGENTLEDGER_LLM_BASE_URL") {
		t.Fatalf("agent task error %q", got.LastError)
	}
	waitOut(t, out, "[notify #ops] child ")

	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	waitLog(t, logs, "released leases")
	for range logs { // drain until the process closes stderr
	}
	if err := cmd.Wait(); err != nil {
		t.Fatalf("agentd exited with %v after SIGTERM, want 0", err)
	}
	got, _ := s.Get(ctx, "", sleep.Task.ID)
	if got.State != agentledger.StateQueued || got.LeaseOwner != "" {
		t.Fatalf("sleep task after shutdown: %s owned by %q, want queued and released", got.State, got.LeaseOwner)
	}
}

func TestNoMigrateRefusesAnOldSchema(t *testing.T) {
	t.Parallel()
	cmd := agentd(t, []string{"DATABASE_URL=" + testdb.Empty(t)}, "--no-migrate")
	out, err := cmd.CombinedOutput()
	var exit *exec.ExitError
	if !errors.As(err, &exit) || exit.ExitCode() != 1 || !strings.Contains(string(out), "schema is at version 0") {
		t.Fatalf("exit %v, output:\n%s", err, out)
	}
}

func TestUnreachableDatabaseIsAClearError(t *testing.T) {
	t.Parallel()
	cmd := agentd(t, []string{"DATABASE_URL=postgres://u:topsecret@127.0.0.1:1/db?connect_timeout=2"})
	out, err := cmd.CombinedOutput()
	if err == nil || !strings.Contains(string(out), "connecting to postgres://u:xxxxx@127.0.0.1:1/db") ||
		strings.Contains(string(out), "topsecret") {
		t.Fatalf("exit %v, output:\n%s", err, out)
	}
}

func waitOut(t *testing.T, out <-chan string, want string) {
	t.Helper()
	select {
	case l := <-out:
		if !strings.Contains(l, want) {
			t.Fatalf("agentd printed %q, want %q", l, want)
		}
	case <-time.After(30 * time.Second):
		t.Fatalf("agentd did not print %q", want)
	}
}

// lines sends each line r yields, and closes when r ends.
func lines(r io.Reader) <-chan string {
	out := make(chan string, 100)
	go func() {
		sc := bufio.NewScanner(r)
		for sc.Scan() {
			out <- sc.Text()
		}
		close(out)
	}()
	return out
}

func waitLog(t *testing.T, logs <-chan string, want string) {
	t.Helper()
	timeout := time.After(30 * time.Second)
	for {
		select {
		case l, ok := <-logs:
			if !ok {
				t.Fatalf("agentd exited before logging %q", want)
			}
			if strings.Contains(l, want) {
				return
			}
		case <-timeout:
			t.Fatalf("agentd did not log %q within 30s", want)
		}
	}
}

func waitTask(t *testing.T, s *claims.Store, id int64, want agentledger.TaskState) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		got, err := s.Get(context.Background(), "", id)
		if err != nil {
			t.Fatal(err)
		}
		if got.State == want {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("task %d is %s, want %s", id, got.State, want)
		}
		time.Sleep(10 * time.Millisecond) // polling a condition in another process
	}
}

// The config file fills what flags and the environment leave; a bad value
// names the file and the key.
func TestConfigFile(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	write := func(name, text string) string { return writeFile(t, dir, name, text) }
	good := write("good.toml", "lease = \"45s\"\nconcurrency = 9\nqueues = [\"a\", \"b\"]\npoll_only = true\ngrace = \"3s\"\n"+
		"[[mcp_server]]\nname = \"shop\"\ncommand = [\"shop-mcp\", \"--stdio\"]\nclasses = { refund = \"keyed\" }\napprove_destructive = true\n"+
		"[[mcp_server]]\nname = \"crm\"\nurl = \"https://crm.example/mcp\"\nheaders_file = \"/etc/crm.json\"\n"+
		"[grant.acme]\ntools = [\"http_request\"]\nhosts = [{ url = \"https://api.example.com\", secret_headers = true }]\nmax_tokens = 500\n"+
		"[[limit]]\ntarget = \"slack-channel:*\"\nrate = \"1/s\"\n[[limit]]\ntarget = \"http:https://Billing.internal:8080\"\nrate = \"60/min\"\nburst = 5\n"+
		"[[compensation]]\ntool = \"shop/charge\"\nundo = \"shop/refund\"\nargs = { charge = \"${self.body.id}\" }\n")
	getenv := func(k string) string { return map[string]string{"AGENTLEDGER_GRACE": "2s"}[k] }
	cmd := newRootCmd(getenv, nil)
	if err := cmd.ParseFlags([]string{"--config", good, "--concurrency", "7"}); err != nil {
		t.Fatal(err)
	}
	cfg, err := parse(cmd.Flags(), getenv)
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Worker.Lease != 45*time.Second || cfg.Worker.Concurrency != 7 || strings.Join(cfg.Worker.Queues, "|") != "a|b" ||
		!cfg.Worker.PollOnly || cfg.Worker.Grace != 2*time.Second {
		t.Fatalf("config %+v: want lease from the file, concurrency from the flag, grace from the environment", cfg)
	}
	if m := cfg.MCPServers; len(m) != 2 || m[0].Name != "shop" || strings.Join(m[0].Command, " ") != "shop-mcp --stdio" ||
		m[0].Classes["refund"] != "keyed" || !m[0].ApproveDestructive || m[1].ApproveDestructive ||
		m[1].URL != "https://crm.example/mcp" || m[1].HeadersFile != "/etc/crm.json" {
		t.Fatalf("MCP servers %+v", m)
	}
	if g := cfg.Policy.Grants["acme"]; g == nil || g.Tools[0] != "http_request" || len(g.Hosts) != 1 || !g.Hosts[0].SecretHeaders ||
		g.Hosts[0].URL != "https://api.example.com" || g.MaxTokens != 500 {
		t.Fatalf("grants %+v", cfg.Policy.Grants)
	}
	if l := cfg.Policy.Limits; len(l) != 2 || l[0].Target != "slack-channel:*" || l[0].Rate.String() != "1/s" || l[0].Burst != 1 ||
		l[0].Source != flow.SourceConfig || l[1].Target != "http:https://billing.internal:8080" || l[1].Burst != 5 {
		t.Fatalf("limits %+v", cfg.Policy.Limits)
	}
	if c := cfg.Policy.Compensations["shop/charge"]; len(cfg.Policy.Compensations) != 1 || c.Tool != "shop/refund" || string(c.Args) != `{"charge":"${self.body.id}"}` {
		t.Fatalf("compensations %+v", cfg.Policy.Compensations)
	}
	for file, want := range map[string]string{
		write("bad.toml", "lease = \"soon\"\n"):                                                                                    "bad.toml: lease: \"soon\" is not a positive duration",
		write("unknown.toml", "leese = \"1s\"\n"):                                                                                  `unknown setting "leese"`,
		write("secret.toml", "slack_token = \"x\"\n"):                                                                              `unknown setting "slack_token"`,
		write("syntax.toml", "lease = \n"):                                                                                         "syntax.toml",
		write("type.toml", "lease = 1.5\n"):                                                                                        "use a string",
		write("mcpkey.toml", "[[mcp_server]]\nname = \"a\"\ncmd = [\"x\"]\n"):                                                      `unknown setting "mcp_server.cmd"`,
		write("grantkey.toml", "[grant.acme]\ntool = [\"x\"]\n"):                                                                   `unknown setting "grant.acme.tool"`,
		write("granthost.toml", "[grant.acme]\nhosts = [{ url = \"ftp://x\" }]\n"):                                                 `grant.acme: host: "ftp://x" must start with https://`,
		write("limitkey.toml", "[[limit]]\ntarget = \"mcp:a\"\nrate = \"1/s\"\nburts = 2\n"):                                       `unknown setting "limit.burts"`,
		write("limitrate.toml", "[[limit]]\ntarget = \"mcp:a\"\nrate = \"5\"\n"):                                                   `limit[0] (target "mcp:a"): rate: "5" has no unit`,
		write("limitzero.toml", "[[limit]]\ntarget = \"mcp:a\"\nrate = \"0/min\"\n"):                                               `limit[0] (target "mcp:a"): rate: 0/min must allow at least one call`,
		write("limitburst.toml", "[[limit]]\ntarget = \"mcp:a\"\nrate = \"1/s\"\nburst = 0\n"):                                     `limit[0] (target "mcp:a"): burst: 0 must be at least 1`,
		write("limitkind.toml", "[[limit]]\ntarget = \"mcp:a\"\nrate = \"1/s\"\n[[limit]]\ntarget = \"smtp:x\"\nrate = \"1/s\"\n"): `limit[1] (target "smtp:x"): target: "smtp:x": unknown kind "smtp"`,
		write("limittwice.toml", "[[limit]]\ntarget = \"mcp:a\"\nrate = \"1/s\"\n[[limit]]\ntarget = \"mcp:a\"\nrate = \"2/s\"\n"): `limit[1] (target "mcp:a"): target: mcp:a has another [[limit]] table`,
		write("compkey.toml", "[[compensation]]\ntool = \"c\"\nundo = \"r\"\nargz = {}\n"):                                         `unknown setting "compensation.argz" of a compensation (tool, undo, args)`,
		write("compundo.toml", "[[compensation]]\ntool = \"charge\"\n"):                                                            `compensation[0] (tool "charge"): undo: name the tool that undoes a call of charge`,
		write("comptwice.toml", "[[compensation]]\ntool = \"c\"\nundo = \"r\"\n[[compensation]]\ntool = \"c\"\nundo = \"v\"\n"):    `compensation[1] (tool "c"): tool: c has another [[compensation]] table`,
		write("compself.toml", "[[compensation]]\ntool = \"c\"\nundo = \"r\"\nargs = { x = \"${self.nope}\" }\n"):                  `${self.nope} must name status, body[.path] or external_ref`,
		write("mcpclass.toml", "[[mcp_server]]\nname = \"a\"\ncommand = [\"x\"]\nclasses = { t = \"sometimes\" }\n"):               `"sometimes" is not pure, keyed or unsafe`,
	} {
		cmd := newRootCmd(func(string) string { return "" }, nil)
		if err := cmd.ParseFlags([]string{"--config", file}); err != nil {
			t.Fatal(err)
		}
		_, err := parse(cmd.Flags(), func(string) string { return "" })
		var ue *usageError
		if !errors.As(err, &ue) || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: %v, want a usage error containing %q", filepath.Base(file), err, want)
		}
	}
}

// writeFile writes text to dir/name (mode 0600, as a config holding
// secrets would be) and returns its path.
func writeFile(t *testing.T, dir, name, text string) string {
	t.Helper()
	p := filepath.Join(dir, name)
	if err := os.WriteFile(p, []byte(text), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

// runTool runs a steps task of one call of tool with no arguments on the
// daemon of database url, and returns it once it succeeded.
func runTool(t *testing.T, url, tool string) *agentledger.Task {
	t.Helper()
	ctx := context.Background()
	s := claims.New(testdb.Open(t, url))
	payload := fmt.Sprintf(`{"steps":[{"tool":%q,"args":{}}]}`, tool)
	r, err := s.Enqueue(ctx, claims.EnqueueParams{Kind: "steps", Payload: json.RawMessage(payload), MaxAttempts: 1})
	if err != nil {
		t.Fatal(err)
	}
	waitTask(t, s, r.Task.ID, agentledger.StateSucceeded)
	task, err := s.Get(ctx, "", r.Task.ID)
	if err != nil {
		t.Fatal(err)
	}
	return task
}
