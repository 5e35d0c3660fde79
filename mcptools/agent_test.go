package mcptools_test

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/agentledger/agentledger"
	"github.com/agentledger/agentledger/agentledgertest/fakeopenai"
	"github.com/agentledger/agentledger/claims"
	"github.com/agentledger/agentledger/daemon"
	"github.com/agentledger/agentledger/internal/test/testdaemon"
	"github.com/agentledger/agentledger/internal/test/testdb"
	"github.com/agentledger/agentledger/operator"
)

// An agent task calls an MCP tool through an embedded daemon: the model
// sees it as a function, the server is called once, and a replay of the
// finished task calls neither the server nor the model.
func TestAgentCallsAnMCPTool(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	c := &counting{calls: map[string]int{}, keys: map[string][]string{}}
	shop := connect(t, c)
	model := fakeopenai.New(t, "sk-test",
		fakeopenai.Calls(fakeopenai.ToolCall{ID: "c1", Name: "shop__charge", Arguments: `{"order":7}`}),
		fakeopenai.Text("charged"))
	url := testdb.URL(t)
	d := daemon.New(daemon.Config{
		Database: daemon.Database{URL: url},
		Model: daemon.Model{
			BaseURL: model.BaseURL(),
			APIKey:  "sk-test",
			Name:    "test",
		},
		Worker:      daemon.Worker{PollInterval: 50 * time.Millisecond},
		Maintenance: daemon.Maintenance{NoCron: true, NoJanitor: true},
		Logger:      slog.New(slog.NewTextHandler(io.Discard, nil)),
		Stdout:      io.Discard,
	})
	for _, tl := range shop.Tools() {
		if err := d.RegisterTool(tl); err != nil {
			t.Fatal(err)
		}
	}
	testdaemon.Run(t, d)
	db := testdb.Open(t, url)
	s := claims.New(db)
	r, err := s.Enqueue(ctx, claims.EnqueueParams{Kind: "agent",
		Payload: json.RawMessage(`{"prompt":"charge order 7","tools":["shop/charge"]}`)})
	if err != nil {
		t.Fatal(err)
	}
	id := r.Task.ID
	wait := func() *agentledger.Task { t.Helper(); return testdaemon.WaitFinished(t, s, id) }
	if task := wait(); task.State != agentledger.StateSucceeded || !strings.Contains(string(task.Result), "charged") {
		t.Fatalf("agent task: %s %s %s", task.State, task.Result, task.LastError)
	}
	if n := c.count("charge"); n != 1 {
		t.Fatalf("the MCP server got %d charge calls, want 1", n)
	}
	calls := model.Calls()
	if _, err := operator.New(db).Replay(ctx, "", id); err != nil {
		t.Fatal(err)
	}
	if task := wait(); task.State != agentledger.StateSucceeded {
		t.Fatalf("replay: %s %s", task.State, task.LastError)
	}
	if n := c.count("charge"); n != 1 || model.Calls() != calls {
		t.Errorf("the replay made %d charge calls and %d model calls, want none", n-1, model.Calls()-calls)
	}
}
