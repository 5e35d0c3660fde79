package httpapi

import (
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/jackc/pgx/v5/pgconn"
)

// A request that fails because the database is away — a standby after a
// switchover (25006), a session cut by a failover (57P01) — answers 503
// with Retry-After: the client sends it again (same Idempotency-Key), and
// the released key record finds what a committed enqueue made. Another
// database error stays a 500.
func TestDatabaseAwayIsRetryable(t *testing.T) {
	t.Parallel()
	s := &Server{log: slog.New(slog.NewTextHandler(io.Discard, nil))}
	r := httptest.NewRequest(http.MethodPost, "/v1/tasks", nil)
	for _, tc := range []struct {
		code       string
		status     int
		retryAfter string
	}{
		{"25006", http.StatusServiceUnavailable, "1"},
		{"57P01", http.StatusServiceUnavailable, "1"},
		{"42P01", http.StatusInternalServerError, ""},
	} {
		rp := s.problemReply(r, fmt.Errorf("enqueue: %w", &pgconn.PgError{Code: tc.code}))
		if rp.status != tc.status || rp.header.Get("Retry-After") != tc.retryAfter {
			t.Errorf("SQLSTATE %s: status %d, Retry-After %q; want %d, %q", tc.code, rp.status, rp.header.Get("Retry-After"), tc.status, tc.retryAfter)
		}
	}
}
