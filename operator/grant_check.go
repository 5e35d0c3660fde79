package operator

import (
	"context"
	"strings"

	"github.com/agentledger/agentledger"
	"github.com/agentledger/agentledger/agent"
	"github.com/agentledger/agentledger/grants"
	"github.com/agentledger/agentledger/ledger"
	"github.com/agentledger/agentledger/saga"
	"github.com/agentledger/agentledger/steps"
	"github.com/agentledger/agentledger/waits"
)

// refuseUngranted marks the effects of plan whose tool (or model call) the
// task tenant's grant in force no longer allows: the replay would refuse
// them and perform nothing from there on. The journal keeps no request:
// what a steps task's steps (and compensations) reach and the model an
// agent task asks are read from its payload as the API checks it at
// submit (steps.Needs, agent.Needs; the model as agent.ModelDenied judges
// it without the configured model, which only the workers know); the rest
// is checked only when the replay runs. A replay of a task parked in its
// compensation performs compensations only, and only they are checked.
func (s *Service) refuseUngranted(ctx context.Context, t *agentledger.Task, plan []PlannedEffect) error {
	tenant := t.Tenant
	g, err := grants.NewStore(s.db).For(ctx, tenant)
	if err != nil {
		return err
	}
	byStep := map[string]grants.Need{}
	model := "" // the model an agent task's payload names
	switch t.Kind {
	case steps.Kind:
		for _, n := range steps.Needs(t.Payload) {
			byStep[n.Step] = n.Need
		}
	case agent.Kind:
		for _, n := range agent.Needs(t.Payload, "") { // the workers' configured model is not known here
			if n.Field == "model" {
				model = n.Model
			}
		}
	}
	for i := range plan {
		if _, undo := saga.Undoes(plan[i].Step); t.Compensation != "" && !undo {
			// A replay of a parked compensation performs none of the
			// forward path's effects: it reads them to undo them.
			continue
		}
		need, ok := byStep[plan[i].Step]
		if !ok {
			need, ok = toolNeed(plan[i].Operation)
		}
		if !ok {
			continue
		}
		if need.Model != "" {
			if err := agent.ModelDenied(g, tenant, model, ""); err != nil {
				plan[i].Refused = err.Error()
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
// it (the tools name their effects after themselves but create_task, the
// wait tools and MCP tools, and an unbuilt compensation is named after its tool), or a
// model call.
func toolNeed(op string) (grants.Need, bool) {
	if tool, ok := strings.CutPrefix(op, ledger.UnbuiltPrefix); ok {
		// A compensation recorded as one that could not be sent: its tool
		// ("compensate" when it was not readable: no tool to grant).
		return grants.Need{Tool: tool}, tool != "compensate"
	}
	switch {
	case op == "llm.chat":
		return grants.Need{Model: "*"}, true
	case op == "task.create":
		return grants.Need{Tool: "create_task"}, true
	case waits.ToolOf(op) != "":
		return grants.Need{Tool: waits.ToolOf(op)}, true
	case strings.HasPrefix(op, "mcp."):
		server, tool, ok := strings.Cut(strings.TrimPrefix(op, "mcp."), ".")
		return grants.Need{Tool: server + "/" + tool}, ok
	case strings.HasPrefix(op, "notify."):
		return grants.Need{}, false // the dispatcher's deliveries, not a task's calls
	}
	return grants.Need{Tool: op}, true
}
