package daemon

import (
	"context"
	"database/sql/driver"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"strings"
	"syscall"
	"time"

	"github.com/jackc/pgx/v5/pgconn"

	"github.com/agentledger/agentledger"
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
	if !errors.As(err, &pgErr) {
		return false
	}
	switch pgErr.Code {
	case "57P01", // admin_shutdown: terminated, or a fast shutdown
		"57P02", // crash_shutdown
		"57P03", // cannot_connect_now: starting up or shutting down
		"53300", // too_many_connections
		"25006", // read_only_sql_transaction: a standby, after a switchover
		"40001", // serialization_failure
		"40P01": // deadlock_detected
		return true
	}
	return strings.HasPrefix(pgErr.Code, "08") // connection_exception
}

// transient reports whether err may pass if tried again once the database
// answered: serverUnavailable, or a connection lost or refused (the server
// restarting).
func transient(err error) bool {
	if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return false
	}
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) {
		return serverUnavailable(err)
	}
	var connectErr *pgconn.ConnectError
	var netErr net.Error
	return errors.As(err, &connectErr) || errors.As(err, &netErr) || pgconn.SafeToRetry(err) ||
		errors.Is(err, pgconn.ErrConnClosed) || errors.Is(err, driver.ErrBadConn) ||
		errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) ||
		errors.Is(err, syscall.ECONNRESET) || errors.Is(err, syscall.ECONNREFUSED) || errors.Is(err, syscall.EPIPE)
}
