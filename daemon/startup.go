package daemon

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"slices"
	"time"

	"github.com/jackc/pgx/v5/pgconn"

	"github.com/agentledger/agentledger"
	"github.com/agentledger/agentledger/database"
	"github.com/agentledger/agentledger/flow"
	"github.com/agentledger/agentledger/tenants"
)

// startRetryFor is how long start-up keeps trying a step that fails for a
// transient database error before it gives up.
const startRetryFor = 2 * time.Minute

// startBackoff spaces the tries: 100ms, 200ms … 5s.
var startBackoff = agentledger.Backoff{Base: 100 * time.Millisecond, Max: 5 * time.Second, Jitter: 0.2}

// retryStart runs step, a part of start-up, until it succeeds or fails for
// good. An error retry accepts (a PostgreSQL restart cutting the connection
// between "connected" and "worker started", 57P01) is logged and the step
// tried again with backoff, as the running daemon tries its claims again,
// for up to startRetryFor.
func retryStart(ctx context.Context, log *slog.Logger, what string, retry func(error) bool, step func() error) error {
	var since time.Time
	for attempt := int32(1); ; attempt++ {
		err := step()
		if err == nil || !retry(err) || ctx.Err() != nil {
			return err
		}
		if since.IsZero() {
			since = time.Now()
		} else if time.Since(since) > startRetryFor {
			return fmt.Errorf("%s: gave up after %s of database errors: %w", what, startRetryFor, err)
		}
		wait := startBackoff.Delay(attempt)
		log.Warn("start-up: the database is unavailable; trying again", "step", what, "err", err, "retry_in", wait)
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return err
		case <-t.C:
		}
	}
}

// serverUnavailable reports whether err is PostgreSQL saying it cannot
// serve now but may soon: it is starting, stopping or restarting, or it cut
// the session (an administrator, a restart), or it has no connection free,
// or it is a standby now (a failover: the next connection finds the new
// primary).
// A server that cannot be reached at all is not this: a wrong address
// fails at once.
func serverUnavailable(err error) bool {
	var pgErr *pgconn.PgError
	return errors.As(err, &pgErr) && database.ServerUnavailable(pgErr.Code)
}

// transient reports whether err may pass if tried again once the database
// answered: serverUnavailable, or a connection lost or refused (the server
// restarting).
func transient(err error) bool { return database.Unavailable(err) }

// checkSeeds checks the grants, limits and tenant shares Run stores from
// the configuration, every one before any is stored: one bad entry stores
// none.
func checkSeeds(cfg *Config) error {
	for _, tenant := range slices.Sorted(maps.Keys(cfg.Policy.Grants)) {
		g := cfg.Policy.Grants[tenant]
		if g == nil {
			return &ConfigError{fmt.Errorf("grant of tenant %q: nil (an empty grant grants nothing)", tenant)}
		}
		if err := g.Validate(); err != nil {
			return &ConfigError{fmt.Errorf("grant of tenant %q: %w", tenant, err)}
		}
	}
	for _, l := range cfg.Policy.Limits {
		l.Source = flow.SourceConfig // as storeLimits stores it
		if err := l.Check(); err != nil {
			return &ConfigError{fmt.Errorf("limit of %q: %w", l.Target, err)}
		}
	}
	for _, s := range cfg.Policy.TenantShares {
		s.Source = tenants.SourceConfig
		if err := s.Check(); err != nil {
			return &ConfigError{fmt.Errorf("share of tenant %q: %w", s.Tenant, err)}
		}
	}
	return nil
}
