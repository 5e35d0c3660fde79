package daemon

import (
	"context"
	"fmt"
	"log/slog"
	"maps"
	"slices"
	"strings"

	"github.com/agentledger/agentledger/grants"
)

// storeGrants seeds the configured grants: each is stored unless the
// tenant's grant was last set by an operator (agentctl), or stored before
// agentledger recorded who set it and differs, which stands; the
// difference is logged, per tenant, so that an operator's revoke is never
// undone by a restart and never holds silently against the file. A
// configured grant that replaces a different one of a config file
// (another daemon's, or this one before an edit) is logged too. Other
// tenants' grants are left as stored.
func storeGrants(ctx context.Context, db grants.DB, gs map[string]*grants.Grant, log *slog.Logger) error {
	if len(gs) == 0 {
		return nil
	}
	var stored []string
	for _, tenant := range slices.Sorted(maps.Keys(gs)) {
		got, err := grants.NewStore(db).Seed(ctx, tenant, gs[tenant])
		if err != nil {
			return &ConfigError{fmt.Errorf("grant of tenant %q: %w", tenant, err)}
		}
		if got.Stored {
			stored = append(stored, tenant)
		}
		hand := "(agentctl tenant grant " + tenant + " --reset hands it to the configuration)"
		switch k, r := got.Kept, got.Replaced; {
		case k != nil && k.SetBy == grants.SetByOperator:
			log.Warn("the configuration's grant differs from the one an operator set; the operator's stays in force "+hand,
				"tenant", tenant, "set_at", k.UpdatedAt, "differs", strings.Join(grants.Diff(gs[tenant], k.Grant), "; "))
		case k != nil:
			log.Warn("the configuration's grant differs from one stored before agentledger recorded who set grants (it may be an operator's revoke); it stays in force "+hand,
				"tenant", tenant, "set_at", k.UpdatedAt, "differs", strings.Join(grants.Diff(gs[tenant], k.Grant), "; "))
		case r != nil:
			log.Info("the configuration's grant replaced a different one a config file stored (another daemon's file, or this one before an edit)",
				"tenant", tenant, "set_at", r.UpdatedAt, "differs", strings.Join(grants.Diff(gs[tenant], r.Grant), "; "))
		}
	}
	if len(stored) > 0 {
		log.Info("grants stored from the configuration", "tenants", stored)
	}
	return nil
}

// warnUnknownGrants logs each tool and kind a configured grant names that
// this daemon has not (its registry's tools, an MCP server's by its
// prefix, its kinds), as agentctl tenant grant warns of one no live worker
// has: a typo (a kind named as a tool) grants nothing, silently. Another
// daemon of the fleet may have it, so it is a warning, and the grant is
// stored as written.
func warnUnknownGrants(gs map[string]*grants.Grant, tools, kinds, servers []string, log *slog.Logger) {
	known := func(tool string) bool {
		if slices.Contains(tools, tool) {
			return true
		}
		server, _, ok := strings.Cut(tool, "/")
		return ok && slices.Contains(servers, server)
	}
	for _, tenant := range slices.Sorted(maps.Keys(gs)) {
		g := gs[tenant]
		var names []string
		if g.Approve != nil {
			names = g.Approve.Tools
		}
		for _, t := range slices.Concat(g.Tools, names) {
			if t != "*" && !known(t) {
				log.Warn("the configuration's grant names a tool this daemon does not have: it grants nothing here",
					"tenant", tenant, "tool", t, "tools", strings.Join(tools, ", "))
			}
		}
		for _, k := range g.Kinds {
			if k != "*" && !slices.Contains(kinds, k) {
				log.Warn("the configuration's grant names a kind this daemon does not run: it grants nothing here",
					"tenant", tenant, "kind", k, "kinds", strings.Join(kinds, ", "))
			}
		}
	}
}
