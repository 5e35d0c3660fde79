package mcptools_test

import (
	"context"
	"encoding/json"
	"log"
	"os"
	"os/exec"
	"slices"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/agentledger/agentledger/ledger"
	"github.com/agentledger/agentledger/mcptools"
	"github.com/agentledger/agentledger/tools"
)

// envServerArg makes the test binary, re-executed with it alone, an MCP
// server over stdio whose one tool, environ, answers with its
// environment. It is an argument, not a variable: the environment is
// what is under test.
const envServerArg = "mcptools-test-env-server"

func init() {
	if len(os.Args) == 2 && os.Args[1] == envServerArg {
		serveEnv()
		os.Exit(0)
	}
}

type environ struct {
	Env []string `json:"env"`
}

func serveEnv() {
	srv := mcp.NewServer(&mcp.Implementation{Name: "env", Version: "test"}, nil)
	mcp.AddTool(srv, &mcp.Tool{Name: "environ", Annotations: &mcp.ToolAnnotations{ReadOnlyHint: true}},
		func(context.Context, *mcp.CallToolRequest, struct{}) (*mcp.CallToolResult, environ, error) {
			return nil, environ{Env: os.Environ()}, nil
		})
	if err := srv.Run(context.Background(), &mcp.StdioTransport{}); err != nil {
		log.Fatal(err)
	}
}

// serverEnv starts the env server as cmd's command (with cmd's Env) and
// returns the environment its tool reports.
func serverEnv(t *testing.T, env []string) []string {
	t.Helper()
	ctx := context.Background()
	cmd := exec.Command(os.Args[0], envServerArg)
	cmd.Env = env
	s, err := mcptools.Connect(ctx, "env", &mcp.CommandTransport{Command: cmd}, mcptools.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	tl := byName(s)["env/environ"]
	if tl == nil {
		t.Fatal("the server has no environ tool")
	}
	eff, err := tl.Effect(tools.Call{StepPath: "tool/0"})
	if err != nil {
		t.Fatal(err)
	}
	res, err := eff.Perform(ctx, ledger.Call{Key: "k"})
	if err != nil {
		t.Fatal(err)
	}
	var got environ
	if err := json.Unmarshal(res.Body, &got); err != nil {
		t.Fatalf("%s: %v", res.Body, err)
	}
	slices.Sort(got.Env)
	return got.Env
}

const testSecret = "sk-test-2f9c41d7e0"

// A command's server gets the SDKs' minimal environment, not this
// process's: a secret in it (the model's key) does not reach the server,
// while PATH, HOME and a locale do. A bash function export is left out.
func TestCommandServerGetsTheMinimalEnvironment(t *testing.T) {
	t.Setenv("AGENTLEDGER_LLM_API_KEY", testSecret)
	t.Setenv("HOME", "/home/agentd-test")
	t.Setenv("LANG", "C.UTF-8")
	t.Setenv("TMPDIR", t.TempDir())
	t.Setenv("SHELL", "() { :; }; echo pwned")
	env := serverEnv(t, nil)
	for _, kv := range env {
		if strings.Contains(kv, testSecret) || strings.HasPrefix(kv, "AGENTLEDGER_") || strings.HasPrefix(kv, "SHELL=") {
			t.Errorf("the server saw %q", kv)
		}
		name, _, _ := strings.Cut(kv, "=")
		if !slices.Contains([]string{"HOME", "LOGNAME", "PATH", "SHELL", "TERM", "USER", "LANG", "LC_ALL", "LC_CTYPE", "TMPDIR"}, name) {
			t.Errorf("the server saw %s, outside the minimal environment", name)
		}
	}
	for _, want := range []string{"HOME=/home/agentd-test", "PATH=" + os.Getenv("PATH"), "LANG=C.UTF-8", "TMPDIR=" + os.Getenv("TMPDIR")} {
		if !slices.Contains(env, want) {
			t.Errorf("the server's environment %q lacks %q", env, want)
		}
	}
}

// An Env built with mcptools.Env is the minimal environment and the
// variables given, which override it; an Env of os.Environ() is the way
// to pass everything, and does.
func TestCommandServerGetsTheEnvGiven(t *testing.T) {
	t.Setenv("AGENTLEDGER_LLM_API_KEY", testSecret)
	t.Setenv("HOME", "/home/agentd-test")
	env, err := mcptools.Env(nil, map[string]string{"SHOP_REGION": "eu", "HOME": "/srv/shop"})
	if err != nil {
		t.Fatal(err)
	}
	got := serverEnv(t, env)
	if !slices.Contains(got, "SHOP_REGION=eu") || !slices.Contains(got, "HOME=/srv/shop") ||
		slices.Contains(got, "HOME=/home/agentd-test") || !slices.Contains(got, "PATH="+os.Getenv("PATH")) {
		t.Errorf("the server's environment %q, want the minimal one with SHOP_REGION=eu and HOME=/srv/shop", got)
	}
	if slices.ContainsFunc(got, func(kv string) bool { return strings.Contains(kv, testSecret) }) {
		t.Errorf("the server saw the secret: %q", got)
	}
	if got := serverEnv(t, os.Environ()); !slices.Contains(got, "AGENTLEDGER_LLM_API_KEY="+testSecret) {
		t.Errorf("with Env = os.Environ() the server's environment %q lacks the parent's", got)
	}
}

// The minimal environment is never nil, even with none of its variables
// set: a nil exec.Cmd.Env would be the whole environment.
func TestDefaultEnvIsNeverNil(t *testing.T) {
	for _, name := range []string{"HOME", "LOGNAME", "PATH", "SHELL", "TERM", "USER", "LANG", "LC_ALL", "LC_CTYPE", "TMPDIR"} {
		t.Setenv(name, "") // restored after the test
		os.Unsetenv(name)
	}
	if env := mcptools.DefaultEnv(); env == nil || len(env) != 0 {
		t.Fatalf("DefaultEnv() = %#v, want an empty, non-nil list", env)
	}
}

// Names and values no environment can hold are refused, naming the
// variable and never the value.
func TestEnvRefusesBadNames(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name, value, want string
	}{
		{"", "x", "an environment variable needs a name"},
		{"A=B", "x", `environment variable "A=B": a name cannot hold '='`},
		{"A\x00B", "x", `environment variable "A\x00B": a name cannot hold a NUL byte`},
		{"TOKEN", "sec\x00ret", "environment variable TOKEN: a value cannot hold a NUL byte"},
	} {
		_, err := mcptools.Env(nil, map[string]string{tc.name: tc.value})
		if err == nil || err.Error() != tc.want {
			t.Errorf("%q=%q: %v, want %q", tc.name, tc.value, err, tc.want)
		}
		if err != nil && strings.Contains(err.Error(), "sec") {
			t.Errorf("%q: the error %q echoes the value", tc.name, err)
		}
	}
	if err := mcptools.CheckEnvName("SHOP_TOKEN"); err != nil {
		t.Errorf("SHOP_TOKEN: %v", err)
	}
}
