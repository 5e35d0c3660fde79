package tools_test

import (
	"context"
	"encoding/json"
	"errors"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/agentledger/agentledger"
	"github.com/agentledger/agentledger/flow"
	"github.com/agentledger/agentledger/ledger"
	"github.com/agentledger/agentledger/tools"
)

type chargeArgs struct {
	Base   string `json:"base,omitempty"`
	Amount int    `json:"amount"`
}

// A defined tool names what each call reaches, from its arguments, so
// that the fleet's limits and breakers hold it as they hold the
// http_request tool's calls to the same origin: the target normalised,
// held for Hold (DefaultHTTPTimeout unless set); a call that reaches none
// is not held, and one that names no target flow takes fails for good.
func TestDefinedToolNamesItsTarget(t *testing.T) {
	t.Parallel()
	perform := func(context.Context, ledger.Call, chargeArgs) (ledger.Result, error) { return ledger.Result{}, nil }
	tool, err := tools.Define(tools.Spec[chargeArgs]{Name: "charge", Class: ledger.Keyed, Perform: perform,
		Target: func(a chargeArgs) string {
			if a.Base == "" {
				return ""
			}
			u, err := url.Parse(a.Base)
			if err != nil || u.Host == "" {
				return a.Base // not a URL: refused as a target
			}
			return flow.HTTP(u)
		}})
	if err != nil {
		t.Fatal(err)
	}
	effect := func(args string) (ledger.Effect, error) {
		return tool.Effect(tools.Call{StepPath: "tool/0", Args: json.RawMessage(args)})
	}
	e, err := effect(`{"base":"https://Billing.example/v1","amount":5}`)
	if err != nil || e.Target != "http:https://billing.example:443" || e.Hold != tools.DefaultHTTPTimeout {
		t.Fatalf("target %q held %v (%v), want http:https://billing.example:443 held %v", e.Target, e.Hold, err, tools.DefaultHTTPTimeout)
	}
	if e, err := effect(`{"amount":5}`); err != nil || e.Target != "" {
		t.Fatalf("a call that reaches nothing: target %q (%v), want none", e.Target, err)
	}
	var perm *agentledger.PermanentError
	if _, err := effect(`{"base":"billing","amount":5}`); !errors.As(err, &perm) || !strings.Contains(err.Error(), "charge: its Target") {
		t.Fatalf("a target flow does not take: %v, want a permanent error naming the tool", err)
	}

	held, err := tools.Define(tools.Spec[chargeArgs]{Name: "charge2", Class: ledger.Keyed, Perform: perform, Hold: 5 * time.Second,
		Target: func(chargeArgs) string { return "mcp:billing" }})
	if err != nil {
		t.Fatal(err)
	}
	if e, err := held.Effect(tools.Call{StepPath: "tool/0", Args: json.RawMessage(`{"amount":1}`)}); err != nil || e.Target != "mcp:billing" || e.Hold != 5*time.Second {
		t.Fatalf("target %q held %v (%v), want mcp:billing held 5s", e.Target, e.Hold, err)
	}

	for name, spec := range map[string]tools.Spec[chargeArgs]{
		"local": {Name: "l", Class: ledger.Local, Target: func(chargeArgs) string { return "mcp:x" },
			PerformLocal: func(context.Context, ledger.Call, ledger.DB, chargeArgs) (ledger.Result, error) {
				return ledger.Result{}, nil
			}},
		"negative hold": {Name: "n", Class: ledger.Keyed, Perform: perform, Hold: -time.Second},
	} {
		if _, err := tools.Define(spec); err == nil {
			t.Errorf("%s: defined, want it refused", name)
		}
	}
}

// A call that names its target is cut short after Hold, as an HTTP call's
// client times out: a breaker's probe is leased no longer.
func TestDefinedToolsCallEndsAfterHold(t *testing.T) {
	t.Parallel()
	tool, err := tools.Define(tools.Spec[struct{}]{Name: "slow", Class: ledger.Keyed, Hold: 20 * time.Millisecond,
		Target: func(struct{}) string { return "mcp:slow" },
		Perform: func(ctx context.Context, _ ledger.Call, _ struct{}) (ledger.Result, error) {
			select {
			case <-ctx.Done():
				return ledger.Result{}, ctx.Err()
			case <-time.After(time.Minute): // the test's own bound: Hold did not end it
				return ledger.Result{}, errors.New("not cut short")
			}
		}})
	if err != nil {
		t.Fatal(err)
	}
	e, err := tool.Effect(tools.Call{StepPath: "tool/0", Args: json.RawMessage(`{}`)})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := e.Perform(context.Background(), ledger.Call{}); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("a call past its Hold: %v, want its context's deadline", err)
	}
}
