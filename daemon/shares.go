package daemon

import (
	"context"
	"fmt"
	"log/slog"

	"github.com/agentledger/agentledger/tenants"
)

// storeShares stores the configured tenant shares, replacing those
// tenants' shares; other tenants' shares are left as stored.
func storeShares(ctx context.Context, db tenants.DB, shares []tenants.Share, log *slog.Logger) error {
	if len(shares) == 0 {
		return nil
	}
	names := make([]string, 0, len(shares))
	for _, s := range shares {
		s.Source = tenants.SourceConfig
		if _, err := tenants.NewStore(db).PutShare(ctx, s); err != nil {
			return &ConfigError{fmt.Errorf("share of tenant %q: %w", s.Tenant, err)}
		}
		names = append(names, s.Tenant)
	}
	log.Info("tenant shares stored from the configuration", "tenants", names)
	return nil
}
