package operator

import (
	"context"
	"strings"

	"github.com/agentledger/agentledger/grants"
)

// refuseUngranted marks the effects of plan whose tool (or model call) the
// task tenant's grant in force no longer allows: the replay would refuse
// them and perform nothing from there on. The journal keeps no request, so
// hosts, channels and kinds are checked only when the replay runs.
func (s *Service) refuseUngranted(ctx context.Context, tenant string, plan []PlannedEffect) error {
	g, err := grants.NewStore(s.db).For(ctx, tenant)
	if err != nil {
		return err
	}
	for i := range plan {
		need, ok := toolNeed(plan[i].Operation)
		if !ok {
			continue
		}
		if need.Model != "" {
			if !g.All && len(g.Models) == 0 {
				plan[i].Refused = (&grants.DeniedError{Tenant: tenant, Missing: "model calls"}).Error()
			}
			continue
		}
		if err := g.Allow(tenant, need); err != nil {
			plan[i].Refused = err.Error()
		}
	}
	return nil
}

// toolNeed is the grant an effect's operation needs: the tool that records
// it (the tools name their effects after themselves but create_task and
// MCP tools), or a model call.
func toolNeed(op string) (grants.Need, bool) {
	switch {
	case op == "llm.chat":
		return grants.Need{Model: "*"}, true
	case op == "task.create":
		return grants.Need{Tool: "create_task"}, true
	case strings.HasPrefix(op, "mcp."):
		server, tool, ok := strings.Cut(strings.TrimPrefix(op, "mcp."), ".")
		return grants.Need{Tool: server + "/" + tool}, ok
	case strings.HasPrefix(op, "notify."):
		return grants.Need{}, false // the dispatcher's deliveries, not a task's calls
	}
	return grants.Need{Tool: op}, true
}
