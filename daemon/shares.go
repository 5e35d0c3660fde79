package daemon

import (
	"context"
	"fmt"
	"log/slog"

	"github.com/agentledger/agentledger/tenants"
)

// storeShares seeds the configured tenant shares: each is stored unless
// the tenant's share was set by an operator (agentctl tenant share set),
// which stands, the difference logged. Other tenants' shares are left as
// stored.
func storeShares(ctx context.Context, db tenants.DB, shares []tenants.Share, log *slog.Logger) error {
	var stored []string
	for _, s := range shares {
		s.Source = tenants.SourceConfig
		got, err := tenants.NewStore(db).PutShare(ctx, s)
		if err != nil {
			return &ConfigError{fmt.Errorf("share of tenant %q: %w", s.Tenant, err)}
		}
		if got.Source == tenants.SourceConfig {
			stored = append(stored, s.Tenant)
			continue
		}
		if want, have := shareText(s), shareText(got); want != have {
			log.Warn("the configuration's tenant share differs from the one an operator set; the operator's stays in force "+
				"(agentctl tenant share rm "+s.Tenant+" hands it back to the configuration)",
				"tenant", s.Tenant, "set_at", got.UpdatedAt, "config", want, "in_force", have)
		}
	}
	if len(stored) > 0 {
		log.Info("tenant shares stored from the configuration", "tenants", stored)
	}
	return nil
}

// shareText spells a share for the log: "weight 3, max_running 20".
func shareText(s tenants.Share) string {
	if s.MaxRunning == nil {
		return fmt.Sprintf("weight %d, no max_running", s.Weight)
	}
	return fmt.Sprintf("weight %d, max_running %d", s.Weight, *s.MaxRunning)
}
