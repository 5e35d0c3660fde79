package worker_test

import (
	"context"
	"encoding/json"
	"sync/atomic"
	"testing"
	"time"

	"github.com/agentledger/agentledger"
	"github.com/agentledger/agentledger/internal/test/testdb"
	"github.com/agentledger/agentledger/registry"
	"github.com/agentledger/agentledger/worker"
)

// An MCP server that connects is in the pool's registration at once, not
// at the next refresh: Reannounce registers it again. The refresh is an
// hour here, so only Reannounce can show the new state.
func TestReannounceRegistersAtOnce(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := testdb.New(t)
	var state atomic.Value
	state.Store("connecting")
	cfg := worker.Config{ID: "mcp-pool", Logger: quietLogger(),
		Handlers: map[string]worker.Handler{"noop": worker.HandlerFunc(
			func(context.Context, *agentledger.Task) (json.RawMessage, error) { return nil, nil })},
		MCPStates: func() map[string]string { return map[string]string{"shop": state.Load().(string)} }}
	worker.SetAnnounceEvery(&cfg, time.Hour)
	p, err := worker.New(db, cfg)
	if err != nil {
		t.Fatal(err)
	}
	runCtx, cancel := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- p.Run(runCtx) }()
	defer func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Run: %v", err)
		}
	}()
	announced := func(want string) {
		t.Helper()
		deadline := time.Now().Add(30 * time.Second) // far below the hour's refresh, far above a registration
		for time.Now().Before(deadline) {
			ws, err := registry.New(db).LiveWorkers(ctx)
			if err != nil {
				t.Fatal(err)
			}
			if len(ws) == 1 && ws[0].MCPServers["shop"] == want {
				return
			}
			select {
			case <-time.After(20 * time.Millisecond): // the registry has no signal to wait on
			case <-ctx.Done():
			}
		}
		t.Fatalf("the registration does not show MCP server shop %s after 30s", want)
	}
	announced("connecting")
	state.Store("connected")
	p.Reannounce()
	announced("connected")
}
