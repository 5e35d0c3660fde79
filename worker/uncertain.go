package worker

import (
	"context"
	"database/sql/driver"
	"errors"
	"io"
	"net"
	"strings"
	"syscall"

	"github.com/jackc/pgx/v5/pgconn"
)

// uncertain reports whether a finishing write that failed with err may
// have committed all the same, or may pass once the database is back: the
// connection was cut or refused, or the server was going away, is busy,
// or is a standby now (a failover). Such a write is resolved by reading
// back what the attempt became, never by guessing.
func uncertain(err error) bool {
	if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return false
	}
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) {
		switch pgErr.Code {
		case "57P01", // admin_shutdown: terminated, or a fast shutdown
			"57P02", // crash_shutdown
			"57P03", // cannot_connect_now
			"25006", // read_only_sql_transaction: a standby now
			"53300", // too_many_connections
			"40001", // serialization_failure
			"40P01": // deadlock_detected
			return true
		}
		return strings.HasPrefix(pgErr.Code, "08") // connection_exception
	}
	var connectErr *pgconn.ConnectError
	var netErr net.Error
	return errors.As(err, &connectErr) || errors.As(err, &netErr) || pgconn.SafeToRetry(err) ||
		errors.Is(err, pgconn.ErrConnClosed) || errors.Is(err, driver.ErrBadConn) ||
		errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) ||
		errors.Is(err, syscall.ECONNRESET) || errors.Is(err, syscall.ECONNREFUSED) || errors.Is(err, syscall.EPIPE)
}
