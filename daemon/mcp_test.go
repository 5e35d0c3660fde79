package daemon_test

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/agentledger/agentledger"
	"github.com/agentledger/agentledger/claims"
	"github.com/agentledger/agentledger/daemon"
	"github.com/agentledger/agentledger/internal/test/logbuf"
	"github.com/agentledger/agentledger/internal/test/testdaemon"
	"github.com/agentledger/agentledger/internal/test/testdb"
	"github.com/agentledger/agentledger/ledger"
)

// MCP servers from the configuration: a stdio server the daemon starts is
// called through the ledger; a server that cannot start fails only the
// tasks that name its tools, with its name; /readyz shows both.
func TestConfiguredMCPServers(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	dir := t.TempDir()
	bin := dir + "/mcpcount"
	if out, err := exec.Command("go", "build", "-o", bin, "github.com/agentledger/agentledger/internal/test/mcpcount").CombinedOutput(); err != nil {
		t.Fatalf("build: %v\n%s", err, out)
	}
	calls := dir + "/calls"
	url := testdb.URL(t)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var logged logbuf.Buffer
	d := daemon.New(daemon.Config{
		Database:    daemon.Database{URL: url},
		API:         daemon.API{Listener: ln},
		Worker:      daemon.Worker{PollInterval: 50 * time.Millisecond},
		Maintenance: daemon.Maintenance{NoCron: true, NoJanitor: true},
		Logger:      slog.New(slog.NewTextHandler(&logged, &slog.HandlerOptions{Level: slog.LevelWarn})),
		Stdout:      io.Discard,
		MCPServers: []daemon.MCPServer{
			{Name: "shop", Command: []string{bin, "-log", calls}, Classes: map[string]ledger.Class{"chrage": ledger.Keyed}},
			{Name: "down", Command: []string{dir + "/no-such-server"}},
		},
	})
	testdaemon.Run(t, d)

	// The supervisor connects in the background: wait for /readyz to say so.
	var states map[string]string
	for range 400 {
		resp, err := http.Get("http://" + ln.Addr().String() + "/readyz")
		if err == nil {
			var body struct {
				MCP map[string]string `json:"mcp_servers"`
			}
			_ = json.NewDecoder(resp.Body).Decode(&body)
			resp.Body.Close()
			states = body.MCP
			if states["shop"] == "connected" && strings.Contains(states["down"], "retrying") {
				break
			}
		}
		time.Sleep(25 * time.Millisecond) // polling a condition, not ordering events
	}
	if states["shop"] != "connected" || !strings.Contains(states["down"], "retrying") {
		t.Fatalf("/readyz mcp_servers %v", states)
	}
	// A class set for a tool the server does not offer is said.
	if log := logged.String(); !strings.Contains(log, `msg="mcp: a class is set for a tool the server does not offer" mcp_server=shop tool=chrage offered=`) {
		t.Errorf("the misspelt class's warning:\n%s", log)
	}

	s := claims.New(testdb.Open(t, url))
	// One attempt each: a tool of a server that is not connected is retried
	// until the task's attempts run out.
	run := func(payload string) *agentledger.Task {
		t.Helper()
		r, err := s.Enqueue(ctx, claims.EnqueueParams{Kind: "steps", Payload: json.RawMessage(payload), MaxAttempts: 1})
		if err != nil {
			t.Fatal(err)
		}
		return testdaemon.WaitFinished(t, s, r.Task.ID)
	}
	if task := run(`{"steps":[{"tool":"shop/charge","args":{"order":7}}]}`); task.State != agentledger.StateSucceeded {
		t.Fatalf("shop/charge: %s %s", task.State, task.LastError)
	}
	if b, _ := os.ReadFile(calls); strings.Count(string(b), "charge ") != 1 {
		t.Errorf("server calls:\n%s", b)
	}
	task := run(`{"steps":[{"tool":"down/anything","args":{}}]}`)
	if task.State != agentledger.StateDead || !strings.Contains(task.LastError, "MCP server down is not connected") {
		t.Errorf("a tool of a server that is down: %s %q", task.State, task.LastError)
	}
}
