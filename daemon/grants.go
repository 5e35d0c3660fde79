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
// tenant's grant was last set by an operator (agentctl), which stands; the
// difference is logged, per tenant, so that an operator's revoke is never
// undone by a restart and never holds silently against the file. Other
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
		if k := got.Kept; k != nil {
			log.Warn("the configuration's grant differs from the one an operator set; the operator's stays in force "+
				"(agentctl tenant grant "+tenant+" --reset hands it back to the configuration)",
				"tenant", tenant, "set_at", k.UpdatedAt, "differs", strings.Join(grants.Diff(gs[tenant], k.Grant), "; "))
		}
	}
	if len(stored) > 0 {
		log.Info("grants stored from the configuration", "tenants", stored)
	}
	return nil
}
