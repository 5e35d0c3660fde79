package daemon

import (
	"context"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/agentledger/agentledger/claims"
	"github.com/agentledger/agentledger/httpapi"
	"github.com/agentledger/agentledger/internal/test/testdb"
	"github.com/agentledger/agentledger/operator"
	"github.com/agentledger/agentledger/tenants"
)

// Wrong metrics tokens count against the address's failed-authentication
// budget with the API's: past it the address is refused on /metrics, the
// right token too, and on the API, until the window has passed; other
// addresses are not.
func TestMetricsTokenFailuresAreLimited(t *testing.T) {
	t.Parallel()
	db := testdb.New(t)
	now := time.Date(2030, 1, 1, 12, 0, 0, 0, time.UTC)
	ts := tenants.NewStore(db)
	api, err := httpapi.New(httpapi.Config{DB: db, Tenants: ts, Claims: claims.New(db), Operator: operator.New(db),
		Logger: slog.New(slog.DiscardHandler), Now: func() time.Time { return now }})
	if err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(t.TempDir(), "metrics-token")
	const token = "m3tr1cs-t0ken-for-tests"
	if err := os.WriteFile(file, []byte(token), 0o600); err != nil {
		t.Fatal(err)
	}
	h, err := guardMetrics(file, api, http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { io.WriteString(w, "figures") }))
	if err != nil {
		t.Fatal(err)
	}
	api.Handle("GET /metrics", h)
	if _, err := ts.CreateTenant(context.Background(), "acme"); err != nil {
		t.Fatal(err)
	}
	_, apiToken, err := ts.CreateToken(context.Background(), "acme", "test", 0)
	if err != nil {
		t.Fatal(err)
	}
	get := func(path, peer, auth string) *httptest.ResponseRecorder {
		req := httptest.NewRequest(http.MethodGet, path, nil)
		req.RemoteAddr = peer
		req.Header.Set("Authorization", auth)
		rec := httptest.NewRecorder()
		api.Handler().ServeHTTP(rec, req)
		return rec
	}
	const scraper, other = "192.0.2.7:9100", "192.0.2.8:9100"
	refused := func(rec *httptest.ResponseRecorder, who string) {
		t.Helper()
		if b := rec.Body.String(); rec.Code != http.StatusUnauthorized || rec.Header().Get("Retry-After") == "" ||
			!strings.Contains(b, "too many failed authentications") || strings.Contains(b, token) {
			t.Errorf("%s: %d %s (Retry-After %q), want refused", who, rec.Code, b, rec.Header().Get("Retry-After"))
		}
	}
	for i := range 20 {
		rec := get("/metrics", scraper, "Bearer wrong-token-number-one")
		if b := rec.Body.String(); rec.Code != http.StatusUnauthorized || !strings.Contains(b, "a metrics token is required") ||
			strings.Contains(b, "too many") || rec.Header().Get("WWW-Authenticate") == "" {
			t.Fatalf("wrong token %d: %d %s", i, rec.Code, b)
		}
	}
	refused(get("/metrics", scraper, "Bearer wrong-token-number-one"), "the 21st wrong token")
	refused(get("/metrics", scraper, "Bearer "+token), "the right token from a refused address")
	refused(get("/v1/tasks", scraper, "Bearer "+apiToken), "an API token from a refused address")
	if rec := get("/metrics", other, "Bearer "+token); rec.Code != http.StatusOK || rec.Body.String() != "figures" {
		t.Errorf("another address: %d %s, want the figures", rec.Code, rec.Body)
	}

	now = now.Add(time.Minute - time.Millisecond)
	refused(get("/metrics", scraper, "Bearer "+token), "the right token just before the window ends")
	now = now.Add(time.Millisecond)
	if rec := get("/metrics", scraper, "Bearer "+token); rec.Code != http.StatusOK || rec.Body.String() != "figures" {
		t.Errorf("after the window: %d %s, want the figures", rec.Code, rec.Body)
	}
}
