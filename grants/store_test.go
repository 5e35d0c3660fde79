package grants_test

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"testing"

	"github.com/agentledger/agentledger"
	"github.com/agentledger/agentledger/grants"
	"github.com/agentledger/agentledger/internal/test/testdb"
)

// Concurrent updates of one tenant's grant all count: each adds its own
// tool, from its own connection.
func TestConcurrentUpdatesAllCount(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s := grants.NewStore(testdb.Open(t, testdb.URL(t)))
	const n = 20
	var wg sync.WaitGroup
	errs := make(chan error, n)
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, err := s.Update(ctx, "acme", func(g *grants.Grant) { g.Tools = append(g.Tools, fmt.Sprintf("t%d", i)) })
			errs <- err
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	g, stored, err := s.Get(ctx, "acme")
	if err != nil || !stored {
		t.Fatalf("get: %v %v", stored, err)
	}
	for i := range n {
		if !slices.Contains(g.Tools, fmt.Sprintf("t%d", i)) {
			t.Errorf("tool t%d lost: %v", i, g.Tools)
		}
	}
	// Without a row: the defaults.
	if g, err := s.For(ctx, "initech"); err != nil || g.All || len(g.Tools) != 0 {
		t.Errorf("initech: %+v %v", g, err)
	}
	if g, err := s.For(ctx, agentledger.OperatorTenant); err != nil || !g.All {
		t.Errorf("the operator: %+v %v", g, err)
	}
}
