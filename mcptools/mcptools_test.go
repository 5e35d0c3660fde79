package mcptools_test

import (
	"context"
	"errors"
	"maps"
	"slices"
	"sync"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/agentledger/agentledger"
	"github.com/agentledger/agentledger/claims"
	"github.com/agentledger/agentledger/internal/test/testenv"
	"github.com/agentledger/agentledger/ledger"
	"github.com/agentledger/agentledger/mcptools"
	"github.com/agentledger/agentledger/tools"
)

// counting is an MCP server with a read-only, an idempotent and a
// destructive tool, counting the calls each gets and the keys they carry.
type counting struct {
	mu     sync.Mutex
	calls  map[string]int
	keys   map[string][]string
	meta   []string          // the _meta keys of the last call
	during func(tool string) // runs inside a call, after it took effect
}

type orderArgs struct {
	Order int `json:"order"`
}

func (c *counting) handler(name string) mcp.ToolHandlerFor[orderArgs, map[string]any] {
	return func(_ context.Context, req *mcp.CallToolRequest, a orderArgs) (*mcp.CallToolResult, map[string]any, error) {
		c.mu.Lock()
		c.calls[name]++
		key, _ := req.Params.Meta[mcptools.KeyMeta].(string)
		c.keys[name] = append(c.keys[name], key)
		c.meta = slices.Sorted(maps.Keys(req.Params.Meta))
		during := c.during
		c.mu.Unlock()
		if during != nil {
			during(name)
		}
		return nil, map[string]any{"order": a.Order, "tool": name}, nil
	}
}

func (c *counting) count(name string) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.calls[name]
}

// connect starts the counting server in memory and connects to it as "shop".
func connect(t *testing.T, c *counting) *mcptools.Server {
	return connectWith(t, c, mcptools.Options{})
}

