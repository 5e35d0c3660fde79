package admit_test

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/agentledger/agentledger"
	"github.com/agentledger/agentledger/admit"
	"github.com/agentledger/agentledger/claims"
	"github.com/agentledger/agentledger/internal/testdb"
)

// A steps task's tools are checked against the live pools that serve it:
// not at all when one of them did not announce its tools (an older
// version); a tool of an MCP server that is connected must be announced,
// one of a server that is not connected yet passes.
func TestStepsTools(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s := claims.New(testdb.New(t))
	check := func(payload string) error {
		p := claims.EnqueueParams{Kind: "steps", Payload: []byte(payload)}
		if err := p.Validate(); err != nil {
			t.Fatal(err)
		}
		return admit.Check(ctx, s, p, admit.Options{})
	}
	refused := func(payload, want string) {
		t.Helper()
		var ie *agentledger.InvalidError
		if err := check(payload); !errors.As(err, &ie) || ie.Field != "payload" || !strings.Contains(ie.Problem, want) {
			t.Errorf("%s: %v, want an invalid payload saying %q", payload, err, want)
		}
	}
	passes := func(payload string) {
		t.Helper()
		if err := check(payload); err != nil {
			t.Errorf("%s: %v", payload, err)
		}
	}

	register := func(r claims.Registration) {
		t.Helper()
		r.Host, r.PID, r.Queues, r.Kinds = "h", 1, []string{"default"}, []string{"steps"}
		if err := s.Register(ctx, r); err != nil {
			t.Fatal(err)
		}
	}
	register(claims.Registration{ID: "new", Tools: map[string]json.RawMessage{"http_request": nil, "shop/refund": nil},
		MCPServers: map[string]string{"shop": "connected", "crm": "connecting"}})
	passes(`{"steps":[{"tool":"shop/refund"},{"tool":"crm/lookup"}]}`)
	refused(`{"steps":[{"tool":"shop/void"}]}`, `step 0: unknown tool "shop/void" (known: http_request, shop/refund)`)
	refused(`{"steps":[{"tool":"notify"}]}`, `unknown tool "notify"`)

	register(claims.Registration{ID: "old"}) // announced no tools
	passes(`{"steps":[{"tool":"notify"}]}`)
	refused(`{"steps":[{"tool":""}]}`, "steps: step 0: tool is required")
}
