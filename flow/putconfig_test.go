package flow_test

import (
	"context"
	"testing"
	"time"

	"github.com/agentledger/agentledger/flow"
	"github.com/agentledger/agentledger/internal/test/testdb"
)

// A configuration's limit is stored where none is, replaces agentd's
// default and its own earlier one, and never an operator's, which
// PutConfig returns instead.
func TestPutConfigKeepsTheOperators(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s := flow.NewStore(testdb.New(t))
	if _, err := s.PutDefault(ctx, flow.Limit{Target: "slack-channel:*", Rate: flow.Rate{N: 50, Per: time.Minute}}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Put(ctx, flow.Limit{Target: "mcp:shop", Concurrency: 2}); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		l      flow.Limit
		stored bool
		want   int // the concurrency or rate in force
	}{
		{flow.Limit{Target: "slack-channel:*", Rate: flow.Rate{N: 1, Per: time.Second}}, true, 1},
		{flow.Limit{Target: "http:https://a.example", Concurrency: 3}, true, 3},
		{flow.Limit{Target: "http:https://a.example", Concurrency: 4}, true, 4},
		{flow.Limit{Target: "mcp:shop", Concurrency: 9}, false, 2},
	} {
		got, stored, err := s.PutConfig(ctx, c.l)
		if err != nil {
			t.Fatal(err)
		}
		inForce := got.Concurrency + int(got.Rate.N)
		wantSource := flow.SourceConfig
		if !c.stored {
			wantSource = flow.SourceOperator
		}
		if stored != c.stored || inForce != c.want || got.Source != wantSource {
			t.Errorf("%s: stored %v, %+v; want stored %v, %d from %s", c.l.Target, stored, got, c.stored, c.want, wantSource)
		}
		if l, err := s.Get(ctx, c.l.Target); err != nil || l.Source != wantSource || l.Concurrency+int(l.Rate.N) != c.want {
			t.Errorf("%s in store: %+v %v", c.l.Target, l, err)
		}
	}
}
