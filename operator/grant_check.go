package operator

import (
	"context"
	"encoding/json"
	"fmt"
	"net/url"
	"strings"

	"github.com/agentledger/agentledger"
	"github.com/agentledger/agentledger/grants"
)

// refuseUngranted marks the effects of plan whose tool (or model call) the
// task tenant's grant in force no longer allows: the replay would refuse
// them and perform nothing from there on. The journal keeps no request: the
// host, channel or kind of a steps task's step is read from its literal
// arguments; the rest is checked only when the replay runs.
func (s *Service) refuseUngranted(ctx context.Context, t *agentledger.Task, plan []PlannedEffect) error {
	tenant := t.Tenant
	g, err := grants.NewStore(s.db).For(ctx, tenant)
	if err != nil {
		return err
	}
	var steps map[string]grants.Need
	if t.Kind == "steps" {
		steps = stepNeeds(t.Payload)
	}
	for i := range plan {
		need, ok := steps[plan[i].Step]
		if !ok {
			need, ok = toolNeed(plan[i].Operation)
		}
		if !ok {
			continue
		}
		if need.Model != "" {
			if !g.All && len(g.Models) == 0 {
				plan[i].Refused = (&grants.DeniedError{Tenant: tenant, Missing: "model calls", Flag: "--model NAME"}).Error()
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

// stepNeeds reads what each step of a steps payload reaches, by step path,
// from its literal arguments: a URL, channel or kind that refers to an
// earlier result ("${…}") is left to the replay.
func stepNeeds(payload json.RawMessage) map[string]grants.Need {
	var p struct {
		Steps []struct {
			Tool string `json:"tool"`
			Args struct {
				URL     string `json:"url"`
				Channel string `json:"channel"`
				Kind    string `json:"kind"`
			} `json:"args"`
		} `json:"steps"`
	}
	if json.Unmarshal(payload, &p) != nil {
		return nil
	}
	literal := func(v string) string {
		if strings.Contains(v, "${") {
			return ""
		}
		return v
	}
	out := map[string]grants.Need{}
	for i, st := range p.Steps {
		n := grants.Need{Tool: st.Tool}
		switch st.Tool {
		case "http_request", "unsafe_http":
			if u, err := url.Parse(literal(st.Args.URL)); err == nil && u.Host != "" {
				n.URL = u
			}
		case "notify":
			n.Channel = literal(st.Args.Channel)
		case "create_task":
			n.Kind = literal(st.Args.Kind)
		}
		out[fmt.Sprintf("tool/%d", i)] = n
	}
	return out
}
