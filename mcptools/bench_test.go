package mcptools_test

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"slices"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/agentledger/agentledger/claims"
	"github.com/agentledger/agentledger/internal/test/testenv"
	"github.com/agentledger/agentledger/ledger"
	"github.com/agentledger/agentledger/mcptools"
	"github.com/agentledger/agentledger/tools"
)

// BenchmarkStdioOverhead compares, call by call and interleaved, a read-only
// tool call through the ledger to an MCP server over stdio (the counting
// test server, which also appends each call to a file) with the same call
// to a Go tool declared with tools.Define: the figures are the p50 of each
// and their difference.
//
//	go test -run '^$' -bench StdioOverhead -benchtime 2000x ./mcptools
func BenchmarkStdioOverhead(b *testing.B) {
	dir := b.TempDir()
	bin := dir + "/mcpcount"
	if out, err := exec.Command("go", "build", "-o", bin, "github.com/agentledger/agentledger/internal/test/mcpcount").CombinedOutput(); err != nil {
		b.Fatalf("build: %v\n%s", err, out)
	}
	overhead(b, &mcp.CommandTransport{Command: exec.Command(bin, "-log", os.DevNull)})
}

// BenchmarkInMemoryOverhead is the same with the server in this process,
// over the SDK's in-memory transport: what the protocol costs without a
// second process and its pipes.
func BenchmarkInMemoryOverhead(b *testing.B) {
	c := &counting{calls: map[string]int{}, keys: map[string][]string{}}
	srv := mcp.NewServer(&mcp.Implementation{Name: "shop", Version: "bench"}, nil)
	mcp.AddTool(srv, &mcp.Tool{Name: "lookup", Annotations: &mcp.ToolAnnotations{ReadOnlyHint: true}}, c.handler("lookup"))
	st, ct := mcp.NewInMemoryTransports()
	ss, err := srv.Connect(context.Background(), st, nil)
	if err != nil {
		b.Fatal(err)
	}
	defer ss.Close()
	overhead(b, ct)
}

func overhead(b *testing.B, t mcp.Transport) {
	ctx := context.Background()
	srv, err := mcptools.Connect(ctx, "shop", t, mcptools.Options{})
	if err != nil {
		b.Fatal(err)
	}
	defer srv.Close()
	var remote tools.Tool
	for _, t := range srv.Tools() {
		if t.Name() == "shop/lookup" {
			remote = t
		}
	}
	direct, err := tools.Define(tools.Spec[struct {
		Order int `json:"order"`
	}]{Name: "lookup", Class: ledger.Pure,
		Perform: func(_ context.Context, _ ledger.Call, a struct {
			Order int `json:"order"`
		}) (ledger.Result, error) {
			return ledger.Result{Body: []byte(fmt.Sprintf(`{"order":%d,"tool":"lookup"}`, a.Order))}, nil
		}})
	if err != nil {
		b.Fatal(err)
	}
	e := testenv.New(b)
	e.Enqueue(claims.EnqueueParams{})
	task := e.Claim("w")
	var viaMCP, viaGo []time.Duration
	b.ResetTimer()
	for i := range b.N {
		for j, t := range []tools.Tool{remote, direct} {
			if i%2 == 1 { // alternate which goes first
				t = []tools.Tool{direct, remote}[j]
			}
			call := tools.Call{Task: task, StepPath: fmt.Sprintf("tool/%d/%s", i, t.Name()), Args: []byte(`{"order":7}`)}
			start := time.Now()
			if _, err := tools.Invoke(ctx, e.Ledger, t, call); err != nil {
				b.Fatal(err)
			}
			if t == remote {
				viaMCP = append(viaMCP, time.Since(start))
			} else {
				viaGo = append(viaGo, time.Since(start))
			}
		}
	}
	b.StopTimer()
	p50 := func(d []time.Duration) time.Duration { slices.Sort(d); return d[len(d)/2] }
	m, g := p50(viaMCP), p50(viaGo)
	b.ReportMetric(float64(m.Microseconds()), "mcp-p50-µs")
	b.ReportMetric(float64(g.Microseconds()), "go-p50-µs")
	b.ReportMetric(float64((m - g).Microseconds()), "overhead-p50-µs")
}
