// Command mcp runs an agent task whose tools come from an MCP server, all
// through the ledger. The program is both sides: started with "serve" it is
// an MCP server over stdio (written with the official Go SDK) exposing a
// read-only, an idempotent and a destructive tool; otherwise it embeds the
// daemon, names itself as that server in the daemon's configuration, and
// runs an agent task against a scripted stand-in for a model (the project's
// fake OpenAI-compatible server). Then it replays the task: the ledger
// serves every model and tool call, and neither the server nor the model is
// called again.
//
//	go run ./examples/mcp        # on the embedded cluster ($AGENTLEDGER_STATE_DIR, else agentd's default), or DATABASE_URL
package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"os"
	"strings"
	"sync/atomic"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/agentledger/agentledger"
	"github.com/agentledger/agentledger/agentledgertest/fakeopenai"
	"github.com/agentledger/agentledger/claims"
	"github.com/agentledger/agentledger/client"
	"github.com/agentledger/agentledger/daemon"
	"github.com/agentledger/agentledger/database"
	"github.com/agentledger/agentledger/mcptools"
	"github.com/agentledger/agentledger/operator"
)

func main() {
	var err error
	if len(os.Args) > 2 && os.Args[1] == "serve" {
		err = serve(os.Args[2])
	} else {
		err = run(context.Background(), os.Stdout)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "mcp:", err)
		os.Exit(1)
	}
}

// order is the tools' argument.
type order struct {
	Order int `json:"order" jsonschema:"the order number"`
}

// serve is the MCP server: each call is appended to the file callLog, so the
// other side can count them.
func serve(callLog string) error {
	srv := mcp.NewServer(&mcp.Implementation{Name: "shop", Version: "example"}, nil)
	destructive := true
	add := func(t *mcp.Tool, answer func(order) map[string]any) {
		mcp.AddTool(srv, t, func(_ context.Context, req *mcp.CallToolRequest, o order) (*mcp.CallToolResult, map[string]any, error) {
			f, err := os.OpenFile(callLog, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o644)
			if err != nil {
				return nil, nil, err
			}
			key, _ := req.Params.Meta[mcptools.KeyMeta].(string)
			fmt.Fprintf(f, "%s order=%d key=%.12s\n", t.Name, o.Order, key)
			f.Close()
			return nil, answer(o), nil
		})
	}
	add(&mcp.Tool{Name: "lookup", Description: "Look an order up", Annotations: &mcp.ToolAnnotations{ReadOnlyHint: true}},
		func(o order) map[string]any { return map[string]any{"order": o.Order, "total": 4200, "status": "paid"} })
	add(&mcp.Tool{Name: "hold", Description: "Put an order on hold (idempotent)", Annotations: &mcp.ToolAnnotations{IdempotentHint: true}},
		func(o order) map[string]any { return map[string]any{"order": o.Order, "held": true} })
	add(&mcp.Tool{Name: "refund", Description: "Refund an order", Annotations: &mcp.ToolAnnotations{DestructiveHint: &destructive}},
		func(o order) map[string]any { return map[string]any{"order": o.Order, "refunded": 4200} })
	return srv.Run(context.Background(), &mcp.StdioTransport{})
}

// queue is the example's own: its daemon, whose model is a script, claims
// no task but its own, and no other daemon claims that one.
const queue = "example-mcp"

// script is the model's side of the conversation: look up, hold, refund,
// then answer.
func script(req fakeopenai.Request) fakeopenai.Reply {
	call := func(id, name string) fakeopenai.Reply {
		return fakeopenai.Calls(fakeopenai.ToolCall{ID: id, Name: name, Arguments: `{"order":7}`})
	}
	switch n := len(req.Messages); {
	case n <= 2:
		return call("c1", "shop__lookup")
	case n <= 4:
		return call("c2", "shop__hold")
	case n <= 6:
		return call("c3", "shop__refund")
	}
	return fakeopenai.Text("Order 7 was paid, is on hold and refunded.")
}

