// Command mcpcount is an MCP server over stdio for tests: a read-only
// lookup, an idempotent reserve and a destructive charge, each call
// appended as "<tool> <ledger key>" to the file -log names.
package main

import (
	"context"
	"flag"
	"fmt"
	"log"
	"os"
	"sync"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/agentledger/agentledger/mcptools"
)

type orderArgs struct {
	Order int `json:"order"`
}

func main() {
	logPath := flag.String("log", "", "append each call to this file")
	flag.Parse()
	var mu sync.Mutex
	record := func(tool string, req *mcp.CallToolRequest) error {
		mu.Lock()
		defer mu.Unlock()
		f, err := os.OpenFile(*logPath, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o644)
		if err != nil {
			return err
		}
		defer f.Close()
		key, _ := req.Params.Meta[mcptools.KeyMeta].(string)
		_, err = fmt.Fprintf(f, "%s %s\n", tool, key)
		return err
	}
	srv := mcp.NewServer(&mcp.Implementation{Name: "mcpcount", Version: "test"}, nil)
	yes := true
	for _, t := range []*mcp.Tool{
		{Name: "lookup", Annotations: &mcp.ToolAnnotations{ReadOnlyHint: true}},
		{Name: "reserve", Annotations: &mcp.ToolAnnotations{IdempotentHint: true}},
		{Name: "charge", Annotations: &mcp.ToolAnnotations{DestructiveHint: &yes}},
	} {
		name := t.Name
		mcp.AddTool(srv, t, func(_ context.Context, req *mcp.CallToolRequest, a orderArgs) (*mcp.CallToolResult, map[string]any, error) {
			if err := record(name, req); err != nil {
				return nil, nil, err
			}
			return nil, map[string]any{"order": a.Order, "tool": name}, nil
		})
	}
	if err := srv.Run(context.Background(), &mcp.StdioTransport{}); err != nil {
		log.Fatal(err)
	}
}
