package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/agentledger/agentledger/flow"
	"github.com/agentledger/agentledger/internal/test/testdb"
)

// A [[limit]] table takes any of a rate, a concurrency cap, a token rate
// and a breaker, at least one; a bad one names the file, the table's
// index, its target and the key at fault.
func TestConfigFileLimitParts(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	write := func(name, text string) string { return writeFile(t, dir, name, text) }
	parseFile := func(path string) ([]flow.Limit, error) {
		cmd := newRootCmd(func(string) string { return "" }, nil)
		if err := cmd.ParseFlags([]string{"--config", path}); err != nil {
			t.Fatal(err)
		}
		cfg, err := parse(cmd.Flags(), func(string) string { return "" })
		if err != nil {
			return nil, err
		}
		return cfg.Policy.Limits, nil
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
		"rateint.toml":    {table("rate = 5\n"), `"limit.rate"): incompatible types: TOML value has type int64; destination has type string: write the value as a string, in quotes (a rate as "5/s"`},
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

// An [[mcp_server]] with a command takes env (values) and env_files
// (variables read from files); bad names, a variable given twice and an
// environment for a url server are refused, naming the file, the server
// and the variable, never a value.
func TestConfigFileMCPServerEnv(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	write := func(name, text string) string { return writeFile(t, dir, name, text) }
	parseFile := func(path string) (*config, error) {
		cmd := newRootCmd(func(string) string { return "" }, nil)
		if err := cmd.ParseFlags([]string{"--config", path}); err != nil {
			t.Fatal(err)
		}
		return parse(cmd.Flags(), func(string) string { return "" })
	}
	cfg, err := parseFile(write("good.toml", `
[[mcp_server]]
name = "shop"
command = ["shop-mcp", "--stdio"]
env = { SHOP_REGION = "eu", LANG = "de_DE.UTF-8" }
env_files = { SHOP_TOKEN = "/etc/agentledger/shop-token" }
`))
	if err != nil {
		t.Fatal(err)
	}
	if m := cfg.MCPServers; len(m) != 1 || len(m[0].Env) != 2 || m[0].Env["SHOP_REGION"] != "eu" || m[0].Env["LANG"] != "de_DE.UTF-8" ||
		len(m[0].EnvFiles) != 1 || m[0].EnvFiles["SHOP_TOKEN"] != "/etc/agentledger/shop-token" || m[0].InheritEnv {
		t.Fatalf("servers %v", m)
	}
	// Printed or logged, the values do not show.
	if s := fmt.Sprintf("%v %+v %#v %s", cfg.MCPServers[0], cfg.MCPServers, cfg.MCPServers[0], cfg.MCPServers[0]); strings.Contains(s, "eu") ||
		strings.Contains(s, "de_DE") || !strings.Contains(s, "SHOP_REGION=[redacted]") || !strings.Contains(s, "/etc/agentledger/shop-token") {
		t.Errorf("printed: %s", s)
	}
	var logged strings.Builder
	slog.New(slog.NewJSONHandler(&logged, nil)).Info("x", "server", cfg.MCPServers[0])
	if strings.Contains(logged.String(), "eu") || !strings.Contains(logged.String(), "SHOP_REGION=[redacted]") {
		t.Errorf("logged: %s", logged.String())
	}

	cmdTable := "[[mcp_server]]\nname = \"a\"\ncommand = [\"x\"]\n"
	for name, c := range map[string]struct{ text, want string }{
		"url.toml":      {"[[mcp_server]]\nname = \"crm\"\nurl = \"https://crm.example/mcp\"\nenv = { A = \"b\" }\n", `mcp_server[0] crm: env and env_files go with a command; a url server has no environment`},
		"urlfiles.toml": {"[[mcp_server]]\nname = \"crm\"\nurl = \"https://crm.example/mcp\"\nenv_files = { A = \"/f\" }\n", `mcp_server[0] crm: env and env_files go with a command`},
		"empty.toml":    {cmdTable + "env = { \"\" = \"v4lue\" }\n", `mcp_server[0] a: env: an environment variable needs a name`},
		"equals.toml":   {cmdTable + "env = { \"A=B\" = \"v4lue\" }\n", `mcp_server[0] a: env: environment variable "A=B": a name cannot hold '='`},
		"nul.toml":      {cmdTable + "env = { \"A\\u0000B\" = \"v4lue\" }\n", `mcp_server[0] a: env: environment variable "A\x00B": a name cannot hold a NUL byte`},
		"nulval.toml":   {cmdTable + "env = { TOKEN = \"v4l\\u0000ue\" }\n", `mcp_server[0] a: env: environment variable TOKEN: a value cannot hold a NUL byte`},
		"fileeq.toml":   {cmdTable + "env_files = { \"A=B\" = \"/f\" }\n", `mcp_server[0] a: env_files: environment variable "A=B": a name cannot hold '='`},
		"nofile.toml":   {cmdTable + "env_files = { TOKEN = \"\" }\n", `mcp_server[0] a: env_files: TOKEN names no file`},
		"twice.toml":    {cmdTable + "env = { TOKEN = \"v4lue\" }\nenv_files = { TOKEN = \"/f\" }\n", `mcp_server[0] a: TOKEN is in both env and env_files`},
		"type.toml":     {cmdTable + "env = { PORT = 8080 }\n", `mcp_server.env.PORT`},
		"key.toml":      {cmdTable + "environment = { A = \"v4lue\" }\n", `unknown setting "mcp_server.environment" of an MCP server (name, command, url, headers_file, env, env_files, classes, approve_destructive)`},
	} {
		path := write(name, c.text)
		_, err := parseFile(path)
		var ue *usageError
		if !errors.As(err, &ue) || !strings.Contains(err.Error(), "config file "+path+": ") || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v, want a usage error naming the file and containing %q", name, err, c.want)
		}
		if err != nil && (strings.Contains(err.Error(), "v4l") || strings.Contains(err.Error(), "8080")) {
			t.Errorf("%s: the error %q echoes a value", name, err)
		}
	}
}

// envServerArg makes the test binary, re-executed with it alone, an MCP
// server over stdio whose tool environ answers with its environment (an
// argument, since the environment is what is under test).
const envServerArg = "agentd-test-env-server"

func init() {
	if len(os.Args) == 2 && os.Args[1] == envServerArg {
		srv := mcp.NewServer(&mcp.Implementation{Name: "env", Version: "test"}, nil)
		mcp.AddTool(srv, &mcp.Tool{Name: "environ", Annotations: &mcp.ToolAnnotations{ReadOnlyHint: true}},
			func(context.Context, *mcp.CallToolRequest, struct{}) (*mcp.CallToolResult, map[string]any, error) {
				return nil, map[string]any{"env": os.Environ()}, nil
			})
		if err := srv.Run(context.Background(), &mcp.StdioTransport{}); err != nil {
			log.Fatal(err)
		}
		os.Exit(0)
	}
}

// A stdio MCP server agentd starts sees the minimal environment and its
// env and env_files, not agentd's: with the model's key and another secret
// in agentd's environment, a steps task calling a tool that reports the
// server's environment gets neither back (issue 30, 4b), and no log line
// shows a configured value.
func TestMCPServerEnvironment(t *testing.T) {
	t.Parallel()
	const llmKey, other, fromFile = "sk-e2e-6b1d93f0a4", "hunter2-e2e-77c1", "tok-from-file-31e8"
	dir := t.TempDir()
	tokenFile := filepath.Join(dir, "shop-token")
	if err := os.WriteFile(tokenFile, []byte(fromFile+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	config := filepath.Join(dir, "agentd.toml")
	if err := os.WriteFile(config, []byte("[[mcp_server]]\nname = \"env\"\ncommand = ["+strconv.Quote(os.Args[0])+", \""+envServerArg+"\"]\n"+
		"env = { SHOP_REGION = \"region-eu-5c2a\" }\nenv_files = { SHOP_TOKEN = "+strconv.Quote(tokenFile)+" }\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	url := testdb.URL(t)
	cmd := agentd(t, []string{"DATABASE_URL=" + url, "AGENTLEDGER_LLM_API_KEY=" + llmKey, "SHOP_ADMIN_PASSWORD=" + other},
		"--config", config, "--log-format", "json")
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer cmd.Process.Kill() //nolint:errcheck // a no-op once it has exited
	logs := make(chan string, 1000)
	var logged strings.Builder
	go func() {
		sc := bufio.NewScanner(stderr)
		for sc.Scan() {
			logs <- sc.Text()
		}
		close(logs)
	}()
	waitFor := func(want string) {
		t.Helper()
		timeout := time.After(30 * time.Second)
		for {
			select {
			case l, ok := <-logs:
				if !ok {
					t.Fatalf("agentd exited before logging %q:\n%s", want, logged.String())
				}
				logged.WriteString(l + "\n")
				if strings.Contains(l, want) {
					return
				}
			case <-timeout:
				t.Fatalf("agentd did not log %q within 30s:\n%s", want, logged.String())
			}
		}
	}
	waitFor(`"msg":"mcp: connected"`)

	task := runTool(t, url, "env/environ")
	var result struct {
		Steps []struct {
			Body struct {
				Env []string `json:"env"`
			} `json:"body"`
		} `json:"steps"`
	}
	if err := json.Unmarshal(task.Result, &result); err != nil || len(result.Steps) != 1 {
		t.Fatalf("result %s: %v", task.Result, err)
	}
	env := result.Steps[0].Body.Env
	for _, want := range []string{"PATH=" + os.Getenv("PATH"), "HOME=" + os.Getenv("HOME"), "SHOP_REGION=region-eu-5c2a", "SHOP_TOKEN=" + fromFile} {
		if !slices.Contains(env, want) {
			t.Errorf("the server's environment lacks %q: %s", want, task.Result)
		}
	}
	for _, leak := range []string{llmKey, other, "AGENTLEDGER_", "DATABASE_URL", runAsAgentd} {
		if strings.Contains(string(task.Result), leak) {
			t.Errorf("the server saw %q: %s", leak, task.Result)
		}
	}

	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	for l := range logs {
		logged.WriteString(l + "\n")
	}
	if err := cmd.Wait(); err != nil {
		t.Errorf("agentd exited with %v after SIGTERM, want 0", err)
	}
	for _, v := range []string{"region-eu-5c2a", fromFile} {
		if strings.Contains(logged.String(), v) {
			t.Errorf("agentd logged the value %q:\n%s", v, logged.String())
		}
	}
}

// An env file that cannot be read stops agentd at start with a
// configuration error naming the server, the variable and the file.
func TestMCPServerEnvFileMissing(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	missing := filepath.Join(dir, "no-such-token")
	config := filepath.Join(dir, "agentd.toml")
	if err := os.WriteFile(config, []byte("[[mcp_server]]\nname = \"shop\"\ncommand = [\"shop-mcp\"]\n"+
		"env_files = { SHOP_TOKEN = "+strconv.Quote(missing)+" }\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	out, err := agentd(t, []string{"DATABASE_URL=" + testdb.URL(t)}, "--config", config).CombinedOutput()
	var exit *exec.ExitError
	if !errors.As(err, &exit) || exit.ExitCode() != 2 ||
		!strings.Contains(string(out), "MCP server shop: the env file of SHOP_TOKEN: open "+missing+": no such file or directory") {
		t.Fatalf("exit %v, output:\n%s", err, out)
	}
}

// An [[mcp_server]] whose name its tools could not be named under stops
// agentd at start with a configuration error (it started, and tried to
// connect the server forever), before it creates the embedded cluster.
func TestMCPServerNameRefused(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	config := writeFile(t, dir, "agentd.toml", "[[mcp_server]]\nname = \"a/b\"\ncommand = [\"shop-mcp\"]\n")
	state := filepath.Join(dir, "state")
	cmd := agentd(t, []string{"AGENTLEDGER_STATE_DIR=" + state}, "--config", config)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	stop := time.AfterFunc(time.Minute, func() { cmd.Process.Kill() }) //nolint:errcheck // a no-op once it has exited
	defer stop.Stop()
	err := cmd.Wait()
	var exit *exec.ExitError
	if !errors.As(err, &exit) || exit.ExitCode() != 2 || !strings.Contains(out.String(), `MCP server name "a/b" must be 1-64 letters`) {
		t.Fatalf("exit %v, output:\n%s", err, out.String())
	}
	if _, err := os.Stat(state); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the state directory was made (%v): a cluster created for a refused configuration", err)
	}
}