func run(ctx context.Context, out io.Writer) error {
	self, err := os.Executable()
	if err != nil {
		return err
	}
	dir, err := os.MkdirTemp("", "agentledger-mcp-example-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	callLog := dir + "/calls"
	var modelCalls atomic.Int64
	model, stopModel := fakeopenai.Start("sk-example", func(r fakeopenai.Request) fakeopenai.Reply {
		modelCalls.Add(1)
		return script(r)
	})
	defer stopModel()

	// Where the daemon keeps its state; the client below opens the same.
	state := daemon.Database{URL: os.Getenv("DATABASE_URL")}
	d := daemon.New(daemon.Config{
		Database: state,
		Model: daemon.Model{
			BaseURL: model.BaseURL(),
			APIKey:  "sk-example",
			Name:    "example",
		},
		Worker:      daemon.Worker{Queues: []string{queue}, PollInterval: 100 * time.Millisecond},
		Maintenance: daemon.Maintenance{NoCron: true, NoJanitor: true},
		Logger:      slog.New(slog.NewTextHandler(io.Discard, nil)),
		Stdout:      io.Discard,
		MCPServers:  []daemon.MCPServer{{Name: "shop", Command: []string{self, "serve", callLog}}},
	})
	runCtx, stop := context.WithCancel(ctx)
	done := make(chan struct{})
	var runErr error
	go func() { runErr = d.Run(runCtx); close(done) }()
	defer func() { stop(); <-done }()
	select {
	case <-d.Ready():
	case <-done:
		return fmt.Errorf("the daemon stopped: %w", runErr)
	}
	conn, err := database.Open(ctx, database.Config{URL: state.URL, StateDir: state.StateDir})
	if err != nil {
		return err
	}
	defer conn.Close(context.WithoutCancel(ctx))
	store := claims.New(conn.Pool)

	// The daemon starts the server and connects to it in the background.
	for deadline := time.Now().Add(time.Minute); d.MCPStates()["shop"] != "connected"; time.Sleep(50 * time.Millisecond) {
		if time.Now().After(deadline) {
			return fmt.Errorf("the MCP server did not connect: %s", d.MCPStates()["shop"])
		}
	}
	payload := `{"prompt":"Refund order 7 after checking it.","tools":["shop/lookup","shop/hold","shop/refund"]}`
	submitted, err := client.Database(conn.Pool, "").Submit(ctx, client.Request{Kind: "agent", Payload: json.RawMessage(payload),
		Options: client.Options{Queue: queue}})
	if err != nil {
		return err
	}
	task, err := finished(ctx, store, submitted.ID)
	if err != nil {
		return err
	}
	if task.State != agentledger.StateSucceeded {
		return fmt.Errorf("task %d is %s: %s", task.ID, task.State, task.LastError)
	}
	calls, _ := os.ReadFile(callLog)
	fmt.Fprintf(out, "agent task %d succeeded: %s\n", task.ID, answer(task.Result))
	fmt.Fprintf(out, "MCP calls: %d, model calls: %d\n%s", strings.Count(string(calls), "\n"), modelCalls.Load(), calls)
	if n, m := strings.Count(string(calls), "\n"), modelCalls.Load(); n != 3 || m != 4 {
		return fmt.Errorf("%d MCP calls and %d model calls, want 3 and 4", n, m)
	}

	before, modelBefore := strings.Count(string(calls), "\n"), modelCalls.Load()
	if _, err := operator.New(conn.Pool).Replay(ctx, "", task.ID); err != nil {
		return err
	}
	if task, err = finished(ctx, store, task.ID); err != nil || task.State != agentledger.StateSucceeded {
		return fmt.Errorf("replay: %v %v", task, err)
	}
	calls, _ = os.ReadFile(callLog)
	fmt.Fprintf(out, "replayed: %d new MCP calls, %d new model calls\n",
		strings.Count(string(calls), "\n")-before, modelCalls.Load()-modelBefore)
	return nil
}

// finished waits until task id has finished (or needs an operator).
func finished(ctx context.Context, s *claims.Store, id int64) (*agentledger.Task, error) {
	deadline := time.Now().Add(time.Minute)
	for {
		t, err := s.Get(ctx, "", id)
		if err != nil {
			return nil, err
		}
		switch t.State {
		case agentledger.StateSucceeded, agentledger.StateDead, agentledger.StateNeedsAttention:
			return t, nil
		}
		if time.Now().After(deadline) {
			return nil, fmt.Errorf("task %d is still %s after a minute", id, t.State)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// answer is the agent's final text from its result.
func answer(result json.RawMessage) string {
	var r struct {
		Answer string `json:"answer"`
	}
	if json.Unmarshal(result, &r) == nil && r.Answer != "" {
		return r.Answer
	}
	return string(result)
}
