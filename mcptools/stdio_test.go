package mcptools_test

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/agentledger/agentledger/claims"
	"github.com/agentledger/agentledger/internal/test/testenv"
	"github.com/agentledger/agentledger/mcptools"
	"github.com/agentledger/agentledger/tools"
)

// A call carries the ledger key in _meta and nothing else: over a stream of
// its own the session is stateful, so a call does not repeat the client's
// version, info and capabilities for the server to decode and check.
func TestCallMetaIsTheKeyAlone(t *testing.T) {
	t.Parallel()
	c := &counting{calls: map[string]int{}, keys: map[string][]string{}}
	ts := byName(connect(t, c))
	e := testenv.New(t)
	e.Enqueue(claims.EnqueueParams{})
	task := e.Claim("w")
	if _, err := tools.Invoke(context.Background(), e.Ledger, ts["shop/lookup"], tools.Call{Task: task, StepPath: "tool/0", Args: []byte(`{"order":7}`)}); err != nil {
		t.Fatal(err)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if !slices.Equal(c.meta, []string{mcptools.KeyMeta}) {
		t.Errorf("_meta keys %q, want only %q", c.meta, mcptools.KeyMeta)
	}
}

// buildCount builds the counting server of internal/test/mcpcount.
func buildCount(t *testing.T) string {
	t.Helper()
	bin := t.TempDir() + "/mcpcount"
	if out, err := exec.Command("go", "build", "-o", bin, "github.com/agentledger/agentledger/internal/test/mcpcount").CombinedOutput(); err != nil {
		t.Fatalf("build: %v\n%s", err, out)
	}
	return bin
}

// A server run as a command: each call reaches it once with its ledger key,
// its answer comes back, and Close ends its process.
func TestCommandServer(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	log := t.TempDir() + "/calls"
	cmd := exec.Command(buildCount(t), "-log", log)
	s, err := mcptools.Connect(ctx, "shop", &mcp.CommandTransport{Command: cmd}, mcptools.Options{})
	if err != nil {
		t.Fatal(err)
	}
	ts := byName(s)
	e := testenv.New(t)
	e.Enqueue(claims.EnqueueParams{})
	task := e.Claim("w")
	for i, name := range []string{"lookup", "reserve", "charge"} {
		res, err := tools.Invoke(ctx, e.Ledger, ts["shop/"+name], tools.Call{Task: task, StepPath: "tool/" + name, Args: []byte(`{"order":7}`)})
		var got struct {
			Order int    `json:"order"`
			Tool  string `json:"tool"`
		}
		if err == nil {
			err = json.Unmarshal(res.Body, &got)
		}
		if err != nil || got.Order != 7 || got.Tool != name {
			t.Fatalf("call %d: %s %v, want order 7 from %s", i, res.Body, err, name)
		}
	}
	if err := s.Close(); err != nil {
		t.Errorf("close: %v", err)
	}
	if cmd.ProcessState == nil || !cmd.ProcessState.Exited() {
		t.Errorf("after Close the server's process is %v, want exited", cmd.ProcessState)
	}
	b, err := os.ReadFile(log)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(string(b)), "\n")
	if len(lines) != 3 {
		t.Fatalf("the server logged %q, want 3 calls", lines)
	}
	for i, name := range []string{"lookup", "reserve", "charge"} {
		tool, key, _ := strings.Cut(lines[i], " ")
		if tool != name || len(key) != 64 {
			t.Errorf("call %d logged as %q, want %s and its ledger key", i, lines[i], name)
		}
	}
}

// A server that neither answers nor exits when its stdin closes, nor on
// SIGTERM, is killed: Connect fails and leaves no process behind.
func TestCommandServerThatWillNotExit(t *testing.T) {
	t.Parallel()
	cmd := exec.Command("sh", "-c", `trap "" TERM; echo ready >&2; exec sleep 60`)
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() { // cancel the handshake once the trap is set
		bufio.NewReader(stderr).ReadString('\n')
		cancel()
	}()
	_, err = mcptools.Connect(ctx, "mute", &mcp.CommandTransport{Command: cmd, TerminateDuration: 10 * time.Millisecond}, mcptools.Options{})
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("connect: %v, want the handshake cancelled", err)
	}
	if cmd.ProcessState == nil {
		t.Fatal("Connect returned with the server's process not reaped")
	}
	ws, ok := cmd.ProcessState.Sys().(syscall.WaitStatus)
	if !ok || !ws.Signaled() || ws.Signal() != syscall.SIGKILL {
		t.Errorf("the server's process ended as %v, want killed", cmd.ProcessState)
	}
}
