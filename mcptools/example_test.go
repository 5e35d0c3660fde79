package mcptools_test

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/agentledger/agentledger"
	"github.com/agentledger/agentledger/ledger"
	"github.com/agentledger/agentledger/mcptools"
	"github.com/agentledger/agentledger/tools"
)

type order struct {
	Order int `json:"order"`
}

// A server's tools become agentledger tools, each with the effect class its
// annotations declare (or Options.Classes overrides): how the ledger treats
// a call whose outcome it does not know. Here the server runs in-process;
// agentd starts a stdio command or dials a streamable-HTTP URL.
func ExampleConnect() {
	ctx := context.Background()
	srv := mcp.NewServer(&mcp.Implementation{Name: "shop", Version: "1"}, nil)
	yes := true
	for _, t := range []*mcp.Tool{
		{Name: "lookup", Annotations: &mcp.ToolAnnotations{ReadOnlyHint: true}},
		{Name: "reserve", Annotations: &mcp.ToolAnnotations{IdempotentHint: true}},
		{Name: "charge", Annotations: &mcp.ToolAnnotations{DestructiveHint: &yes}},
		{Name: "refund"}, // no annotations: unsafe, unless overridden below
	} {
		mcp.AddTool(srv, t, func(context.Context, *mcp.CallToolRequest, order) (*mcp.CallToolResult, any, error) {
			return nil, nil, nil
		})
	}
	serverSide, clientSide := mcp.NewInMemoryTransports()
	if _, err := srv.Connect(ctx, serverSide, nil); err != nil {
		panic(err)
	}
	shop, err := mcptools.Connect(ctx, "shop", clientSide, mcptools.Options{
		Classes: map[string]ledger.Class{"refund": ledger.Keyed}, // the shop dedupes refunds on the key
	})
	if err != nil {
		panic(err)
	}
	defer shop.Close()
	// Tools come in the server's order (the Go SDK lists them by name).
	task := &agentledger.Task{ID: 1, Tenant: "default"}
	for _, t := range shop.Tools() {
		eff, err := t.Effect(tools.Call{Task: task, StepPath: "tool/0", Args: json.RawMessage(`{"order":7}`)})
		if err != nil {
			panic(err)
		}
		fmt.Println(t.Name(), eff.Class)
	}
	// Output:
	// shop/charge unsafe
	// shop/lookup pure
	// shop/refund keyed
	// shop/reserve keyed
}
