package claims_test

import (
	"context"
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/agentledger/agentledger"
	"github.com/agentledger/agentledger/claims"
)

// A claim takes only the tasks whose needs its pool's capabilities hold,
// in every claim statement (the full one, due-only, and the one-tenant
// one), due and expired alike; a claim without capabilities takes any.
func TestClaimMatchesNeeds(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	for _, mode := range []struct {
		name    string
		dueOnly bool
		hint    bool
	}{{"full", false, false}, {"due-only", true, false}, {"alone", true, true}} {
		t.Run(mode.name, func(t *testing.T) {
			t.Parallel()
			c := newClock()
			s := pinnedStore(t, c)
			ticket := enqueue(t, s, claims.EnqueueParams{Kind: "steps", Needs: []string{"tool:open_ticket"}})
			agent := enqueue(t, s, claims.EnqueueParams{Kind: "agent", Needs: []string{"model", "mcp:shop", "model"}})
			plain := enqueue(t, s, claims.EnqueueParams{Kind: "steps"})
			if !slices.Equal(agent.Needs, []string{"mcp:shop", "model"}) || plain.Needs != nil {
				t.Fatalf("stored needs %q and %q, want sorted without duplicates, and none", agent.Needs, plain.Needs)
			}
			var hint *claims.ClaimHint // one tenant's tasks: from the second claim on, tried alone first
			if mode.hint {
				hint = &claims.ClaimHint{}
			}
			claim := func(worker string, caps []string) []int64 {
				t.Helper()
				p := claims.ClaimParams{Queue: "default", Worker: worker, Limit: 10, Lease: time.Minute,
					Caps: caps, DueOnly: mode.dueOnly, Hint: hint}
				got, err := s.Claim(ctx, p)
				if err != nil {
					t.Fatal(err)
				}
				var ids []int64
				for _, task := range got {
					ids = append(ids, task.ID)
				}
				return ids
			}
			if got := claim("plain", []string{}); !slices.Equal(got, []int64{plain.ID}) {
				t.Fatalf("a pool with no capabilities claimed %v, want only %d", got, plain.ID)
			}
			if got := claim("shop", []string{"mcp:shop", "tool:http_request"}); len(got) != 0 {
				t.Fatalf("a pool without a model claimed %v", got)
			}
			if got := claim("ticketing", []string{"tool:open_ticket", "tool:http_request"}); !slices.Equal(got, []int64{ticket.ID}) {
				t.Fatalf("the ticketing pool claimed %v, want %d", got, ticket.ID)
			}
			// The agent's lease runs out; only a pool with both needs
			// takes it over, by the full claim.
			if got := claim("anything", nil); !slices.Equal(got, []int64{agent.ID}) {
				t.Fatalf("a claim without capabilities took %v, want %d", got, agent.ID)
			}
			if mode.dueOnly {
				return
			}
			c.Advance(2 * time.Minute)
			if got := claim("model-only", []string{"model"}); slices.Contains(got, agent.ID) || slices.Contains(got, ticket.ID) {
				t.Fatalf("an expired lease went to a pool that cannot run it: %v", got)
			}
			if got := claim("agents", []string{"model", "mcp:shop"}); !slices.Contains(got, agent.ID) {
				t.Fatalf("the agents pool did not take over the expired lease: %v", got)
			}
		})
	}
}

func TestEnqueueRefusesABadNeed(t *testing.T) {
	t.Parallel()
	s := pinnedStore(t, newClock())
	_, err := s.Enqueue(context.Background(), claims.EnqueueParams{Kind: "steps", Needs: []string{"tool:a\nb"}})
	if !errors.Is(err, agentledger.ErrInvalid) {
		t.Fatalf("a need holding a newline: %v", err)
	}
}
