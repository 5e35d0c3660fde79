package main

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/agentledger/agentledger"
	"github.com/agentledger/agentledger/daemon"
	"github.com/agentledger/agentledger/internal/test/testenv"
)

type refund struct {
	Order  int64 `json:"order"`
	Amount int64 `json:"amount"`
}

// A typed kind's published schema: submit refuses a payload that does not
// fit (exit 2, nothing queued) and queues one that does; other kinds are not
// checked.
func TestSubmitChecksPublishedKinds(t *testing.T) {
	t.Parallel()
	e := testenv.New(t)
	url := e.DB.Config().ConnString()
	kind := daemon.Kind(func(context.Context, *agentledger.Task, refund) (refund, error) { return refund{}, nil })
	if err := e.Registry.PublishKinds(context.Background(), "w1", map[string]json.RawMessage{"refund": kind.PayloadSchema()}); err != nil {
		t.Fatal(err)
	}
	if err := e.Registry.Announce(context.Background(), "w1", "host", 1, []string{"default"}, []string{"refund", "echo"}, nil); err != nil {
		t.Fatal(err)
	}
	code, out, errOut := agentctlAt(url, "submit", "--kind", "refund", "--payload", `{"order":7,"amount":"ten"}`)
	if code != 2 || out != "" || !strings.HasPrefix(errOut, `agentctl: --payload: "amount" must be an integer, not a string`) ||
		!strings.Contains(errOut, "hint: the refund kind's payload schema") {
		t.Fatalf("a payload that does not fit: exit %d\n%s%s", code, out, errOut)
	}
	code, out, errOut = agentctlAt(url, "list", "-o", "json")
	if code != 0 || strings.Contains(out, `"refund"`) {
		t.Fatalf("the refused task was queued: %s%s", out, errOut)
	}
	if code, out, errOut = agentctlAt(url, "submit", "--kind", "refund", "--payload", `{"order":7,"amount":10}`); code != 0 {
		t.Fatalf("a payload that fits: exit %d\n%s%s", code, out, errOut)
	}
	if code, out, errOut = agentctlAt(url, "submit", "--kind", "echo", "--payload", `{"anything":true}`); code != 0 {
		t.Fatalf("an unpublished kind: exit %d\n%s%s", code, out, errOut)
	}
}

// agentctl workers shows the MCP servers a daemon announced.
func TestWorkersShowMCPServers(t *testing.T) {
	t.Parallel()
	e := testenv.New(t)
	url := e.DB.Config().ConnString()
	if err := e.Registry.Announce(context.Background(), "d1", "host", 1, []string{"default"}, []string{"agent"},
		map[string]string{"shop": "connected", "crm": "dial tcp: connection refused; retrying in 8s"}); err != nil {
		t.Fatal(err)
	}
	code, out, errOut := agentctlAt(url, "workers")
	if code != 0 || !strings.Contains(out, "  d1: MCP server crm dial tcp: connection refused; retrying in 8s\n  d1: MCP server shop connected\n") {
		t.Fatalf("workers: exit %d\n%s%s", code, out, errOut)
	}
	code, out, _ = agentctlAt(url, "workers", "-o", "json")
	if code != 0 || !strings.Contains(out, `"mcp_servers": {`) {
		t.Fatalf("workers -o json: %s", out)
	}
}
