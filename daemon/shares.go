package daemon

import (
	"context"
	"fmt"
	"github.com/jackc/pgx/v5/pgxpool"
	"log/slog"

	"github.com/agentledger/agentledger/claims"
	"github.com/agentledger/agentledger/tenants"
)

// storeShares seeds the configured tenant shares: each is stored unless
// the tenant's share was set by an operator (agentctl tenant share set),
// which stands, the difference logged; replacing a different share of a
// config file (another daemon's, or this one before an edit) is logged
// too, and a share of a tenant not known yet (a typo, or a tenant to
// come) is warned of. Other tenants' shares are left as stored.
func storeShares(ctx context.Context, db *pgxpool.Pool, shares []tenants.Share, log *slog.Logger) error {
	var stored []string
	before := map[string]tenants.Share{} // read for the log only: a race with another start misleads only the log
	if len(shares) > 0 {
		all, err := tenants.NewStore(db).Shares(ctx)
		if err != nil {
			return err
		}
		for _, s := range all {
			before[s.Tenant] = s
		}
	}
	var capped []string // newly
	for _, s := range shares {
		s.Source = tenants.SourceConfig
		got, err := tenants.NewStore(db).PutShare(ctx, s)
		if err != nil {
			return &ConfigError{fmt.Errorf("share of tenant %q: %w", s.Tenant, err)}
		}
		if was, ok := before[s.Tenant]; tenants.NewCap(was, ok, got) {
			capped = append(capped, got.Tenant)
		}
		if known, err := tenantKnown(ctx, db, s.Tenant); err == nil && !known {
			log.Warn("the configuration shares a tenant not known yet: it takes its share once its tasks come; "+
				"add it with agentctl tenant add, or correct the name", "tenant", s.Tenant)
		}
		if got.Source == tenants.SourceConfig {
			stored = append(stored, s.Tenant)
			if was, ok := before[s.Tenant]; ok && was.Source == tenants.SourceConfig && shareText(was) != shareText(got) {
				log.Info("the configuration's tenant share replaced a different one a config file stored (another daemon's file, or this one before an edit)",
					"tenant", s.Tenant, "set_at", was.UpdatedAt, "config", shareText(got), "was", shareText(was))
			}
			continue
		}
		if want, have := shareText(s), shareText(got); want != have {
			log.Warn("the configuration's tenant share differs from the one an operator set; the operator's stays in force "+
				"(after agentctl tenant share rm "+s.Tenant+", the next start of a daemon with this file stores the configuration's)",
				"tenant", s.Tenant, "set_at", got.UpdatedAt, "config", want, "in_force", have)
		}
	}
	if len(stored) > 0 {
		log.Info("tenant shares stored from the configuration", "tenants", stored)
	}
	// Claims under way as the new caps committed may have leased those
	// tenants' tasks as uncapped: they count once those claims have ended.
	if err := claims.New(db).SettleCaps(ctx, capped); err != nil {
		log.Warn("the configuration's new caps are stored, but tasks leased as they were set may not count towards them "+
			"until they finish", "tenants", capped, "err", err)
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
