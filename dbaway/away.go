// Package dbaway says what "the database is away for now" means: the one
// classification that the ledger, the worker and the HTTP API share to
// retry, read back or answer 503, and the backoff of work that waits for
// the database to come back. It is a leaf (pgconn and the root package
// only), so the core links neither the embedded cluster's launcher
// (package pgembed) nor os/exec through it; package database re-exports it.
package dbaway

import (
	"context"
	"database/sql/driver"
	"errors"
	"io"
	"net"
	"strings"
	"syscall"
	"time"

	"github.com/jackc/pgx/v5/pgconn"

	"github.com/agentledger/agentledger"
)

// Backoff spaces the tries of work that waits for the database to come
// back (Unavailable): 100ms, 200ms … 2s.
var Backoff = agentledger.Backoff{Base: 100 * time.Millisecond, Max: 2 * time.Second, Jitter: 0.2}

// Unavailable reports whether err is the database being away for now, so
// that the same work may pass when tried again: the server is starting,
// stopping or restarting, it cut the session (an administrator, a
// restart), it has no connection free, it is a standby now (a switchover
// or failover: the next connection of a URL with
// target_session_attrs=read-write finds the new primary), or the
// connection was lost or refused. A write that failed so may have
// committed all the same: its outcome is read back, not guessed.
func Unavailable(err error) bool {
	if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return false
	}
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) {
		return ServerUnavailable(pgErr.Code)
	}
	var connectErr *pgconn.ConnectError
	var netErr net.Error
	return errors.As(err, &connectErr) || errors.As(err, &netErr) || pgconn.SafeToRetry(err) ||
		errors.Is(err, pgconn.ErrConnClosed) || errors.Is(err, driver.ErrBadConn) ||
		errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) ||
		errors.Is(err, syscall.ECONNRESET) || errors.Is(err, syscall.ECONNREFUSED) || errors.Is(err, syscall.EPIPE)
}

// ServerUnavailable reports whether SQLSTATE code is the server saying it
// cannot serve now but may soon.
func ServerUnavailable(code string) bool {
	switch code {
	case "57P01", // admin_shutdown: terminated, or a fast shutdown
		"57P02", // crash_shutdown
		"57P03", // cannot_connect_now: starting up or shutting down
		"53300", // too_many_connections
		"25006", // read_only_sql_transaction: a standby, after a switchover
		"40001", // serialization_failure
		"40P01": // deadlock_detected
		return true
	}
	return strings.HasPrefix(code, "08") // connection_exception
}
