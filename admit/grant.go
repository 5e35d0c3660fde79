package admit

import (
	"encoding/json"
	"fmt"

	"github.com/agentledger/agentledger/agent"
	"github.com/agentledger/agentledger/claims"
	"github.com/agentledger/agentledger/grants"
	"github.com/agentledger/agentledger/steps"
)

// maxChildDepth is how many generations of literal children granted
// follows below a submitted task. Each generation is read again inside
// its parent's, so the work is at most maxChildDepth+1 readings of the
// body, where an unbounded walk of a payload nested as deep as the API's
// body limit allows would take time quadratic in its size. Trees of tasks
// seldom go deeper than a grandchild; generations below the limit are
// checked when they run, as every task is.
const maxChildDepth = 8

// granted checks what the payload of p names literally against g, its
// tenant's grant (steps.Needs, agent.Needs; model is the daemon's
// configured one, "" when it has none: agent.ModelDenied), then, through
// each create_task call that names its child's kind and payload literally
// (steps.Need.Child), what the child names, against the same grant: a
// child is its tenant's task too. The first thing g lacks is a
// *grants.DeniedError (403 forbidden), after the step or field that names
// it ("step 0's child: step 1: …"). What only the run knows is checked
// when it runs.
func granted(g *grants.Grant, p claims.EnqueueParams, model string) error {
	if err := payloadGranted(g, p.Tenant, p.Kind, p.Payload, model, 0); err != nil {
		return fmt.Errorf("payload: %w", err)
	}
	return nil
}

// Lacks is what the API refuses at submit (see granted), for callers the
// grant does not bind at submit: agentctl warns the operator with it that
// a call the task names will be refused when it runs, unless the grant in
// force by then allows it. model is the configured one, "" when unknown
// (only a model certain to be refused is named).
func Lacks(g *grants.Grant, p claims.EnqueueParams, model string) error {
	return granted(g, p, model)
}

// payloadGranted checks a payload of kind, of a task depth generations
// below the submitted one.
func payloadGranted(g *grants.Grant, tenant, kind string, payload json.RawMessage, model string, depth int) error {
	switch kind {
	case steps.Kind:
		for _, n := range steps.Needs(payload) {
			if err := g.Allow(tenant, n.Need); err != nil {
				return fmt.Errorf("%s: %w", n.Subject, err)
			}
			if n.ApproveChannel != "" {
				if err := g.Allow(tenant, grants.Need{Channel: n.ApproveChannel}); err != nil {
					return fmt.Errorf("%s's approval: %w", n.Subject, err)
				}
			}
			if n.Child == nil || depth >= maxChildDepth {
				continue
			}
			if err := payloadGranted(g, tenant, n.Kind, n.Child, model, depth+1); err != nil {
				return fmt.Errorf("%s's child: %w", n.Subject, err)
			}
		}
	case agent.Kind:
		for _, n := range agent.Needs(payload, model) {
			if err := n.Check(g, tenant); err != nil {
				return fmt.Errorf("%s: %w", n.Field, err)
			}
		}
	}
	return nil
}