func connectWith(t *testing.T, c *counting, o mcptools.Options) *mcptools.Server {
	t.Helper()
	ctx := context.Background()
	srv := mcp.NewServer(&mcp.Implementation{Name: "shop", Version: "test"}, nil)
	yes := true
	mcp.AddTool(srv, &mcp.Tool{Name: "lookup", Annotations: &mcp.ToolAnnotations{ReadOnlyHint: true}}, c.handler("lookup"))
	mcp.AddTool(srv, &mcp.Tool{Name: "reserve", Annotations: &mcp.ToolAnnotations{IdempotentHint: true}}, c.handler("reserve"))
	mcp.AddTool(srv, &mcp.Tool{Name: "charge", Annotations: &mcp.ToolAnnotations{DestructiveHint: &yes}}, c.handler("charge"))
	st, ct := mcp.NewInMemoryTransports()
	ss, err := srv.Connect(ctx, st, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ss.Close() })
	s, err := mcptools.Connect(ctx, "shop", ct, o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

func byName(s *mcptools.Server) map[string]tools.Tool {
	m := map[string]tools.Tool{}
	for _, tl := range s.Tools() {
		m[tl.Name()] = tl
	}
	return m
}

// Each call is an effect of the class the annotations allow, carries its
// ledger key, and is served from the ledger when presented again.
func TestCallsGoThroughTheLedger(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	c := &counting{calls: map[string]int{}, keys: map[string][]string{}}
	ts := byName(connect(t, c))
	if len(ts) != 3 || ts["shop/lookup"] == nil || ts["shop/reserve"] == nil || ts["shop/charge"] == nil {
		t.Fatalf("tools %v", ts)
	}
	e := testenv.New(t)
	e.Enqueue(claims.EnqueueParams{})
	task := e.Claim("w")
	for i, want := range map[string]ledger.Class{"shop/lookup": ledger.Pure, "shop/reserve": ledger.Keyed, "shop/charge": ledger.Unsafe} {
		call := tools.Call{Task: task, StepPath: "tool/" + i, Args: []byte(`{"order":7}`)}
		first, err := tools.Invoke(ctx, e.Ledger, ts[i], call)
		if err != nil || string(first.Body) == "" {
			t.Fatalf("%s: %+v %v", i, first, err)
		}
		again, err := tools.Invoke(ctx, e.Ledger, ts[i], call)
		if err != nil || !again.Replayed {
			t.Fatalf("%s again: %+v %v, want served from the ledger", i, again, err)
		}
		name := i[len("shop/"):]
		if n := c.count(name); n != 1 {
			t.Errorf("%s: the server got %d calls, want 1", i, n)
		}
		if k := c.keys[name]; len(k) != 1 || len(k[0]) != 64 {
			t.Errorf("%s: keys in _meta %q, want the ledger key", i, k)
		}
		var got ledger.Class
		for _, en := range e.Journal(task) {
			if en.StepPath == call.StepPath {
				got = en.Class
			}
		}
		if got != want {
			t.Errorf("%s journaled as %s, want %s", i, got, want)
		}
	}
	// Arguments that do not fit the tool's schema reach no server.
	_, err := tools.Invoke(ctx, e.Ledger, ts["shop/charge"], tools.Call{Task: task, StepPath: "tool/9", Args: []byte(`{"order":"seven"}`)})
	var perm *agentledger.PermanentError
	if !errors.As(err, &perm) || c.count("charge") != 1 {
		t.Errorf("bad arguments: %v, %d charge calls", err, c.count("charge"))
	}
}

// A crash after the server performed a call and before its outcome was
// recorded: the destructive call parks the task (never re-sent); the
// idempotent one is sent again with the same key and arguments.
func TestCrashWindow(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	c := &counting{calls: map[string]int{}, keys: map[string][]string{}}
	ts := byName(connect(t, c))
	for _, tc := range []struct {
		tool      string
		wantErr   error
		wantCalls int
	}{
		{"charge", ledger.ErrNeedsAttention, 1},
		{"reserve", nil, 2},
	} {
		e := testenv.New(t)
		e.Enqueue(claims.EnqueueParams{})
		a := e.Claim("a")
		crashed := false
		c.mu.Lock()
		c.during = func(string) {
			if !crashed {
				crashed = true
				e.ExpireAndReclaim("b") // the worker dies after the server acted
			}
		}
		c.mu.Unlock()
		call := tools.Call{Task: a, StepPath: "tool/0", Args: []byte(`{"order":7}`)}
		if _, err := tools.Invoke(ctx, e.Ledger, ts["shop/"+tc.tool], call); !errors.Is(err, agentledger.ErrLeaseLost) {
			t.Fatalf("%s: first attempt %v, want its lease lost", tc.tool, err)
		}
		b, _ := e.Claims.Get(ctx, "", a.ID)
		call.Task = b
		_, err := tools.Invoke(ctx, e.Ledger, ts["shop/"+tc.tool], call)
		if tc.wantErr == nil && err != nil || tc.wantErr != nil && !errors.Is(err, tc.wantErr) {
			t.Errorf("%s: second attempt %v, want %v", tc.tool, err, tc.wantErr)
		}
		if n := c.count(tc.tool); n != tc.wantCalls {
			t.Errorf("%s: the server got %d calls, want %d", tc.tool, n, tc.wantCalls)
		}
		if keys := c.keys[tc.tool]; tc.wantCalls == 2 && (len(keys) != 2 || keys[0] != keys[1]) {
			t.Errorf("%s: keys %q, want the same key twice", tc.tool, keys)
		}
		c.mu.Lock()
		c.during = nil
		c.mu.Unlock()
	}
}

// A server name is refused, before any connection, where its tools could
// not be named: server/tool, and server__tool for a model.
func TestServerNames(t *testing.T) {
	t.Parallel()
	for _, name := range []string{"shop", "Shop-2", "a_b", "x", "a-"} {
		if err := mcptools.CheckServerName(name); err != nil {
			t.Errorf("%q: %v", name, err)
		}
	}
	for _, name := range []string{"", "a/b", "a b", "a__b", "a_", "a\x01b", "a\nb", "café", "a.b", string(make([]byte, 65))} {
		if err := mcptools.CheckServerName(name); err == nil {
			t.Errorf("%q was taken", name)
		}
	}
	if _, err := mcptools.Connect(context.Background(), "a/b", nil, mcptools.Options{}); err == nil ||
		err.Error() != `mcptools: MCP server name "a/b" must be 1-64 letters, digits, _ or -, without "__" and not ending in _ (a model calls its tools name__tool)` {
		t.Errorf("Connect a/b: %v", err)
	}
}
