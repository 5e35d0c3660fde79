package daemon

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"syscall"
	"testing"

	"github.com/jackc/pgx/v5/pgconn"
)

func TestTransient(t *testing.T) {
	t.Parallel()
	pg := func(code string) error { return fmt.Errorf("migrations: up: %w", &pgconn.PgError{Code: code}) }
	for _, tc := range []struct {
		name               string
		err                error
		unavailable, retry bool
	}{
		{"terminated", pg("57P01"), true, true},
		{"starting up", pg("57P03"), true, true},
		{"connection failure", pg("08006"), true, true},
		{"read-only after a switchover", pg("25006"), true, true},
		{"grant store", &ConfigError{pg("57P01")}, true, true},
		{"syntax", pg("42601"), false, false},
		{"password", pg("28P01"), false, false},
		{"refused", &net.OpError{Op: "dial", Err: syscall.ECONNREFUSED}, false, true},
		{"cut", fmt.Errorf("reading: %w", io.ErrUnexpectedEOF), false, true},
		{"closed", fmt.Errorf("x: %w", pgconn.ErrConnClosed), false, true},
		{"cancelled", fmt.Errorf("x: %w", context.Canceled), false, false},
		{"old schema", errors.New("schema is at version 3, this agentd needs 17"), false, false},
	} {
		if got := serverUnavailable(tc.err); got != tc.unavailable {
			t.Errorf("%s: serverUnavailable = %v, want %v", tc.name, got, tc.unavailable)
		}
		if got := transient(tc.err); got != tc.retry {
			t.Errorf("%s: transient = %v, want %v", tc.name, got, tc.retry)
		}
	}
}
