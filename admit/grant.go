package admit

import (
	"fmt"

	"github.com/agentledger/agentledger/agent"
	"github.com/agentledger/agentledger/claims"
	"github.com/agentledger/agentledger/grants"
	"github.com/agentledger/agentledger/steps"
)

// granted checks what the payload of p names literally against g, its
// tenant's grant (steps.Needs, agent.Needs; model is the daemon's
// configured one): the first thing g lacks is a *grants.DeniedError (403
// forbidden), after the step or field that names it. What only the run
// knows is checked when it runs.
func granted(g *grants.Grant, p claims.EnqueueParams, model string) error {
	switch p.Kind {
	case steps.Kind:
		for _, n := range steps.Needs(p.Payload) {
			if err := g.Allow(p.Tenant, n.Need); err != nil {
				return fmt.Errorf("payload: %s: %w", n.Subject, err)
			}
		}
	case agent.Kind:
		for _, n := range agent.Needs(p.Payload, model) {
			if err := g.Allow(p.Tenant, n.Need); err != nil {
				return fmt.Errorf("payload: %s: %w", n.Field, err)
			}
		}
	}
	return nil
}
