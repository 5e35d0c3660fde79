package waits

import (
	"context"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"

	"github.com/agentledger/agentledger"
)

// SignalByKey returns the tenant's signal sent under dedupeKey: what a
// resent delivery or request was, when its sender asks again.
func (s *Store) SignalByKey(ctx context.Context, tenant, dedupeKey string) (Signal, error) {
	sig, err := scanSignal(s.db.QueryRow(ctx, `/* waits.signal_by_key */ SELECT `+signalColumns+` FROM signals
		WHERE tenant = $1 AND dedupe_key = $2`, tenant, dedupeKey))
	if errors.Is(err, pgx.ErrNoRows) {
		return Signal{}, fmt.Errorf("signal %q of tenant %s: %w", dedupeKey, tenant, agentledger.ErrNotFound)
	}
	return sig, err
}
